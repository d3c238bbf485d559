"""Volume: outputs of many megabytes, a slow drip, a call that never answers."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import mcp_types as types

from ._base import ECHO, Context, FakeServer, ServerFake, echo, text

HUGE_BYTES = 8 * 1024 * 1024
"""Default size of ``dump``'s text: 8 MiB."""

SIZE_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"bytes": {"type": "integer", "minimum": 0}}}


async def _dump(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
    size = int((params.arguments or {}).get("bytes", HUGE_BYTES))
    return text("A" * size)


async def _dump_structured(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
    size = int((params.arguments or {}).get("bytes", HUGE_BYTES))
    # ~20 bytes per row on the wire, so this is about `size` bytes of JSON.
    rows = [{"i": i, "v": "B" * 8} for i in range(size // 20)]
    return types.CallToolResult(
        content=[types.TextContent(type="text", text="rows")], structured_content={"rows": rows}
    )


def _huge_output() -> FakeServer:
    catalog = [
        ECHO,
        types.Tool(name="dump", description="Returns `bytes` bytes of text (8 MiB).", input_schema=SIZE_SCHEMA),
        types.Tool(name="dump_structured", description="Returns ~`bytes` bytes of JSON.", input_schema=SIZE_SCHEMA),
    ]
    tools = {"echo": echo, "dump": _dump, "dump_structured": _dump_structured}
    return FakeServer("HugeOutputServer", lambda: catalog, tools)


DRIP_CHUNKS = 20
"""Default number of chunks ``drip`` sends."""
DRIP_INTERVAL_S = 0.5
"""Default pause before each chunk: the default call takes 10 s."""

DRIP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"chunks": {"type": "integer", "minimum": 0}, "interval_s": {"type": "number", "minimum": 0}},
}


async def _drip(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    chunks = int(arguments.get("chunks", DRIP_CHUNKS))
    interval = float(arguments.get("interval_s", DRIP_INTERVAL_S))
    for i in range(chunks):
        await anyio.sleep(interval)
        # A no-op unless the caller asked for progress.
        await ctx.session.report_progress(i + 1, chunks, f"chunk {i + 1}")
    return text("".join(f"chunk {i + 1}\n" for i in range(chunks)))


def _drip_server() -> FakeServer:
    tool = types.Tool(name="drip", description="Answers slowly, reporting progress.", input_schema=DRIP_SCHEMA)
    return FakeServer("DripServer", lambda: [ECHO, tool], {"echo": echo, "drip": _drip})


async def _hang(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")  # pragma: no cover


HANG_RESOURCE = "hang:///never"
"""The hanging server's one resource: reading it never answers, as ``hang`` never does."""


async def _list_hanging(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    resource = types.Resource(uri=HANG_RESOURCE, name="never", mime_type="text/plain")
    return types.ListResourcesResult(resources=[resource])


async def _read_hanging(ctx: Context, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")  # pragma: no cover


def _hanging() -> FakeServer:
    tool = types.Tool(name="hang", description="Never answers.", input_schema={"type": "object"})
    return FakeServer(
        "HangingServer",
        lambda: [ECHO, tool],
        {"echo": echo, "hang": _hang},
        on_list_resources=_list_hanging,
        on_read_resource=_read_hanging,
    )


HugeOutputServer = ServerFake(
    "HugeOutputServer", "`dump` returns 8 MiB of text, `dump_structured` ~8 MiB of structuredContent", _huge_output
)
DripServer = ServerFake(
    "DripServer", "`drip` answers after 20 chunks 0.5 s apart, with progress notifications if asked", _drip_server
)
HangingServer = ServerFake(
    "HangingServer",
    f"`hang` and a read of its resource {HANG_RESOURCE} never answer; only the caller's deadline ends them",
    _hanging,
)


REPEAT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "unit": {"type": "string"},
        "count": {"type": "integer", "minimum": 0},
        "parts": {"type": "integer", "minimum": 1},
        "error": {"type": "boolean"},
    },
    "required": ["unit", "count"],
}


async def _repeat(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    piece = str(arguments["unit"]) * int(arguments["count"])
    parts = int(arguments.get("parts", 1))
    # With ``error``, the same text comes back as an error result: the cap bounds what a server says, success or not.
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=piece) for _ in range(parts)],
        is_error=bool(arguments.get("error", False)),
    )


REPEAT_RESOURCE = "repeat:///text"
"""The multibyte server's resource; its query (``unit``, ``count``, ``parts``) chooses the contents like ``repeat``."""


def repeat_uri(unit: str, count: int, parts: int = 1) -> str:
    """The multibyte server's resource URI for ``parts`` contents, each ``unit`` repeated ``count`` times."""
    return f"{REPEAT_RESOURCE}?{urlencode({'unit': unit, 'count': count, 'parts': parts})}"


async def _list_repeat(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    resource = types.Resource(uri=repeat_uri("a", 10), name="repeat", mime_type="text/plain")
    return types.ListResourcesResult(resources=[resource])


async def _read_repeat(ctx: Context, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    query = parse_qs(urlsplit(str(params.uri)).query)
    piece = query.get("unit", ["a"])[0] * int(query.get("count", ["0"])[0])
    parts = int(query.get("parts", ["1"])[0])
    contents = [types.TextResourceContents(uri=str(params.uri), mime_type="text/plain", text=piece)] * parts
    return types.ReadResourceResult(contents=contents)


def _multibyte_output() -> FakeServer:
    tool = types.Tool(
        name="repeat",
        description="Returns `parts` text parts, each `unit` repeated `count` times (as an error result if `error`).",
        input_schema=REPEAT_SCHEMA,
    )
    return FakeServer(
        "MultibyteOutputServer",
        lambda: [ECHO, tool],
        {"echo": echo, "repeat": _repeat},
        on_list_resources=_list_repeat,
        on_read_resource=_read_repeat,
    )


MultibyteOutputServer = ServerFake(
    "MultibyteOutputServer",
    "`repeat` (and its resource, repeat:///text?unit=&count=&parts=) returns text of a chosen unit and length, in "
    "one or more parts (`error`: as an isError result): multibyte text is fewer characters than bytes",
    _multibyte_output,
)
