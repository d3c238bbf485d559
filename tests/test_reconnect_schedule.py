"""The reference's reconnect backoff against D7.6's inclusive 60 s bound, and the down schedule of the reconnect
scenario: it must reach the reference's cap, then meet both sides of the boundary (a need not yet due, one exactly
due)."""

from __future__ import annotations

from toolproof.reference.hooks import McpAdapter
from toolproof.scenarios._mcp import CAP_S, DOWN_SCHEDULE


def _backoff(attempts: int) -> float:
    adapter = object.__new__(McpAdapter)  # backoff reads no state: no instance needs opening.
    return adapter.backoff(attempts)


def test_reference_backoff_doubles_up_to_the_cap_and_stays_there() -> None:
    delays = [_backoff(n) for n in range(1, 21)]
    assert delays[:7] == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0]
    assert set(delays[6:]) == {CAP_S}


def test_the_down_schedule_meets_both_sides_of_the_boundary_for_the_reference() -> None:
    # The reference's own rule: an attempt at a need once now >= retry_at (inclusive); each fails while down.
    now, retry_at, failures = 0.0, 1.0, 0
    last = now
    seen: list[tuple[float, bool]] = []  # (seconds since the last attempt, attempted) per need
    for advance in DOWN_SCHEDULE:
        now += advance
        attempted = now >= retry_at
        seen.append((now - last, attempted))
        if attempted:
            failures += 1
            retry_at, last = now + _backoff(failures), now
    assert all(attempted for since, attempted in seen if since >= CAP_S)
    assert (59.5, False) in seen, "no need just before the bound, after the cap was reached"
    assert (60.0, True) in seen, "no need exactly at the bound"
    assert failures >= 8, "the outage never kept the reference at its cap"
