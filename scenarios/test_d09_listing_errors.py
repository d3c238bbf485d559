"""Decision 9 when the listing fails: a call that must list first is never sent on a catalog nobody checked (D9.4).

D9.4 makes every consequential call, and an idempotent read whose last listing is stale, list the catalog before it
runs. A server that answers that tools/list with an error while its connection stays up (ListingErrorServer after
``fail_listing tools``) leaves the call unchecked against the session's pin, so it is not sent: it answers UNAVAILABLE
remote_unavailable (D7.5 judges the answer, ``test_d07_mcp_lifecycle``), and the server never receives it.

Swept: both eras; every consequential classification (``_listing.CONSEQUENTIAL``) and an idempotent read past the max
age, beside an idempotent read inside it (the other side: it may run on its last listing, and is received only if it
ran); the running session and a new one (whose own listing fails too); JSON-RPC's internal error and -32000 (the code
the MCP SDK gives its own closed connection: a server's -32000 is still an answer, the connection up); in-memory,
after a restart (a fresh instance over the same store and the same in-process server, whose listing fails from its
start), and over stdio and streamable HTTP (slow). Judged by the server's own record of the calls it received.
"""

from __future__ import annotations

import pytest

from toolproof.spec import Success

from ._harness import Harness, describe
from ._listing import ERRING_KINDS, erring_calls, must_list
from ._mcp import ERAS

CODES = (-32603, -32000)
"""The error codes tools/list answers with: JSON-RPC's internal error, and the SDK's own closed-connection code."""


def _cells() -> list[object]:
    cells: list[object] = []
    for protocol in ERAS:
        for kind in ERRING_KINDS:
            for code in CODES:
                cells.append(pytest.param("memory", protocol, kind, code, False, id=f"{protocol}-{kind}-{code}"))
        for kind in ("external-write-non-idempotent", "read-stale"):
            cells.append(pytest.param("memory", protocol, kind, CODES[0], True, id=f"{protocol}-{kind}-after-restart"))
        for transport in ("stdio", "http"):
            cell = f"{protocol}-external-write-non-idempotent-{transport}"
            marks = pytest.mark.slow
            cells.append(
                pytest.param(
                    transport, protocol, "external-write-non-idempotent", CODES[0], False, id=cell, marks=marks
                )
            )
    return cells


@pytest.mark.rules("D9.4")
@pytest.mark.parametrize(("transport", "protocol", "kind", "code", "restart"), _cells())
async def test_a_call_whose_listing_failed_is_never_sent(
    harness: Harness, transport: str, protocol: str, kind: str, code: int, restart: bool
) -> None:
    erring = await erring_calls(harness, transport, protocol, kind, "tools", code, restart=restart)
    for run, d in erring.answered.items():
        if must_list(kind):
            harness.expect(
                "D9.4",
                erring.received[run] == 0,
                f"mcp.erring.echo in {run} ({erring.where}) reached the server ({erring.received[run]} call(s) "
                f"received) and was answered {describe(d)}: the call must list the catalog first, the listing failed, "
                "so nothing checked the tool against the session's pin and it is never sent",
            )
        else:
            ran = isinstance(d, Success)
            harness.expect(
                "D9.4",
                erring.received[run] == int(ran),
                f"mcp.erring.echo in {run} ({erring.where}), an idempotent read inside the max age, was answered "
                f"{describe(d)} and the server received {erring.received[run]} call(s) of it: it may run on the last "
                "listing (and is received once) or answer unavailable (and is never sent)",
            )
