"""Store faults on demand (decisions 3 and 4): the worker lives, and a write at a persistence point fails.

A crash plan (``_crash``) kills the worker at a point; a fault plan keeps it alive and makes its store fail the
write it makes at a point. The harness asks for one through ``InstanceConfig.fault``; the implementation makes its
own store fail there, the way its database would, and answers the submitter with ``StoreFault``.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from ._enums import Step
from ._errors import ToolproofError


class FaultPoint(StrEnum):
    """The writes a fault plan can fail: the four persistence points' and the watermark's."""

    RECORD = "record"
    """Step 6: inserting the invocation row."""
    HOLD = "hold"
    """Step 7: opening an approval hold or a control suspension."""
    CLAIM = "claim"
    """Step 8: taking the lease (the row goes RUNNING)."""
    WATERMARK = "watermark"
    """Step 10: committing ``effect_sent_at`` inside ``mark_effect_sent``."""
    COMPLETE = "complete"
    """Step 13: the terminal status, the disposition and the events."""


FAULT_STEPS: dict[FaultPoint, Step] = {
    FaultPoint.RECORD: Step.RECORD,
    FaultPoint.HOLD: Step.HOLD,
    FaultPoint.CLAIM: Step.CLAIM,
    FaultPoint.WATERMARK: Step.EXECUTE,
    FaultPoint.COMPLETE: Step.COMPLETE,
}
"""The step each fault point's write belongs to."""

BEFORE_TOOL_FAULT_POINTS = (FaultPoint.RECORD, FaultPoint.HOLD, FaultPoint.CLAIM)
"""The points before step 10: a failed write there leaves the world untouched."""


class FaultKind(StrEnum):
    """How the store fails the write."""

    ERROR = "error"
    """The database raises on the write (an I/O error, a full disk, a constraint a trigger enforces)."""
    CONNECTION_LOST = "connection_lost"
    """The connection drops mid-transaction (a server restart, a failover, a terminated backend)."""
    BUSY = "busy"
    """The write waits for a lock and gives up (``SQLITE_BUSY``, PostgreSQL's ``lock_timeout``)."""


class FaultPlan(BaseModel):
    """Where and how an instance's store must fail a write, and whether it comes back."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    point: FaultPoint
    """Which write fails."""
    kind: FaultKind = FaultKind.ERROR
    """How it fails."""
    call_id: str | None = None
    """Only when this call reaches the point; None: the first call that does."""
    store_returns: bool = True
    """True: only that one write fails, and the store serves every later write. False: that write and every later
    write of this instance fail (the store stays down until another instance opens it)."""


class StoreFault(ToolproofError):
    """An implementation's answer when its store failed a write the call needed: the submitter gets no disposition.

    ``Instance.submit`` (and ``resolve_approval``, ``resume``, ``sweep``, ``run_script``) raise it; over the driver
    protocol it is the problem type ``store-fault`` (503).
    """
