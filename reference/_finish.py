"""Steps 13-14: the terminal row, outcome, events and counters in one transaction, then return."""

from __future__ import annotations

from typing import Any

from toolproof.spec import EventKind, InvocationStatus, Outcome

from ._host import PipelineHost
from ._persist import invocation_row
from ._state import DISPOSITION, CallState
from ._store import DuplicateKey


async def complete(p: PipelineHost, s: CallState) -> None:
    """13. Terminal status, outcome and events in one transaction."""
    if s.leave_row:
        return
    assert s.disposition is not None  # Invariant: every path to step 13 decided the call.
    status = InvocationStatus(s.disposition.status)
    reason = s.disposition.reason_code.value if isinstance(s.disposition, Outcome) else None
    metrics = p.metrics_for(s, status)
    changes: dict[str, Any] = {
        "status": status.value,
        "reason_code": reason,
        "finished_at": p.clock.now(),
        "lease_owner": None,
        "lease_expires_at": None,
        "disposition_json": DISPOSITION.dump_json(s.disposition).decode(),
    }
    if s.recorded:
        p.store.update(s.invocation_id, changes, [EventKind.COMPLETED], metrics)
        return
    row = invocation_row(p, s, status)
    for name, value in changes.items():
        setattr(row, name, value)
    row.effect_sent_at = p.clock.now() if s.marked else None
    try:
        p.store.insert(row, [EventKind.REQUESTED, EventKind.COMPLETED], metrics)
    except DuplicateKey:
        # An identical call was already decided: answer with what it recorded.
        existing = p.store.find_by_key(s.key)
        assert existing is not None
        assert existing.disposition_json is not None
        s.disposition = DISPOSITION.validate_json(existing.disposition_json)


async def publish(p: PipelineHost, s: CallState) -> None:
    """14. Return. Metrics and the breaker's counts were committed with step 13; nothing is held in memory."""
