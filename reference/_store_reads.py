"""The store's reads of whole runs and of recovery, as Core statements built once.

On SQLite they run on the hot path's driver connection (``_store_hot``: compiled once per process); on PostgreSQL
through the engine, whose statement cache compiles them once per store. An ORM select on a new engine compiled
again for every instance: a conformance run opens about 1,300 instances, and reads its rows after each cell.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Table, bindparam
from sqlalchemy import select as core_select
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from toolproof.spec import InvocationStatus

from ._store_hot import HotPath
from ._tables import EventTable, InvocationTable, MetricTable

_INVOCATIONS: Table = SQLModel.metadata.tables[InvocationTable.__tablename__]
_EVENTS: Table = SQLModel.metadata.tables[EventTable.__tablename__]
_METRICS: Table = SQLModel.metadata.tables[MetricTable.__tablename__]
_ROWS = _INVOCATIONS.c

READS = {
    "by_call": core_select(_INVOCATIONS)
    .where(_ROWS.run_id == bindparam("b_run"), _ROWS.step_number == bindparam("b_step"))
    .where(_ROWS.call_id == bindparam("b_call"))
    .order_by(_ROWS.seq)
    .limit(1),
    "run_rows": core_select(_INVOCATIONS).where(_ROWS.run_id == bindparam("b_run")).order_by(_ROWS.seq),
    "run_events": core_select(_EVENTS).where(_EVENTS.c.run_id == bindparam("b_run")).order_by(_EVENTS.c.seq),
    "expired_holds": core_select(_INVOCATIONS)
    .where(_ROWS.status == InvocationStatus.AWAITING_APPROVAL.value, _ROWS.hold_expires_at < bindparam("b_now"))
    .order_by(_ROWS.seq),
    # Invariant: suspended control calls are excluded by predicate, whatever their age.
    "orphans": core_select(_INVOCATIONS)
    .where(
        _ROWS.suspended_at.is_(None),
        ((_ROWS.status == InvocationStatus.RUNNING.value) & (_ROWS.lease_expires_at < bindparam("b_now")))
        | ((_ROWS.status == InvocationStatus.RECORDED.value) & (_ROWS.created_at < bindparam("b_stranded"))),
    )
    .order_by(_ROWS.seq),
    "metrics": core_select(_METRICS),
}
"""The reads by name, for ``read`` and for the hot path's statements."""


def read(hot: HotPath | None, engine: Engine, name: str, values: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every row read ``name`` returns with ``values``, as column-name mappings."""
    if hot is not None:
        return hot.all(name, values)
    with engine.connect() as connection:
        return [dict(row) for row in connection.execute(READS[name], dict(values)).mappings().all()]
