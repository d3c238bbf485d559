"""Decision 9 in the middle of a session: a flood of notices during a long call, a silent change between two calls.

Both eras, in-memory and over the subprocess transports (stdio and streamable HTTP, marked slow).

D9.2: every notice of a flood sent while a call to that server is still in flight is one entry.

D9.4 is judged between two calls of one session, on tools whose description, title or output schema alone, or
description, input schema and annotations at once, changed silently (``_listing.DRIFTS``): a consequential call,
of each classification one step from IDEMPOTENT READ_ONLY (a write of any idempotency, a NON_IDEMPOTENT or
CONDITIONALLY_IDEMPOTENT read: ``_listing.CONSEQUENTIAL``), inside the max age in both eras, and a NON_IDEMPOTENT
external write also over stdio and streamable HTTP; and an idempotent read after max ages of 0, exactly the age, past
it and long past it (``READ_AGES``). ``test_d09_freshness`` judges the server's ttlMs, a notice during a listing and a
lost connection. D9.5: each hashed field changed alone, and several at once, found by a consequential call.
"""

from __future__ import annotations

import pytest

from toolproof.fakes.mcp import FLOOD_COUNT, PUBLISHED_URI
from toolproof.spec import READ_RESOURCE, CatalogChangeKind, InvocationStatus, ReasonCode

from ._harness import Harness, Session, describe
from ._listing import (
    CONSEQUENTIAL,
    DRIFTS,
    INSIDE_AGE_S,
    classified,
    drift_session,
    judge_second_calls,
    pinned,
)
from ._mcp import ERAS, READ, eventually, memory, of_kind, reached, transport_params


@pytest.mark.rules("D9.2")
@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("transport", transport_params())
async def test_a_flood_during_a_long_call_is_recorded_once_each_and_changes_nothing(
    harness: Harness, transport: str, protocol: str
) -> None:
    where = f"{transport}, {protocol}"
    async with (
        reached(harness, "flood", "ListChangedFloodServer", transport, protocol=protocol) as config,
        harness.open(mcp_servers=[config]) as session,
    ):
        before = await session.advertise()
        harness.success(
            "D9.2",
            await session.call("mcp.flood.long_flood", {"text": "x"}),
            f"mcp.flood.long_flood, during which the server sent {FLOOD_COUNT} tools/list_changed ({where}),",
        )

        async def count() -> int:
            return len(of_kind(await session.catalog_history(), CatalogChangeKind.NOTIFIED, "flood"))

        async def all_in() -> bool:
            return await count() >= FLOOD_COUNT

        await eventually(harness, all_in, f"the {FLOOD_COUNT} tools/list_changed of the flood to be recorded")
        # A round trip through the pipeline and the server: a notice counted twice would be in by now.
        harness.success("D9.2", await session.call("mcp.flood.echo", {"text": "after"}), f"mcp.flood.echo ({where})")
        recorded = await count()
        after = await session.advertise()
    harness.expect(
        "D9.2",
        recorded == FLOOD_COUNT,
        f"ListChangedFloodServer sent {FLOOD_COUNT} tools/list_changed while mcp.flood.long_flood was in flight "
        f"({where}); the catalog history recorded {recorded} notified entries",
    )
    harness.expect(
        "D9.2",
        pinned(after) == pinned(before),
        f"the flood changed the session's advertisement ({where}): before {sorted(pinned(before))}, after "
        f"{sorted(pinned(after))}",
    )


@pytest.mark.rules("D9.4")
@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("transport", transport_params())
async def test_a_silent_change_between_two_calls_of_one_session_is_not_called(
    harness: Harness, transport: str, protocol: str
) -> None:
    where = f"{transport}, {protocol}, external-write-non-idempotent, inside listing_max_age_s={INSIDE_AGE_S:g}"
    before, second, after, _ = await drift_session(
        harness, transport, protocol, classification=classified("external-write-non-idempotent")
    )
    judge_second_calls(harness, second, where)
    harness.expect("D9.4", after == before, f"the session's pin changed mid-session ({where}): {before} -> {after}")


@pytest.mark.rules("D9.4")
@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("classification", list(CONSEQUENTIAL))
async def test_a_consequential_call_after_a_silent_change_is_not_called_inside_the_max_age(
    harness: Harness, classification: str, protocol: str
) -> None:
    _, second, _, _ = await drift_session(harness, "memory", protocol, classification=classified(classification))
    judge_second_calls(
        harness, second, f"memory, {protocol}, {classification}, inside listing_max_age_s={INSIDE_AGE_S:g}"
    )


READ_AGES = {
    "no-reuse": (0.0, 0.0),
    "at-the-age": (5.0, 5.0),
    "past-the-age": (5.0, 5.5),
    "long-past": (0.25, 3600.0),
}
"""listing_max_age_s and the instance-clock seconds between an idempotent read and the next: a listing is fresh only
while younger than the age, so each second read lists again (an age of 0 never reuses one; one exactly the age old is
stale)."""


@pytest.mark.rules("D9.4")
@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("ages", list(READ_AGES))
async def test_an_idempotent_read_after_a_silent_change_is_not_called_once_the_max_age_passed(
    harness: Harness, ages: str, protocol: str
) -> None:
    max_age_s, advance_s = READ_AGES[ages]
    _, second, _, _ = await drift_session(
        harness, "memory", protocol, classification=READ, max_age_s=max_age_s, advance_s=advance_s
    )
    judge_second_calls(
        harness,
        second,
        f"memory, {protocol}, an IDEMPOTENT READ_ONLY server, listing_max_age_s={max_age_s:g}, the clock moved "
        f"{advance_s:g} s between the calls",
    )


@pytest.mark.rules("D9.5")
@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("transport", transport_params())
async def test_a_silent_change_between_two_calls_of_one_session_is_recorded(
    harness: Harness, transport: str, protocol: str
) -> None:
    _, _, _, history = await drift_session(
        harness, transport, protocol, classification=classified("external-write-non-idempotent")
    )
    changed = {c.remote_name or "" for c in of_kind(history, CatalogChangeKind.CHANGED, "drift")}
    harness.expect(
        "D9.5",
        set(DRIFTS) <= changed,
        f"the silent changes of {sorted(DRIFTS)} were listed before their second (consequential) calls ({transport}, "
        f"{protocol}); the catalog history recorded changes of {sorted(changed)}",
    )


_WITHDRAWALS = {
    **{f"idempotent-read-{name}": (READ, ages) for name, ages in READ_AGES.items()},
    **{name: (classified(name), (INSIDE_AGE_S, 0.0)) for name in CONSEQUENTIAL},
}
"""How the synthetic read tool's next call meets a withdrawal: an IDEMPOTENT READ_ONLY server's after each of
``READ_AGES`` (the listing stale by then), and every other classification inside the max age (it lists first)."""


@pytest.mark.rules("D9.3")
@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("case", list(_WITHDRAWALS))
async def test_the_read_tool_of_a_server_that_withdrew_its_resources_answers_withdrawn(
    harness: Harness, case: str, protocol: str
) -> None:
    # D8.1: the synthetic read tool runs the full pipeline, so it is withdrawn as any tool is. A session pins it while
    # the server offers a resource; the server withdraws every resource and template (another run's call); the
    # session's next read, on a listing it may not reuse, answers tool_withdrawn and never reaches the server.
    classification, (max_age_s, advance_s) = _WITHDRAWALS[case]
    config, fake = memory(
        harness,
        "res",
        "ChangingResourcesServer",
        classification=classification,
        protocol=protocol,
        listing_max_age_s=max_age_s,
    )
    read = f"mcp.res.{READ_RESOURCE}"
    where = f"{case}, {protocol}, listing_max_age_s={max_age_s:g}, the clock moved {advance_s:g} s"
    async with harness.open(mcp_servers=[config]) as publisher:
        harness.success("D9.3", await publisher.call("mcp.res.publish", {"text": "resource"}), "mcp.res.publish")
        reader = Session(harness, publisher.instance, run_id="run-reader")
        if read not in (await reader.advertise()).names():
            harness.fail("D9.3", f"a session started while the server offers a resource does not advertise {read}")
        harness.success("D9.3", await reader.call(read, {"uri": PUBLISHED_URI}), f"the first {read} ({where})")
        harness.success("D9.3", await publisher.call("mcp.res.retract", {"text": "all"}), "mcp.res.retract")
        if advance_s:
            reader.advance(advance_s)
        d = await reader.call(read, {"uri": PUBLISHED_URI})
        advertised = read in (await reader.advertise()).names()
    reads = fake.log.count(f"resources/read {PUBLISHED_URI}")
    harness.expect(
        "D9.3",
        (d.status, getattr(d, "reason_code", None)) == (InvocationStatus.UNAVAILABLE, ReasonCode.TOOL_WITHDRAWN)
        and reads == 1,
        f"after the server withdrew every resource mid-session ({where}), the session's next {read} was answered "
        f"{describe(d)}, the server reading the resource {reads} time(s) in all; expected UNAVAILABLE tool_withdrawn "
        "and 1 (the first read only): the read may not reuse its listing, and lists again",
    )
    harness.expect("D9.3", advertised, f"{read}, withdrawn mid-session, left the session's advertisement ({where})")
