"""A server's protocol era at open: a broken opening is one typed refusal (D7.7), a 2026-07-28 server is verified
before open returns and never switched to another era (D7.8), and an answer that breaks the era fails only its own
call (D7.9).

D7.7 and D7.8 judge the kind of error (one ConfigurationError, never an exception of the MCP SDK, its validation or a
task group's wrapper), that it names the server and the era asked, and that it says what the server did; they never
measure how long open took. The message's form is spec.McpOpenError's: 'MCP server ID refused at open: asked era
ERA; the server ANSWER; cause: TYPE: TEXT', where ANSWER is its error, 'gave no answer within N s', 'exited before
answering' (with the last lines of its stderr log) or 'wrote non-JSON to stdout (LINE)'. The reference also keeps a
stdio server's stderr in STORE_DIR/mcp-SERVER_ID.stderr.log (appended across restarts, one marker line per start) and
records the same text as a failed reconnect attempt's (D7.6); D7.7 judges only that the words an exit at start is
quoted with are that start's, never an earlier start's, and that however long they are (swept from one short line to
10,000 characters) open still ends with the one typed error quoting them, whole or cut.

D7.8 needs a probe because the SDK adopts a 2026-07-28 connection without sending anything: unprobed, a
handshake-only server is accepted and every later request fails. The refusal names the era the server answered with
(Method not found to server/discover: the handshake era; otherwise the versions its discover lists), and the same
server opens in its own era, so the refusal is about the era, not the server.
"""

from __future__ import annotations

from typing import Any

import pytest

from toolproof.fakes import EchoTool
from toolproof.fakes.mcp import CRASH_MESSAGE, CRASH_MESSAGE_ENV
from toolproof.spec import ConfigurationError, InvocationStatus, McpServerConfig, ReasonCode

from ._bounds import launch_bound
from ._harness import Harness, describe
from ._mcp import ERAS, TRANSPORTS, reached

OPENING_TIMEOUT_S = 0.5
"""The call timeout given to a server that never answers its opening: it bounds how long open may wait for it, and
since the server never answers, it elapses whatever the machine's load. A server that must be seen to write something
first gets ``launch_bound``'s, at least 2 s, which scales with the fake's start-up measured just before."""

_SLOW = pytest.mark.slow
_BY_TRANSPORT = [pytest.param(t, marks=() if t == "memory" else _SLOW) for t in TRANSPORTS]


async def _opened(harness: Harness, rule: str, server: McpServerConfig) -> ConfigurationError | None:
    """The configuration error open raised with ``server``, or None when it opened (and closed) the instance."""
    try:
        async with harness.open(EchoTool(harness.world), mcp_servers=[server]):
            harness.log.append("open accepted the server")
            return None
    except ConfigurationError as exc:
        harness.log.append(f"open refused: {exc}")
        return exc
    except Exception as exc:  # The finding: something other than the typed error left open.
        harness.fail(rule, f"open raised {type(exc).__module__}.{type(exc).__name__}, not a ConfigurationError: {exc}")


def _names_server_and_era(harness: Harness, rule: str, error: ConfigurationError, server: McpServerConfig) -> None:
    text = str(error)
    harness.expect(rule, server.server_id in text, f"the open error does not name the server {server.server_id!r}")
    harness.expect(rule, server.protocol in text, f"the open error does not name the era asked ({server.protocol})")
    harness.expect(
        rule,
        "TaskGroup" not in text and "sub-exception" not in text,
        f"the open error is a task group's wrapper text, not the server's answer: {text}",
    )


async def _refused(
    harness: Harness, rule: str, server: McpServerConfig, said: tuple[str, ...], what: str
) -> ConfigurationError:
    """Open must refuse ``server`` with one ConfigurationError naming it, the era, and one of ``said`` (any case);
    returns the error."""
    error = await _opened(harness, rule, server)
    if error is None:
        harness.fail(rule, f"open accepted a server that {what} ({server.transport.value}, {server.protocol})")
    _names_server_and_era(harness, rule, error, server)
    text = str(error).lower()
    harness.expect(
        rule,
        any(s.lower() in text for s in said),
        f"the open error does not say what the server did ({what}; expected one of {said}): {error}",
    )
    return error


@pytest.mark.rules("D7.7")
@pytest.mark.parametrize("transport", _BY_TRANSPORT)
async def test_a_handshake_never_answered_is_one_typed_refusal(harness: Harness, transport: str) -> None:
    fields: dict[str, Any] = {"call_timeout_s": OPENING_TIMEOUT_S}
    async with reached(harness, "silent", "HangsAtInitializeServer", transport, **fields) as server:
        await _refused(harness, "D7.7", server, ("no answer", "not answer", "timed out", "timeout"), "never answered")


LAST_WORDS_LENGTHS = (0, 100, 1_000, 10_000)
"""How long the line a server exits with is, in characters (0: the fake's own ``CRASH_MESSAGE``): however long its last
words, open refuses it with the one typed error, quoting them whole or cut."""

_FATAL = "fatal: WEATHER_API_KEY is not set; "
"""The sentence long last words repeat, so any stretch of them an error quotes, its start or its end, holds one."""


def _last_words(length: int) -> str:
    return (_FATAL * (length // len(_FATAL) + 1))[:length] if length else CRASH_MESSAGE


@pytest.mark.rules("D7.7")
@pytest.mark.slow
@pytest.mark.parametrize("length", LAST_WORDS_LENGTHS)
@pytest.mark.parametrize("protocol", ERAS)
async def test_a_server_that_exits_at_start_is_refused_with_its_last_words(
    harness: Harness, protocol: str, length: int
) -> None:
    fields: dict[str, Any] = {"env": {CRASH_MESSAGE_ENV: _last_words(length)}, "protocol": protocol}
    async with reached(harness, "crashing", "CrashesAtStartServer", "stdio", **fields) as server:
        error = await _refused(harness, "D7.7", server, (CRASH_MESSAGE,), "exited at start, saying why on stderr")
    # It exited: it answered nothing, so the error names no era as the one it speaks (D7.8's refusal of a server of
    # another era, which would send the operator to reconfigure a server that only needs its key).
    other = next(era for era in ERAS if era != protocol)
    harness.expect(
        "D7.7",
        other not in str(error),
        f"the open error for a {protocol} server that exited at start names the other era, {other}, as if the server "
        f"had answered in it: {error}",
    )
    # Nor as one that hung: it exited at once, long before its call timeout.
    claims = [word for word in ("timed out", "timeout", "no answer within") if word in str(error).lower()]
    harness.expect(
        "D7.7",
        not claims,
        f"the open error for a {protocol} server that exited at start says it timed out ({claims}): {error}",
    )


EARLIER_WORDS = "fatal: LEDGER_PATH is not set"
"""What the server says on stderr at its first start; at its second it says ``CRASH_MESSAGE``."""


@pytest.mark.rules("D7.7")
@pytest.mark.slow
async def test_an_exit_at_start_is_quoted_from_that_start_alone(harness: Harness) -> None:
    # Two opens of one instance's store: the server exits at both starts, saying something else each time.
    fields: dict[str, Any] = {"env": {CRASH_MESSAGE_ENV: EARLIER_WORDS}}
    async with reached(harness, "crashing", "CrashesAtStartServer", "stdio", **fields) as server:
        await _refused(harness, "D7.7", server, (EARLIER_WORDS,), "exited at start, saying why on stderr")
    async with reached(harness, "crashing", "CrashesAtStartServer", "stdio") as server:
        error = await _refused(harness, "D7.7", server, (CRASH_MESSAGE,), "exited at start again, saying another thing")
    harness.expect(
        "D7.7",
        EARLIER_WORDS not in str(error),
        f"the open error quotes what the server said at an earlier start ({EARLIER_WORDS!r}) as what it answered at "
        f"this one: {error}",
    )


@pytest.mark.rules("D7.7")
@pytest.mark.slow
@pytest.mark.parametrize("protocol", ERAS)
async def test_a_server_writing_non_json_is_refused(harness: Harness, protocol: str) -> None:
    # Its non-JSON must reach the pipeline before the timeout does: the timeout scales with the fake's start-up here.
    bound = await launch_bound(harness, "NonJsonServer", 2.0)
    fields: dict[str, Any] = {"call_timeout_s": bound, "protocol": protocol}
    async with reached(harness, "chatty", "NonJsonServer", "stdio", **fields) as server:
        await _refused(harness, "D7.7", server, ("json",), "wrote non-JSON to stdout")


@pytest.mark.rules("D7.8")
@pytest.mark.parametrize("transport", _BY_TRANSPORT)
async def test_a_handshake_only_server_is_refused_as_2026(harness: Harness, transport: str) -> None:
    async with reached(harness, "old", "LegacyOnlyServer", transport, protocol="2026-07-28") as server:
        await _refused(harness, "D7.8", server, ("legacy", "handshake", "initialize"), "speaks only the handshake era")
    # The same server in its own era works: the refusal is about the era, not the server.
    async with (
        reached(harness, "old", "LegacyOnlyServer", transport, protocol="legacy") as server,
        harness.open(EchoTool(harness.world), mcp_servers=[server]) as session,
    ):
        harness.success("D7.8", await session.call("mcp.old.echo", {"text": "hi"}), "mcp.old.echo (legacy)")


@pytest.mark.rules("D7.8")
@pytest.mark.parametrize("transport", _BY_TRANSPORT)
async def test_a_2026_server_silent_at_discover_is_refused(harness: Harness, transport: str) -> None:
    fields: dict[str, Any] = {"call_timeout_s": OPENING_TIMEOUT_S, "protocol": "2026-07-28"}
    async with reached(harness, "silent", "HangsAtInitializeServer", transport, **fields) as server:
        await _refused(harness, "D7.8", server, ("no answer", "not answer", "timed out", "timeout"), "never answered")
    # A server that does speak the era opens: verification refuses only what it should.
    async with (
        reached(harness, "plain", "PlainServer", transport, protocol="2026-07-28") as server,
        harness.open(EchoTool(harness.world), mcp_servers=[server]) as session,
    ):
        harness.success("D7.8", await session.call("mcp.plain.echo", {"text": "hi"}), "mcp.plain.echo (2026)")


@pytest.mark.rules("D7.9")
@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("transport", _BY_TRANSPORT)
async def test_an_answer_breaking_its_era_fails_only_that_call(harness: Harness, transport: str, protocol: str) -> None:
    async with (
        reached(harness, "lax", "EraViolatorServer", transport, protocol=protocol) as server,
        harness.open(EchoTool(harness.world), mcp_servers=[server]) as session,
    ):
        harness.success("D7.9", await session.call("mcp.lax.echo", {"text": "before"}), "mcp.lax.echo")
        for run in (session.run_id, "run-2"):
            try:
                d = await session.call("mcp.lax.broken", {"text": "x"}, run_id=run)
            except Exception as exc:  # The finding: the malformed answer escaped submit.
                harness.fail("D7.9", f"mcp.lax.broken raised {type(exc).__name__} out of submit: {exc}")
            harness.expect(
                "D7.9",
                (d.status, getattr(d, "reason_code", None))
                == (InvocationStatus.FAILED, ReasonCode.INVALID_TOOL_RESULT),
                f"mcp.lax.broken, answered without the result's required content, was {describe(d)} "
                "(expected FAILED invalid_tool_result)",
            )
            harness.success("D7.9", await session.call("mcp.lax.echo", {"text": "after"}, run_id=run))
            harness.success("D7.9", await session.call("files.echo", {"text": "builtin"}, run_id=run))
