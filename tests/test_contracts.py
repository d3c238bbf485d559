"""The tool-author contract: every good example conforms, every bad one fails on the rule it breaks."""

from __future__ import annotations

from typing import Any

import anyio
import hypothesis
import pytest

from toolproof.contracts import (
    CONTRACT_RULES,
    PROVISIONAL_RULES,
    ContractReport,
    assert_conforms,
    check_tool,
    rule_text,
)
from toolproof.fakes import EchoTool, World
from toolproof.fakes._authors import (
    BAD_AUTHOR_TOOLS,
    GOOD_AUTHOR_TOOLS,
    PostsOrderTool,
    PostsUnmarkedTool,
    PutsFileTool,
    SendsMessageTool,
)
from toolproof.spec import ConfigurationError, ContractViolation, IdempotencyClass, load_catalog

_reports: dict[type, ContractReport] = {}


def _report(tool: type) -> ContractReport:
    """Each example tool is checked once per session; several tests read its report."""
    if tool not in _reports:
        _reports[tool] = check_tool(tool)
    return _reports[tool]


@pytest.mark.parametrize("tool", GOOD_AUTHOR_TOOLS, ids=lambda t: t.__name__)
def test_good_example_conforms(tool: type) -> None:
    report = _report(tool)
    assert report.findings == []
    assert report.passed
    assert report.notes == []


@pytest.mark.parametrize(("tool", "rule_id"), BAD_AUTHOR_TOOLS.items(), ids=lambda v: getattr(v, "__name__", v))
def test_bad_example_fails_with_the_one_finding_naming_its_rule(tool: type, rule_id: str) -> None:
    report = _report(tool)
    assert not report.passed
    assert [f.rule_id for f in report.findings] == [rule_id]
    found = report.findings[0]
    assert found.title == CONTRACT_RULES[rule_id].title
    assert found.fix == CONTRACT_RULES[rule_id].fix
    assert found.seen
    assert found.trace[0].startswith("attempt 1")


def test_good_examples_cover_every_idempotency_class() -> None:
    assert {tool.spec.idempotency for tool in GOOD_AUTHOR_TOOLS} == set(IdempotencyClass)


def test_every_contract_rule_has_a_bad_example_and_a_text() -> None:
    assert sorted(BAD_AUTHOR_TOOLS.values()) == sorted(CONTRACT_RULES)
    catalog_ids = {rule.id for rule in load_catalog().rules}
    for rule_id in CONTRACT_RULES:
        assert rule_id in catalog_ids or rule_id in PROVISIONAL_RULES
        assert rule_text(rule_id)
    assert not set(PROVISIONAL_RULES) & catalog_ids


def test_a_finding_shows_the_minimal_arguments_and_the_effect_at_the_transport() -> None:
    (found,) = _report(PostsUnmarkedTool).findings
    assert found.arguments == {"text": ""}
    assert found.trace[:3] == [
        found.trace[0],
        "  1. POST /messages (no Idempotency-Key) at the transport -> 200",
        "  2. returned ToolResult(ok=True)",
    ]
    assert "without ever calling mark_effect_sent()" in found.seen


def test_assert_conforms_raises_one_violation_naming_every_finding() -> None:
    with pytest.raises(
        ContractViolation, match=r"^D4\.10: messages\.send_unmarked \(EXTERNAL_WRITE, NON_IDEMPOTENT\): 1 finding\n"
    ) as caught:
        assert_conforms(PostsUnmarkedTool)
    assert caught.value.rule_id == "D4.10"
    assert "fix:" in str(caught.value)


def test_assert_conforms_returns_the_passing_report() -> None:
    assert assert_conforms(PutsFileTool).passed


def test_settings_change_how_many_examples_run() -> None:
    calls: list[int] = []

    def counting() -> PutsFileTool:
        calls.append(1)
        return PutsFileTool()

    # Under confinement the factory runs in each example's child process: count in this one.
    check_tool(counting, settings=hypothesis.settings(max_examples=3), observation="python")
    few = len(calls)
    calls.clear()
    check_tool(counting, observation="python")
    assert few < len(calls)


def test_an_unknown_rule_id_has_no_text() -> None:
    with pytest.raises(ConfigurationError, match=r"^rule_id='C99' is neither in the catalog nor provisional$"):
        rule_text("C99")


def test_a_fake_whose_effect_is_only_in_memory_passes_with_nothing_to_judge() -> None:
    # EchoTool is read-only and leaves no mark the world could see: the check passes, and says nothing.
    report = check_tool(lambda: EchoTool(World()))
    assert report.passed
    assert report.notes == []


def test_check_tool_runs_from_inside_a_running_event_loop() -> None:
    async def main() -> ContractReport:
        return check_tool(PostsOrderTool)

    assert anyio.run(main).passed


class _NotATool:
    spec = "not a spec"


class _SyncTool:
    spec = SendsMessageTool.spec

    def execute(self, arguments: Any, context: Any) -> Any:
        return None


def _raising_factory() -> Any:
    raise RuntimeError("no credentials file")


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (42, r"^factory 'int' is not callable: pass a zero-argument callable that returns a Tool$"),
        (
            PutsFileTool(),
            r"^factory 'PutsFileTool' is a Tool instance, not a factory: pass its class or `lambda: tool`$",
        ),
        (object, r"^factory 'object' returned object, which is not a Tool: it needs a `spec` \(ToolSpec\) and "),
        (_raising_factory, r"^factory '_raising_factory' raised RuntimeError: no credentials file$"),
        (_NotATool, r"^factory '_NotATool' returned _NotATool, which is not a Tool"),
        (_SyncTool, r"^factory '_SyncTool' made a tool whose execute is not `async def`$"),
    ],
    ids=["not-callable", "instance", "not-a-tool", "raises", "no-execute", "sync-execute"],
)
def test_a_bad_factory_is_a_configuration_error_with_one_line(factory: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message) as caught:
        check_tool(factory)
    assert "\n" not in str(caught.value)
