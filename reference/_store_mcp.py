"""The MCP half of the reference store: decision 9's catalog history and the session pins.

Every public method is one committed transaction; ``Store`` mixes these in over its engine.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Table, insert
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, SQLModel, col, func, select

from ._tables import CatalogHistoryTable, SessionPinTable, column_values

_CATALOG: Table = SQLModel.metadata.tables[CatalogHistoryTable.__tablename__]
_PINS: Table = SQLModel.metadata.tables[SessionPinTable.__tablename__]
_INSERT_CATALOG = insert(_CATALOG)
_INSERT_PINS = insert(_PINS)


class McpRecords:
    """Catalog history and session pins over ``engine``."""

    engine: Engine

    def record_catalog(self, changes: Sequence[CatalogHistoryTable]) -> None:
        """Append catalog-history entries in one transaction."""
        if changes:
            with self.engine.begin() as connection:
                connection.execute(_INSERT_CATALOG, [column_values(change, _CATALOG) for change in changes])

    def catalog_history(self, server_id: str | None = None) -> list[CatalogHistoryTable]:
        """Catalog-history entries (of one server, or all) in recording order."""
        with Session(self.engine, expire_on_commit=False) as session:
            stmt = select(CatalogHistoryTable)
            if server_id is not None:
                stmt = stmt.where(CatalogHistoryTable.server_id == server_id)
            return list(session.exec(stmt.order_by(col(CatalogHistoryTable.seq))).all())

    def last_catalog_seq(self) -> int:
        """The last catalog-history seq (0 when empty)."""
        with Session(self.engine) as session:
            return session.exec(select(func.max(CatalogHistoryTable.seq))).one() or 0

    def pins(self, run_id: str) -> list[SessionPinTable]:
        """The session pin of ``run_id`` (empty: the session has not started)."""
        with Session(self.engine, expire_on_commit=False) as session:
            stmt = select(SessionPinTable).where(SessionPinTable.run_id == run_id)
            return list(session.exec(stmt.order_by(col(SessionPinTable.seq))).all())

    def pin(self, rows: Sequence[SessionPinTable]) -> bool:
        """Write a session's pin in one transaction; False when another worker pinned it first."""
        try:
            with self.engine.begin() as connection:
                connection.execute(_INSERT_PINS, [column_values(row, _PINS) for row in rows])
        except IntegrityError:
            return False
        return True

    def unpin(self, run_id: str) -> None:
        """Forget the session pin of ``run_id`` (a witness applies catalog changes mid-session with it)."""
        with Session(self.engine) as session:
            for row in session.exec(select(SessionPinTable).where(SessionPinTable.run_id == run_id)).all():
                session.delete(row)
            session.commit()
