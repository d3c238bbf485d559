"""What confinement adds to a check: declarations, warnings, strictness, the fallback's headline, a clean working directory."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import hypothesis
import pytest
from helpers.contract_corpus import BodyKeyOrder, GetWebhookUnmarked
from helpers.contract_corpus_escapes import LeavesIdleThreadRunning, PostsLongAfterReturning

from toolproof.contracts import (
    AFTER_RETURN_S,
    EXIT_BAD_INPUT,
    EXIT_CONFORMS,
    EXIT_FINDINGS,
    _confine,
    check_tool,
    run_check_tool,
)
from toolproof.fakes._authors import PutsFileTool
from toolproof.spec import ConfigurationError


def _cli(ref: str, **options: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = run_check_tool(ref, as_json=bool(options.pop("as_json", False)), out=out, err=err, **options)
    return status, out.getvalue(), err.getvalue()


@pytest.mark.usefixtures("confinement")
def test_a_consequential_tool_with_no_observable_effect_warns_and_fails_only_under_strict() -> None:
    status, out, _ = _cli("helpers.contract_corpus:QueuesInMemory")
    assert status == EXIT_CONFORMS
    headline = out.splitlines()[0]
    assert headline.startswith(
        "corpus.queues_in_memory (EXTERNAL_WRITE, NON_IDEMPOTENT): no violation found; warning: "
    )
    assert "no example left an observable effect" in headline
    strict_status, strict_out, _ = _cli("helpers.contract_corpus:QueuesInMemory", strict=True)
    assert strict_status == EXIT_FINDINGS
    assert strict_out.splitlines()[0].startswith(
        "corpus.queues_in_memory (EXTERNAL_WRITE, NON_IDEMPOTENT): fails the strict check; warning: "
    )


@pytest.mark.usefixtures("confinement")
def test_a_get_only_non_idempotent_tool_is_told_to_declare_that_its_requests_act() -> None:
    report = check_tool(GetWebhookUnmarked)
    (found,) = report.findings
    assert found.rule_id == "D4.10"
    assert "GET /hooks/deploy" in found.seen
    assert "requests_act=True, or --requests-act" in found.seen


@pytest.mark.usefixtures("confinement")
def test_a_key_sent_in_the_body_fails_until_declared_and_the_finding_names_the_declaration() -> None:
    (found,) = check_tool(BodyKeyOrder).findings
    assert found.rule_id == "D10.6"
    assert found.seen.endswith(
        "its requests carried the key in the body (idempotency_key), where the service was not told to look: "
        "declare it (key_in='body:idempotency_key', or --key-in body:idempotency_key)"
    )
    assert check_tool(BodyKeyOrder, key_in="body:idempotency_key").passed


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"key_in": "cookie:x"}, r"key carrier 'cookie:x' is not header:NAME, body:PATH or query:NAME"),
        ({"observation": "ebpf"}, r"observation='ebpf' is not one of 'auto', 'os', 'python'"),
    ],
    ids=["key-in", "observation"],
)
def test_a_malformed_option_exits_2_with_one_line(options: dict[str, object], message: str) -> None:
    status, out, err = _cli("toolproof.fakes._authors:PutsFileTool", **options)
    assert (status, out) == (EXIT_BAD_INPUT, "")
    assert err.count("\n") == 1
    assert message in err


def test_without_confinement_auto_falls_back_and_says_so_and_os_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_confine, "_probed", ["strace is not installed (Debian package strace)"])
    report = check_tool(PutsFileTool)
    assert report.observation == "python"
    assert report.passed
    assert report.headline().startswith(
        "notes.put (WORKSPACE_WRITE, IDEMPOTENT): no violation found; partial observation: observed at the Python "
        "level only (strace is not installed (Debian package strace)): writes by native code outside the workspace"
    )
    assert not check_tool(PutsFileTool, strict=True).passed
    with pytest.raises(ConfigurationError, match=r"^observation='os' needs confinement, which is unavailable here: "):
        check_tool(PutsFileTool, observation="os")


@pytest.mark.usefixtures("confinement")
@pytest.mark.parametrize(
    "ref", ["toolproof.fakes._authors:WritesOutsideWorkspaceTool", "helpers.contract_corpus:SyslogUdpUnmarked"]
)
def test_json_is_byte_identical_from_run_to_run_and_names_nothing_of_this_machine(ref: str) -> None:
    first, second = _cli(ref, as_json=True)[1], _cli(ref, as_json=True)[1]
    assert first == second
    assert json.loads(first)["observation"] == "os"
    for machine_specific in ("/tmp", "toolproof-contract-", "127.0.0.1", os.getcwd(), str(Path.home()) + "/"):
        assert machine_specific not in first


@pytest.mark.slow
def test_a_check_writes_nothing_to_the_working_directory(tmp_path: Path) -> None:
    toolproof = Path(sys.executable).with_name("toolproof")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYPOTHESIS")}
    result = subprocess.run(
        [str(toolproof), "check-tool", "toolproof.fakes._authors:AppendsLineTool"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == EXIT_CONFORMS, result.stderr
    assert sorted(os.listdir(tmp_path)) == []


_ONE_EXAMPLE = hypothesis.settings(max_examples=1, phases=(hypothesis.Phase.generate,))
"""One example, not shrunk: these tests judge what the check waits for, and every run of the tool waits."""


@pytest.mark.slow
@pytest.mark.usefixtures("confinement")
def test_an_effect_made_long_after_execute_returned_is_still_seen_within_the_wait() -> None:
    # 1.5 s is past every deadline (1 s) and grace (0.5 s) of the check: only the wait for what was left running
    # (which ends when the thread does, not after a fixed time) sees the POST.
    report = check_tool(PostsLongAfterReturning, settings=_ONE_EXAMPLE)
    assert [f.rule_id for f in report.findings] == ["D4.10", "D3.9"], report.render()
    (late,) = [f for f in report.findings if f.rule_id == "D3.9"]
    assert late.seen.startswith("after the execution ended (returned ToolResult(ok=True), trace event 1), ")
    assert late.seen.endswith(
        "left an effect: POST /later (no Idempotency-Key) at the transport -> 200 (trace event 2)"
    )


@pytest.mark.slow
@pytest.mark.usefixtures("confinement")
def test_work_left_running_past_the_wait_is_a_warning_never_a_plain_pass() -> None:
    report = check_tool(LeavesIdleThreadRunning, settings=_ONE_EXAMPLE)
    assert report.findings == []
    assert report.passed
    # One example, the deadline probe and the remote-failure probe: three runs.
    assert report.warnings == [
        f"work the tool left running (1 thread) was still running {AFTER_RETURN_S}s after execute ended, in 3 "
        "run(s), so an effect it made later was not observed (D3.9)"
    ]
    assert "conforms to the tool-author contract" not in report.headline()
    assert not check_tool(LeavesIdleThreadRunning, settings=_ONE_EXAMPLE, strict=True).passed
