"""Round 4's direct probes: each drives one pipeline through the port with its exposing input.

``python -m redteam.probe NAME`` runs one (``REDTEAM_REFERENCE=1``: against the reference, for the right answer).
Registered in redteam.probe's PROBES when redteam.probe is imported.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio
import mcp_types as types

from toolproof.reference.hooks import ReferenceImplementation
from toolproof.spec import (
    ConfigurationError,
    ContextItem,
    CrashPlan,
    CrashPoint,
    InstanceConfig,
    McpClassification,
    ProposedCall,
    ToolFailure,
    ToolResult,
    ToolSpec,
    TrustLabel,
)

from .probe import USER, WRITE, Clock, FnTool, _chosen, ok, probe, step, with_instance
from .probe_r3 import UNTRUSTED, _fake, _status, _tool, _wcall, _with_server

MIXED = [ContextItem(id="u", trust=TrustLabel.USER, text="hi"), *UNTRUSTED]


async def _restart(
    impl: ReferenceImplementation,
    tools: list[Any],
    first: Callable[[Any], Awaitable[Any]],
    second: Callable[[Any], Awaitable[Any]],
    clock: Clock,
    crash: CrashPlan | None = None,
    advance: float = 3600.0,
) -> Any:
    """``first`` on one instance (crashing as ``crash`` says), then, ``advance`` seconds later on ``clock`` (past
    every lease), ``second`` on a new instance over the same store."""
    impl = _chosen(impl)
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "w").mkdir()
        cfg = InstanceConfig(store_dir=Path(d) / "s", workspace=Path(d) / "w", crash=crash)
        out: dict[str, Any] = {}
        try:
            async with impl.open(cfg, tools, clock) as inst:
                out["first"] = await first(inst)
        except BaseException as exc:  # SimulatedCrash, possibly inside an exception group
            out["first"] = f"died: {type(exc).__name__}"
        clock.t += advance
        async with impl.open(cfg.model_copy(update={"crash": None}), tools, clock) as inst:
            out["second"] = await second(inst)
        return out


# -- D2 ------------------------------------------------------------------------------------------------------


@probe
async def r4_batch_credentials() -> Any:
    from redteam.r4_d02 import credentials_scoped_per_batch as f

    seen: dict[str, Any] = {}

    async def peek(_a: dict[str, Any], c: Any) -> ToolResult:
        seen["t.a resolves 'b'"] = await c.credential_resolver.resolve("b")
        return ToolResult(ok=True)

    a = FnTool(ToolSpec(name="t.a", required_scopes=frozenset({"a"})), peek)
    b = FnTool(ToolSpec(name="t.b", required_scopes=frozenset({"b"})), ok)

    async def body(inst: Any) -> Any:
        calls = [ProposedCall(call_id="1", tool_name="t.a"), ProposedCall(call_id="2", tool_name="t.b")]
        await inst.submit(step("r", 0, *calls, context=USER))
        return seen

    return await with_instance(f(), [a, b], body, credentials={"a": "A", "b": "B"})


@probe
async def r4_relative_deadline() -> Any:
    from redteam.r4_d02 import deadline_member_relative as f

    seen: dict[str, Any] = {}

    async def peek(_a: dict[str, Any], c: Any) -> ToolResult:
        seen["context.deadline"] = round(c.deadline, 1)
        seen["seconds left by it"] = round(c.deadline - time.time(), 1)
        return ToolResult(ok=True)

    async def body(inst: Any) -> Any:
        await inst.submit(step("r", 0, ProposedCall(call_id="c", tool_name="t.d"), context=USER))
        return seen

    return await with_instance(f(), [FnTool(ToolSpec(name="t.d", deadline_s=30), peek)], body)


@probe
async def r4_artifact_overwrite() -> Any:
    from redteam.r4_d02 import artifact_names_reduced_alike_overwrite as f

    async def two(_a: dict[str, Any], c: Any) -> ToolResult:
        first = await c.artifact_writer.write("a b.txt", b"first")
        second = await c.artifact_writer.write("a?b.txt", b"second, longer")
        return ToolResult(ok=True, artifacts=[first, second])

    async def body(inst: Any) -> Any:
        d = (await inst.submit(step("r", 0, ProposedCall(call_id="c", tool_name="t.a"), context=USER)))[0]
        out = []
        for ref in d.artifacts:
            data = await anyio.Path(unquote(urlsplit(ref.uri).path)).read_bytes()
            out.append((ref.name, ref.sha256 == hashlib.sha256(data).hexdigest(), ref.size == len(data)))
        return {"artifact, digest matches file, size matches file": out}

    return await with_instance(f(), [FnTool(ToolSpec(name="t.a"), two)], body)


@probe
async def r4_approved_resolver() -> Any:
    from redteam.r4_d02 import approved_call_resolver_unscoped as f

    seen: dict[str, Any] = {}

    async def peek(_a: dict[str, Any], c: Any) -> ToolResult:
        seen["resolves 'admin'"] = await c.credential_resolver.resolve("admin")
        return ToolResult(ok=True)

    tool = FnTool(WRITE.model_copy(update={"required_scopes": frozenset({"repo"})}), peek)

    async def body(inst: Any) -> Any:
        held = (await inst.submit(step("r", 0, _wcall(), context=UNTRUSTED)))[0]
        d = await inst.resolve_approval(held.invocation_id, True)
        return {"held": held.status, "approved": _status(d)} | seen

    return await with_instance(f(), [tool], body, credentials={"repo": "R", "admin": "ADMIN"})


# -- D4 ------------------------------------------------------------------------------------------------------


@probe
async def r4_recorded_sweep() -> Any:
    from redteam.r4_d04 import recovery_resumes_recorded_at_claim as f

    tool = FnTool(WRITE, ok)
    clock = Clock()

    async def first(inst: Any) -> Any:
        return await inst.submit(step("r", 0, _wcall(), context=UNTRUSTED))  # held for approval, dies after record

    async def second(inst: Any) -> Any:
        swept = await inst.sweep()
        rows = await inst.invocations("r")
        return {"sweep": [_status(d) for d in swept], "row": rows[0].status, "executions": tool.calls}

    return await _restart(f(), [tool], first, second, clock, CrashPlan(point=CrashPoint("after_record")))


@probe
async def r4_mcp_mark_after() -> Any:
    from redteam.r4_d04 import mcp_marks_after_remote_call as f
    from toolproof.spec import McpServerConfig

    async def hang(_ctx: Any, _p: Any) -> types.CallToolResult:
        await anyio.sleep(30)
        return types.CallToolResult(content=[])

    fake = _fake(lambda: [_tool("send")], {"send": hang})
    writes = McpClassification(side_effect="EXTERNAL_WRITE", risk="HIGH", idempotency="NON_IDEMPOTENT")

    async def body(inst: Any) -> Any:
        await inst.advertise("r")
        d = (await inst.submit(step("r", 0, ProposedCall(call_id="c", tool_name="mcp.s.send"), context=USER)))[0]
        rows = await inst.invocations("r")
        return {"status": _status(d), "watermark": rows[0].effect_sent_at is not None}

    cfg = McpServerConfig(
        server_id="s", transport="memory", server=fake.server, classification=writes, call_timeout_s=1
    )
    with tempfile.TemporaryDirectory() as d:
        config = InstanceConfig(store_dir=Path(d) / "s", workspace=Path(d), mcp_servers=[cfg])
        async with _chosen(f()).open(config, [], Clock()) as inst:
            return await body(inst)


@probe
async def r4_step_escape() -> Any:
    from redteam.r4_d04 import escape_judged_per_step as f
    from toolproof.spec import SimulatedCrash

    async def marks(_a: dict[str, Any], c: Any) -> ToolResult:
        await c.mark_effect_sent()
        return ToolResult(ok=True)

    dies: dict[str, bool] = {"armed": True}

    async def dies_before_mark(_a: dict[str, Any], c: Any) -> ToolResult:
        if dies["armed"]:
            dies["armed"] = False
            raise SimulatedCrash("before the watermark")
        await c.mark_effect_sent()
        return ToolResult(ok=True)

    one = FnTool(WRITE.model_copy(update={"name": "t.one"}), marks)
    two = FnTool(WRITE.model_copy(update={"name": "t.two"}), dies_before_mark)
    calls = [
        ProposedCall(call_id="1", tool_name="t.one", arguments={"p": "x"}, provenance={"p": ["u"]}),
        ProposedCall(call_id="2", tool_name="t.two", arguments={"p": "x"}, provenance={"p": ["u"]}),
    ]

    async def first(inst: Any) -> Any:
        return await inst.submit(step("r", 0, *calls, context=USER))

    async def second(inst: Any) -> Any:
        swept = await inst.sweep()
        return {"second member after sweep": [_status(d) for d in swept], "t.two executions": two.calls}

    return await _restart(f(), [one, two], first, second, Clock())


# -- D8 ------------------------------------------------------------------------------------------------------


def _resource_server() -> Any:
    async def list_resources(_ctx: Any, _p: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri="file:///r", name="r")])

    async def read_resource(_ctx: Any, p: Any) -> types.ReadResourceResult:
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=str(p.uri), text="contents")])

    return _fake(lambda: [], on_list_resources=list_resources, on_read_resource=read_resource)


@probe
async def r4_resource_claim() -> Any:
    from redteam.r4_d08 import read_resource_skips_claim as f

    async def body(inst: Any) -> Any:
        await inst.advertise("r")
        call = ProposedCall(call_id="c", tool_name="mcp.s.read_resource", arguments={"uri": "file:///r"})
        d = (await inst.submit(step("r", 0, call, context=USER)))[0]
        rows = await inst.invocations("r")
        return {"status": _status(d), "events": [e.kind for e in await inst.events("r")], "attempt": rows[0].attempt}

    return await _with_server(f, _resource_server(), body)


def _result_server(result: types.CallToolResult) -> Any:
    async def answer(_ctx: Any, _p: Any) -> types.CallToolResult:
        return result

    return _fake(lambda: [_tool("t")], {"t": answer})


async def _call_t(inst: Any) -> Any:
    await inst.advertise("r")
    d = (await inst.submit(step("r", 0, ProposedCall(call_id="c", tool_name="mcp.s.t"), context=USER)))[0]
    detail = getattr(d, "external_detail", None)
    delivered = sum(len(e.text.encode()) for e in getattr(d, "content", []))
    return {"status": _status(d), "delivered_bytes": delivered, "detail_bytes": len(detail.text) if detail else 0}


@probe
async def r4_cap_errors() -> Any:
    from redteam.r4_d08 import cap_skips_error_results as f

    big_error = types.CallToolResult(content=[types.TextContent(type="text", text="e" * 1000)], is_error=True)
    return await _with_server(f, _result_server(big_error), _call_t, max_output_bytes=100)


@probe
async def r4_cap_per_block() -> Any:
    from redteam.r4_d08 import cap_checked_per_block as f

    blocks = types.CallToolResult(content=[types.TextContent(type="text", text="b" * 60) for _ in range(10)])
    return await _with_server(f, _result_server(blocks), _call_t, max_output_bytes=100)


@probe
async def r4_cap_at_limit() -> Any:
    from redteam.r4_d08 import cap_rejects_at_limit as f

    exact = types.CallToolResult(content=[types.TextContent(type="text", text="x" * 100)])
    return await _with_server(f, _result_server(exact), _call_t, max_output_bytes=100)


# -- D11 -----------------------------------------------------------------------------------------------------


async def _one_write(f: Any, context: list[ContextItem], call: ProposedCall) -> Any:
    tool = FnTool(WRITE, ok)

    async def body(inst: Any) -> Any:
        d = (await inst.submit(step("r", 0, call, context=context)))[0]
        rows = await inst.invocations("r")
        return {"status": _status(d), "argument_trust": rows[0].argument_trust, "origin_trust": rows[0].origin_trust}

    return await with_instance(f(), [tool], body)


@probe
async def r4_workspace_write_unapproved() -> Any:
    from redteam.r4_d11 import approval_external_write_only as f

    return await _one_write(f, UNTRUSTED, _wcall())


@probe
async def r4_origin_contributors() -> Any:
    from redteam.r4_d11 import origin_over_contributors_only as f

    return await _one_write(f, MIXED, _wcall())


@probe
async def r4_empty_contributors() -> Any:
    from redteam.r4_d11 import empty_contributors_take_origin as f

    call = ProposedCall(call_id="c", tool_name="t.w", arguments={"p": "x"}, provenance={"p": []})
    return await _one_write(f, USER, call)


@probe
async def r4_label_cached() -> Any:
    from redteam.r4_d11 import argument_label_cached_per_step as f

    tool = FnTool(WRITE, ok)
    calls = [
        ProposedCall(call_id="1", tool_name="t.w", arguments={"p": "x"}, provenance={"p": ["u"]}),
        ProposedCall(call_id="2", tool_name="t.w", arguments={"p": "y"}),  # unknown provenance
    ]

    async def body(inst: Any) -> Any:
        ds = await inst.submit(step("r", 0, *calls, context=USER))
        rows = await inst.invocations("r")
        return {"statuses": [_status(d) for d in ds], "argument_trust": [r.argument_trust for r in rows]}

    return await with_instance(f(), [tool], body)


@probe
async def r4_holds_restart() -> Any:
    from redteam.r4_d11 import pending_holds_in_memory as f

    tool = FnTool(WRITE, ok)
    held: dict[str, str] = {}

    async def first(inst: Any) -> Any:
        d = (await inst.submit(step("r", 0, _wcall(), context=UNTRUSTED)))[0]
        held["id"] = d.invocation_id
        return d.status

    async def second(inst: Any) -> Any:
        try:
            d = await inst.resolve_approval(held["id"], True)
        except ConfigurationError as exc:
            return f"approval after restart refused: {exc}"
        return {"approval after restart": _status(d), "executions": tool.calls}

    return await _restart(f(), [tool], first, second, Clock(), advance=1.0)


# -- D14 -----------------------------------------------------------------------------------------------------


@probe
async def r4_consecutive_denials() -> Any:
    from redteam.r4_d14 import denials_counted_consecutively as f

    tool = FnTool(WRITE, ok)

    async def body(inst: Any) -> Any:
        out = []
        for n, approve in enumerate([False, True, False]):
            held = (await inst.submit(step("r", n, _wcall(), context=UNTRUSTED)))[0]
            out.append(_status(await inst.resolve_approval(held.invocation_id, approve)))
        out.append(_status((await inst.submit(step("r", 3, _wcall(), context=UNTRUSTED)))[0]))
        return out

    return await with_instance(f(), [tool], body)


@probe
async def r4_loop_before_uncertain() -> Any:
    from redteam.r4_d14 import loop_checked_before_uncertain as f

    async def fourth_escapes(_a: dict[str, Any], c: Any) -> ToolResult:
        await c.mark_effect_sent()
        if tool.calls == 4:
            raise RuntimeError("connection reset after sending")
        return ToolResult(ok=True)

    tool = FnTool(WRITE, fourth_escapes)

    async def body(inst: Any) -> Any:
        return [_status((await inst.submit(step("r", n, _wcall(), context=USER)))[0]) for n in range(5)]

    return await with_instance(f(), [tool], body)


@probe
async def r4_uncertain_memory() -> Any:
    from redteam.r4_d14 import uncertain_remembered_in_process as f

    async def escapes_once(_a: dict[str, Any], c: Any) -> ToolResult:
        await c.mark_effect_sent()
        if tool.calls == 1:
            raise RuntimeError("connection reset after sending")
        return ToolResult(ok=True)

    tool = FnTool(WRITE, escapes_once)

    async def first(inst: Any) -> Any:
        return _status((await inst.submit(step("r", 0, _wcall(), context=USER)))[0])

    async def second(inst: Any) -> Any:
        d = (await inst.submit(step("r", 1, _wcall(), context=USER)))[0]
        return {"identical call after restart": _status(d), "executions": tool.calls}

    return await _restart(f(), [tool], first, second, Clock())


@probe
async def r4_loop_failing() -> Any:
    from redteam.r4_d14 import loop_counts_succeeded_only as f

    async def fails(_a: dict[str, Any], _c: Any) -> ToolResult:
        return ToolResult(ok=False, failure=ToolFailure(kind="ERROR"))

    tool = FnTool(ToolSpec(name="t.f"), fails)

    async def body(inst: Any) -> Any:
        call = ProposedCall(call_id="c", tool_name="t.f")
        out = [_status((await inst.submit(step("r", n, call, context=USER)))[0]) for n in range(5)]
        return {"statuses": out, "executions": tool.calls}

    return await with_instance(f(), [tool], body)


@probe
async def r4_identical_tool_name() -> Any:
    from redteam.r4_d14 import identical_ignores_tool_name as f

    tools = [FnTool(ToolSpec(name="t.a"), ok), FnTool(ToolSpec(name="t.b"), ok)]

    async def body(inst: Any) -> Any:
        names = ["t.a", "t.b", "t.a", "t.b", "t.a"]
        calls = [ProposedCall(call_id="c", tool_name=name) for name in names]
        return [_status((await inst.submit(step("r", n, call, context=USER)))[0]) for n, call in enumerate(calls)]

    return await with_instance(f(), tools, body)


# -- D15 -----------------------------------------------------------------------------------------------------


@probe
async def r4_parallel_writes() -> Any:
    from redteam.r4_d15 import parallel_admits_idempotent_writes as f

    second_started = anyio.Event()
    seen: dict[str, bool] = {}

    async def first(_a: dict[str, Any], _c: Any) -> ToolResult:
        with anyio.move_on_after(0.5):
            await second_started.wait()
        seen["second write started while the first ran"] = second_started.is_set()
        return ToolResult(ok=True)

    async def second(_a: dict[str, Any], _c: Any) -> ToolResult:
        second_started.set()
        return ToolResult(ok=True)

    spec = ToolSpec(name="t.w1", side_effect="WORKSPACE_WRITE", idempotency="IDEMPOTENT")
    tools = [FnTool(spec, first), FnTool(spec.model_copy(update={"name": "t.w2"}), second)]
    calls = [
        ProposedCall(call_id="1", tool_name="t.w1", arguments={"p": "x"}, provenance={"p": ["u"]}),
        ProposedCall(call_id="2", tool_name="t.w2", arguments={"p": "x"}, provenance={"p": ["u"]}),
    ]

    async def body(inst: Any) -> Any:
        await inst.submit(step("r", 0, *calls, context=USER))
        return seen

    return await with_instance(f(), tools, body)


@probe
async def r4_stops_at_hold() -> Any:
    from redteam.r4_d15 import sequential_batch_stops_at_hold as f

    read = FnTool(ToolSpec(name="t.r"), ok)
    calls = [_wcall(), ProposedCall(call_id="2", tool_name="t.r")]

    async def body(inst: Any) -> Any:
        ds = await inst.submit(step("r", 0, *calls, context=UNTRUSTED))
        return {"dispositions": [_status(d) for d in ds], "rows": len(await inst.invocations("r"))}

    return await with_instance(f(), [FnTool(WRITE, ok), read], body)


@probe
async def r4_dedupe_members() -> Any:
    from redteam.r4_d15 import batch_dedupes_identical_members as f

    tool = FnTool(ToolSpec(name="t.r"), ok)
    calls = [ProposedCall(call_id="1", tool_name="t.r"), ProposedCall(call_id="2", tool_name="t.r")]

    async def body(inst: Any) -> Any:
        ds = await inst.submit(step("r", 0, *calls, context=USER))
        rows = await inst.invocations("r")
        return {
            "distinct invocation ids": len({d.invocation_id for d in ds}),
            "rows": [r.call_id for r in rows],
            "executions": tool.calls,
        }

    return await with_instance(f(), [tool], body)


@probe
async def r4_resource_deadline() -> Any:
    from redteam.r4_d08 import read_resource_default_deadline as f

    async def list_resources(_ctx: Any, _p: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri="file:///r", name="r")])

    async def hang(_ctx: Any, _p: Any) -> types.ReadResourceResult:
        await anyio.sleep(60)
        return types.ReadResourceResult(contents=[])

    fake = _fake(lambda: [], on_list_resources=list_resources, on_read_resource=hang)

    async def body(inst: Any) -> Any:
        await inst.advertise("r")
        call = ProposedCall(call_id="c", tool_name="mcp.s.read_resource", arguments={"uri": "file:///r"})
        start = time.monotonic()
        d = (await inst.submit(step("r", 0, call, context=USER)))[0]
        return {"status": _status(d), "seconds": round(time.monotonic() - start, 1)}

    return await _with_server(f, fake, body, call_timeout_s=1)


@probe
async def r4_mcp_excerpt() -> Any:
    from redteam.r4_d12 import excerpt_skips_mcp_results as f

    long = types.CallToolResult(content=[types.TextContent(type="text", text="L" * 500)])
    fake = _result_server(long)

    async def body(inst: Any) -> Any:
        await inst.advertise("r")
        d = (await inst.submit(step("r", 0, ProposedCall(call_id="c", tool_name="mcp.s.t"), context=USER)))[0]
        return {"status": _status(d), "envelopes": len(d.content), "artifacts": len(d.artifacts)}

    from toolproof.spec import McpServerConfig

    cfg = McpServerConfig(server_id="s", transport="memory", server=fake.server, classification=_READ)
    with tempfile.TemporaryDirectory() as d:
        config = InstanceConfig(store_dir=Path(d) / "s", workspace=Path(d), mcp_servers=[cfg], max_output_bytes=100)
        async with _chosen(f()).open(config, [], Clock()) as inst:
            return await body(inst)


_READ = McpClassification(side_effect="READ_ONLY", risk="LOW", idempotency="IDEMPOTENT")
