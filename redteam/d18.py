"""Decision 18: no tool_registry_snapshots table; pins plus history answer what a session advertised."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, MetaData, String, Table, Text

from toolproof.reference.hooks import McpAdapter, Pipeline, ReferenceImplementation
from toolproof.spec import Advertisement

from ._common import impl

_METADATA = MetaData()
_SNAPSHOTS = Table(
    "tool_registry_snapshots",
    _METADATA,
    Column("run_id", String, primary_key=True),
    Column("body_json", Text),
)


class _Snapshots(Pipeline):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _METADATA.create_all(self.store.engine)  # The mistake: "an audit table of what each run could call".


def registry_snapshots_table() -> ReferenceImplementation:
    """D18 "No tool_registry_snapshots table": the store creates one (for auditing what each run advertised)."""
    return impl("d18-registry-snapshots-table", _Snapshots)


class _EarlyAsOf(McpAdapter):
    async def advertise(self, run_id: str) -> Advertisement:
        if self.links and not self.store.pins(run_id):
            before = self.store.last_catalog_seq()  # The mistake: read before the listing is recorded.
            ad = await super().advertise(run_id)
            from sqlmodel import Session, select

            from toolproof.reference._tables import SessionPinTable

            with Session(self.store.engine) as session:
                for row in session.exec(select(SessionPinTable).where(SessionPinTable.run_id == run_id)).all():
                    row.as_of_seq = before
                    session.add(row)
                session.commit()
            return ad.model_copy(update={"as_of_seq": before})
        return await super().advertise(run_id)


class _AsOfStale(Pipeline):
    mcp_class = _EarlyAsOf


def pin_as_of_before_listing() -> ReferenceImplementation:
    """D18 (pins + catalog history answer what a session advertised): the pin's as_of_seq is read before the
    session's own listing is recorded, so replaying the history to as_of_seq misses changes the pin includes."""
    return impl("d18-pin-as-of-before-listing", _AsOfStale)
