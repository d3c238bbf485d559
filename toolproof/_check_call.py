"""``check-server --call``: call one listed tool as the adapter calls it, and say what the pipeline would do."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import cast

import anyio

from toolproof.reference.hooks import McpAdapter, structure_accepted
from toolproof.reports import CallObservation
from toolproof.spec import JsonObject, McpServerConfig, ToolExecutionContext, ToolResult

from ._check_text import failure_line, shown

DEADLINE_SHARE = 0.95
"""A ``--call`` is given up at this share of its deadline, before the SDK's read timeout of the same length fires."""


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


class _UnmarkedContext:
    # Only mark_effect_sent is used by McpTool.execute; the check records no invocation, so there is nothing to mark.
    async def mark_effect_sent(self) -> None:
        return None


async def call_listed_tool(
    adapter: McpAdapter, session: str, server: McpServerConfig, call: Call, registered: dict[str, str]
) -> CallObservation:
    """Call ``call``'s tool as pinned for the adapter's ``session``; ``registered``: remote name -> registered name."""
    cap = server.max_output_bytes
    name = registered.get(call.remote_name)
    pinned = adapter.pinned(session, name) if name else None
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
            outcome, detail = "remote_unavailable", failure_line(exc)
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
