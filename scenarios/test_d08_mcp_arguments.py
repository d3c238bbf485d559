"""Decisions 3 and 8: a remote MCP tool's arguments are validated at step 2, as a builtin's are.

D3.3 (nothing before step 8 touches the world) and D8.6 (an MCP call re-enters the one pipeline) are judged on
``StrictInputSchemaServer``, whose four tools declare strict input schemas and run whatever arguments arrive. The
sweep calls them with arguments violating each class a JSON-schema validator refuses: a wrong type (string, integer,
array, nested item; a float or a boolean for an integer; null), a missing required member (top level, nested), an
extra member where ``additionalProperties`` is false (top level, nested, a case variant of an allowed name), an enum
(a near value, another case, null) and bounds (string length, numbers inclusive and exclusive, array items), each on
both sides: arguments exactly at each bound, and an extra member where the schema allows one, have to be sent.
Every era, and every transport (in-process, stdio, streamable HTTP): what reached the server is read from the fake
itself (its log in-process, a file in its state dir as a subprocess), never from the pipeline. Each refused call has
to be answered invalid_arguments with the table's status, message and retryable, leave a terminal row with no
watermark (D3.3), and be answered, recorded and evented exactly as a builtin with the same input schema is for the
same arguments (D8.6).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from toolproof.fakes import EchoTool
from toolproof.fakes.mcp import ARGUMENTS_LOG, INPUT_SCHEMAS, http_server, logged_line, stdio_command
from toolproof.spec import (
    OUTCOME_TABLE,
    Disposition,
    Event,
    InvocationRow,
    McpServerConfig,
    McpTransport,
    Outcome,
    ReasonCode,
)

from ._harness import Harness, describe
from ._mcp import ERAS, READ, memory, transport_params
from .test_d08_mcp_surfaces import judge_alike

FAKE = "StrictInputSchemaServer"

SENT: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("plain", "echo", {"text": "hi"}),
    ("no member (none required)", "echo", {}),
    ("shortest key", "lookup", {"key": "a"}),
    ("longest key", "lookup", {"key": "abcdefgh"}),
    ("lowest width", "resize", {"width": 1, "unit": "px"}),
    ("highest width, a ratio inside its bounds", "resize", {"width": 100, "unit": "em", "ratio": 0.5}),
    ("fewest tags", "tag", {"tags": ["a"]}),
    (
        "most tags, nested object, extra top-level member allowed",
        "tag",
        {"tags": ["a", "b", "c"], "meta": {"level": 2}, "x": 1},
    ),
)
"""(case, tool, arguments) that conform: each has to reach the server (the other side of every boundary below)."""

REFUSED: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("type: integer for a string", "echo", {"text": 5}),
    ("type: null for a string", "echo", {"text": None}),
    ("type: array for a string", "echo", {"text": ["hi"]}),
    ("type: object for a string", "lookup", {"key": {"key": "a"}}),
    ("type: string for an integer", "resize", {"width": "10", "unit": "px"}),
    ("type: float for an integer", "resize", {"width": 1.5, "unit": "px"}),
    ("type: boolean for an integer", "resize", {"width": True, "unit": "px"}),
    ("type: string for a number", "resize", {"width": 1, "unit": "px", "ratio": "0.5"}),
    ("type: string for an array", "tag", {"tags": "a"}),
    ("type: an array item", "tag", {"tags": ["a", 1]}),
    ("type: nested member", "tag", {"tags": ["a"], "meta": {"level": "2"}}),
    ("required: the only member", "lookup", {}),
    ("required: one of two", "resize", {"width": 1}),
    ("required: the other of two", "resize", {"unit": "px"}),
    ("required: top level beside a nested object", "tag", {"meta": {"level": 1}}),
    ("required: nested", "tag", {"tags": ["a"], "meta": {}}),
    ("extra: top level", "echo", {"text": "hi", "extra": 1}),
    ("extra: a case variant of the allowed name", "lookup", {"key": "a", "Key": "b"}),
    ("extra: beside every required member", "resize", {"width": 1, "unit": "px", "height": 1}),
    ("extra: nested", "tag", {"tags": ["a"], "meta": {"level": 1, "x": 0}}),
    ("enum: another value", "resize", {"width": 1, "unit": "pt"}),
    ("enum: another case", "resize", {"width": 1, "unit": "PX"}),
    ("enum: null", "resize", {"width": 1, "unit": None}),
    ("bounds: string under minLength", "lookup", {"key": ""}),
    ("bounds: string over maxLength", "lookup", {"key": "abcdefghi"}),
    ("bounds: integer under minimum", "resize", {"width": 0, "unit": "px"}),
    ("bounds: integer over maximum", "resize", {"width": 101, "unit": "px"}),
    ("bounds: number at exclusiveMinimum", "resize", {"width": 1, "unit": "px", "ratio": 0}),
    ("bounds: number at exclusiveMaximum", "resize", {"width": 1, "unit": "px", "ratio": 1}),
    ("bounds: array under minItems", "tag", {"tags": []}),
    ("bounds: array over maxItems", "tag", {"tags": ["a", "b", "c", "d"]}),
)
"""(class: case, tool, arguments) that each violate the tool's input schema in one way: none may reach the server."""


@contextlib.asynccontextmanager
async def _strict(
    harness: Harness, transport: str, protocol: str
) -> AsyncIterator[tuple[McpServerConfig, Callable[[], list[str]]]]:
    """The fake as server ``strict`` over ``transport``, and a reader of the calls it ran (``logged_line`` form)."""
    if transport == "memory":
        config, fake = memory(harness, "strict", FAKE, protocol=protocol)
        yield config, lambda: [e.removeprefix("arguments ") for e in fake.log if e.startswith("arguments ")]
        return
    state = harness.directory / f"strict-{transport}-{protocol}"
    log = state / ARGUMENTS_LOG

    def ran() -> list[str]:
        return log.read_text(encoding="utf-8").splitlines() if log.exists() else []

    common: dict[str, Any] = {"server_id": "strict", "classification": READ, "protocol": protocol}
    harness.log.append(f"mcp server strict: {FAKE} over {transport}, {protocol}, its calls read from {log}")
    if transport == "stdio":
        yield McpServerConfig(transport=McpTransport.STDIO, command=stdio_command(FAKE, state_dir=state), **common), ran
        return
    async with http_server(FAKE, state_dir=state) as url:
        yield McpServerConfig(transport=McpTransport.HTTP, url=url, **common), ran


def _twins(harness: Harness) -> list[EchoTool]:
    """A builtin per remote tool, with the same input schema (``files.NAME``): D8.6's yardstick."""
    return [
        EchoTool(harness.world, name=f"files.{name}", input_schema=schema) for name, schema in INPUT_SCHEMAS.items()
    ]


def _answered(d: Disposition) -> tuple[str, str | None, str | None, bool | None]:
    """What D8.6 compares of two answers: the kind, and an outcome's status, reason and retryable."""
    if isinstance(d, Outcome):
        return ("outcome", d.status.value, d.reason_code.value, d.retryable)
    return (type(d).__name__, None, None, None)


@dataclass
class _Sweep:
    """One cell's calls: the answers of the remote tools and of their builtin twins, by case; rows, events; and the
    calls the server ran, read from the fake."""

    where: str
    remote: dict[str, Disposition]
    builtin: dict[str, Disposition]
    rows: dict[str, InvocationRow]
    events: list[Event]
    reached: list[str]


async def _sweep(harness: Harness, transport: str, protocol: str) -> _Sweep:
    """Every case of ``SENT`` and ``REFUSED``, each on the remote tool and then on its builtin twin."""
    remote: dict[str, Disposition] = {}
    builtin: dict[str, Disposition] = {}
    async with _strict(harness, transport, protocol) as (config, ran):
        async with harness.open(*_twins(harness), mcp_servers=[config]) as session:
            for case, tool, arguments in (*SENT, *REFUSED):
                remote[case] = await session.call(f"mcp.strict.{tool}", arguments)
                builtin[case] = await session.call(f"files.{tool}", arguments)
            rows = {r.invocation_id: r for r in await session.rows()}
            events = await session.events()
        reached = ran()
    return _Sweep(f"{FAKE} over {transport}, {protocol}", remote, builtin, rows, events, reached)


@pytest.mark.rules("D3.3")
@pytest.mark.profiles("mcp")
@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("transport", transport_params())
async def test_remote_arguments_violating_the_input_schema_never_reach_the_server(
    harness: Harness, transport: str, protocol: str
) -> None:
    sweep = await _sweep(harness, transport, protocol)
    leaked = [
        (case, tool, arguments) for case, tool, arguments in REFUSED if logged_line(tool, arguments) in sweep.reached
    ]
    harness.expect(
        "D3.3",
        not leaked,
        f"{len(leaked)} call(s) whose arguments violate the tool's input schema reached the server ({sweep.where}), "
        f"first {leaked[:3]}; every one has to be refused at step 2, before anything touches the world",
    )
    entry = OUTCOME_TABLE[ReasonCode.INVALID_ARGUMENTS]
    for case, tool, arguments in REFUSED:
        d = sweep.remote[case]
        harness.expect(
            "D3.3",
            isinstance(d, Outcome)
            and (d.reason_code, d.status, d.message, d.retryable)
            == (ReasonCode.INVALID_ARGUMENTS, entry.status, entry.message, entry.retryable),
            f"mcp.strict.{tool} called with {arguments!r} ({case}; {sweep.where}) was answered {describe(d)}; "
            f"expected {entry.status.value} invalid_arguments, retryable={entry.retryable}, with the table's message",
        )
        row = sweep.rows.get(d.invocation_id)
        harness.expect(
            "D3.3",
            row is not None and row.status.is_terminal and row.effect_sent_at is None,
            f"mcp.strict.{tool} refused ({case}; {sweep.where}) left row "
            f"{row.model_dump(mode='json') if row is not None else 'none'}; expected a terminal row, no watermark",
        )


@pytest.mark.rules("D8.6")
@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("transport", transport_params())
async def test_remote_arguments_are_validated_as_a_builtins_are(
    harness: Harness, transport: str, protocol: str
) -> None:
    sweep = await _sweep(harness, transport, protocol)
    for case, tool, _ in SENT:
        harness.success(
            "D8.6", sweep.remote[case], f"mcp.strict.{tool} with conforming arguments ({case}; {sweep.where})"
        )
    sent = [logged_line(tool, arguments) for _, tool, arguments in SENT]
    harness.expect(
        "D8.6",
        sweep.reached == sent,
        f"the server ran {sweep.reached} ({sweep.where}); expected exactly the conforming calls, in order: {sent}",
    )
    for case, tool, arguments in (*SENT, *REFUSED):
        r, b = sweep.remote[case], sweep.builtin[case]
        harness.expect(
            "D8.6",
            _answered(r) == _answered(b),
            f"mcp.strict.{tool} and the builtin files.{tool} (the same input schema) called with {arguments!r} "
            f"({case}; {sweep.where}) were answered {describe(r)} and {describe(b)}; an MCP call re-enters the one "
            "pipeline, step 2 included",
        )
        mine, theirs = sweep.rows.get(r.invocation_id), sweep.rows.get(b.invocation_id)
        harness.expect(
            "D8.6",
            mine is not None and theirs is not None,
            f"mcp.strict.{tool} and files.{tool} called with {arguments!r} ({case}; {sweep.where}) left rows "
            f"{mine is not None} and {theirs is not None}",
        )
        # Invariant: the expect above.
        assert mine is not None
        assert theirs is not None
        judge_alike(harness, theirs, mine, sweep.events, ("status", "reason_code", "attempt"))
