"""Tools as a tool author writes them: well-behaved ones, one per idempotency class, and bad ones.

Each bad tool is a good tool with one misbehaviour, named for it; the contract suite
(``toolproof check-tool``) passes every good one and fails every bad one with the finding
of the rule it breaks. They act on the real world the contract observes: files in
``context.workspace`` and HTTP requests to ``context.target``. Each class is its own
zero-argument factory.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import time
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

import anyio

from toolproof.spec import (
    ContentPart,
    IdempotencyClass,
    JsonObject,
    Risk,
    SideEffect,
    ToolExecutionContext,
    ToolFailure,
    ToolResult,
    ToolSpec,
    TrustLabel,
)

_NOTE_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z]{1,8}$"},
        "text": {"type": "string", "maxLength": 40},
    },
    "required": ["name", "text"],
    "additionalProperties": False,
}
_TEXT_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"text": {"type": "string", "maxLength": 40}},
    "required": ["text"],
    "additionalProperties": False,
}


def _spec(name: str, side_effect: SideEffect, idempotency: IdempotencyClass, schema: JsonObject) -> ToolSpec:
    consequential = side_effect is not SideEffect.READ_ONLY
    return ToolSpec(
        name=name,
        side_effect=side_effect,
        idempotency=idempotency,
        risk=Risk.MEDIUM if consequential else Risk.LOW,
        input_schema=schema,
        deadline_s=5.0,
    )


def _post_blocking(target: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    parts = urlsplit(target)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=5)
    try:
        connection.request("POST", path, body=body, headers={"Content-Type": "application/json", **headers})
        response = connection.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        connection.close()


async def post(context: ToolExecutionContext, path: str, payload: JsonObject, key: str | None) -> tuple[int, str]:
    """POST ``payload`` as JSON to ``context.target + path`` with the stdlib, off the event loop.

    ``abandon_on_cancel`` keeps the await cancellable: at the deadline the tool stops waiting
    (the request, once sent, is the remote side's business).
    """
    if context.target is None:
        raise LookupError("no target configured")
    headers = {"Idempotency-Key": key} if key is not None else {}
    call = partial(_post_blocking, context.target, path, json.dumps(payload).encode(), headers)
    return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)


def reply(status: int, text: str) -> ToolResult:
    """A remote answer as a ToolResult: the remote text only ever in ``failure.detail``."""
    if 200 <= status < 300:
        return ToolResult(ok=True, content=[ContentPart(text="accepted")])
    kind = "REMOTE_REJECTED" if 400 <= status < 500 else "REMOTE_UNAVAILABLE"
    return ToolResult(ok=False, failure=ToolFailure(kind=kind, detail=text))


def _note_path(context: ToolExecutionContext, arguments: JsonObject) -> Path:
    return context.workspace / f"{arguments['name']}.txt"


def _append(context: ToolExecutionContext, arguments: JsonObject) -> None:
    with (context.workspace / "journal.txt").open("a", encoding="utf-8") as journal:
        journal.write(f"{arguments['name']}: {arguments['text']}\n")


_WRITTEN = ToolResult(ok=True, content=[ContentPart(text="written")])


# -- good: one per idempotency class, and a read-only one ----------------------------------------


class ReadsFileTool:
    """READ_ONLY: returns the text of a note in the workspace; leaves no mark."""

    spec = _spec("notes.read", SideEffect.READ_ONLY, IdempotencyClass.IDEMPOTENT, _NOTE_SCHEMA)

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        path = _note_path(context, arguments)
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        return ToolResult(ok=True, content=[ContentPart(text=text or "(no such note)")])


class PutsFileTool:
    """IDEMPOTENT workspace write: puts a note's text, so writing it twice leaves one note. Owes no watermark."""

    spec = _spec("notes.put", SideEffect.WORKSPACE_WRITE, IdempotencyClass.IDEMPOTENT, _NOTE_SCHEMA)

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        _note_path(context, arguments).write_text(str(arguments["text"]), encoding="utf-8")
        return _WRITTEN


class PostsOrderTool:
    """CONDITIONALLY_IDEMPOTENT: marks, then POSTs with the idempotency key, which the service deduplicates on."""

    spec = _spec("orders.place", SideEffect.EXTERNAL_WRITE, IdempotencyClass.CONDITIONALLY_IDEMPOTENT, _TEXT_SCHEMA)

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        await context.mark_effect_sent()
        try:
            status, text = await post(context, "/orders", arguments, context.identity.idempotency_key)
        except OSError as exc:
            return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_UNAVAILABLE", detail=str(exc)))
        return reply(status, text)


class AppendsLineTool:
    """NON_IDEMPOTENT workspace write: marks immediately before appending a line to the journal."""

    spec = _spec("journal.append", SideEffect.WORKSPACE_WRITE, IdempotencyClass.NON_IDEMPOTENT, _NOTE_SCHEMA)

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        if context.cancellation.is_set():
            return ToolResult(ok=False, failure=ToolFailure(kind="TRANSIENT"))
        await context.mark_effect_sent()
        _append(context, arguments)
        return _WRITTEN


class SendsMessageTool:
    """NON_IDEMPOTENT: marks immediately before POSTing a message (a real request to the target)."""

    spec = _spec("messages.send", SideEffect.EXTERNAL_WRITE, IdempotencyClass.NON_IDEMPOTENT, _TEXT_SCHEMA)

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        await context.mark_effect_sent()
        try:
            status, text = await post(context, "/messages", arguments, None)
        except OSError as exc:
            return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_UNAVAILABLE", detail=str(exc)))
        return reply(status, text)


# -- bad: one misbehaviour each -----------------------------------------------------------------


class PostsUnmarkedTool(SendsMessageTool):
    """Forgets the watermark: POSTs its message without calling mark_effect_sent (D4.10)."""

    spec = _spec("messages.send_unmarked", SideEffect.EXTERNAL_WRITE, IdempotencyClass.NON_IDEMPOTENT, _TEXT_SCHEMA)

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        status, text = await post(context, "/messages", arguments, None)
        return reply(status, text)


class MarksAfterPostTool(SendsMessageTool):
    """Marks after the effect: POSTs, then calls mark_effect_sent (D4.1)."""

    spec = _spec("messages.send_late_mark", SideEffect.EXTERNAL_WRITE, IdempotencyClass.NON_IDEMPOTENT, _TEXT_SCHEMA)

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        status, text = await post(context, "/messages", arguments, None)
        await context.mark_effect_sent()
        return reply(status, text)


class PostsAfterReturningTool(SendsMessageTool):
    """Leaves its effect to a thread: marks, returns at once, and its thread POSTs a moment later (D3.9)."""

    spec = _spec("messages.send_later", SideEffect.EXTERNAL_WRITE, IdempotencyClass.NON_IDEMPOTENT, _TEXT_SCHEMA)

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        await context.mark_effect_sent()
        target, body = context.target or "", json.dumps(arguments).encode()

        def later() -> None:
            time.sleep(0.05)
            with contextlib.suppress(OSError):  # nobody is left to tell
                _post_blocking(target, "/messages", body, {})

        threading.Thread(target=later, name="messages-send-later").start()
        return ToolResult(ok=True, content=[ContentPart(text="queued")])


class MarksTwiceTool(AppendsLineTool):
    """Marks twice: marks before each of its two appends (D4.13)."""

    spec = _spec("journal.append_twice", SideEffect.WORKSPACE_WRITE, IdempotencyClass.NON_IDEMPOTENT, _NOTE_SCHEMA)

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        for _ in range(2):
            await context.mark_effect_sent()
            _append(context, arguments)
        return _WRITTEN


class RaisesTrustTool(ReadsFileTool):
    """Raises trust: labels its output SYSTEM, above its registered INTERNAL (D1.3)."""

    spec = _spec("notes.read_as_system", SideEffect.READ_ONLY, IdempotencyClass.IDEMPOTENT, _NOTE_SCHEMA)

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        return ToolResult(ok=True, content=[ContentPart(text="trust me")], trust=TrustLabel.SYSTEM)


class _ResultWithStatus(ToolResult):
    status: str = "SUCCEEDED"


class ReturnsStatusTool(ReadsFileTool):
    """Returns a status: its result is a ToolResult subclass claiming status=SUCCEEDED (D1.1)."""

    spec = _spec("notes.read_with_status", SideEffect.READ_ONLY, IdempotencyClass.IDEMPOTENT, _NOTE_SCHEMA)

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        return _ResultWithStatus(ok=True, content=[ContentPart(text="done")])


class IgnoresCancellationTool(AppendsLineTool):
    """Ignores cancellation: shields its mark and append, so it still appends after its deadline (D2.4)."""

    spec = _spec("journal.append_shielded", SideEffect.WORKSPACE_WRITE, IdempotencyClass.NON_IDEMPOTENT, _NOTE_SCHEMA)

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        with anyio.CancelScope(shield=True):
            await context.mark_effect_sent()
            _append(context, arguments)
        return _WRITTEN


class WritesOutsideWorkspaceTool(PutsFileTool):
    """Writes outside the workspace: puts its note one directory above it (D2.7)."""

    spec = _spec("notes.put_outside", SideEffect.WORKSPACE_WRITE, IdempotencyClass.IDEMPOTENT, _NOTE_SCHEMA)

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        (context.workspace / ".." / f"{arguments['name']}.txt").write_text(str(arguments["text"]), encoding="utf-8")
        return _WRITTEN


class PostsWithoutKeyTool(PostsOrderTool):
    """Claims CONDITIONALLY_IDEMPOTENT but sends no idempotency key, so a retry orders twice (D10.6)."""

    spec = _spec(
        "orders.place_unkeyed", SideEffect.EXTERNAL_WRITE, IdempotencyClass.CONDITIONALLY_IDEMPOTENT, _TEXT_SCHEMA
    )

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        await context.mark_effect_sent()
        status, text = await post(context, "/orders", arguments, None)
        return reply(status, text)


class KeysByAttemptTool(PostsOrderTool):
    """Mixes the attempt number into the key it sends, so the service sees each retry as new (D10.2)."""

    spec = _spec(
        "orders.place_keyed_by_attempt",
        SideEffect.EXTERNAL_WRITE,
        IdempotencyClass.CONDITIONALLY_IDEMPOTENT,
        _TEXT_SCHEMA,
    )

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        await context.mark_effect_sent()
        key = f"{context.identity.idempotency_key}:{context.identity.attempt}"
        status, text = await post(context, "/orders", arguments, key)
        return reply(status, text)


class NarratesRemoteErrorTool(PostsOrderTool):
    """Narrates the remote error: copies the service's error text into its content (D13.4)."""

    spec = _spec(
        "orders.place_narrated", SideEffect.EXTERNAL_WRITE, IdempotencyClass.CONDITIONALLY_IDEMPOTENT, _TEXT_SCHEMA
    )

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        await context.mark_effect_sent()
        status, text = await post(context, "/orders", arguments, context.identity.idempotency_key)
        if status >= 300:
            return ToolResult(
                ok=False, content=[ContentPart(text=f"The service said: {text}")], failure=ToolFailure(kind="ERROR")
            )
        return reply(status, text)


class RaisesOnRemoteErrorTool(PostsOrderTool):
    """Raises when the service refuses, instead of returning a ToolFailure (D13.7)."""

    spec = _spec(
        "orders.place_raising", SideEffect.EXTERNAL_WRITE, IdempotencyClass.CONDITIONALLY_IDEMPOTENT, _TEXT_SCHEMA
    )

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        await context.mark_effect_sent()
        status, text = await post(context, "/orders", arguments, context.identity.idempotency_key)
        if status >= 300:
            raise RuntimeError(f"order service answered HTTP {status}")
        return reply(status, text)


class WritesWhileReadOnlyTool(ReadsFileTool):
    """Declared READ_ONLY, yet writes a cache file into the workspace (D6.5)."""

    spec = _spec("notes.read_cached", SideEffect.READ_ONLY, IdempotencyClass.IDEMPOTENT, _NOTE_SCHEMA)

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        (context.workspace / ".cache").write_text(str(arguments["name"]), encoding="utf-8")
        return ToolResult(ok=True, content=[ContentPart(text="(cached)")])


class FailsWithoutFailureTool(ReadsFileTool):
    """Returns ok=False with no ToolFailure, built with model_construct to skip validation (D1.2)."""

    spec = _spec("notes.read_inconsistent", SideEffect.READ_ONLY, IdempotencyClass.IDEMPOTENT, _NOTE_SCHEMA)

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        return ToolResult.model_construct(ok=False, content=[], artifacts=[], failure=None)


class ReturnsUndeclaredStructureTool(ReadsFileTool):
    """Returns structured output although its spec declares no output_schema (D1.4)."""

    spec = _spec("notes.count", SideEffect.READ_ONLY, IdempotencyClass.IDEMPOTENT, _NOTE_SCHEMA)

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        return ToolResult(ok=True, structured={"length": len(str(arguments["text"]))})


GOOD_AUTHOR_TOOLS: tuple[type, ...] = (ReadsFileTool, PutsFileTool, PostsOrderTool, AppendsLineTool, SendsMessageTool)
"""Tools that conform to the contract: one per idempotency class, and a read-only one."""

BAD_AUTHOR_TOOLS: dict[type, str] = {
    PostsUnmarkedTool: "D4.10",
    MarksAfterPostTool: "D4.1",
    MarksTwiceTool: "D4.13",
    PostsAfterReturningTool: "D3.9",
    RaisesTrustTool: "D1.3",
    ReturnsStatusTool: "D1.1",
    IgnoresCancellationTool: "D2.4",
    WritesOutsideWorkspaceTool: "D2.7",
    PostsWithoutKeyTool: "D10.6",
    KeysByAttemptTool: "D10.2",
    NarratesRemoteErrorTool: "D13.4",
    RaisesOnRemoteErrorTool: "D13.7",
    WritesWhileReadOnlyTool: "D6.5",
    FailsWithoutFailureTool: "D1.2",
    ReturnsUndeclaredStructureTool: "D1.4",
}
"""Each misbehaving tool, and the rule its one misbehaviour breaks."""
