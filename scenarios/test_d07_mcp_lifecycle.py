"""A server's failure is that server's (D7.5), a lost server is reconnected (D7.6), and a connection lost after a
marked call leaves the outcome to the watermark (D4.2).

A lost server's tools answer UNAVAILABLE remote_unavailable until it is back (or succeed, once it is), in the pinned
run and in new runs, while builtin calls run; whether the adapter already restarted the server is its own business.
A READ_ONLY call whose server exits after receiving it is D7.5's too (UNAVAILABLE remote_unavailable: it marked
nothing, so no effect can be pending and a retry is safe), never D4.20's tool_crashed, which is for a tool that
raises; the same loss after a marked NON_IDEMPOTENT call is D4.2's, UNCERTAIN effect_unknown. Over stdio and
streamable HTTP, both eras. A tools/list the server refuses while connected is no loss either, but the call that had to
list first (D9.4: a consequential one, or an idempotent read past its max age) answers UNAVAILABLE remote_unavailable,
in the running session and a new one, while a refused prompts/list or resources/list leaves the call running; builtins
run beside it and nothing is recorded disconnected (both eras, in-memory, after a restart, over stdio and HTTP; that it
is never sent is D9.4's, ``test_d09_listing_errors``). ``test_d07_mcp_reconnect`` sweeps the rest: a server error is no loss, one loss is one
server's, and D7.6's schedule.
"""

from __future__ import annotations

import contextlib
import itertools

import anyio
import pytest

from toolproof.fakes import EchoTool
from toolproof.fakes.mcp import LISTINGS, http_server, stdio_command
from toolproof.spec import (
    CatalogChangeKind,
    Disposition,
    IdempotencyClass,
    InvocationStatus,
    McpClassification,
    McpServerConfig,
    McpTransport,
    ReasonCode,
    Risk,
    SideEffect,
    Success,
)

from ._bounds import bound
from ._harness import Harness, Session, describe
from ._listing import erring_calls, remote_unavailable
from ._mcp import BOUND_S, ERAS, READ, of_kind

ERROR_CODE = -32603
"""The JSON-RPC error code a refused listing answers with (internal error)."""

RECONNECT_WAIT_S = 61.0
"""Instance-clock seconds a scenario lets pass before it expects a reconnect attempt (D7.6: at most 60 s apart)."""

_ATTEMPTS = (CatalogChangeKind.RECONNECTED, CatalogChangeKind.RECONNECT_FAILED)


def _unavailable_or_success(d: Disposition) -> bool:
    # Whether the adapter already restarted the server is its own business: either answer is contained.
    return isinstance(d, Success) or (d.status, getattr(d, "reason_code", None)) == (
        InvocationStatus.UNAVAILABLE,
        ReasonCode.REMOTE_UNAVAILABLE,
    )


async def _submitted(harness: Harness, session: Session, rule: str, name: str, run: str) -> Disposition:
    try:
        return await session.call(name, {"text": run}, run_id=run)
    except Exception as exc:  # The finding: the implementation let the server's failure out of submit.
        harness.fail(rule, f"submit of {name} in {run}, after the server exited, raised {type(exc).__name__}: {exc}")


async def _contained(harness: Harness, session: Session, run: str, rule: str) -> None:
    """A new run after the server died: builtins run, the server's tool answers UNAVAILABLE (or works again)."""
    harness.success(rule, await _submitted(harness, session, rule, "files.echo", run), f"files.echo in {run}")
    d = await _submitted(harness, session, rule, "mcp.dying.echo", run)
    harness.expect(
        rule,
        _unavailable_or_success(d),
        f"mcp.dying.echo in {run}, after the server exited, was answered {describe(d)} "
        "(expected UNAVAILABLE remote_unavailable, or success once it is back)",
    )


async def _dead_server(harness: Harness, config: McpServerConfig, comes_back: bool) -> None:
    async with harness.open(EchoTool(harness.world), mcp_servers=[config]) as session:
        harness.success("D7.5", await session.call("mcp.dying.echo", {"text": "before"}), "mcp.dying.echo")
        harness.success("D7.5", await session.call("mcp.dying.exit", {"text": "now"}), "mcp.dying.exit")
        d = await _submitted(harness, session, "D7.5", "mcp.dying.echo", session.run_id)
        harness.expect(
            "D7.5",
            _unavailable_or_success(d),
            f"mcp.dying.echo in the pinned run, after the server exited, was answered {describe(d)}",
        )
        for run in ("run-2", "run-3"):
            await _contained(harness, session, run, "D7.5")
        harness.log.append(f"advance the instance clock {RECONNECT_WAIT_S} s")
        harness.clock.advance(RECONNECT_WAIT_S)
        runs = iter(range(4, 10_000))

        async def back() -> bool:
            run = f"run-{next(runs)}"
            await _contained(harness, session, run, "D7.5")
            history = await session.catalog_history()
            if not comes_back:
                return any(of_kind(history, kind, "dying") for kind in _ATTEMPTS)
            return isinstance(await _submitted(harness, session, "D7.6", "mcp.dying.echo", run), Success)

        recovered = False
        # A bound on waiting, never a claim about how long it took.
        with anyio.move_on_after(bound(harness, BOUND_S, "a reconnect attempt, or the restarted server in use")):
            for _ in itertools.count():  # Polled: the implementation is behind the port and signals nothing.
                if recovered := await back():
                    break
                await anyio.sleep(0.05)
        history = await session.catalog_history()
    attempts = [c.kind.value for c in history if c.server_id == "dying" and c.kind in _ATTEMPTS]
    if comes_back:
        harness.expect("D7.6", recovered, "the restarted server was never used again by a new run")
    harness.expect(
        "D7.6",
        bool(attempts),
        f"no reconnect attempt was recorded in the catalog history (its entries for the server: "
        f"{[c.kind.value for c in history if c.server_id == 'dying']})",
    )


@pytest.mark.rules("D7.5", "D7.6")
@pytest.mark.slow
@pytest.mark.parametrize("protocol", ERAS)
async def test_dead_stdio_server_is_contained_and_restarted(harness: Harness, protocol: str) -> None:
    command = stdio_command("ExitsBetweenCallsServer")
    harness.log.append(f"mcp server dying: ExitsBetweenCallsServer over stdio, {protocol}")
    config = McpServerConfig(
        server_id="dying", transport=McpTransport.STDIO, command=command, classification=READ, protocol=protocol
    )
    await _dead_server(harness, config, comes_back=True)


@pytest.mark.rules("D7.5", "D7.6")
@pytest.mark.slow
@pytest.mark.parametrize("protocol", ERAS)
async def test_dead_http_server_is_contained_and_retried(harness: Harness, protocol: str) -> None:
    async with http_server("ExitsBetweenCallsServer") as url:
        harness.log.append(f"mcp server dying: ExitsBetweenCallsServer over HTTP at {url}, {protocol}")
        config = McpServerConfig(
            server_id="dying", transport=McpTransport.HTTP, url=url, classification=READ, protocol=protocol
        )
        await _dead_server(harness, config, comes_back=False)


async def _midcall_fields(stack: contextlib.AsyncExitStack, transport: str) -> dict[str, object]:
    """How to reach ExitsMidCallServer over ``transport`` (its HTTP server lives as long as ``stack``)."""
    if transport == "stdio":
        return {"transport": McpTransport.STDIO, "command": stdio_command("ExitsMidCallServer")}
    return {
        "transport": McpTransport.HTTP,
        "url": await stack.enter_async_context(http_server("ExitsMidCallServer")),
    }


@pytest.mark.rules("D7.5")
@pytest.mark.slow
@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_connection_lost_during_an_unmarked_call_is_remote_unavailable(
    harness: Harness, transport: str, protocol: str
) -> None:
    # READ_ONLY: the adapter marks nothing before sending, so no effect can be pending; the server received the call
    # and exited before answering. A lost connection is D7.5's (remote_unavailable, retryable), not a raise of the
    # tool's (D4.20's tool_crashed): the tool is the remote one, and it did not fail, its connection did.
    async with contextlib.AsyncExitStack() as stack:
        fields = await _midcall_fields(stack, transport)
        harness.log.append(f"mcp server midcall: ExitsMidCallServer over {transport}, {protocol}, READ_ONLY")
        config = McpServerConfig(server_id="midcall", classification=READ, protocol=protocol, **fields)
        async with harness.open(EchoTool(harness.world), mcp_servers=[config]) as session:
            d = await _submitted(harness, session, "D7.5", "mcp.midcall.write", session.run_id)
            harness.expect(
                "D7.5",
                (d.status, getattr(d, "reason_code", None))
                == (InvocationStatus.UNAVAILABLE, ReasonCode.REMOTE_UNAVAILABLE),
                f"a READ_ONLY MCP call whose server exited mid-call ({transport}, {protocol}) was answered "
                f"{describe(d)}; its connection was lost, so UNAVAILABLE remote_unavailable",
            )
            other = await _submitted(harness, session, "D7.5", "files.echo", session.run_id)
            harness.success("D7.5", other, "files.echo after the server exited mid-call")


@pytest.mark.rules("D4.2")
@pytest.mark.profiles("mcp")
@pytest.mark.slow
@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_connection_lost_after_a_marked_call_is_judged_by_the_watermark(
    harness: Harness, transport: str, protocol: str
) -> None:
    # The adapter marks a consequential call before sending it; the server received it and died before answering.
    # The effect may have happened: a NON_IDEMPOTENT call is UNCERTAIN, never a retryable remote_unavailable.
    write = McpClassification(
        side_effect=SideEffect.EXTERNAL_WRITE, risk=Risk.LOW, idempotency=IdempotencyClass.NON_IDEMPOTENT
    )
    async with contextlib.AsyncExitStack() as stack:
        fields = await _midcall_fields(stack, transport)
        harness.log.append(
            f"mcp server midcall: ExitsMidCallServer over {transport}, {protocol}, NON_IDEMPOTENT writes"
        )
        config = McpServerConfig(server_id="midcall", classification=write, protocol=protocol, **fields)
        async with harness.open(mcp_servers=[config]) as session:
            d = await _submitted(harness, session, "D4.2", "mcp.midcall.write", session.run_id)
    got = describe(d)
    harness.expect(
        "D4.2",
        (d.status, getattr(d, "reason_code", None)) == (InvocationStatus.UNCERTAIN, ReasonCode.EFFECT_UNKNOWN),
        f"a NON_IDEMPOTENT MCP call whose server exited after receiving it ({transport}, {protocol}) was answered "
        f"{got}; it was marked and sent, so UNCERTAIN effect_unknown",
    )


_LISTING_ERROR_KINDS = ("external-write-non-idempotent", "read-non-idempotent", "read-stale")
"""Classifications whose calls list first (``_listing.ERRING_KINDS``): a write, a read one step from IDEMPOTENT, and an
idempotent read past its max age."""


def _listing_error_cells() -> list[object]:
    cells: list[object] = []
    for protocol in ERAS:
        for listing in LISTINGS:
            for kind in _LISTING_ERROR_KINDS:
                cells.append(pytest.param("memory", protocol, kind, listing, False, id=f"{protocol}-{kind}-{listing}"))
        cells.append(pytest.param("memory", protocol, _LISTING_ERROR_KINDS[0], "tools", True, id=f"{protocol}-restart"))
        for transport in ("stdio", "http"):
            cell = f"{protocol}-{transport}"
            marks = pytest.mark.slow
            cells.append(
                pytest.param(transport, protocol, _LISTING_ERROR_KINDS[0], "tools", False, id=cell, marks=marks)
            )
    return cells


@pytest.mark.rules("D7.5")
@pytest.mark.parametrize(("transport", "protocol", "kind", "listing", "restart"), _listing_error_cells())
async def test_a_call_whose_listing_the_server_refused_answers_remote_unavailable(
    harness: Harness, transport: str, protocol: str, kind: str, listing: str, restart: bool
) -> None:
    # A tools/list answered with an error, the connection up, is no loss, but the call that had to list first cannot
    # be checked against the pin (D9.4): it answers as a lost server's would, UNAVAILABLE remote_unavailable, and only
    # that server's calls do. A prompts/list or resources/list error leaves tools/list answering: the call runs.
    erring = await erring_calls(harness, transport, protocol, kind, listing, ERROR_CODE, restart=restart)
    for run, d in erring.answered.items():
        if listing == "tools" and restart and run == "run-2":
            # A session that starts in an instance that has never listed the server: what it pins is left open (the
            # last recorded catalog, as for a lost server, or nothing, its call then unknown_tool); never a call run.
            harness.expect(
                "D7.5",
                remote_unavailable(d)
                or (d.status, getattr(d, "reason_code", None)) == (InvocationStatus.DENIED, ReasonCode.UNKNOWN_TOOL),
                f"mcp.erring.echo in {run} ({erring.where}), a session started after the restart, was answered "
                f"{describe(d)}: expected UNAVAILABLE remote_unavailable, or DENIED unknown_tool had it pinned nothing",
            )
        elif listing == "tools":
            harness.expect(
                "D7.5",
                remote_unavailable(d),
                f"mcp.erring.echo in {run} ({erring.where}) was answered {describe(d)}: it had to list the catalog "
                "first and the server refused the listing, so expected UNAVAILABLE remote_unavailable (retryable)",
            )
        else:
            harness.success("D7.5", d, f"mcp.erring.echo in {run} ({erring.where}), tools/list still answering,")
    harness.success("D7.5", erring.builtin, f"files.echo, beside the server refusing a listing ({erring.where}),")
    lost = of_kind(erring.history, CatalogChangeKind.DISCONNECTED, "erring")
    harness.expect(
        "D7.5",
        not lost,
        f"a server refusing a listing ({erring.where}) was recorded disconnected: an error the server answers is not "
        "a lost connection",
    )
