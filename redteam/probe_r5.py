"""Round 5's direct probes: each drives one pipeline through the port with its exposing input.

``python -m redteam.probe NAME`` runs one (``REDTEAM_REFERENCE=1``: against the reference, for the right answer).
Registered in redteam.probe's PROBES when redteam.probe is imported. Stdio servers are run through a small shell
wrapper (``_wrapped``) that can record the environment and directory it was started with and refuse to start while a
flag file exists (a server kept down).
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolproof.spec import InstanceConfig, McpClassification, McpServerConfig, ProposedCall

from .probe import USER, Clock, FnTool, _chosen, ok, probe, step
from .probe_r3 import _fake, _status, _tool

READ = McpClassification(side_effect="READ_ONLY", risk="LOW", idempotency="IDEMPOTENT")
WRITES = McpClassification(side_effect="EXTERNAL_WRITE", risk="LOW", idempotency="NON_IDEMPOTENT")


@asynccontextmanager
async def _open(f: Any, servers: list[McpServerConfig], tools: list[Any] | None = None) -> AsyncIterator[Any]:
    with tempfile.TemporaryDirectory() as d:
        config = InstanceConfig(store_dir=Path(d) / "s", workspace=Path(d), mcp_servers=servers)
        clock = Clock()
        async with _chosen(f()).open(config, tools or [], clock) as inst:
            setattr(inst, "probe_clock", clock)  # noqa: B010  (the probes advance it)
            yield inst


def _wrapped(fake: str, work: Path, *, record: bool = False) -> list[str]:
    """A command serving ``fake`` over stdio; it refuses to start while ``work/down`` exists."""
    serve = f"{shlex.quote(sys.executable)} -m toolproof.fakes.mcp {fake}"
    dump = f"env > {work}/env.txt; pwd > {work}/cwd.txt; " if record else ""
    return ["/bin/sh", "-c", f"{dump}test -e {work}/down && exit 3; exec {serve}"]


async def _call(inst: Any, run: str, n: int, tool: str, **arguments: Any) -> str:
    provenance = {k: ["u"] for k in arguments}  # the user's own words: no approval in the way
    call = ProposedCall(call_id=f"c{n}", tool_name=tool, arguments=arguments, provenance=provenance)
    d = (await inst.submit(step(run, n, call, context=USER)))[0]
    return _status(d)


async def _kinds(inst: Any, kind: str | None = None) -> list[str]:
    return [str(c.kind) for c in await inst.catalog_history() if kind is None or c.kind == kind]


def _memory(fake: Any, **kw: Any) -> McpServerConfig:
    return McpServerConfig(server_id="s", transport="memory", server=fake, **({"classification": READ} | kw))


# -- D4.2 / D7.5: a connection that drops --------------------------------------------------------------------


async def _mid_call(f: Any, server: McpServerConfig) -> Any:
    async with _open(f, [server]) as inst:
        await inst.advertise("r")
        return {"write whose process dies mid-call": await _call(inst, "r", 0, "mcp.s.write", text="x")}


@probe
async def r5_drop_over_http() -> Any:
    from redteam.r5_d04 import drop_unavailable_over_http as f
    from toolproof.fakes.mcp import http_server

    async with http_server("ExitsMidCallServer") as url:
        return await _mid_call(
            f, McpServerConfig(server_id="s", transport="http", url=url, classification=WRITES, call_timeout_s=5)
        )


@probe
async def r5_drop_new_era() -> Any:
    from redteam.r5_d04 import drop_unavailable_new_era as f
    from toolproof.fakes.mcp import stdio_command

    cfg = McpServerConfig(
        server_id="s",
        transport="stdio",
        command=stdio_command("ExitsMidCallServer"),
        classification=WRITES,
        protocol="2026-07-28",
        call_timeout_s=5,
    )
    return await _mid_call(f, cfg)


@probe
async def r5_drop_read_only() -> Any:
    from redteam.r5_d04 import drop_always_raises as f
    from toolproof.fakes.mcp import stdio_command

    cfg = McpServerConfig(
        server_id="s", transport="stdio", command=stdio_command("ExitsMidCallServer"), classification=READ
    )
    return await _mid_call(f, cfg)


# -- D5.9 ----------------------------------------------------------------------------------------------------


def _prompt_server(names: list[str], tools: list[str]) -> Any:
    async def list_prompts(_ctx: Any, _p: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt(name=n, description="p") for n in names])

    return _fake(lambda: [_tool(t) for t in tools], on_list_prompts=list_prompts)


async def _skills(f: Any, fake: Any) -> Any:
    async with _open(f, [_memory(fake.server)]) as inst:
        ad = await inst.advertise("r")
        return {"tools": sorted(t.name for t in ad.tools), "skills": sorted(s.name for s in ad.skills)}


@probe
async def r5_prompt_segment() -> Any:
    from redteam.r5_d05 import prompt_segment_only_on_clash as f

    return await _skills(f, _prompt_server(["summarize", "echo"], ["echo"]))


@probe
async def r5_prompts_first_wins() -> Any:
    from redteam.r5_d05 import alike_prompts_first_wins as f

    return await _skills(f, _prompt_server(["Get-Item", "get item", "other"], ["echo"]))


@probe
async def r5_prompts_raw_grouped() -> Any:
    from redteam.r5_d05 import alike_prompts_grouped_by_remote_name as f

    return await _skills(f, _prompt_server(["Get-Item", "get item", "other"], ["echo"]))


@probe
async def r5_twin_prompt() -> Any:
    from redteam.r5_d05 import twin_prompt_yields_to_tool as f

    return await _skills(f, _prompt_server(["fetch", "other"], ["fetch"]))


# -- D7.4 ----------------------------------------------------------------------------------------------------


async def _env(f: Any, **server: Any) -> Any:
    with tempfile.TemporaryDirectory() as w:
        work = Path(w)
        cfg = McpServerConfig(
            server_id="s", transport="stdio", command=_wrapped("PlainServer", work, record=True), **server
        )
        async with _open(f, [cfg]) as inst:
            await inst.advertise("r")
        env = dict(line.split("=", 1) for line in (work / "env.txt").read_text().splitlines() if "=" in line)
        keys = ("HOME", "TOOLPROOF_FAKE_API_KEY", "RT5_WORKER_SECRET")
        return {"env": {k: env.get(k) for k in keys}, "cwd": (work / "cwd.txt").read_text().strip()}


@probe
async def r5_env_worker() -> Any:
    import os

    from redteam.r5_d07 import stdio_env_over_worker_env as f

    os.environ["RT5_WORKER_SECRET"] = "worker-only"
    return await _env(f, env={"TOOLPROOF_FAKE_API_KEY": "k"})


@probe
async def r5_env_default_wins() -> Any:
    from redteam.r5_d07 import stdio_default_env_wins as f

    return await _env(f, env={"HOME": "/srv/configured-home", "TOOLPROOF_FAKE_API_KEY": "k"})


@probe
async def r5_cwd_without_env() -> Any:
    from redteam.r5_d07 import stdio_cwd_only_with_env as f

    return await _env(f, cwd="/tmp")


# -- D7.5 / D7.6: a lost server, kept down by a flag file -----------------------------------------------------


@asynccontextmanager
async def _downable(f: Any, tools: list[Any] | None = None) -> AsyncIterator[tuple[Any, Path]]:
    with tempfile.TemporaryDirectory() as w:
        work = Path(w)
        cfg = McpServerConfig(
            server_id="s", transport="stdio", command=_wrapped("ExitsBetweenCallsServer", work), classification=READ
        )
        async with _open(f, [cfg], tools) as inst:
            yield inst, work


async def _lose(inst: Any, work: Path, run: str = "a") -> str:
    """Session ``run`` starts, the server exits and is kept down; the next call finds it lost."""
    await inst.advertise(run)
    await _call(inst, run, 0, "mcp.s.exit")
    (work / "down").touch()
    return await _call(inst, run, 1, "mcp.s.echo", text="x")


@probe
async def r5_catalog_forgotten() -> Any:
    from redteam.r5_d07 import lost_server_catalog_forgotten as f

    async with _downable(f) as (inst, work):
        lost = await _lose(inst, work)
        ad = await inst.advertise("b")
        return {
            "call finding it lost": lost,
            "new session's tools": [t.name for t in ad.tools],
            "new session's call": await _call(inst, "b", 0, "mcp.s.echo", text="x"),
        }


@probe
async def r5_error_as_loss() -> Any:
    from redteam.r5_d07 import server_error_taken_for_loss as f

    state = {"asked": 0}

    async def list_prompts(_ctx: Any, _p: Any) -> types.ListPromptsResult:
        state["asked"] += 1
        if state["asked"] > 1:  # answers at connect, then an error the server answers
            raise MCPError(code=-32603, message="prompt store offline")
        return types.ListPromptsResult(prompts=[])

    fake = _fake(lambda: [_tool("echo")], on_list_prompts=list_prompts)
    async with _open(f, [_memory(fake.server)]) as inst:
        await inst.advertise("r")
        return {
            "call after prompts/list answered an error": await _call(inst, "r", 0, "mcp.s.echo", text="x"),
            "history": await _kinds(inst),
        }


@probe
async def r5_first_listing_raises() -> Any:
    from redteam.r5_d07 import first_listing_failure_propagates as f

    local = FnTool(__import__("toolproof.spec", fromlist=["ToolSpec"]).ToolSpec(name="t.r"), ok)
    async with _downable(f, [local]) as (inst, work):
        await inst.advertise("a")
        await _call(inst, "a", 0, "mcp.s.exit")
        (work / "down").touch()
        try:
            result = await _call(inst, "b", 0, "t.r")
        except Exception as exc:
            result = f"raised {type(exc).__name__}: {exc}"
        return {"builtin call in the session that found the server gone": result}


async def _needs(inst: Any, work: Path, n: int, advance: float) -> list[int]:
    """``n`` new sessions, ``advance`` instance-clock seconds apart, while the server is down."""
    seen = []
    for i in range(n):
        inst.probe_clock.t += advance
        await inst.advertise(f"s{i}")
        seen.append(len(await _kinds(inst, "reconnect_failed")))
    return seen


@probe
async def r5_backoff_uncapped() -> Any:
    from redteam.r5_d07 import backoff_uncapped as f

    async with _downable(f) as (inst, work):
        await _lose(inst, work)
        return {"reconnect_failed entries after each need, 61 s apart": await _needs(inst, work, 10, 61.0)}


@probe
async def r5_backoff_jitter() -> Any:
    from redteam.r5_d07 import backoff_jitter_over_cap as f

    async with _downable(f) as (inst, work):
        await _lose(inst, work)
        return {"reconnect_failed entries after each need, 61 s apart": await _needs(inst, work, 10, 61.0)}


@probe
async def r5_failures_collapsed() -> Any:
    from redteam.r5_d07 import reconnect_failures_collapsed as f

    async with _downable(f) as (inst, work):
        await _lose(inst, work)
        return {"reconnect_failed entries after each need, 61 s apart": await _needs(inst, work, 4, 61.0)}


@probe
async def r5_gives_up() -> Any:
    from redteam.r5_d07 import reconnect_gives_up as f

    async with _downable(f) as (inst, work):
        await _lose(inst, work)
        failed = await _needs(inst, work, 6, 61.0)
        (work / "down").unlink()
        inst.probe_clock.t += 61.0
        await inst.advertise("back")
        return {
            "failed": failed,
            "new session's call once the server is back": await _call(inst, "back", 0, "mcp.s.echo", text="x"),
            "reconnected entries": len(await _kinds(inst, "reconnected")),
        }


@probe
async def r5_calls_never_reconnect() -> Any:
    from redteam.r5_d07 import calls_never_reconnect as f

    async with _downable(f) as (inst, work):
        await _lose(inst, work)
        (work / "down").unlink()
        inst.probe_clock.t += 5.0
        return {
            "call in the running session after the backoff": await _call(inst, "a", 2, "mcp.s.echo", text="x"),
            "history": await _kinds(inst),
        }


# -- D8.9 ----------------------------------------------------------------------------------------------------


def _resources(listed: Callable[[], list[types.Resource]], *, templates: bool = False) -> Any:
    async def list_resources(_ctx: Any, _p: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=listed())

    async def read_resource(_ctx: Any, p: Any) -> types.ReadResourceResult:
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=str(p.uri), text="x" * 64)])

    handlers: dict[str, Any] = {"on_list_resources": list_resources, "on_read_resource": read_resource}
    if templates:

        async def list_templates(_ctx: Any, _p: Any) -> types.ListResourceTemplatesResult:
            return types.ListResourceTemplatesResult(resource_templates=[])

        handlers["on_list_resource_templates"] = list_templates
    return _fake(lambda: [_tool("echo")], **handlers)


async def _tools(f: Any, server: Any, runs: int = 1, between: Callable[[], None] | None = None) -> Any:
    out = {}
    async with _open(f, [_memory(server)]) as inst:
        for i in range(runs):
            out[f"session {i} tools"] = sorted(t.name for t in (await inst.advertise(f"r{i}")).tools)
            if between:
                between()
    return out


@probe
async def r5_templates_only() -> Any:
    from redteam.r5_d08 import resources_without_templates as f
    from toolproof.fakes.mcp import TemplateResourcesServer

    return await _tools(f, TemplateResourcesServer())


@probe
async def r5_templates_first() -> Any:
    from redteam.r5_d08 import templates_asked_first as f

    one = [types.Resource(uri="file:///r", name="r")]
    return await _tools(f, _resources(lambda: one).server)


@probe
async def r5_resources_once() -> Any:
    from redteam.r5_d08 import resources_judged_once as f

    state: dict[str, list[types.Resource]] = {"now": []}
    fake = _resources(lambda: state["now"], templates=True)
    return await _tools(
        f, fake.server, runs=2, between=lambda: state.update(now=[types.Resource(uri="file:///r", name="r")])
    )


# -- D8.10 ---------------------------------------------------------------------------------------------------


async def _over_cap(f: Any, *, error: bool = False, resource: bool = False) -> Any:
    async def big(_ctx: Any, _p: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="y" * 200)], is_error=error)

    async def list_resources(_ctx: Any, _p: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri="file:///r", name="r")])

    async def read_resource(_ctx: Any, p: Any) -> types.ReadResourceResult:
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=str(p.uri), text="z" * 200)])

    fake = _fake(lambda: [_tool("big")], {"big": big}, on_list_resources=list_resources, on_read_resource=read_resource)
    async with _open(f, [_memory(fake.server, max_output_bytes=32)]) as inst:
        await inst.advertise("r")
        if resource:
            call = ProposedCall(call_id="c", tool_name="mcp.s.read_resource", arguments={"uri": "file:///r"})
        else:
            call = ProposedCall(call_id="c", tool_name="mcp.s.big")
        d = (await inst.submit(step("r", 0, call, context=USER)))[0]
        return {"status": _status(d), "external_detail": getattr(d, "external_detail", None)}


@probe
async def r5_cap_detail() -> Any:
    from redteam.r5_d08 import cap_verdict_as_detail as f

    return await _over_cap(f)


@probe
async def r5_cap_error_result() -> Any:
    from redteam.r5_d08 import error_result_before_cap as f

    return await _over_cap(f, error=True)


@probe
async def r5_cap_resource() -> Any:
    from redteam.r5_d08 import resource_cap_remote_rejected as f

    return await _over_cap(f, resource=True)


# -- D9.2 ----------------------------------------------------------------------------------------------------


async def _notices(f: Any, server: Any, act: Callable[[Any], Awaitable[Any]] | None = None, **kw: Any) -> Any:
    async with _open(f, [_memory(server, **kw)]) as inst:
        await inst.advertise("r")
        if act is not None:
            await act(inst)
        import anyio

        await anyio.sleep(0.5)
        return {"notified entries": len(await _kinds(inst, "notified"))}


@probe
async def r5_early_notice() -> Any:
    from redteam.r5_d09 import notices_before_listing_ignored as f
    from toolproof.fakes.mcp import EarlyNoticeServer

    return {era: await _notices(f, EarlyNoticeServer(), protocol=era) for era in ("legacy", "2026-07-28")}


@probe
async def r5_notice_burst() -> Any:
    from redteam.r5_d09 import notices_coalesced_per_instant as f
    from toolproof.fakes.mcp import ListChangedFloodServer

    return await _notices(f, ListChangedFloodServer(), lambda inst: _call(inst, "r", 0, "mcp.s.flood"))


@probe
async def r5_listen_twice() -> Any:
    from redteam.r5_d09 import listen_events_recorded_too as f
    from toolproof.fakes.mcp import GrowingCatalogServer

    return {
        era: await _notices(f, GrowingCatalogServer(), lambda inst: _call(inst, "r", 0, "mcp.s.grow"), protocol=era)
        for era in ("legacy", "2026-07-28")
    }


@probe
async def r5_unadvertised_notice() -> Any:
    from redteam.r5_d09 import unadvertised_notices_ignored as f
    from toolproof.fakes.mcp import RugPullServer

    return await _notices(f, RugPullServer(), lambda inst: _call(inst, "r", 0, "mcp.s.transfer"))


# -- further paths -------------------------------------------------------------------------------------------


@probe
async def r5_prompt_not_normalized() -> Any:
    from redteam.r5_d05 import prompt_name_not_normalized as f

    return await _skills(f, _prompt_server(["Get Item", "plain"], ["echo"]))


@probe
async def r5_lose_every_server() -> Any:
    from redteam.r5_d07 import lose_marks_every_server as f
    from toolproof.fakes.mcp import PlainServer

    with tempfile.TemporaryDirectory() as w:
        work = Path(w)
        down = McpServerConfig(
            server_id="s", transport="stdio", command=_wrapped("ExitsBetweenCallsServer", work), classification=READ
        )
        healthy = McpServerConfig(server_id="m", transport="memory", server=PlainServer(), classification=READ)
        async with _open(f, [down, healthy]) as inst:
            lost = await _lose(inst, work)
            return {
                "lost server's call": lost,
                "healthy server's call": await _call(inst, "a", 2, "mcp.m.echo", text="x"),
            }


@probe
async def r5_restart_env() -> Any:
    from redteam.r5_d07 import restart_drops_env as f

    with tempfile.TemporaryDirectory() as w:
        work = Path(w)
        cfg = McpServerConfig(
            server_id="s",
            transport="stdio",
            command=_wrapped("ExitsBetweenCallsServer", work, record=True),
            classification=READ,
            env={"TOOLPROOF_FAKE_API_KEY": "k"},
            cwd="/tmp",
        )
        async with _open(f, [cfg]) as inst:
            await inst.advertise("a")
            first = (work / "env.txt").read_text().count("TOOLPROOF_FAKE_API_KEY=k"), (work / "cwd.txt").read_text()
            await _call(inst, "a", 0, "mcp.s.exit")
            await _call(inst, "a", 1, "mcp.s.echo", text="x")
            inst.probe_clock.t += 5
            call = await _call(inst, "b", 0, "mcp.s.echo", text="x")
            again = (work / "env.txt").read_text().count("TOOLPROOF_FAKE_API_KEY=k"), (work / "cwd.txt").read_text()
            return {"first start (key, cwd)": first, "after restart (key, cwd)": again, "call": call}


@asynccontextmanager
async def _http_fake(name: str, port: int) -> AsyncIterator[str]:
    import anyio

    proc = await anyio.open_process(
        [sys.executable, "-m", "toolproof.fakes.mcp", name, "--transport", "http", "--port", str(port)]
    )
    try:
        for _ in range(100):
            try:
                await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                break
            except OSError:
                await anyio.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        if proc.returncode is None:
            proc.terminate()
        await proc.wait()


@probe
async def r5_http_reconnect() -> Any:
    import socket

    from redteam.r5_d07 import http_never_reconnected as f

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async with _http_fake("ExitsBetweenCallsServer", port) as url:
        cfg = McpServerConfig(server_id="s", transport="http", url=url, classification=READ, call_timeout_s=5)
        async with _open(f, [cfg]) as inst:
            await inst.advertise("a")
            await _call(inst, "a", 0, "mcp.s.exit")
            lost = await _call(inst, "a", 1, "mcp.s.echo", text="x")
            async with _http_fake("ExitsBetweenCallsServer", port):
                inst.probe_clock.t += 61
                await inst.advertise("b")
                return {
                    "lost": lost,
                    "new session's call, server back": await _call(inst, "b", 0, "mcp.s.echo", text="x"),
                    "history": await _kinds(inst),
                }


@probe
async def r5_due_boundary() -> Any:
    from redteam.r5_d07 import reconnect_due_strictly_after as f

    async with _downable(f) as (inst, work):
        await _lose(inst, work)
        failed = await _needs(inst, work, 7, 61.0)
        inst.probe_clock.t += 60.0  # exactly the capped backoff after the last failure
        await inst.advertise("exact")
        return {
            "failed after 7 needs": failed,
            "after a need exactly 60 s later": len(await _kinds(inst, "reconnect_failed")),
        }


@probe
async def r5_cap_transient() -> Any:
    from redteam.r5_d08 import cap_refusal_transient as f

    return await _over_cap(f)


@probe
async def r5_notice_repins() -> Any:
    from redteam.r5_d09 import notice_repins_sessions as f
    from toolproof.fakes.mcp import GrowingCatalogServer

    async with _open(f, [_memory(GrowingCatalogServer())]) as inst:
        before = sorted(t.name for t in (await inst.advertise("r")).tools)
        await _call(inst, "r", 0, "mcp.s.grow")
        import anyio

        await anyio.sleep(0.5)
        after = sorted(t.name for t in (await inst.advertise("r")).tools)
        return {"before": before, "same session after the notice": after}
