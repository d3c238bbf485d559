"""The instrumented world of the contract: context, transport, gate, argument generator, probes."""

from __future__ import annotations

import contextlib
import socket
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import find
from hypothesis import settings as hypothesis_settings

from toolproof.contracts import DEFAULT_SETTINGS, ContractContext, _gate, arguments_strategy, check_tool
from toolproof.contracts._execute import Runner
from toolproof.contracts._trace import EventKind
from toolproof.contracts._world import ContractWorld
from toolproof.fakes._authors import SendsMessageTool
from toolproof.spec import (
    CONTEXT_MEMBERS,
    ConfigurationError,
    ContentPart,
    HarnessError,
    IdempotencyClass,
    JsonObject,
    SideEffect,
    ToolExecutionContext,
    ToolResult,
    ToolSpec,
)

_OK = ToolResult(ok=True, content=[ContentPart(text="ok")])


class _Tool:
    """A tool for one test: ``behave`` is its body."""

    def __init__(self, behave: Any, **spec: Any) -> None:
        self.spec = ToolSpec(name="tests.tool", **spec)
        self._behave = behave

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        result: ToolResult = await self._behave(arguments, context)
        return result


def _findings(behave: Any, observation: str = "auto", **spec: Any) -> list[str]:
    return [f.rule_id for f in check_tool(lambda: _Tool(behave, **spec), observation=observation).findings]


_CONSEQUENTIAL = {"side_effect": SideEffect.EXTERNAL_WRITE, "idempotency": IdempotencyClass.NON_IDEMPOTENT}


def test_the_context_has_exactly_the_nine_members_and_satisfies_the_protocol() -> None:
    seen: dict[str, Any] = {}

    async def probe(arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        seen["context"] = context
        seen["members"] = sorted(name for name in dir(context) if not name.startswith("_"))
        seen["credential"] = await context.credential_resolver.resolve("orders:write")
        seen["other"] = await context.credential_resolver.resolve("admin")
        seen["artifact"] = await context.artifact_writer.write("out.txt", b"abc")
        return _OK

    # Python-level observation runs the tool in this process, so the probe's notes are readable here.
    assert _findings(probe, "python", required_scopes=frozenset({"orders:write"})) == []
    assert isinstance(seen["context"], ContractContext)
    assert isinstance(seen["context"], ToolExecutionContext)
    assert seen["members"] == sorted(CONTEXT_MEMBERS)
    assert (seen["credential"], seen["other"]) == ("contract-credential:orders:write", None)
    assert seen["artifact"].size == 3


def test_a_request_sent_before_the_mark_is_seen_first_even_when_the_response_is_read_after() -> None:
    # Send the bytes, mark, then read: the transport numbers the request when its bytes arrive.
    async def send_then_mark(arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        assert context.target is not None
        parts = urlsplit(context.target)
        with socket.create_connection((parts.hostname, parts.port), timeout=5) as sock:
            sock.sendall(b"POST /raw HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
            await context.mark_effect_sent()
            sock.recv(1024)
        return _OK

    assert _findings(send_then_mark, **_CONSEQUENTIAL) == ["D4.1"]


def test_a_connection_opened_before_the_mark_but_used_after_is_not_an_early_effect() -> None:
    async def connect_mark_send(arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        assert context.target is not None
        parts = urlsplit(context.target)
        with socket.create_connection((parts.hostname, parts.port), timeout=5) as sock:
            await context.mark_effect_sent()
            sock.sendall(b"POST /raw HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
            sock.recv(1024)
        return _OK

    assert _findings(connect_mark_send, **_CONSEQUENTIAL) == []


def test_an_async_http_client_is_seen_at_the_transport() -> None:
    httpx2 = pytest.importorskip("httpx2")

    async def post_unmarked(arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        async with httpx2.AsyncClient() as client:
            await client.post(f"{context.target}/async", json={"a": 1})
        return _OK

    report = check_tool(lambda: _Tool(post_unmarked, **_CONSEQUENTIAL))
    assert [f.rule_id for f in report.findings] == ["D4.10"]
    assert "POST /async (no Idempotency-Key) at the transport -> 200" in report.findings[0].seen


def test_the_loopback_transport_sees_the_good_tools_post_after_its_mark() -> None:
    world = ContractWorld()
    try:
        run = Runner(SendsMessageTool, SendsMessageTool.spec, world).run({"text": "hello"})
    finally:
        world.close()
    kinds = [(e.kind, e.effect) for e in run.trace.events() if e.kind is not EventKind.ATTEMPT]
    assert kinds == [(EventKind.MARK, False), (EventKind.HTTP, True), (EventKind.END, False)]
    assert run.trace.lines()[2] == "  2. POST /messages (no Idempotency-Key) at the transport -> 200"


def test_a_workspace_write_the_gate_cannot_see_is_caught_by_the_snapshot_at_the_mark() -> None:
    # SQLite writes its file from C, without Python's audit events: the snapshot at the watermark sees it.
    async def write_then_mark(arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        with contextlib.closing(sqlite3.connect(context.workspace / "db.sqlite")) as db:
            db.execute("create table t (x)")
            db.commit()
        await context.mark_effect_sent()
        return _OK

    def tool() -> _Tool:
        return _Tool(write_then_mark, side_effect=SideEffect.WORKSPACE_WRITE, idempotency="NON_IDEMPOTENT")

    report = check_tool(tool, observation="python")
    assert [f.rule_id for f in report.findings] == ["D4.1"]
    assert "workspace changed unseen by the gate: created 'db.sqlite'" in report.findings[0].seen


def test_an_idempotent_tool_that_appends_changes_the_world_twice() -> None:
    async def append(arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        with (context.workspace / "log.txt").open("a") as log:
            log.write("line\n")
        return _OK

    report = check_tool(lambda: _Tool(append, side_effect=SideEffect.WORKSPACE_WRITE))
    assert [f.rule_id for f in report.findings] == ["D10.6"]
    assert report.findings[0].seen.endswith("the workspace changed again (changed 'log.txt')")


@pytest.mark.parametrize(
    ("act", "shown"),
    [
        (lambda ctx: Path("/dev/shm/toolproof-contract-escape").write_text("x"), "open for writing"),
        (lambda ctx: socket.create_connection(("192.0.2.1", 443), timeout=1), "connect 192.0.2.1:443"),
        (lambda ctx: socket.getaddrinfo("example.invalid", 443), "name lookup example.invalid:443"),
    ],
    ids=["file", "connect", "lookup"],
)
def test_the_gate_refuses_what_leaves_the_workspace_and_the_target(act: Any, shown: str) -> None:
    async def escape(arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        act(context)
        return _OK

    report = check_tool(lambda: _Tool(escape), observation="python")
    assert [f.rule_id for f in report.findings] == ["D2.7"]
    assert shown in report.findings[0].seen
    assert not Path("/dev/shm/toolproof-contract-escape").exists()


def test_a_tool_that_blocks_past_its_deadline_is_abandoned_and_fails_d2_4() -> None:
    async def block(arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        time.sleep(0.9)  # noqa: ASYNC251 - the misbehaviour under test: it blocks the event loop
        return _OK

    report = check_tool(lambda: _Tool(block, deadline_s=0.1))
    assert [f.rule_id for f in report.findings] == ["D2.4"]
    assert "still running 0.5s after" in report.findings[0].seen


def test_a_tool_waiting_on_its_deadline_is_cancelled_and_conforms() -> None:
    async def wait(arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        await context.cancellation.wait()
        return _OK

    report = check_tool(lambda: _Tool(wait, deadline_s=0.05))
    assert report.passed
    assert [note.split(" ", 1)[1] for note in report.notes] == ["example(s) ran into their deadline and were cancelled"]


def test_arguments_follow_the_schema_subset_deterministically() -> None:
    schema: JsonObject = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "pattern": "^[a-z]{2,4}$"},
            "count": {"type": "integer", "minimum": 3, "maximum": 5},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "mode": {"enum": ["fast", "slow"]},
            "tags": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2},
        },
        "required": ["name", "count", "mode"],
        "additionalProperties": False,
    }
    strategy, notes = arguments_strategy(schema)
    assert notes == []
    settings = hypothesis_settings(DEFAULT_SETTINGS, max_examples=200)
    minimal = find(strategy, lambda _: True, settings=settings)
    assert minimal == {"name": "aa", "count": 3, "mode": "fast"}
    big = find(strategy, lambda a: len(a) == 5, settings=settings)
    assert set(big) == {"name", "count", "ratio", "mode", "tags"}
    assert 0 < big["ratio"] <= 1


def test_an_unsupported_schema_keyword_is_reported_and_a_minimal_value_used() -> None:
    schema: JsonObject = {
        "type": "object",
        "properties": {"target": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
        "required": ["target"],
    }
    strategy, notes = arguments_strategy(schema)
    assert notes == ["arguments.target: the generator does not support anyOf; only a minimal value is generated there"]
    assert find(strategy, lambda _: True, settings=DEFAULT_SETTINGS) == {"target": ""}
    report = check_tool(lambda: _Tool(_ok, input_schema=schema))
    assert report.notes == notes


async def _ok(arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
    return _OK


def test_a_schema_no_argument_satisfies_is_a_configuration_error() -> None:
    schema: JsonObject = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 5, "maximum": 1}}}
    schema["required"] = ["n"]
    with pytest.raises(ConfigurationError, match=r"^tool 'tests\.tool': the generator could not produce arguments"):
        check_tool(lambda: _Tool(_ok, input_schema=schema))


def test_checks_leave_no_workspace_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A temporary folder of this test's own: other xdist workers' checks make their workspaces in the shared /tmp.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = set(Path(tempfile.gettempdir()).glob("toolproof-contract-*"))
    assert check_tool(lambda: _Tool(_ok)).passed
    assert set(Path(tempfile.gettempdir()).glob("toolproof-contract-*")) <= before


def test_the_gate_admits_one_check_at_a_time() -> None:
    world = ContractWorld()
    try:
        first, second = world.example(), world.example()
        with (
            _gate.watching(first),
            pytest.raises(HarnessError, match=r"already running in this process"),
            _gate.watching(second),
        ):
            pass
    finally:
        world.close()
