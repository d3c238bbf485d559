"""``toolproof check-server``: connect to one MCP server as the reference's adapter does, and say what ADR-0021 does to it.

Each era is one connection made by the reference's own ``McpAdapter`` (``toolproof.reference.hooks``),
with the operator's classification, era, timeout and cap. The only addition is a tap on the
transport: every message the server sends is read on its way to the adapter, unchanged, so the
notifications and the requests the adapter declines can be counted. Nothing extra is advertised
(no sampling, roots or elicitation callback), exactly as the reference connects.

What is sent to the server: the adapter's own connect and listings (two; ``advertise`` of two
sessions), one ``tools/list``, ``prompts/list``, ``resources/list`` and ``resources/templates/list``
for the raw view, and one ``tools/call`` of a name the server did not list (its error shape). A
listed tool is called only when the user names it (``--call``): a tool's call may have effects,
and only the user knows which of them are safe.
"""

from __future__ import annotations

import contextlib
import json
import math
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TextIO, cast

import anyio
import anyio.abc
import mcp_types as types
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from toolproof.reference.hooks import McpAdapter, Store, structure_accepted
from toolproof.reports import (
    CallObservation,
    EraCheck,
    ErrorShape,
    ListedPrompt,
    ListedTool,
    ServerCheck,
    ServerRequest,
)
from toolproof.spec import (
    MCP_PROTOCOLS,
    UNCLASSIFIED,
    CanonicalJsonError,
    CatalogChangeKind,
    InstanceConfig,
    JsonObject,
    McpServerConfig,
    McpTransport,
    ToolExecutionContext,
    ToolResult,
)

from ._check_findings import era_findings, findings_for

UNLISTED_TOOL = "toolproof_check_unlisted_tool"
"""The name of the one ``tools/call`` sent without the user asking: a tool the server did not list."""
TEXT_SHOWN = 160
"""How many characters of a server's text a summary shows (escaped)."""
DEADLINE_SHARE = 0.95
"""A ``--call`` is given up at this share of its deadline, before the SDK's read timeout of the same length fires."""
ERA_WAITS = 6
"""One era's check may take this many request waits (connect, listings, probes), plus one per ``--call``."""
STDERR_LINES = 20
"""How many of the server's last stderr lines the report keeps."""
FIRST_RUN, SECOND_RUN = "check-listing-1", "check-listing-2"
"""The two sessions whose advertisements are the two consecutive listings."""

Progress = Callable[[str], None]


@dataclass
class Call:
    """One tool the user asked to call, by its remote name, with its arguments."""

    remote_name: str
    arguments: JsonObject = field(default_factory=dict)


def parse_call(text: str) -> Call:
    """``NAME`` or ``NAME={json object}``.

    Raises:
        ValueError: the arguments are not a JSON object.
    """
    name, sep, raw = text.partition("=")
    if not name:
        raise ValueError(f"--call {text!r}: give NAME or NAME={{json object}}")
    if not sep:
        return Call(name)
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--call {text!r}: the arguments are not JSON ({exc.msg})") from None
    if not isinstance(arguments, dict):
        raise ValueError(f"--call {text!r}: the arguments must be a JSON object")
    return Call(name, arguments)


def shown(text: str) -> str:
    """External text as a summary may show it: control characters escaped, cut to ``TEXT_SHOWN``."""
    escaped = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return escaped if len(escaped) <= TEXT_SHOWN else escaped[:TEXT_SHOWN] + "…"


class Tap:
    """Reads every message a server sends, on its way to the adapter; what the checker is doing labels it."""

    def __init__(self) -> None:
        self.phase = "connect"
        self.notifications: Counter[str] = Counter()
        self.requests: list[ServerRequest] = []
        self.malformed = 0

    def see(self, item: SessionMessage | Exception) -> None:
        """Count one item of the read stream."""
        if isinstance(item, Exception):
            self.malformed += 1
            return
        message = item.message
        if isinstance(message, types.JSONRPCNotification):
            self.notifications[message.method] += 1
        elif isinstance(message, types.JSONRPCRequest):
            if message.method != "ping":
                self.requests.append(ServerRequest(method=message.method, during=self.phase, input_required=False))
        elif isinstance(message, types.JSONRPCResponse) and isinstance(message.result, dict):
            asked = message.result.get("inputRequests")
            if isinstance(asked, dict) or message.result.get("resultType") == "input_required":
                methods = [str(v.get("method", k)) for k, v in (asked or {}).items() if isinstance(v, dict)]
                for method in methods or ["input_required"]:
                    self.requests.append(ServerRequest(method=method, during=self.phase, input_required=True))


class TappedTransport:
    """The transport the reference would open for ``server`` (stdio or streamable HTTP), read through a ``Tap``.

    Entered afresh each time the adapter connects (a reconnect is a new process, as for the reference).
    """

    def __init__(self, server: McpServerConfig, tap: Tap, errlog: IO[str]) -> None:
        self._server = server
        self._tap = tap
        self._errlog = errlog
        self._stack: AsyncExitStack | None = None

    def _inner(self) -> contextlib.AbstractAsyncContextManager[Any]:
        server = self._server
        if server.transport is McpTransport.STDIO:
            assert server.command  # Invariant: McpServerConfig requires it for stdio.
            parameters = StdioServerParameters(
                command=server.command[0], args=server.command[1:], env=server.env, cwd=server.cwd
            )
            return stdio_client(parameters, errlog=cast(TextIO, self._errlog))
        assert server.url  # Invariant: McpServerConfig requires it for HTTP.
        return streamable_http_client(server.url)

    async def __aenter__(self) -> tuple[Any, Any]:
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            read, write = await stack.enter_async_context(self._inner())
            send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](math.inf)
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(group.cancel_scope.cancel)
            group.start_soon(self._pump, read, send)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return receive, write

    async def _pump(self, read: Any, send: anyio.abc.ObjectSendStream[SessionMessage | Exception]) -> None:
        async with send:
            async for item in read:
                self._tap.see(item)
                await send.send(item)

    async def __aexit__(self, *exc: object) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()


class _WallClock:
    def now(self) -> float:
        return time.time()


class _UnmarkedContext:
    # Only mark_effect_sent is used by McpTool.execute; the check records no invocation, so there is nothing to mark.
    async def mark_effect_sent(self) -> None:
        return None


def target_text(server: McpServerConfig) -> str:
    """The command line or the URL of ``server``."""
    return " ".join(server.command or []) if server.transport is McpTransport.STDIO else str(server.url)


def _probe_config(server: McpServerConfig, era: str, transport: TappedTransport, wait_s: float) -> McpServerConfig:
    # The tapped transport reaches the SDK as an object; everything the adapter reads stays the operator's.
    return McpServerConfig(
        server_id=server.server_id,
        transport=McpTransport.MEMORY,
        server=transport,
        classification=server.classification,
        protocol=cast(Any, era),
        call_timeout_s=min(server.call_timeout_s, wait_s),
        max_output_bytes=server.max_output_bytes,
        listing_max_age_s=server.listing_max_age_s,
    )


def _leaf(exc: BaseException) -> BaseException:
    # The first exception inside (nested) groups: a task group wraps whatever its tasks raise.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _failure(exc: BaseException) -> str:
    """One line: the exception, and what it hid (a group's first member, or a suppressed context)."""
    leaf = _leaf(exc)
    words = str(leaf).strip().splitlines()
    line = f"{type(leaf).__name__}: {shown(words[0]) if words else '(no message)'}"
    hidden = leaf.__cause__ or leaf.__context__
    inner = _leaf(hidden) if hidden is not None else leaf
    said = str(inner).strip().splitlines()
    if inner is not leaf and said and said[0] not in line:  # A re-raise can make an exception its own context.
        line += f" (cause: {type(inner).__name__}: {shown(said[0])})"
    return line


class _EraRun:
    """Everything seen on one era's connection, filled in as the check goes."""

    def __init__(self, era: str) -> None:
        self.era = era
        self.facts: dict[str, Any] = {"era": era, "connected": False, "failure": None}

    def result(self, tap: Tap) -> EraCheck:
        return EraCheck(
            **self.facts,
            notifications=dict(tap.notifications),
            requests=tap.requests,
            malformed=tap.malformed,
        )


async def _all_pages(method: Callable[..., Any], attribute: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    while True:
        page = await method(cursor=cursor)
        items.extend(getattr(page, attribute))
        cursor = page.next_cursor
        if not cursor:
            return items


async def _raw_listing(adapter: McpAdapter, run: _EraRun, server_id: str) -> list[types.Tool]:
    link = adapter.links[server_id]
    client = link.client
    run.facts |= {
        "connected": True,
        "protocol_version": client.protocol_version,
        "server_name": client.server_info.name if client.server_info else None,
        "server_version": client.server_info.version if client.server_info else None,
        "capabilities": sorted(client.server_capabilities.model_dump(by_alias=True, exclude_none=True)),
    }
    tools: list[types.Tool] = await _all_pages(client.list_tools, "tools")
    if link.prompts:
        run.facts["prompts"] = [
            ListedPrompt(name=p.name, skill_name=None) for p in await _all_pages(client.list_prompts, "prompts")
        ]
    if link.resources:
        with contextlib.suppress(MCPError):
            run.facts["resources"] = len(await _all_pages(client.list_resources, "resources"))
        with contextlib.suppress(MCPError):
            run.facts["resource_templates"] = len(
                await _all_pages(client.list_resource_templates, "resource_templates")
            )
    return tools


def _hash_or_empty(adapter: McpAdapter, tool: types.Tool) -> str:
    try:
        return adapter.definition_hash(tool)
    except CanonicalJsonError:
        return ""  # No RFC 8785 form: the adapter dropped the tool (ListedTool.definition_sha256).


def _map_listing(
    adapter: McpAdapter, run: _EraRun, server_id: str, tools: Sequence[types.Tool], advertised: Any
) -> None:
    link = adapter.links[server_id]
    registered = {t.remote_name: t.name for t in advertised.tools if t.remote_name is not None}
    run.facts["tools"] = [
        ListedTool(
            remote_name=tool.name,
            registered_name=registered.get(tool.name),
            normalizes_to=link.prefix + adapter.normalize(tool.name),
            definition_sha256=_hash_or_empty(adapter, tool),
            annotations=tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None,
        )
        for tool in tools
    ]
    run.facts["read_resource_tool"] = next((t.name for t in advertised.tools if t.remote_name is None), None)
    skills = {s.prompt_name: s.name for s in advertised.skills}
    run.facts["prompts"] = [
        ListedPrompt(name=p.name, skill_name=skills.get(p.name)) for p in run.facts.get("prompts", [])
    ]


async def _error_shape(adapter: McpAdapter, server_id: str, tap: Tap, listed: set[str]) -> ErrorShape:
    client = adapter.links[server_id].client
    name = UNLISTED_TOOL
    while name in listed:
        name += "_"
    tap.phase = "error probe"
    probe = "tools/call of an unlisted name"
    try:
        result = await client.call_tool(name, {})
    except MCPError as exc:
        return ErrorShape(probe=probe, shape="jsonrpc_error", code=exc.error.code, text=shown(exc.error.message))
    except Exception as exc:  # boundary: a server that breaks on the probe is reported, not raised
        return ErrorShape(probe=probe, shape="no_answer", code=None, text=_failure(exc))
    words = " ".join(b.text for b in result.content if isinstance(b, types.TextContent))
    return ErrorShape(
        probe=probe, shape="is_error_result" if result.is_error else "success", code=None, text=shown(words)
    )


async def _call(
    adapter: McpAdapter, server: McpServerConfig, call: Call, registered: dict[str, str]
) -> CallObservation:
    cap = server.max_output_bytes
    name = registered.get(call.remote_name)
    pinned = adapter.pinned(FIRST_RUN, name) if name else None
    if name is None or pinned is None:
        return CallObservation(
            remote_name=call.remote_name,
            registered_name=name,
            outcome="not_registered",
            content_bytes=None,
            cap_bytes=cap,
            detail="not listed, or dropped (decision 5): the pipeline answers unknown_tool",
        )
    spec, tool = pinned
    result: ToolResult | None = None
    outcome, detail = "timeout", f"no answer within {spec.deadline_s:g} s (the call's deadline)"
    # A little before the SDK's own read timeout (the same number), so the wait ends here as the pipeline's would.
    with anyio.move_on_after(spec.deadline_s * DEADLINE_SHARE):
        try:
            result = await tool.execute(call.arguments, cast(ToolExecutionContext, _UnmarkedContext()))
        except Exception as exc:  # boundary: a marked call whose connection drops raises (D4.2)
            outcome, detail = "remote_unavailable", _failure(exc)
    size: int | None = None
    if result is not None:
        if result == adapter.over_cap():
            outcome, detail = "over_cap", f"over the {cap}-byte cap: not delivered (D8.8)"
        elif not result.ok and result.failure is None:
            # The adapter's answer to a result its era does not allow (D7.9): no valid ToolResult, for step 11.
            outcome = "malformed_result"
            detail = (
                "the answer is no result of the era the server speaks (a required field is missing): the pipeline"
                " answers invalid_tool_result for this call only (D7.9)"
            )
        elif result.ok and not structure_accepted(spec, result):
            outcome = "invalid_structure"
            detail = (
                "its structuredContent breaks the tool's outputSchema, or is missing under one: the pipeline answers"
                " invalid_tool_result and delivers nothing (D8.11, D8.12)"
            )
            size = sum(len(p.text.encode()) for p in result.content)
        elif result.ok:
            outcome, detail = "ok", shown(" ".join(p.text for p in result.content))
            size = sum(len(p.text.encode()) for p in result.content)
        else:
            assert result.failure is not None  # Invariant: a failed ToolResult carries its failure.
            outcome = {"ERROR": "tool_error"}.get(result.failure.kind, result.failure.kind.lower())
            detail = shown(result.failure.detail or "")
            size = len((result.failure.detail or "").encode())
    return CallObservation(
        remote_name=call.remote_name,
        registered_name=name,
        outcome=outcome,
        content_bytes=size,
        cap_bytes=cap,
        detail=detail,
    )


async def check_era(
    server: McpServerConfig, era: str, calls: Sequence[Call], wait_s: float, errlog: IO[str], progress: Progress
) -> EraCheck:
    """Connect to ``server`` in ``era`` through the reference's adapter and record what it does."""
    tap = Tap()
    run = _EraRun(era)
    with tempfile.TemporaryDirectory(prefix="toolproof-check-") as folder:
        probe = _probe_config(server, era, TappedTransport(server, tap, errlog), wait_s)
        config = InstanceConfig(store_dir=Path(folder), workspace=Path(folder), mcp_servers=[probe])
        store = Store.in_directory(Path(folder))
        bound = wait_s * (ERA_WAITS + len(calls))
        try:
            with anyio.fail_after(bound):
                await _connected(McpAdapter(config, store, _WallClock()), server, run, tap, calls, progress)
        except TimeoutError:
            run.facts["failure"] = (
                f"not finished within {bound:g} s ({ERA_WAITS} + {len(calls)} waits of --timeout {wait_s:g} s)"
            )
        except Exception as exc:  # boundary: whatever the server or the SDK raises is this era's failure
            run.facts["failure"] = _failure(exc)
        finally:
            store.close()
    checked = run.result(tap)
    return checked.model_copy(update={"findings": era_findings(checked)})


async def _connected(
    adapter: McpAdapter,
    server: McpServerConfig,
    run: _EraRun,
    tap: Tap,
    calls: Sequence[Call],
    progress: Progress,
) -> None:
    server_id = server.server_id
    progress(f"era {run.era}: connecting")
    async with adapter.running():
        tap.phase = "listing 1"
        progress(f"era {run.era}: listing")
        tools = await _raw_listing(adapter, run, server_id)
        first = await adapter.advertise(FIRST_RUN)
        _map_listing(adapter, run, server_id, tools, first)
        registered = {t.remote_name: t.name for t in first.tools if t.remote_name is not None}
        run.facts["error_shapes"] = [await _error_shape(adapter, server_id, tap, {t.name for t in tools})]
        observed: list[CallObservation] = []
        run.facts["calls"] = observed
        for call in calls:
            tap.phase = f"call {call.remote_name}"
            progress(f"era {run.era}: calling {call.remote_name}")
            observed.append(await _call(adapter, server, call, registered))
        tap.phase = "listing 2"
        await adapter.advertise(SECOND_RUN)
        later = [c for c in adapter.history() if c.seq > first.as_of_seq]
        changes = [c for c in later if c.kind is not CatalogChangeKind.NOTIFIED]
        run.facts["drift"] = [f"{c.kind.value} {c.registered_name or c.remote_name or server_id}" for c in changes]
        lost = adapter.links[server_id].lost or any(c.kind is CatalogChangeKind.DISCONNECTED for c in later)
        catalog_changes = [c for c in changes if c.kind.value in ("added", "changed", "withdrawn", "dropped")]
        run.facts["listings_agree"] = None if lost and not catalog_changes else not catalog_changes
    progress(f"era {run.era}: done")


def eras_for(server: McpServerConfig, configured: bool, only: str | None) -> list[str]:
    """The eras to try: the one asked for, else every era, the configured one first."""
    if only is not None:
        return [only]
    first = server.protocol if configured else MCP_PROTOCOLS[0]
    return [first, *(era for era in MCP_PROTOCOLS if era != first)]


async def check_server(
    server: McpServerConfig,
    *,
    configured: bool,
    calls: Sequence[Call] = (),
    wait_s: float = 30.0,
    era: str | None = None,
    progress: Progress = lambda line: None,
) -> ServerCheck:
    """Check ``server`` in every era (or in ``era``); ``configured``: it came from an operator file."""
    eras: list[EraCheck] = []
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        for name in eras_for(server, configured, era):
            eras.append(
                await check_era(
                    server, name, calls, wait_s, errlog, lambda line: progress(f"{server.server_id}: {line}")
                )
            )
        errlog.seek(0)
        stderr_tail = [shown(line.rstrip("\n")) for line in errlog.read().splitlines()[-STDERR_LINES:]]
    findings = findings_for(server, eras, configured=configured)
    connected = any(e.connected for e in eras)
    classification = server.classification
    return ServerCheck(
        server_id=server.server_id,
        transport=server.transport.value,
        target=target_text(server),
        configured_era=server.protocol if configured else None,
        classification=classification.model_dump(mode="json") if classification else None,
        classification_source=(
            "operator config: " + ", ".join(f"{k}={v}" for k, v in classification.model_dump(mode="json").items())
            if classification
            else "none in the operator config: unclassified, so the most restrictive, "
            + ", ".join(f"{k}={v}" for k, v in UNCLASSIFIED.model_dump(mode="json").items())
            + " (decision 6). The server's annotations are ignored."
        ),
        max_output_bytes=server.max_output_bytes,
        call_timeout_s=server.call_timeout_s,
        eras=eras,
        findings=findings,
        stderr_tail=stderr_tail,
        exit_code=2 if not connected else (1 if findings else 0),
    )
