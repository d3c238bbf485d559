"""Direct probes: drive one pipeline through the port and print what an exposing input makes it do.

Used to confirm that a GAP pipeline really carries its mistake (so the gap is in the suite, not in the
pipeline). ``python -m redteam.probe <name>``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from toolproof.reference.hooks import ReferenceImplementation
from toolproof.spec import (
    ContentPart,
    ContextItem,
    InstanceConfig,
    ProposedCall,
    StepRequest,
    ToolResult,
    ToolSpec,
    TrustLabel,
)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        return self.t


class FnTool:
    def __init__(self, spec: ToolSpec, fn: Callable[[dict[str, Any], Any], Awaitable[Any]]) -> None:
        self._spec, self._fn, self.calls = spec, fn, 0
        self.started = anyio.Event()

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    async def execute(self, arguments: dict[str, Any], context: Any) -> Any:
        self.calls += 1
        self.started.set()
        return await self._fn(arguments, context)


def _chosen(impl: ReferenceImplementation) -> ReferenceImplementation:
    """REDTEAM_REFERENCE=1 runs the probe against the plain reference (what the exposing input should give)."""
    return ReferenceImplementation() if os.environ.get("REDTEAM_REFERENCE") else impl


async def with_instance(impl: ReferenceImplementation, tools: list[Any], body: Any, **config: Any) -> Any:
    impl = _chosen(impl)
    with tempfile.TemporaryDirectory() as d:
        cfg = InstanceConfig(store_dir=Path(d) / "s", workspace=Path(d) / "w", **config)
        (Path(d) / "w").mkdir()
        async with impl.open(cfg, tools, Clock()) as inst:
            return await body(inst)


def step(
    run: str, n: int, *calls: ProposedCall, context: list[ContextItem] | None = None, tenant: str = "t1"
) -> StepRequest:
    return StepRequest(tenant=tenant, run_id=run, step_number=n, calls=list(calls), context=context or [])


USER = [ContextItem(id="u", trust=TrustLabel.USER, text="hi")]


async def ok(_a: dict[str, Any], _c: Any) -> ToolResult:
    return ToolResult(ok=True)


PROBES: dict[str, Callable[[], Awaitable[Any]]] = {}


def probe(fn: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
    PROBES[fn.__name__] = fn
    return fn


@probe
async def structure_without_schema() -> Any:
    from redteam.d01 import structure_without_schema_passes

    async def structured(_a: dict[str, Any], _c: Any) -> ToolResult:
        return ToolResult(ok=True, structured={"x": 1})

    tool = FnTool(ToolSpec(name="t.s"), structured)

    async def body(inst: Any) -> Any:
        return await inst.submit(step("r", 0, ProposedCall(call_id="c", tool_name="t.s"), context=USER))

    return await with_instance(structure_without_schema_passes(), [tool], body)


@probe
async def resolver_reaches_pipeline() -> Any:
    from redteam.d02 import resolver_reaches_pipeline as f

    seen: dict[str, Any] = {}

    async def peek(_a: dict[str, Any], c: Any) -> ToolResult:
        seen["registry"] = type(c.credential_resolver.audit.registry).__name__
        seen["store"] = type(c.credential_resolver.audit.store).__name__
        return ToolResult(ok=True)

    tool = FnTool(ToolSpec(name="t.p"), peek)

    async def body(inst: Any) -> Any:
        await inst.submit(step("r", 0, ProposedCall(call_id="c", tool_name="t.p"), context=USER))
        return seen

    return await with_instance(f(), [tool], body)


@probe
async def replay_reruns_failed() -> Any:
    from redteam.d03 import replay_reruns_failed as f
    from toolproof.spec import ToolFailure

    async def fails(_a: dict[str, Any], _c: Any) -> ToolResult:
        return ToolResult(ok=False, failure=ToolFailure(kind="ERROR"))

    tool = FnTool(ToolSpec(name="t.f"), fails)

    async def body(inst: Any) -> Any:
        s = step("r", 0, ProposedCall(call_id="c", tool_name="t.f"), context=USER)
        first = await inst.submit(s)
        second = await inst.submit(s)
        return {"executions": tool.calls, "first": first[0].reason_code, "replay": second[0].reason_code}

    return await with_instance(f(), [tool], body)


WRITE = ToolSpec(name="t.w", side_effect="WORKSPACE_WRITE", idempotency="NON_IDEMPOTENT")


@probe
async def key_nested_order() -> Any:
    from redteam.d10 import key_sorts_top_level_only as f

    tool = FnTool(ToolSpec(name="t.r"), ok)

    async def body(inst: Any) -> Any:
        await inst.submit(
            step("r", 0, ProposedCall(call_id="c", tool_name="t.r", arguments={"q": {"a": 1, "b": 2}}), context=USER)
        )
        await inst.submit(
            step("r", 0, ProposedCall(call_id="c", tool_name="t.r", arguments={"q": {"b": 2, "a": 1}}), context=USER)
        )
        rows = await inst.invocations("r")
        return {"executions": tool.calls, "distinct_keys": len({r.idempotency_key for r in rows})}

    return await with_instance(f(), [tool], body)


@probe
async def approval_argument_only() -> Any:
    from redteam.d11 import approval_checks_argument_label_only as f

    tool = FnTool(WRITE, ok)
    ctx = [
        ContextItem(id="u", trust=TrustLabel.USER, text="write"),
        ContextItem(id="e", trust=TrustLabel.EXTERNAL_UNTRUSTED, text="web"),
    ]

    async def body(inst: Any) -> Any:
        d = await inst.submit(
            step(
                "r",
                0,
                ProposedCall(call_id="c", tool_name="t.w", arguments={"p": "x"}, provenance={"p": ["u"]}),
                context=ctx,
            )
        )
        return {"disposition": d[0].status, "executions": tool.calls}

    return await with_instance(f(), [tool], body)


@probe
async def empty_context() -> Any:
    from redteam.d11 import empty_context_is_trusted as f

    tool = FnTool(WRITE, ok)

    async def body(inst: Any) -> Any:
        d = await inst.submit(step("r", 0, ProposedCall(call_id="c", tool_name="t.w")))
        rows = await inst.invocations("r")
        return {"disposition": d[0].status, "executions": tool.calls, "origin_trust": rows[0].origin_trust}

    return await with_instance(f(), [tool], body)


@probe
async def late_approval() -> Any:
    from redteam.d11 import late_approval_honoured as f

    tool = FnTool(WRITE, ok)
    clock = Clock()

    async def body(inst: Any) -> Any:
        d = await inst.submit(step("r", 0, ProposedCall(call_id="c", tool_name="t.w", arguments={"p": "x"})))
        clock.t += 400
        answer = await inst.resolve_approval(d[0].invocation_id, True)
        return {
            "held": d[0].status,
            "answer": answer.status,
            "reason": getattr(answer, "reason_code", None),
            "executions": tool.calls,
        }

    with tempfile.TemporaryDirectory() as dd:
        cfg = InstanceConfig(store_dir=Path(dd) / "s", workspace=Path(dd))
        async with _chosen(f()).open(cfg, [tool], clock) as inst:
            return await body(inst)


@probe
async def unknown_contributor() -> Any:
    from redteam.d11 import unknown_contributor_ignored as f

    tool = FnTool(ToolSpec(name="t.r"), ok)

    async def body(inst: Any) -> Any:
        await inst.submit(
            step(
                "r",
                0,
                ProposedCall(call_id="c", tool_name="t.r", arguments={"x": "v"}, provenance={"x": ["u", "ghost"]}),
                context=USER,
            )
        )
        rows = await inst.invocations("r")
        return {"argument_trust": rows[0].argument_trust}

    return await with_instance(f(), [tool], body)


async def boom(_a: dict[str, Any], _c: Any) -> ToolResult:
    raise RuntimeError("connection reset by api.example.com: token=abc123")


@probe
async def crash_outcome() -> Any:
    from redteam.d13 import crashed_not_retryable, exception_text_in_message

    out = {}
    for f in (crashed_not_retryable, exception_text_in_message):
        tool = FnTool(ToolSpec(name="t.b"), boom)

        async def body(inst: Any) -> Any:
            d = await inst.submit(step("r", 0, ProposedCall(call_id="c", tool_name="t.b"), context=USER))
            return (d[0].reason_code.value, d[0].retryable, d[0].message)

        out[f.__name__] = await with_instance(f(), [tool], body)
    return out


def wcall(n: int, **kw: Any) -> ProposedCall:
    return ProposedCall(call_id=f"c{n}", tool_name="t.w", arguments={"p": "x"}, **kw)


@probe
async def approval_denials_count() -> Any:
    from redteam.d14 import denial_means_policy_denied_only as f

    tool = FnTool(WRITE, ok)

    async def body(inst: Any) -> Any:
        out = []
        for n in range(3):
            d = (await inst.submit(step("r", n, wcall(n))))[0]
            if d.status == "SUSPENDED":
                d = await inst.resolve_approval(d.invocation_id, False)
            out.append(getattr(d, "reason_code", d.status))
        return out

    return await with_instance(f(), [tool], body)


@probe
async def one_denial_then_runs() -> Any:
    from redteam.d14 import loop_counter_skips_denials as f

    tool = FnTool(WRITE, ok)

    async def body(inst: Any) -> Any:
        out = []
        for n in range(5):
            d = (await inst.submit(step("r", n, wcall(n))))[0]
            if d.status == "SUSPENDED":
                d = await inst.resolve_approval(d.invocation_id, n != 0)
            out.append(getattr(d, "reason_code", d.status))
        return out

    return await with_instance(f(), [tool], body)


@probe
async def uncertain_twice_removed() -> Any:
    from redteam.d14 import uncertain_checked_on_latest_only as f

    async def mark_then_raise(_a: dict[str, Any], c: Any) -> ToolResult:
        await c.mark_effect_sent()
        raise RuntimeError("lost")

    tool = FnTool(WRITE, mark_then_raise)

    async def body(inst: Any) -> Any:
        out = []
        for n in range(3):
            d = (await inst.submit(step("r", n, wcall(n, provenance={"p": ["u"]}), context=USER)))[0]
            out.append(getattr(d, "reason_code", d.status))
        return {"outcomes": out, "executions": tool.calls}

    return await with_instance(f(), [tool], body)


@probe
async def completion_order() -> Any:
    from redteam.d15 import parallel_results_in_completion_order as f

    async def slow(_a: dict[str, Any], _c: Any) -> ToolResult:
        await anyio.sleep(0.3)
        return ToolResult(ok=True, content=[ContentPart(text="slow")])

    async def fast(_a: dict[str, Any], _c: Any) -> ToolResult:
        return ToolResult(ok=True, content=[ContentPart(text="fast")])

    tools = [FnTool(ToolSpec(name="t.slow"), slow), FnTool(ToolSpec(name="t.fast"), fast)]

    async def body(inst: Any) -> Any:
        d = await inst.submit(
            step(
                "r",
                0,
                ProposedCall(call_id="a", tool_name="t.slow"),
                ProposedCall(call_id="b", tool_name="t.fast"),
                context=USER,
            )
        )
        return [x.content[0].text for x in d]

    return await with_instance(f(), tools, body)


@probe
async def sweep_suspended() -> Any:
    from redteam.d16 import sweep_picks_suspended as f

    control = FnTool(ToolSpec(name="t.ask", kind="CONTROL"), ok)
    clock = Clock()

    async def body(inst: Any) -> Any:
        d = await inst.submit(step("r", 0, ProposedCall(call_id="c", tool_name="t.ask"), context=USER))
        clock.t += 3600
        swept = await inst.sweep()
        events = [e.kind for e in await inst.events("r")]
        return {"first": d[0].status, "swept": [x.status for x in swept], "events": events}

    with tempfile.TemporaryDirectory() as dd:
        cfg = InstanceConfig(store_dir=Path(dd) / "s", workspace=Path(dd))
        async with _chosen(f()).open(cfg, [control], clock) as inst:
            return await body(inst)


@probe
async def sweep_live_lease() -> Any:
    from redteam.d04 import sweep_takes_live_leases as f

    release = anyio.Event()

    async def blocks(_a: dict[str, Any], _c: Any) -> ToolResult:
        if tool.calls == 1:
            await release.wait()
        return ToolResult(ok=True)

    tool = FnTool(ToolSpec(name="t.b", deadline_s=60), blocks)
    clock = Clock()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as dd:
        cfg = InstanceConfig(store_dir=Path(dd) / "s", workspace=Path(dd))
        async with _chosen(f()).open(cfg, [tool], clock) as a, _chosen(f()).open(cfg, [tool], clock) as b:

            async def worker_a() -> None:
                out["a"] = (await a.submit(step("r", 0, ProposedCall(call_id="c", tool_name="t.b"), context=USER)))[
                    0
                ].status

            async with anyio.create_task_group() as group:
                group.start_soon(worker_a)
                await tool.started.wait()
                clock.t += 1  # the lease (60 s) is live
                out["swept"] = [d.status for d in await b.sweep()]
                out["executions_during_lease"] = tool.calls
                release.set()
    return out


@probe
async def uncertain_metric_recovery() -> Any:
    from redteam.d04 import uncertain_metric_in_process_only as f

    async def mark_then_hang(_a: dict[str, Any], c: Any) -> ToolResult:
        await c.mark_effect_sent()
        await anyio.sleep_forever()
        raise AssertionError

    tool = FnTool(WRITE.model_copy(update={"deadline_s": 600}), mark_then_hang)
    clock = Clock()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as dd:
        cfg = InstanceConfig(store_dir=Path(dd) / "s", workspace=Path(dd))
        async with (
            _chosen(f()).open(cfg, [tool], clock) as a,
            _chosen(f()).open(cfg, [tool], clock) as b,
            anyio.create_task_group() as group,
        ):
            call = ProposedCall(call_id="c", tool_name="t.w", arguments={"p": "x"}, provenance={"p": ["u"]})
            group.start_soon(a.submit, step("r", 0, call, context=USER))
            await tool.started.wait()
            await anyio.sleep(0.2)
            clock.t += 120  # A is "dead": its lease expired
            out["swept"] = [getattr(d, "reason_code", d.status) for d in await b.sweep()]
            out["metrics"] = await b.metrics()
            group.cancel_scope.cancel()
    return out


@probe
async def unmarked_workspace_write() -> Any:
    from redteam.d04 import unmarked_flag_external_only as f

    tool = FnTool(WRITE, ok)  # WORKSPACE_WRITE, NON_IDEMPOTENT, never marks

    async def body(inst: Any) -> Any:
        call = ProposedCall(call_id="c", tool_name="t.w", arguments={"p": "x"}, provenance={"p": ["u"]})
        d = await inst.submit(step("r", 0, call, context=USER))
        return {"status": d[0].status, "metrics": await inst.metrics()}

    return await with_instance(f(), [tool], body)


def _texter(text: str) -> Any:
    async def fn(_a: dict[str, Any], _c: Any) -> ToolResult:
        return ToolResult(ok=True, content=[ContentPart(text=text)])

    return fn


async def _excerpt_probe(f: Any, text: str) -> Any:
    tool = FnTool(ToolSpec(name="t.o"), _texter(text))

    async def body(inst: Any) -> Any:
        d = (await inst.submit(step("r", 0, ProposedCall(call_id="c", tool_name="t.o"), context=USER)))[0]
        texts = [e.text for e in d.content]
        return {
            "envelopes": len(texts),
            "artifacts": len(d.artifacts),
            "delivered_bytes": sum(len(t.encode()) for t in texts),
            "has_U+FFFD": any("\ufffd" in t for t in texts),
        }

    return await with_instance(f(), [tool], body, max_output_bytes=100)


@probe
async def multibyte_under_char_limit() -> Any:
    from redteam.d12 import limit_counted_in_characters as f

    return await _excerpt_probe(f, "é" * 80)  # 80 characters, 160 bytes; limit 100 bytes


@probe
async def cut_inside_character() -> Any:
    from redteam.d12 import excerpt_cuts_characters as f

    return await _excerpt_probe(f, "a" + "é" * 200)  # the 50-byte head ends inside an é


from . import probe_r2 as _round_2  # noqa: E402  (registers round 2's probes in PROBES)
from . import probe_r3 as _round_3  # noqa: E402  (registers round 3's probes in PROBES)
from . import probe_r4 as _round_4  # noqa: E402  (registers round 4's probes in PROBES)
from . import probe_r5 as _round_5  # noqa: E402  (registers round 5's probes in PROBES)

_: Any = (_round_2, _round_3, _round_4, _round_5)


if __name__ == "__main__":
    # Run as a script this module is __main__; round 2 registered its probes in the importable redteam.probe.
    from redteam import probe as _importable

    PROBES.update(_importable.PROBES)
    for name in sys.argv[1:] or list(PROBES):
        print(name, "->", anyio.run(PROBES[name]))
