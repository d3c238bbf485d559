"""The spec's own invariants: one table, ordered labels, ordered steps, strict types."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from toolproof.spec import (
    CONTEXT_MEMBERS,
    FAILURE_REASONS,
    NON_SUCCESS_STATUSES,
    OUTCOME_TABLE,
    PERSIST_STEPS,
    STEPS,
    Budget,
    ConfigurationError,
    ContentPart,
    ContextBase,
    CrashPoint,
    FailureKind,
    Identity,
    InvocationStatus,
    McpServerConfig,
    Outcome,
    ReasonCode,
    Step,
    ToolExecutionContext,
    ToolFailure,
    ToolResult,
    TrustLabel,
    is_valid_name,
    load_catalog,
    lowest_trust,
)


def test_trust_labels_order_by_trust_not_by_name() -> None:
    assert sorted(TrustLabel) == [
        TrustLabel.EXTERNAL_UNTRUSTED,
        TrustLabel.INTERNAL,
        TrustLabel.USER,
        TrustLabel.OPERATOR,
        TrustLabel.SYSTEM,
    ]
    assert TrustLabel.SYSTEM > TrustLabel.USER >= TrustLabel.USER
    assert lowest_trust(TrustLabel.SYSTEM, TrustLabel.USER) is TrustLabel.USER
    assert lowest_trust() is TrustLabel.EXTERNAL_UNTRUSTED


_COMPARISONS = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


@pytest.mark.parametrize("operator", list(_COMPARISONS))
@pytest.mark.parametrize("other", ["SYSTEM", "EXTERNAL_UNTRUSTED", "", 2, None])
def test_a_trust_label_is_never_ordered_against_a_non_label(operator: str, other: object) -> None:
    # A plain str would otherwise answer through str's reflected comparison: alphabetically.
    compare = _COMPARISONS[operator]
    with pytest.raises(TypeError, match=r"^a TrustLabel is ordered only against another TrustLabel: "):
        compare(TrustLabel.USER, other)
    with pytest.raises(TypeError, match=r"^a TrustLabel is ordered only against another TrustLabel: "):
        compare(other, TrustLabel.USER)


def test_a_mixed_list_of_labels_and_strings_does_not_sort() -> None:
    with pytest.raises(TypeError, match=r"only against another TrustLabel"):
        sorted([TrustLabel.USER, "SYSTEM", TrustLabel.INTERNAL])
    with pytest.raises(TypeError, match=r"only against another TrustLabel"):
        lowest_trust(TrustLabel.SYSTEM, "USER")  # type: ignore[arg-type]


def test_every_reason_code_has_exactly_one_table_row_with_a_non_success_status() -> None:
    assert set(OUTCOME_TABLE) == set(ReasonCode)
    assert all(entry.status in NON_SUCCESS_STATUSES for entry in OUTCOME_TABLE.values())
    assert set(FAILURE_REASONS) == set(FailureKind)


def test_outcome_of_takes_everything_from_the_table() -> None:
    outcome = Outcome.of(ReasonCode.DEADLINE_EXCEEDED, "inv-1")
    entry = OUTCOME_TABLE[ReasonCode.DEADLINE_EXCEEDED]
    assert (outcome.status, outcome.message, outcome.retryable) == (entry.status, entry.message, entry.retryable)
    assert set(Outcome.model_fields) == {
        "status",
        "reason_code",
        "message",
        "retryable",
        "invocation_id",
        "external_detail",
    }


def test_outcome_refuses_a_success_status() -> None:
    with pytest.raises(ValidationError, match="is not a non-success status"):
        Outcome(
            status=InvocationStatus.SUCCEEDED,
            reason_code=ReasonCode.TOOL_ERROR,
            message="m",
            retryable=False,
            invocation_id="i",
        )


def test_tool_result_has_no_status_and_refuses_unknown_fields() -> None:
    assert "status" not in ToolResult.model_fields
    with pytest.raises(ValidationError):
        ToolResult.model_validate({"ok": True, "status": "DENIED"})


@pytest.mark.parametrize(("ok", "failure"), [(True, ToolFailure()), (False, None)])
def test_tool_result_ok_and_failure_must_agree(ok: bool, failure: ToolFailure | None) -> None:
    with pytest.raises(ValidationError, match="requires failure"):
        ToolResult(ok=ok, failure=failure, content=[ContentPart(text="x")])


def test_steps_are_fourteen_in_order_with_four_persist_points() -> None:
    assert len(STEPS) == 14
    assert [s.number for s in STEPS] == list(range(1, 15))
    assert {s.number for s in PERSIST_STEPS} == {6, 7, 8, 13}
    assert Step.EXECUTE.number == 10
    assert Step.CLAIM.number == 8


def test_crash_points_cover_every_boundary_and_three_inside_execute() -> None:
    after = {p for p in CrashPoint if p.value.startswith("after_")} - {
        CrashPoint.AFTER_WATERMARK,
        CrashPoint.AFTER_EFFECT,
    }
    assert {p.value.removeprefix("after_") for p in after} == {s.value for s in STEPS[:-1] if s is not Step.EXECUTE}
    assert {CrashPoint.BEFORE_WATERMARK, CrashPoint.AFTER_WATERMARK, CrashPoint.AFTER_EFFECT} <= set(CrashPoint)


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("files.read", True),
        ("mcp.srv.tool_1", True),
        ("Files.read", False),
        ("files", False),
        ("files.", False),
        ("files.read-all", False),
        ("1files.read", False),
        ("files..read", False),
        ("a." + "b" * 200, False),
    ],
)
def test_name_grammar(name: str, valid: bool) -> None:
    assert is_valid_name(name) is valid


def test_catalog_rules_are_well_formed() -> None:
    catalog = load_catalog()
    assert all("MUST" in rule.text for rule in catalog.rules)
    assert [d.number for d in catalog.decisions] == list(range(1, 19))
    for decision in catalog.decisions:
        numbers = [r.number for r in catalog.rules if r.decision == decision.number]
        assert numbers == list(range(1, len(numbers) + 1)), f"D{decision.number} numbering has gaps"


def test_catalog_wording_keeps_to_rfc_2119() -> None:
    """Key words are upper case and a prohibition is "X MUST NOT": no "no X MAY", no "MAY NOT", no lower-case must."""
    for rule in load_catalog().rules:
        for field, text in (("text", rule.text), ("interpretation", rule.interpretation or "")):
            assert not re.search(r"\b(must|should|shall)\b", text), f"{rule.id} {field}: a lower-case key word"
            assert "MAY NOT" not in text, f"{rule.id} {field}: MAY NOT"
            assert not re.search(r"(?i:\b(no|nothing|none|never)\b)[^.;:]*\bMAY\b", text), (
                f"{rule.id} {field}: a prohibition worded with MAY"
            )


def test_a_review_only_rule_says_why_and_no_scenario_cites_it() -> None:
    scenarios = Path(__file__).parent.parent / "scenarios"
    cited = "".join(path.read_text(encoding="utf-8") for path in scenarios.glob("test_*.py"))
    # Today no rule is review-only (D17.7, the last, became judgeable); a rule marked so later is held to this.
    reviewed = [rule for rule in load_catalog().rules if rule.review_only]
    for rule in reviewed:
        assert len(rule.review_only or "") > 40, f"{rule.id}: say why no run can judge it"
        assert rule.everywhere is None, rule.id
        assert rule.over_http is None, rule.id
        assert f'"{rule.id}"' not in cited, f"{rule.id} is review-only, yet a scenario cites it"


def test_catalog_selection_errors_name_the_selector() -> None:
    catalog = load_catalog()
    assert [r.id for r in catalog.select("D13.3,D2")][:2] == ["D2.1", "D2.2"]
    with pytest.raises(
        ConfigurationError,
        match=r"^rule selector 'D0' is neither a decision \(D5\) nor a rule id \(D5\.3\): see `toolproof rules`$",
    ):
        catalog.select("D0")
    with pytest.raises(ConfigurationError, match=r"^--rules is empty"):
        catalog.select(" , ")


class _Signal:
    def is_set(self) -> bool:
        return False

    async def wait(self) -> None:
        return None


class _Nowhere:
    async def write(self, name: str, data: bytes) -> object:
        raise AssertionError("not written in this test")

    async def resolve(self, scope: str) -> str | None:
        return None


def _parts() -> dict[str, object]:
    identity = Identity(
        tenant="t",
        run_id="run-1",
        step_number=1,
        call_id="call-1",
        invocation_id="inv-1",
        tool_name="files.read",
        tool_version="1",
        attempt=1,
        idempotency_key="k",
    )
    nowhere = _Nowhere()
    return {
        "identity": identity,
        "budget": Budget(max_output_bytes=1024),
        "deadline": 5.0,
        "target": None,
        "workspace": Path("/nowhere"),
        "artifact_writer": nowhere,
        "credential_resolver": nowhere,
        "cancellation": _Signal(),
    }


def test_a_context_base_exposes_the_nine_members_and_the_parts_it_was_given() -> None:
    class Marked(ContextBase):
        __slots__ = ()

        async def mark_effect_sent(self) -> None:
            return None

    parts = _parts()
    context = Marked(**parts)  # type: ignore[arg-type]
    assert sorted(n for n in dir(context) if not n.startswith("_")) == sorted(CONTEXT_MEMBERS)
    assert isinstance(context, ToolExecutionContext)
    assert {name: getattr(context, name) for name in parts} == parts


def test_a_context_base_without_mark_effect_sent_cannot_be_built() -> None:
    class Unmarked(ContextBase):
        __slots__ = ()

    with pytest.raises(TypeError, match="mark_effect_sent"):
        Unmarked(**_parts())  # type: ignore[abstract, arg-type]


_STDIO = {"server_id": "keyed", "transport": "stdio", "command": ["server"]}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"server_id": "keyed", "transport": "http", "url": "http://127.0.0.1/mcp", "cwd": "/srv"},
            "server 'keyed': cwd applies only to a stdio server, not transport='http'; remove it (D7.4)",
        ),
        (
            {"server_id": "keyed", "transport": "memory", "env": {}, "cwd": "/srv"},
            "server 'keyed': env and cwd apply only to a stdio server, not transport='memory'; remove them (D7.4)",
        ),
        (
            _STDIO | {"env": {"API-KEY": "secret-1"}},
            "server 'keyed': env name 'API-KEY' is not [A-Za-z_][A-Za-z0-9_]*; rename it (D7.4)",
        ),
        (_STDIO | {"env": {"API_KEY": "secret-1\0"}}, "server 'keyed': env 'API_KEY' contains NUL; remove it (D7.4)"),
        (
            _STDIO | {"cwd": "relative/dir"},
            "server 'keyed': cwd='relative/dir' is not an absolute path; give one starting with / (D7.4)",
        ),
    ],
)
def test_mcp_server_env_and_cwd_are_validated_without_echoing_the_input(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        McpServerConfig.model_validate(fields)
    assert [e["msg"] for e in caught.value.errors()] == [f"Value error, {message}"]
    assert "secret-1" not in str(caught.value)


def test_mcp_server_env_and_cwd_are_kept_for_stdio_and_left_off_the_wire_when_unset() -> None:
    config = McpServerConfig.model_validate(_STDIO | {"env": {"API_KEY": "secret-1"}, "cwd": "/srv"})
    assert (config.env, config.cwd) == ({"API_KEY": "secret-1"}, "/srv")
    assert "secret-1" not in repr(config)
    assert {"env", "cwd"}.isdisjoint(McpServerConfig.model_validate(_STDIO).model_dump())
