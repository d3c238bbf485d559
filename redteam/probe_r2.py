"""Round 2's direct probes (registered in ``redteam.probe.PROBES``): ``python -m redteam.probe <name>``, and the same
with ``REDTEAM_REFERENCE=1`` for the reference's answer to the same input."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from toolproof.reference.hooks import ReferenceImplementation
from toolproof.spec import (
    ConfigurationError,
    ContentPart,
    ContextItem,
    InstanceConfig,
    ProposedCall,
    ToolResult,
    ToolSpec,
    TrustLabel,
)

from .probe import USER, Clock, FnTool, _chosen, ok, probe, step, with_instance


@asynccontextmanager
async def opened(
    impl: ReferenceImplementation, tools: list[Any], clock: Clock | None = None, **config: Any
) -> AsyncIterator[Any]:
    """An instance of ``impl`` (or the reference, with REDTEAM_REFERENCE=1) in a fresh directory."""
    with tempfile.TemporaryDirectory() as d:
        cfg = InstanceConfig(store_dir=Path(d) / "s", workspace=Path(d), **config)
        async with _chosen(impl).open(cfg, tools, clock or Clock()) as inst:
            yield inst


async def opens(impl: ReferenceImplementation, tools: list[Any], **config: Any) -> str:
    """Whether an instance opens with ``tools`` / ``config``: "opened" or the ConfigurationError's text."""
    try:
        async with opened(impl, tools, **config):
            return "opened"
    except ConfigurationError as exc:
        return f"ConfigurationError: {str(exc)[:90]}"


def _parts(*texts: str) -> Any:
    async def fn(_a: dict[str, Any], _c: Any) -> ToolResult:
        return ToolResult(ok=True, content=[ContentPart(text=t) for t in texts])

    return fn


@probe
async def r2_empty_parts() -> Any:
    from redteam.r2_d01 import empty_parts_dropped as f

    tool = FnTool(ToolSpec(name="t.o"), _parts("a", "", "b"))

    async def body(inst: Any) -> Any:
        d = (await inst.submit(step("r", 0, ProposedCall(call_id="c", tool_name="t.o"), context=USER)))[0]
        return {"returned": ["a", "", "b"], "delivered": [e.text for e in d.content]}

    return await with_instance(f(), [tool], body)


@probe
async def r2_scope_prefix() -> Any:
    from redteam.r2_d02 import scope_prefix_match as f

    seen: dict[str, Any] = {}

    async def resolve(_a: dict[str, Any], c: Any) -> ToolResult:
        seen["repo"] = await c.credential_resolver.resolve("repo")
        seen["repo:admin"] = await c.credential_resolver.resolve("repo:admin")
        return ToolResult(ok=True)

    tool = FnTool(ToolSpec(name="t.c", required_scopes=frozenset({"repo"})), resolve)

    async def body(inst: Any) -> Any:
        await inst.submit(step("r", 0, ProposedCall(call_id="c", tool_name="t.c"), context=USER))
        return seen

    return await with_instance(f(), [tool], body, credentials={"repo": "read-token", "repo:admin": "ADMIN-TOKEN"})


@probe
async def r2_name_newline() -> Any:
    from redteam.r2_d05 import grammar_dollar_accepts_newline as f

    tool = FnTool(ToolSpec(name="files.read_text\n"), ok)
    out: dict[str, Any] = {"open": await opens(f(), [tool])}
    if out["open"] == "opened":
        async with opened(f(), [tool]) as inst:
            d = await inst.submit(step("r", 0, ProposedCall(call_id="c", tool_name="files.read_text\n"), context=USER))
            out["call"] = d[0].status
            out["executions"] = tool.calls
    return out


@probe
async def r2_name_caps() -> Any:
    from redteam.r2_d05 import name_cap_exclusive, name_length_uncapped

    def named(length: int) -> FnTool:
        return FnTool(ToolSpec(name="t." + "a" * (length - 2)), ok)

    out: dict[str, Any] = {}
    for f in (name_cap_exclusive, name_length_uncapped):
        out[f.__name__] = {n: await opens(f(), [named(n)]) for n in (127, 128, 129)}
    return out


def mcp_server(tools: list[Any], behaviours: dict[str, Any] | None = None, **handlers: Any) -> Any:
    """A fake MCP server (the harness's FakeServer wiring) listing ``tools``; every tool echoes ``text``."""
    from toolproof.fakes.mcp import FakeServer
    from toolproof.fakes.mcp._base import echo

    return FakeServer("ProbeServer", lambda: list(tools), behaviours or {t.name: echo for t in tools}, **handlers)


def mcp_config(fake: Any, server_id: str = "plain", **kw: Any) -> Any:
    from toolproof.spec import McpServerConfig

    return McpServerConfig(server_id=server_id, transport="memory", server=fake.server, **kw)


def classified(**kw: Any) -> Any:
    from toolproof.spec import McpClassification

    return McpClassification(**({"side_effect": "READ_ONLY", "risk": "LOW", "idempotency": "IDEMPOTENT"} | kw))


@probe
async def r2_mcp_lenient_names() -> Any:
    import mcp_types as types

    from redteam.r2_d05 import mcp_resolve_normalizes_proposed as f
    from toolproof.fakes.mcp._base import TEXT_SCHEMA

    fake = mcp_server([types.Tool(name="echo", input_schema=TEXT_SCHEMA)])
    out: dict[str, Any] = {}
    async with opened(f(), [], mcp_servers=[mcp_config(fake, classification=classified())]) as inst:
        for n, name in enumerate(("mcp.plain.Echo", "mcp.plain.ECHO", "mcp.plain.echo")):
            call = ProposedCall(call_id=f"c{n}", tool_name=name, arguments={"text": "x"}, provenance={"text": ["u"]})
            d = (await inst.submit(step("r", n, call, context=USER)))[0]
            out[name] = getattr(d, "reason_code", d.status)
    out["server_calls"] = [line for line in fake.log if line.startswith("tools/call")]
    return out


async def _advertised_names(f: Any, remote_names: list[str]) -> Any:
    import mcp_types as types

    from toolproof.spec import mcp_tool_name

    fake = mcp_server([types.Tool(name=n, input_schema={"type": "object"}) for n in remote_names])
    async with opened(f(), [], mcp_servers=[mcp_config(fake, classification=classified())]) as inst:
        advertised = (await inst.advertise("r")).names()
    return {
        "pinned normalization (spec.mcp_tool_name)": [mcp_tool_name("plain", n) for n in remote_names],
        "advertised": advertised,
        "advertised lengths": [len(n) for n in advertised],
    }


@probe
async def r2_normalize_lower_first() -> Any:
    from redteam.r2_d05 import normalize_lowers_before_nfkc as f

    return await _advertised_names(f, ["𝐃𝐞𝐥𝐞𝐭𝐞", "ℌelp"])


@probe
async def r2_normalize_cap_first() -> Any:
    from redteam.r2_d05 import normalize_caps_before_prefix as f

    return await _advertised_names(f, ["9" + "x" * 80])


@probe
async def r2_resolve_nfkc() -> Any:
    from redteam.r2_d05 import resolve_folds_compatibility_characters as f

    tool = FnTool(ToolSpec(name="files.read"), ok)

    async def body(inst: Any) -> Any:
        out = {}
        for n, name in enumerate(("ｆｉｌｅｓ.read", "ﬁles.read", "files.read")):
            d = (await inst.submit(step("r", n, ProposedCall(call_id="c", tool_name=name), context=USER)))[0]
            out[name] = getattr(d, "reason_code", d.status)
        out["executions"] = tool.calls
        return out

    return await with_instance(f(), [tool], body)


def _check(pipeline_class: Any, config: InstanceConfig) -> str:
    """Decision 7's configuration check of ``pipeline_class``'s MCP adapter (the reference's with REDTEAM_REFERENCE=1),
    without connecting anything."""
    import os

    from toolproof.reference.hooks import McpAdapter

    adapter_class = McpAdapter if os.environ.get("REDTEAM_REFERENCE") else pipeline_class.mcp_class
    try:
        adapter_class.check(None, config)
    except ConfigurationError as exc:
        return f"ConfigurationError: {exc}"
    return "accepted"


@probe
async def r2_allowlist_userinfo() -> Any:
    from redteam.r2_d07 import _NetlocPipeline
    from toolproof.spec import McpServerConfig

    out = {}
    for url in ("http://127.0.0.1:80@evil.example/mcp", "http://evil.example/mcp", "http://127.0.0.1:8000/mcp"):
        server = McpServerConfig(server_id="t", origin="tenant", transport="http", url=url)
        cfg = InstanceConfig(
            store_dir=Path("/tmp/x"), workspace=Path("/tmp"), mcp_servers=[server], egress_allowlist=["127.0.0.1"]
        )
        out[url] = _check(_NetlocPipeline, cfg)
    return out


@probe
async def r2_tenant_memory() -> Any:
    from redteam.r2_d07 import _StdioBlacklistPipeline
    from toolproof.spec import McpServerConfig

    server = McpServerConfig(server_id="t", origin="tenant", transport="memory")
    cfg = InstanceConfig(
        store_dir=Path("/tmp/x"), workspace=Path("/tmp"), mcp_servers=[server], egress_allowlist=["127.0.0.1"]
    )
    return {"tenant memory server": _check(_StdioBlacklistPipeline, cfg)}
