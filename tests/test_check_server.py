"""``toolproof check-server`` against every hostile fake over stdio, both eras: the findings each must produce."""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toolproof._check_era import UNLISTED_TOOL
from toolproof._check_findings import era_findings, findings_for
from toolproof._cli import app
from toolproof.fakes.mcp import ACCEPTED_UNLISTED, COLLIDING_NAMES, ENV_KEY, FLOOD_COUNT, SERVERS, stdio_command
from toolproof.reports import EraCheck, FindingKind, ListedPrompt, ListedTool, ServerCheckReport
from toolproof.spec import McpServerConfig, McpTransport

ERAS = ("legacy", "2026-07-28")
K = FindingKind


@dataclass(frozen=True)
class Expected:
    """What checking one fake must find, in both eras, and what else it must show."""

    findings: frozenset[FindingKind] = frozenset()
    """Exactly these kinds in each era (none: it can be admitted, exit 0)."""
    options: tuple[str, ...] = ()
    """check-server options (``--call`` …) before the command."""
    toml: dict[str, Any] = field(default_factory=dict)
    """When set: checked through an operator file with these extra keys, not as a bare command."""
    check: Callable[[dict[str, Any], str], None] | None = None
    """Further assertions on one era's JSON and the text report."""
    refused: dict[str, str] = field(default_factory=dict)
    """Eras the server must be refused in at open (D7.7, D7.8), each with a phrase its McpOpenError must hold."""


def _tools(era: dict[str, Any]) -> dict[str, str | None]:
    return {t["remote_name"]: t["registered_name"] for t in era["tools"]}


def _colliding(era: dict[str, Any], text: str) -> None:
    assert all(_tools(era)[name] is None for name in COLLIDING_NAMES)
    assert _tools(era)["echo"] == "mcp.fake.echo"
    assert "'Send-Mail' -> DROPPED (normalizes to mcp.fake.send_mail" in text
    # A dropped tool is never called: the pipeline answers unknown_tool.
    assert [(c["outcome"], c["registered_name"]) for c in era["calls"]] == [("not_registered", None)]


def _accepts_unlisted(era: dict[str, Any], text: str) -> None:
    [shape] = era["error_shapes"]
    assert (shape["shape"], shape["text"]) == ("success", ACCEPTED_UNLISTED.format(name=UNLISTED_TOOL))
    assert "the server executes names it never listed" in text


def _duplicate(era: dict[str, Any], text: str) -> None:
    assert [t["registered_name"] for t in era["tools"] if t["remote_name"] == "lookup"] == [None, None]


def _annotations_ignored(era: dict[str, Any], text: str) -> None:
    annotated = [t for t in era["tools"] if t["annotations"] and t["annotations"].get("readOnlyHint")]
    assert annotated, "the lying annotations are shown"
    assert "annotations (ignored, decision 6): " in text
    assert "classification: none in the operator config: unclassified" in text


def _impersonator(era: dict[str, Any], text: str) -> None:
    if era["era"] == "legacy":
        assert era["server_name"] == "PlainServer"
    assert all(t["registered_name"].startswith("mcp.fake.") for t in era["tools"])


def _withdrawn(era: dict[str, Any], text: str) -> None:
    assert era["drift"] == ["withdrawn mcp.fake.transfer"]
    assert era["notifications"]["notifications/tools/list_changed"] >= 1


def _changed(era: dict[str, Any], text: str) -> None:
    assert era["drift"] == ["changed mcp.fake.lookup"]
    assert "notifications/tools/list_changed" not in era["notifications"]


def _hidden_by_its_notice(era: dict[str, Any], text: str) -> None:
    # The listing after the call is the one the server answers with the catalog from before its change.
    assert era["drift"] == []
    assert era["notifications"]["notifications/tools/list_changed"] == 1


def _flood(era: dict[str, Any], text: str) -> None:
    assert 0 < era["notifications"]["notifications/tools/list_changed"] <= FLOOD_COUNT
    assert era["listings_agree"] is True


def _grew(era: dict[str, Any], text: str) -> None:
    assert era["drift"] == ["added mcp.fake.extra_1"]


def _paginated(era: dict[str, Any], text: str) -> None:
    assert len(era["tools"]) == 5
    assert era["listings_agree"] is True


def _declined(method: str) -> Callable[[dict[str, Any], str], None]:
    def check(era: dict[str, Any], text: str) -> None:
        methods = {r["method"] for r in era["requests"]}
        assert method in methods or (era["era"] != "legacy" and methods == {"input_required"}), methods
        assert all(r["during"].startswith("call ") for r in era["requests"])
        assert "request declined (decision 8): " in text

    return check


def _error_shapes(era: dict[str, Any], text: str) -> None:
    outcomes = {c["remote_name"]: c["outcome"] for c in era["calls"]}
    assert outcomes == {"fail": "tool_error", "crash": "remote_rejected"}
    assert all("\x1b" not in c["detail"] for c in era["calls"]), "control characters escaped"
    assert "\x1b" not in text


def _read_tool(present: bool) -> Callable[[dict[str, Any], str], None]:
    def check(era: dict[str, Any], text: str) -> None:
        assert (era["read_resource_tool"] == "mcp.fake.read_resource") is present
        if not present:
            assert "no read tool (nothing listed, D8.9)" in text

    return check


def _injecting_resource(era: dict[str, Any], text: str) -> None:
    _read_tool(True)(era, text)
    assert all(p["skill_name"] and p["skill_name"].startswith("mcp.fake.prompt.") for p in era["prompts"])


def _shadowing(era: dict[str, Any], text: str) -> None:
    assert _tools(era)["read_resource"] is None
    assert era["read_resource_tool"] == "mcp.fake.read_resource"


def _over_cap(era: dict[str, Any], text: str) -> None:
    assert [c["outcome"] for c in era["calls"]] == ["over_cap"]
    assert "call 'dump': over_cap" in text


def _timeout(era: dict[str, Any], text: str) -> None:
    assert [c["outcome"] for c in era["calls"]] == ["timeout"]


def _twins(era: dict[str, Any], text: str) -> None:
    skills = {p["name"]: p["skill_name"] for p in era["prompts"]}
    assert skills["Summarize"] is None
    assert skills["summarize"] is None
    assert skills["fetch"] == "mcp.fake.prompt.fetch"
    assert _tools(era)["fetch"] == "mcp.fake.fetch"


def _early(era: dict[str, Any], text: str) -> None:
    assert era["notifications"]["notifications/tools/list_changed"] >= 1
    assert era["listings_agree"] is True


def _environment(era: dict[str, Any], text: str) -> None:
    # The operator's env and cwd reach the server's process, as they do from the reference (D7.4).
    [detail] = [c["detail"] for c in era["calls"]]
    assert detail.startswith(f"{ENV_KEY}=k-check\\ncwd=/tmp\\nnames=")


def _lost(era: dict[str, Any], text: str) -> None:
    assert "disconnected fake" in era["drift"]
    assert era["listings_agree"] is None


def _lost_mid_call(era: dict[str, Any], text: str) -> None:
    _lost(era, text)
    assert [c["outcome"] for c in era["calls"]] == ["remote_unavailable"]


def _plain(era: dict[str, Any], text: str) -> None:
    assert era["calls"] == [
        {
            "remote_name": "echo",
            "registered_name": "mcp.fake.echo",
            "outcome": "ok",
            "content_bytes": 2,
            "cap_bytes": 16 * 1024 * 1024,
            "detail": "hi",
        }
    ]
    assert era["error_shapes"][0]["shape"] == "is_error_result"
    assert era["listings_agree"] is True
    assert "two consecutive listings agree" in text


def _malformed(era: dict[str, Any], text: str) -> None:
    outcomes = {call["remote_name"]: call["outcome"] for call in era["calls"]}
    assert outcomes == {"broken": "malformed_result", "echo": "ok"}
    assert "invalid_tool_result for this call only (D7.9)" in text


def _invalid_structure(era: dict[str, Any], text: str) -> None:
    outcomes = {call["remote_name"]: call["outcome"] for call in era["calls"]}
    assert outcomes == {"valid": "ok", "wrong_type": "invalid_structure"}
    assert "invalid_tool_result" in text


EXPECTED: dict[str, Expected] = {
    "PlainServer": Expected(options=("--call", 'echo={"text": "hi"}'), check=_plain),
    "DuplicateNamesServer": Expected(frozenset({K.DROPPED_TOOL}), check=_duplicate),
    "CollidingNamesServer": Expected(frozenset({K.DROPPED_TOOL}), ("--call", "Send-Mail"), check=_colliding),
    "UnicodeTrickServer": Expected(frozenset({K.DROPPED_TOOL})),
    "OverlongNameServer": Expected(frozenset({K.DROPPED_TOOL})),
    "NormalizationOrderServer": Expected(frozenset({K.DROPPED_TOOL})),
    "ReservedDomainServer": Expected(),
    "ImpersonatorServer": Expected(check=_impersonator),
    "LyingAnnotationsServer": Expected(check=_annotations_ignored),
    "ClaimsTrustServer": Expected(),
    "RugPullServer": Expected(frozenset({K.DRIFT, K.LIST_CHANGED}), ("--call", "transfer"), check=_withdrawn),
    "SilentDriftServer": Expected(frozenset({K.DRIFT}), ("--call", "lookup"), check=_changed),
    "ListChangedFloodServer": Expected(frozenset({K.LIST_CHANGED}), ("--call", "flood"), check=_flood),
    "GrowingCatalogServer": Expected(frozenset({K.DRIFT, K.LIST_CHANGED}), ("--call", "grow"), check=_grew),
    "PaginatedCatalogServer": Expected(options=("--call", "shuffle"), check=_paginated),
    "TtlDriftServer": Expected(frozenset({K.DRIFT}), ("--call", "lookup"), check=_changed),
    "NoticeMidListingServer": Expected(frozenset({K.LIST_CHANGED}), ("--call", "lookup"), check=_hidden_by_its_notice),
    "CanonicalEdgeServer": Expected(frozenset({K.DROPPED_TOOL}), ("--call", "non_bmp_keys")),
    "SamplingRequestServer": Expected(
        frozenset({K.REQUEST_DECLINED}), ("--call", "summarize"), check=_declined("sampling/createMessage")
    ),
    "RootsRequestServer": Expected(
        frozenset({K.REQUEST_DECLINED}), ("--call", "list_files"), check=_declined("roots/list")
    ),
    "EndlessInputServer": Expected(
        frozenset({K.REQUEST_DECLINED}), ("--call", "ask"), check=_declined("elicitation/create")
    ),
    "InjectingErrorServer": Expected(options=("--call", "fail", "--call", "crash"), check=_error_shapes),
    "InjectingResourceServer": Expected(check=_injecting_resource),
    "ShadowingResourceServer": Expected(frozenset({K.DROPPED_TOOL}), check=_shadowing),
    "HugeOutputServer": Expected(
        frozenset({K.OVER_CAP}), ("--call", "dump"), toml={"max_output_bytes": 1024 * 1024}, check=_over_cap
    ),
    "MultibyteOutputServer": Expected(check=_read_tool(True)),
    "DripServer": Expected(),
    "HangingServer": Expected(frozenset({K.CALL_TIMEOUT}), ("--call", "hang", "--timeout", "2"), check=_timeout),
    "EmptyResourcesServer": Expected(check=_read_tool(False)),
    "TemplateResourcesServer": Expected(check=_read_tool(True)),
    "PagedResourcesServer": Expected(check=_read_tool(True)),
    "PagedTemplatesServer": Expected(check=_read_tool(True)),
    "TwinNamesServer": Expected(frozenset({K.DROPPED_PROMPT}), check=_twins),
    "EnvironmentServer": Expected(
        options=("--call", "environment"), toml={"env": {ENV_KEY: "k-check"}, "cwd": "/tmp"}, check=_environment
    ),
    "EarlyNoticeServer": Expected(frozenset({K.LIST_CHANGED}), check=_early),
    "ExitsBetweenCallsServer": Expected(frozenset({K.CONNECTION_LOST}), ("--call", "exit"), check=_lost),
    "ExitsMidCallServer": Expected(frozenset({K.CONNECTION_LOST}), ("--call", "write"), check=_lost_mid_call),
    # Without --state-dir every start is a first start: as ExitsBetweenCallsServer.
    "ChangedOnRestartServer": Expected(frozenset({K.CONNECTION_LOST}), ("--call", "exit"), check=_lost),
    # Its exit waits for a resources/list nothing sends: not called.
    "LossMidListingServer": Expected(),
    "HangsAtInitializeServer": Expected(
        options=("--timeout", "3"),
        refused={"legacy": "gave no answer within 3 s", "2026-07-28": "no answer within 3 s"},
    ),
    "LegacyOnlyServer": Expected(
        refused={"2026-07-28": 'it speaks only the initialize handshake; configure protocol = "legacy"'}
    ),
    "DiscoverInvalidParamsServer": Expected(
        refused={"2026-07-28": "with -32602 Invalid request parameters: it speaks"}
    ),
    "DiscoverInternalErrorServer": Expected(refused={"2026-07-28": "with -32603 Internal error: it speaks only the"}),
    "DiscoverSessionErrorServer": Expected(
        refused={
            "2026-07-28": "with -32000 Bad Request: No valid session ID provided: it speaks only the initialize handshake"
        }
    ),
    "EraViolatorServer": Expected(
        frozenset({K.MALFORMED_RESULT}), ("--call", "broken", "--call", "echo"), check=_malformed
    ),
    "NonJsonServer": Expected(refused={era: "wrote non-JSON to stdout" for era in ERAS}),
    "CrashesAtStartServer": Expected(refused={era: "the server exited before answering;" for era in ERAS}),
    "ListingErrorServer": Expected(),
    "ListenRefusedServer": Expected(),
    "AcceptsUnlistedServer": Expected(frozenset({K.UNLISTED_CALL_SUCCEEDS}), check=_accepts_unlisted),
    "ChangingResourcesServer": Expected(check=_read_tool(False)),
    "SchemaViolationServer": Expected(
        frozenset({K.INVALID_STRUCTURE}), ("--call", "valid", "--call", "wrong_type"), check=_invalid_structure
    ),
    "StrictInputSchemaServer": Expected(options=("--call", 'lookup={"key": "a"}')),
}
"""Every registered fake and what checking it must find; a fake added to the registry needs its entry here."""


def test_every_fake_has_its_expected_findings() -> None:
    assert sorted(EXPECTED) == sorted(SERVERS)


def _toml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def _target(name: str, expected: Expected, tmp_path: Path) -> list[str]:
    # Through an operator file, so the server's id (and its names' prefix) is "fake"; a bare command's is "server".
    command = stdio_command(name)
    lines = ["[[server]]", 'id = "fake"', f"command = {_toml_value(command[0])}", f"args = {_toml_value(command[1:])}"]
    lines += [f"{key} = {_toml_value(value)}" for key, value in expected.toml.items()]
    path = tmp_path / "servers.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [str(path)]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EXPECTED))
def test_check_server_finds_what_each_fake_does(name: str, tmp_path: Path) -> None:
    expected = EXPECTED[name]
    out = tmp_path / "out"
    args = ["check-server", "-q", "--json", "--out", str(out), *expected.options, *_target(name, expected, tmp_path)]
    result = CliRunner().invoke(app, args)
    report = json.loads(result.stdout)
    server = report["servers"][0]
    text = (out / "server-check.txt").read_text(encoding="utf-8")
    assert [era["era"] for era in server["eras"]] == list(ERAS)
    for era in server["eras"]:
        if era["era"] in expected.refused:
            assert era["connected"] is False
            assert era["failure"].startswith(
                f"McpOpenError: MCP server 'fake' refused at open: asked era {era['era']};"
            )
            assert expected.refused[era["era"]] in era["failure"]
            continue
        assert era["connected"] is True, era["failure"]
        assert era["completed"] is True, era["failure"]
        kinds = {f["kind"] for f in era["findings"]}
        assert kinds == {k.value for k in expected.findings}, (era["era"], era["findings"])
        if expected.check is not None:
            expected.check(era, text)
    # The file configures the handshake era: its findings are the ones that count.
    assert server["findings"] == server["eras"][0]["findings"]
    if set(expected.refused) == set(ERAS):
        assert result.exit_code == server["exit_code"] == report["exit_code"] == 2
        assert "verdict: could not connect in any era (exit 2)" in text
        return
    exit_code = 1 if expected.findings else 0
    assert result.exit_code == server["exit_code"] == report["exit_code"] == exit_code
    assert f"verdict: {'findings ADR-0021 will act on' if exit_code else 'can be admitted as configured'}" in text
    for finding in server["findings"]:
        assert f"[{finding['kind']}, decision {finding['decision']}, era {finding['era']}] " in text
    page = (out / "server-check.html").read_text(encoding="utf-8")
    assert '<section class="server-check" id="server-fake">' in page
    assert all(f"<b>{k.value}</b>" in page for k in expected.findings)


def _toolproof(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolproof", *args], capture_output=True, text=True, cwd=cwd, check=False, timeout=120
    )


def _one_line(result: subprocess.CompletedProcess[str], pattern: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("toolproof: error: ")
    assert pattern in lines[0]
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.parametrize(
    ("args", "files", "pattern"),
    [
        (["missing.toml"], {}, "missing.toml: cannot be read"),
        (["bad.toml"], {"bad.toml": "[[server]\n"}, "bad.toml: not TOML"),
        (
            ["--server", "other", "ok.toml"],
            {"ok.toml": '[[server]]\nid = "one"\nurl = "http://127.0.0.1:9/mcp"\n'},
            "--server 'other': no such id in ok.toml; its ids are: one",
        ),
        (["--", "toolproof-no-such-command", "x"], {}, "command 'toolproof-no-such-command' not found"),
        (["--call", "echo={not json", "--", sys.executable], {}, "the arguments are not JSON"),
        (["--call", "echo=[1]", "--", sys.executable], {}, "the arguments must be a JSON object"),
        (["--timeout", "0", "--", sys.executable], {}, "--timeout 0: give a positive number of seconds"),
        (["--server", "x", "--", sys.executable], {}, "--server picks servers of an MCP server file"),
        ([], {}, "give an MCP server file (FILE.toml), a URL, or -- COMMAND ARGS..."),
        (["--out", "afile/sub", "--", sys.executable], {"afile": ""}, "--out afile/sub: Not a directory"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], files: dict[str, str], pattern: str, tmp_path: Path) -> None:
    for file_name, content in files.items():
        (tmp_path / file_name).write_text(content, encoding="utf-8")
    _one_line(_toolproof("check-server", "-q", *args, cwd=tmp_path), pattern)


OK_FILE = {"ok.toml": '[[server]]\nid = "one"\nurl = "http://127.0.0.1:9/mcp"\n'}


@pytest.mark.parametrize(
    ("args", "files", "pattern"),
    [
        # After a file or a URL, options still count (the README's example).
        (["ok.toml", "--server", "other"], OK_FILE, "--server 'other': no such id in ok.toml; its ids are: one"),
        (["ok.toml", "-q", "--server=other"], OK_FILE, "--server 'other': no such id in ok.toml"),
        (["http://127.0.0.1:9/mcp", "--timeout", "0"], {}, "--timeout 0: give a positive number of seconds"),
        (["https://127.0.0.1:9/mcp", "--server", "x"], {}, "--server picks servers of an MCP server file"),
        # From a command's first word on, every word is the command's, options included.
        (["toolproof-no-such-command", "--timeout", "0"], {}, "command 'toolproof-no-such-command' not found"),
        (["--timeout", "5", "toolproof-no-such-command", "-y"], {}, "command 'toolproof-no-such-command' not found"),
    ],
)
def test_options_may_follow_a_file_or_a_url(
    args: list[str], files: dict[str, str], pattern: str, tmp_path: Path
) -> None:
    for file_name, content in files.items():
        (tmp_path / file_name).write_text(content, encoding="utf-8")
    _one_line(_toolproof("check-server", *args, cwd=tmp_path), pattern)


@pytest.mark.slow
def test_a_server_that_connects_in_no_era_exits_2_with_one_line(tmp_path: Path) -> None:
    # The fakes' module without a fake name prints its usage on stderr and exits: no era connects.
    result = _toolproof(
        "check-server", "-q", "--timeout", "10", "--", sys.executable, "-m", "toolproof.fakes.mcp", "NoSuchFake"
    )
    _one_line(result, "server 'server' could not be reached in any era (legacy: ")
    assert "2026-07-28: " in result.stderr
    assert "unknown fake MCP server name='NoSuchFake'" in result.stdout  # The server's stderr, in the report.
    assert "verdict: could not connect in any era (exit 2)" in result.stdout


@pytest.mark.slow
def test_a_plain_server_by_command_is_admitted_with_exit_0_and_progress_on_stderr(tmp_path: Path) -> None:
    html = tmp_path / "check.html"
    result = _toolproof("check-server", "--era", "legacy", "--html", str(html), "--", *stdio_command("PlainServer"))
    assert result.returncode == 0, result.stderr
    assert "check-server: server: era legacy: connecting" in result.stderr
    assert "'echo' -> mcp.server.echo" in result.stdout
    assert "era 2026-07-28" not in result.stdout
    assert "verdict: can be admitted as configured (exit 0)" in result.stdout
    assert '<section class="server-check" id="server-server">' in html.read_text(encoding="utf-8")


def _era(name: str, connected: bool) -> EraCheck:
    return EraCheck(era=name, connected=connected, failure=None if connected else "refused")


def _file_server(protocol: str) -> McpServerConfig:
    return McpServerConfig(server_id="s", transport=McpTransport.STDIO, command=["x"], protocol=protocol)  # type: ignore[arg-type]


def test_the_configured_era_failing_while_another_connects_is_a_finding() -> None:
    eras = [_era("2026-07-28", False), _era("legacy", True)]
    found = findings_for(_file_server("2026-07-28"), eras, configured=True)
    assert [(f.kind, f.era) for f in found] == [(K.CONFIGURED_ERA_FAILS, "2026-07-28")]
    assert "set protocol = 'legacy'" in found[0].message
    # From the command line no era is configured: the one that works is enough.
    assert findings_for(_file_server("2026-07-28"), eras, configured=False) == []
    assert findings_for(_file_server("legacy"), eras, configured=True) == []


def _colliding_era(name: str = "legacy", failure: str | None = None) -> EraCheck:
    tools = [
        ListedTool(remote_name=r, registered_name=None, normalizes_to="mcp.s.a", definition_sha256=r, annotations=None)
        for r in ("A", "a")
    ]
    tools.append(
        ListedTool(
            remote_name="b", registered_name="mcp.s.b", normalizes_to="mcp.s.b", definition_sha256="b", annotations=None
        )
    )
    era = EraCheck(
        era=name,
        connected=True,
        failure=failure,
        tools=tools,
        prompts=[ListedPrompt(name="p", skill_name="mcp.s.prompt.p")],
        malformed=2,
    )
    return era.model_copy(update={"findings": era_findings(era)})


def test_findings_of_an_era_name_what_the_adapter_acts_on() -> None:
    found = _colliding_era().findings
    assert [f.kind for f in found] == [K.DROPPED_TOOL, K.MALFORMED_MESSAGE]
    assert found[0].message == "remote tools 'A', 'a' normalize to mcp.s.a: dropped, not registered"
    assert era_findings(_era("legacy", True)) == []
    assert era_findings(_era("legacy", False)) == []
    stopped = era_findings(_era("legacy", True).model_copy(update={"failure": "TimeoutError: late"}))
    assert [f.kind for f in stopped] == [K.UNFINISHED]


def test_which_eras_findings_count() -> None:
    legacy, modern = _colliding_era("legacy"), _colliding_era("2026-07-28", failure="ValidationError: x")
    # From a file: the configured era's only.
    assert [f.era for f in findings_for(_file_server("legacy"), [legacy, modern], configured=True)] == ["legacy"] * 2
    assert [f.kind for f in findings_for(_file_server("2026-07-28"), [modern, legacy], configured=True)] == [
        K.DROPPED_TOOL,
        K.UNFINISHED,
        K.MALFORMED_MESSAGE,
        K.CONFIGURED_ERA_FAILS,
    ]
    # From a command: every completed era's; an era that stopped early is not judged while another completed.
    assert {f.era for f in findings_for(_file_server("legacy"), [legacy, modern], configured=False)} == {"legacy"}
    assert {f.era for f in findings_for(_file_server("legacy"), [modern], configured=False)} == {"2026-07-28"}


@pytest.mark.slow
def test_a_url_is_checked_over_streamable_http(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    served = subprocess.Popen(
        [sys.executable, "-m", "toolproof.fakes.mcp", "RugPullServer", "--transport", "http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        result = _toolproof(
            "check-server", "-q", "--json", "--era", "legacy", "--call", "transfer", f"http://127.0.0.1:{port}/mcp"
        )
    finally:
        served.terminate()
        served.wait(timeout=10)
    report = json.loads(result.stdout)
    assert result.returncode == 1, result.stderr
    (era,) = report["servers"][0]["eras"]
    assert report["servers"][0]["transport"] == "http"
    assert era["drift"] == ["withdrawn mcp.server.transfer"]
    assert {f["kind"] for f in report["servers"][0]["findings"]} == {"drift", "list_changed"}


@pytest.mark.slow
def test_output_that_is_not_json_rpc_is_counted_not_logged() -> None:
    fake = shlex.join(stdio_command("PlainServer"))
    result = _toolproof(
        "check-server", "-q", "--json", "--era", "legacy", "--", "sh", "-c", f"echo not-json; exec {fake}"
    )
    assert result.returncode == 1, result.stderr
    (era,) = json.loads(result.stdout)["servers"][0]["eras"]
    assert era["malformed"] == 1
    assert [f["kind"] for f in era["findings"]] == ["malformed_message"]
    assert "Traceback" not in result.stderr


def test_the_json_keys_are_pinned() -> None:
    # Renaming or removing a key breaks scripts reading --json: raise CHECK_SCHEMA and update this list together.
    schema = ServerCheckReport.model_json_schema(mode="serialization")
    keys = {name: sorted(schema["$defs"][name]["properties"]) for name in ("ServerCheck", "EraCheck", "Finding")}
    assert sorted(schema["properties"]) == ["exit_code", "schema_version", "servers", "toolproof_version"]
    assert keys["ServerCheck"] == [
        "call_timeout_s", "classification", "classification_source", "configured_era", "eras", "exit_code",
        "findings", "max_output_bytes", "server_id", "stderr_tail", "target", "transport",
    ]  # fmt: skip
    assert keys["EraCheck"] == [
        "calls", "capabilities", "completed", "connected", "drift", "era", "error_shapes", "failure", "findings",
        "listings_agree", "malformed", "notifications", "prompts", "protocol_version", "read_resource_tool",
        "requests", "resource_templates", "resources", "server_name", "server_version", "tools",
    ]  # fmt: skip
    assert keys["Finding"] == ["decision", "era", "kind", "message"]
