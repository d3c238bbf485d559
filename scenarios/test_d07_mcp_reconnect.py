"""A lost server, swept: a server error is no loss and one loss is one server's (D7.5), the reconnect schedule over a
long outage and the first need after it (D7.6), and a restarted stdio server's environment (D7.4).

D7.5: an error the server answers, to a call or to a listing, is not a lost connection and records no disconnected
entry (judged with a call, tools/list, prompts/list and resources/list answering an error, in both eras, and with the
2026-07-28 era's listen stream ended by an error or refused outright, in-memory, over stdio and over streamable
HTTP; in-memory with JSON-RPC's internal error, with -32000 (the code the MCP SDK also gives its own closed
connection) and with two codes the application's, -1 and 4242; a call over stdio and HTTP with -32000 too, and
in-memory with every other code in the SDK's own closure words, "Connection closed ..."); a loss is
one server's, so the other servers' calls run at once, with no entry of theirs and no wait for the clock (which stands
still).

D7.6's limit (``_mcp.CAP_S``): attempts at most 60 s apart on the instance clock, each one catalog-history entry
(reconnected or reconnect_failed), as the loss is (disconnected). The bound is inclusive: a need exactly 60 s after
the last attempt (or after the loss, before the first attempt) is due an attempt; a need sooner may make one or not.
Backoff never stops: however many attempts failed, the next is at most 60 s away (no circuit breaker gives a server
up), so the outage runs past where a doubling backoff, or 10% on top of a 60 s cap, would pass 60 s, then both sides
of the boundary (``_mcp.DOWN_SCHEDULE``). Once the server is back, the first need is a call in the running session.
"With backoff": the instance clock passes between the loss and the first attempt and between two attempts, so needs
at one instant make at most one attempt and none at the loss's instant: swept over the loss and three due instants,
several needs at each, the clock standing still between them. And the waits never shrink: with a need at every
half-second of the instance clock, each wait (from the loss, then from each failed attempt, to the next attempt) is
at least as long as the one before it, swept in both eras until two waits have reached the cap (a doubling from 1 s
reaches it at the eighth attempt), so a schedule that alternates, shortens, or starts over at the cap is caught.
A scenario advances the instance clock (past 60 s, or to exactly 60 s after the last attempt) and waits a bounded
time for the attempt's entry; it never measures how long anything took.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import anyio
import pytest

from toolproof.fakes import EchoTool
from toolproof.fakes.mcp import ENV_KEY, LISTEN, LISTINGS, stdio_command
from toolproof.spec import (
    CatalogChange,
    CatalogChangeKind,
    Disposition,
    InvocationStatus,
    McpServerConfig,
    McpTransport,
    ReasonCode,
    Success,
)

from ._bounds import bound
from ._harness import Harness, Session, describe
from ._mcp import (
    ATTEMPT_BOUND_S,
    BOUND_S,
    CAP_S,
    DEFAULT_NAMES,
    DOWN_SCHEDULE,
    ERAS,
    READ,
    TRANSPORTS,
    configured_defaults,
    of_kind,
    reached,
)

_ATTEMPTS = (CatalogChangeKind.RECONNECTED, CatalogChangeKind.RECONNECT_FAILED)


def _unavailable(d: Disposition) -> bool:
    return (d.status, getattr(d, "reason_code", None)) == (InvocationStatus.UNAVAILABLE, ReasonCode.REMOTE_UNAVAILABLE)


async def _attempts(session: Session, server_id: str) -> list[CatalogChangeKind]:
    history = await session.catalog_history()
    return [c.kind for c in history if c.server_id == server_id and c.kind in _ATTEMPTS]


async def _lost(harness: Harness, session: Session, rule: str, name: str, server_id: str) -> None:
    """Call ``name`` (in new runs, the clock frozen) until the implementation records ``server_id`` disconnected."""
    runs = itertools.count(1)
    # A bound on waiting, never a claim about how long it took.
    with anyio.move_on_after(bound(harness, BOUND_S, f"{server_id}'s loss to be recorded")):
        while True:
            d = await session.call(name, {"text": "gone?"}, run_id=f"find-{next(runs)}")
            harness.expect(
                rule, not isinstance(d, Success), f"{name} succeeded though its server exited: {describe(d)}"
            )
            if of_kind(await session.catalog_history(), CatalogChangeKind.DISCONNECTED, server_id):
                return
            await anyio.sleep(0.05)
    harness.fail(rule, f"the server {server_id} exited and no disconnected entry was ever recorded for it")


def _kept_down_server(harness: Harness, protocol: str) -> tuple[Path, McpServerConfig]:
    """ExitsBetweenCallsServer over stdio as server ``down``, whose restarts fail while the returned file exists."""
    down = harness.directory / "kept-down"
    config = McpServerConfig(
        server_id="down",
        transport=McpTransport.STDIO,
        command=stdio_command("ExitsBetweenCallsServer", down_while=down),
        classification=READ,
        protocol=protocol,
    )
    harness.log.append(f"mcp server down: ExitsBetweenCallsServer over stdio, {protocol}, kept down while {down}")
    return down, config


@pytest.mark.rules("D7.6")
@pytest.mark.slow
@pytest.mark.parametrize("protocol", ERAS)
async def test_reconnect_attempts_keep_their_schedule_through_a_long_outage(harness: Harness, protocol: str) -> None:
    # The server's restarts fail while the flag exists: every attempt in the down phase is a reconnect_failed.
    down, config = _kept_down_server(harness, protocol)
    async with harness.open(mcp_servers=[config]) as session:
        harness.success("D7.6", await session.call("mcp.down.echo", {"text": "up"}), "mcp.down.echo")
        down.touch()
        harness.success("D7.6", await session.call("mcp.down.exit", {"text": "now"}), "mcp.down.exit")
        await _lost(harness, session, "D7.6", "mcp.down.echo", "down")
        last = harness.clock.now()  # The loss; from here a need CAP_S later is due an attempt.
        for need, advance in enumerate(DOWN_SCHEDULE, start=1):
            harness.clock.advance(advance)
            since = harness.clock.now() - last
            due = since >= CAP_S
            before = len(await _attempts(session, "down"))
            harness.log.append(
                f"need {need}: {since:.1f} s after the last attempt; due={due}, attempts so far {before}"
            )
            made = False
            with anyio.move_on_after(bound(harness, ATTEMPT_BOUND_S, f"need {need}'s attempt") if due else 0.0):
                for poll in itertools.count():  # Each poll is one more need at the same instant.
                    d = await session.call("mcp.down.echo", {"text": "back?"}, run_id=f"need-{need}-{poll}")
                    harness.expect(
                        "D7.6",
                        _unavailable(d),
                        f"need {need}, the server kept down, answered {describe(d)} (expected UNAVAILABLE "
                        "remote_unavailable)",
                    )
                    if made := len(await _attempts(session, "down")) > before:
                        break
                    await anyio.sleep(0.05)
            if due:
                harness.expect(
                    "D7.6",
                    made,
                    f"need {need} came {since:.1f} s after the last reconnect attempt (or the loss) and none was "
                    f"recorded for it (attempts recorded so far: {before}); D7.6 allows at most {CAP_S:.0f} s between "
                    "attempts, each recorded",
                )
            if made:
                last = harness.clock.now()
        kinds = await _attempts(session, "down")
        harness.expect(
            "D7.6",
            all(k is CatalogChangeKind.RECONNECT_FAILED for k in kinds),
            f"the server was kept down, yet the attempts recorded were {[k.value for k in kinds]}",
        )
        # Back: the first need is a call in the session that was running all along, not a new session.
        down.unlink()
        harness.clock.advance(CAP_S + 1.0)
        harness.log.append(f"server back; advance {CAP_S + 1.0} s; call in the running session {session.run_id}")
        back: Disposition | None = None
        with anyio.move_on_after(bound(harness, BOUND_S, "the server back in the running session")):
            while not isinstance(back, Success):
                back = await session.call("mcp.down.echo", {"text": "back"}, run_id=session.run_id)
                await anyio.sleep(0.05)
        harness.expect(
            "D7.6",
            isinstance(back, Success),
            f"after {len(kinds)} failed attempts the server was back, and a call in the running session (the first "
            f"need) was answered {describe(back) if back is not None else 'nothing'}",
        )
        harness.success("D7.6", await session.call("mcp.down.echo", {"text": "new"}, run_id="after"), "a new run")
        after = await _attempts(session, "down")
    harness.expect(
        "D7.6",
        CatalogChangeKind.RECONNECTED in after,
        f"the server is used again but no reconnected entry was recorded: {[k.value for k in after]}",
    )


_NEEDS_PER_INSTANT = 4
"""Needs made at one instant of the instance clock (the clock standing still): at most one of them may attempt."""


@pytest.mark.rules("D7.6")
@pytest.mark.slow
async def test_needs_at_one_instant_make_at_most_one_reconnect_attempt(harness: Harness) -> None:
    down, config = _kept_down_server(harness, ERAS[0])
    wrong: list[str] = []
    async with harness.open(mcp_servers=[config]) as session:
        harness.success("D7.6", await session.call("mcp.down.echo", {"text": "up"}), "mcp.down.echo")
        down.touch()
        harness.success("D7.6", await session.call("mcp.down.exit", {"text": "now"}), "mcp.down.exit")
        await _lost(harness, session, "D7.6", "mcp.down.echo", "down")
        # The loss's instant: no attempt yet (the server was up before it, so every attempt recorded so far was made
        # at that instant, during the calls that found it lost included). Then three instants CAP_S apart, each due one.
        after = 0
        for instant in range(4):
            if instant:
                harness.clock.advance(CAP_S)
            before = after
            made = len(await _attempts(session, "down"))
            runs = itertools.count(1)
            if instant:  # Due: wait a bounded time for its one attempt (a bound, never a timing claim).
                with anyio.move_on_after(ATTEMPT_BOUND_S):
                    while made == before:
                        await session.call("mcp.down.echo", {"text": "due"}, run_id=f"due-{instant}-{next(runs)}")
                        made = len(await _attempts(session, "down"))
                        await anyio.sleep(0.05)
            for need in range(_NEEDS_PER_INSTANT):
                d = await session.call("mcp.down.echo", {"text": "again"}, run_id=f"again-{instant}-{need}")
                harness.expect(
                    "D7.6",
                    _unavailable(d),
                    f"the server kept down answered {describe(d)} (expected remote_unavailable)",
                )
            after = len(await _attempts(session, "down"))
            harness.log.append(f"instant {instant} ({harness.clock.now():.1f}): attempts {before} -> {after}")
            if instant and made == before:
                wrong.append(f"the need {instant * CAP_S:.0f} s after the loss made no attempt")
            if after - before > (1 if instant else 0):
                at = f"{instant * CAP_S:.0f} s after the loss" if instant else "at the loss's instant"
                wrong.append(f"{after - before} attempts {at}, the instance clock standing still")
    harness.expect(
        "D7.6",
        not wrong,
        f"reconnecting with backoff: the instance clock passes between the loss and the first attempt and between two "
        f"attempts, and a need {CAP_S:.0f} s after the last makes one: {'; '.join(wrong)}",
    )


WAIT_STEP_S = 0.5
"""The instance-clock step between two needs while a reconnect wait is measured: each wait is known to within it."""

WAITS_AT_CAP = 2
"""How many waits at the cap the sweep sees before it ends (the cap is no place to start shrinking either)."""

MOST_ATTEMPTS = 12
"""The sweep ends after this many attempts, the cap reached or not (doubling from 1 s reaches it at the eighth)."""


@pytest.mark.rules("D7.6")
@pytest.mark.slow
@pytest.mark.parametrize("protocol", ERAS)
async def test_reconnect_waits_never_shrink(harness: Harness, protocol: str) -> None:
    down, config = _kept_down_server(harness, protocol)
    waits: list[float] = []
    wrong: list[str] = []
    needs = itertools.count(1)
    async with harness.open(mcp_servers=[config]) as session:
        harness.success("D7.6", await session.call("mcp.down.echo", {"text": "up"}), "mcp.down.echo")
        down.touch()
        harness.success("D7.6", await session.call("mcp.down.exit", {"text": "now"}), "mcp.down.exit")
        await _lost(harness, session, "D7.6", "mcp.down.echo", "down")
        last = harness.clock.now()  # The loss, then each attempt: where the next wait is measured from.
        made = len(await _attempts(session, "down"))
        while len(waits) < MOST_ATTEMPTS and sum(w >= CAP_S - 2 * WAIT_STEP_S for w in waits) < WAITS_AT_CAP:
            # The first need comes two steps before the wait before it would pass again: an implementation whose
            # waits never shrink makes no attempt there, however its due instants fall between the steps (each
            # wait is measured to within one step, from an attempt made at the first need once due).
            since = max(waits[-1] - 2 * WAIT_STEP_S, WAIT_STEP_S) if waits else WAIT_STEP_S
            attempted = False
            while since <= CAP_S:
                harness.clock.advance(last + since - harness.clock.now())
                d = await session.call("mcp.down.echo", {"text": "back?"}, run_id=f"wait-{next(needs)}")
                harness.expect(
                    "D7.6",
                    _unavailable(d),
                    f"the server kept down answered {describe(d)} (expected remote_unavailable)",
                )
                if attempted := len(await _attempts(session, "down")) > made:
                    break
                since += WAIT_STEP_S
            if not attempted:
                wrong.append(f"no attempt within {CAP_S:.0f} s after attempt {len(waits)} (0: the loss)")
                break
            made = len(await _attempts(session, "down"))
            if waits and since < waits[-1] - WAIT_STEP_S:
                wrong.append(f"wait {len(waits) + 1} was at most {since:g} s, after a wait of {waits[-1]:g} s")
            waits.append(since)
            last = harness.clock.now()
        harness.log.append(f"waits before each attempt (0: from the loss), each to within {WAIT_STEP_S} s: {waits}")
    harness.expect(
        "D7.6",
        not wrong,
        f"reconnecting with backoff, each wait (from the loss, then from the last attempt) is at least as long as the "
        f"one before it, and at most {CAP_S:.0f} s; measured {waits}: {'; '.join(wrong)}",
    )


_ERRING = [(protocol, listing) for protocol in ERAS for listing in LISTINGS] + [(ERAS[1], LISTEN)]
"""Each era with each listing answering an error, and the 2026-07-28 era's listen stream ended with one (the
handshake era has no listen stream)."""

ERROR_CODES = (-32603, -32000, -1, 4242)
"""The codes the server's errors carry: JSON-RPC's internal error; -32000, the first of JSON-RPC's implementation-defined
server errors, which the MCP SDK also gives its own closed connection (a server's -32000 is still an answer); and two
of the codes JSON-RPC leaves to the application (outside -32768 to -32000), one each side of zero. In-memory every
code; over stdio and HTTP the first (a call: -32000 too)."""


def _erring_cells() -> list[object]:
    cells: list[object] = []
    for transport in TRANSPORTS:
        for protocol, listing in _ERRING:
            for code in ERROR_CODES if transport == "memory" else ERROR_CODES[:1]:
                cell = f"{protocol}-{listing}-{transport}" + (f"-{code}" if code != ERROR_CODES[0] else "")
                marks = () if transport == "memory" else pytest.mark.slow
                cells.append(pytest.param(protocol, listing, transport, code, id=cell, marks=marks))
    return cells


@pytest.mark.rules("D7.5")
@pytest.mark.parametrize(("protocol", "listing", "transport", "code"), _erring_cells())
async def test_a_listing_the_server_answers_with_an_error_is_no_lost_connection(
    harness: Harness, protocol: str, listing: str, transport: str, code: int
) -> None:
    erring = "ending its listen stream with an error" if listing == LISTEN else f"answering {listing}/list an error"
    erring += f" of code {code}"
    async with (
        reached(harness, "erring", "ListingErrorServer", transport, protocol=protocol) as config,
        harness.open(mcp_servers=[config]) as session,
    ):
        harness.success("D7.5", await session.call("mcp.erring.echo", {"text": "up"}), "mcp.erring.echo")
        asked = {"text": listing, "code": code}
        harness.success("D7.5", await session.call("mcp.erring.fail_listing", asked), f"fail_listing {asked}")
        # The next session lists the server again, and it answers that listing with a JSON-RPC error (listen: the
        # server already ended the stream it had open with one).
        d = await session.call("mcp.erring.echo", {"text": "still up"}, run_id="run-2")
        if listing == "tools":
            # Its catalog cannot be listed: whether the session's call runs is the implementation's choice.
            harness.expect(
                "D7.5",
                isinstance(d, Success) or _unavailable(d),
                f"mcp.erring.echo, its tools/list answering an error, was answered {describe(d)}",
            )
        else:
            harness.success("D7.5", d, f"mcp.erring.echo in a new run, the server {erring}")
        pinned = await session.call("mcp.erring.echo", {"text": "pinned"}, run_id=session.run_id)
        if listing == "tools":
            harness.expect(
                "D7.5",
                isinstance(pinned, Success) or _unavailable(pinned),
                f"mcp.erring.echo in the running session, its tools/list answering an error, was {describe(pinned)}",
            )
        else:
            harness.success("D7.5", pinned, f"mcp.erring.echo in the running session, the server {erring}")
        history = await session.catalog_history()
    lost = of_kind(history, CatalogChangeKind.DISCONNECTED, "erring")
    harness.expect(
        "D7.5",
        not lost,
        f"a server {erring} ({transport}, {protocol}) was recorded disconnected: "
        "an error the server answers is not a lost connection",
    )


CLOSURE_WORDS = "Connection closed by the record service"
"""A server's error message in the words the MCP SDK gives its own closed connection ("Connection closed"): with any
code but -32000, the SDK's, the code alone says the server answered it."""


def _refused_call_cells() -> list[object]:
    cells: list[object] = []
    for transport in TRANSPORTS:
        for protocol in ERAS:
            for code in ERROR_CODES if transport == "memory" else ERROR_CODES[:2]:
                marks = () if transport == "memory" else pytest.mark.slow
                cell = f"{protocol}-{transport}-{code}"
                cells.append(pytest.param(protocol, transport, code, "", id=cell, marks=marks))
                if transport == "memory" and code != -32000:
                    cells.append(pytest.param(protocol, transport, code, CLOSURE_WORDS, id=f"{cell}-closure-words"))
    return cells


@pytest.mark.rules("D7.5")
@pytest.mark.parametrize(("protocol", "transport", "code", "message"), _refused_call_cells())
async def test_a_call_the_server_answers_with_an_error_is_no_lost_connection(
    harness: Harness, protocol: str, transport: str, code: int, message: str
) -> None:
    where = f"{transport}, {protocol}" + (f", the error's message {message!r}" if message else "")
    async with (
        reached(harness, "erring", "ListingErrorServer", transport, protocol=protocol) as config,
        harness.open(mcp_servers=[config]) as session,
    ):
        harness.success("D7.5", await session.call("mcp.erring.echo", {"text": "up"}), "mcp.erring.echo")
        refused = await session.call("mcp.erring.refuse", {"code": code} | ({"message": message} if message else {}))
        harness.expect(
            "D7.5",
            not isinstance(refused, Success) and not _unavailable(refused),
            f"mcp.erring.refuse, whose call the server answers with a JSON-RPC error of code {code} ({where}), was "
            f"answered {describe(refused)}: the server answered, so the call fails and its connection is not lost "
            "(remote_unavailable is a lost connection's)",
        )
        # The instance clock stands still: were the server taken for lost, no reconnect would be due yet.
        for run in (session.run_id, "run-2"):
            harness.success(
                "D7.5",
                await session.call("mcp.erring.echo", {"text": run}, run_id=run),
                f"mcp.erring.echo in {run}, right after the server answered a call with error {code} ({where})",
            )
        history = await session.catalog_history()
    lost = of_kind(history, CatalogChangeKind.DISCONNECTED, "erring")
    harness.expect(
        "D7.5",
        not lost,
        f"a server that answered a call with a JSON-RPC error of code {code} ({where}) was recorded disconnected: an "
        "error the server answers is not a lost connection",
    )


@pytest.mark.rules("D7.5")
@pytest.mark.parametrize(
    "transport", [t if t == "memory" else pytest.param(t, marks=pytest.mark.slow) for t in TRANSPORTS]
)
async def test_a_server_refusing_the_listen_stream_opens_and_serves(harness: Harness, transport: str) -> None:
    # A 2026-07-28 server that serves no listen stream answers the request with an error: it only has no notices to
    # give. Open is bounded here (a bound on waiting, never a timing claim): an adapter that waits for the stream forever
    # never opens.
    opened = False
    history: list[CatalogChange] = []
    with anyio.move_on_after(bound(harness, BOUND_S, "open with a server that refuses the listen stream")):
        async with (
            reached(harness, "deaf", "ListenRefusedServer", transport, protocol=ERAS[1]) as config,
            harness.open(mcp_servers=[config]) as session,
        ):
            opened = True
            for run in (session.run_id, "run-2"):
                harness.success(
                    "D7.5",
                    await session.call("mcp.deaf.echo", {"text": run}, run_id=run),
                    f"mcp.deaf.echo in {run}, its server refusing the listen stream",
                )
            history = await session.catalog_history()
    harness.expect(
        "D7.5",
        opened,
        f"open never returned with a {ERAS[1]} server ({transport}) that answers its listen request with an error",
    )
    lost = of_kind(history, CatalogChangeKind.DISCONNECTED, "deaf")
    harness.expect(
        "D7.5",
        not lost,
        f"a server refusing the listen stream ({transport}) was recorded disconnected: an error the server answers is "
        "not a lost connection",
    )


@pytest.mark.rules("D7.5")
@pytest.mark.slow
@pytest.mark.parametrize("healthy_transport", ["memory", "stdio"])
@pytest.mark.parametrize("protocol", ERAS)
async def test_one_lost_server_leaves_the_others_up_at_once(
    harness: Harness, protocol: str, healthy_transport: str
) -> None:
    dying = McpServerConfig(
        server_id="dying",
        transport=McpTransport.STDIO,
        command=stdio_command("ExitsBetweenCallsServer"),
        classification=READ,
        protocol=protocol,
    )
    harness.log.append(f"mcp server dying: ExitsBetweenCallsServer over stdio, {protocol}")
    async with (
        reached(harness, "healthy", "PlainServer", healthy_transport, protocol=protocol) as healthy,
        harness.open(EchoTool(harness.world), mcp_servers=[dying, healthy]) as session,
    ):
        harness.success("D7.5", await session.call("mcp.healthy.echo", {"text": "up"}), "mcp.healthy.echo")
        harness.success("D7.5", await session.call("mcp.dying.exit", {"text": "now"}), "mcp.dying.exit")
        await _lost(harness, session, "D7.5", "mcp.dying.echo", "dying")
        # The instance clock stands still: nothing the other server could need a reconnect for is due yet.
        for run in (session.run_id, "run-healthy"):
            harness.success(
                "D7.5",
                await session.call("mcp.healthy.echo", {"text": run}, run_id=run),
                f"mcp.healthy.echo in {run}, right after the other server was lost",
            )
        history = await session.catalog_history()
    touched = [c.kind.value for c in history if c.server_id == "healthy" and c.kind is not CatalogChangeKind.ADDED]
    harness.expect(
        "D7.5",
        not touched,
        f"the healthy server's connection entries after the other server was lost: {touched} (expected none)",
    )


async def _environment(harness: Harness, session: Session, run: str) -> list[str]:
    d = await session.call("mcp.keyed.environment", {"names": list(DEFAULT_NAMES)}, run_id=run)
    # The last line lists the names of every variable (D7.4's by-name check, in test_d07_mcp_transport); here only
    # the values matter.
    lines = "".join(e.text for e in d.content).splitlines() if isinstance(d, Success) else [describe(d)]
    return [line for line in lines if not line.startswith("names=")]


@pytest.mark.rules("D7.4")
@pytest.mark.slow
@pytest.mark.parametrize("protocol", ERAS)
async def test_a_restarted_stdio_server_keeps_its_env_and_cwd(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, protocol: str
) -> None:
    monkeypatch.setenv(ENV_KEY, "the-workers-own-key")
    cwd = (harness.directory / "server-cwd").resolve()
    cwd.mkdir(parents=True, exist_ok=True)
    env = {ENV_KEY: "k-restart"} | configured_defaults(harness.directory)
    config = McpServerConfig(
        server_id="keyed",
        transport=McpTransport.STDIO,
        command=stdio_command("EnvironmentServer"),
        classification=READ,
        protocol=protocol,
        env=env,
        cwd=str(cwd),
    )
    harness.log.append(f"mcp server keyed: EnvironmentServer over stdio, {protocol}, env {sorted(env)}, cwd {cwd}")
    expected = [f"{ENV_KEY}=k-restart", f"cwd={cwd}", *(f"{n}={env[n]}" for n in DEFAULT_NAMES)]
    async with harness.open(mcp_servers=[config]) as session:
        first = await _environment(harness, session, session.run_id)
        harness.expect("D7.4", first == expected, f"the first start saw {first}; expected {expected}")
        harness.success("D7.4", await session.call("mcp.keyed.exit", {}), "mcp.keyed.exit")
        await _lost(harness, session, "D7.4", "mcp.keyed.echo", "keyed")
        harness.clock.advance(CAP_S + 1.0)
        seen: list[str] = []
        runs = itertools.count(1)
        # A bound on waiting for the restart, never a timing claim.
        with anyio.move_on_after(bound(harness, BOUND_S, "the restarted server")):
            while not any(line.startswith("cwd=") for line in seen):
                seen = await _environment(harness, session, f"restarted-{next(runs)}")
                await anyio.sleep(0.05)
    harness.expect(
        "D7.4",
        seen == expected,
        f"after a restart the server saw {seen}; expected the configuration's {expected}",
    )
