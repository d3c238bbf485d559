"""The MCP half of the reference store: decision 9's catalog history and the session pins.

Every public method is one committed transaction; ``Store`` mixes these in over its engine. Rows go in and come out
as ``CatalogRow``/``PinRow`` through Core statements: a catalog of thousands of tools is thousands of rows at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields

from sqlalchemy import Table, bindparam, delete, func, insert, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import SQLModel

from ._store_hot import HotPath
from ._tables import CatalogHistoryTable, CatalogRow, PinRow, SessionPinTable, column_values

_CATALOG: Table = SQLModel.metadata.tables[CatalogHistoryTable.__tablename__]
_PINS: Table = SQLModel.metadata.tables[SessionPinTable.__tablename__]
_INSERT_CATALOG = insert(_CATALOG)
_INSERT_PINS = insert(_PINS)
_CATALOG_COLUMNS = [_CATALOG.c[f.name] for f in fields(CatalogRow)]
_PIN_COLUMNS = [_PINS.c[f.name] for f in fields(PinRow)]
_PINNED_ONCE = select(_PINS.c.seq).where(_PINS.c.run_id == bindparam("b_run")).limit(1)
_PIN_OF = select(*_PIN_COLUMNS).where(
    _PINS.c.run_id == bindparam("b_run"), _PINS.c.kind == bindparam("b_kind"), _PINS.c.name == bindparam("b_name")
)
PIN_READS = {"pinned_once": _PINNED_ONCE, "pin_of": _PIN_OF}
"""The two pin reads every MCP call makes, for the hot path on SQLite (``Store`` adds them to its statements)."""


class McpRecords:
    """Catalog history and session pins over ``engine``."""

    engine: Engine
    _hot: HotPath | None

    def record_catalog(self, changes: Sequence[CatalogRow | CatalogHistoryTable]) -> None:
        """Append catalog-history entries in one transaction."""
        if changes:
            with self.engine.begin() as connection:
                connection.execute(_INSERT_CATALOG, [column_values(change, _CATALOG) for change in changes])

    def catalog_history(self, server_id: str | None = None) -> list[CatalogRow]:
        """Catalog-history entries (of one server, or all) in recording order."""
        stmt = select(*_CATALOG_COLUMNS)
        if server_id is not None:
            stmt = stmt.where(_CATALOG.c.server_id == server_id)
        with self.engine.connect() as connection:
            return [CatalogRow(*row) for row in connection.execute(stmt.order_by(_CATALOG.c.seq))]

    def last_catalog_seq(self) -> int:
        """The last catalog-history seq (0 when empty)."""
        with self.engine.connect() as connection:
            last: int | None = connection.execute(select(func.max(_CATALOG.c.seq))).scalar()
            return last or 0

    def pins(self, run_id: str) -> list[PinRow]:
        """The session pin of ``run_id`` (empty: the session has not started)."""
        stmt = select(*_PIN_COLUMNS).where(_PINS.c.run_id == run_id).order_by(_PINS.c.seq)
        with self.engine.connect() as connection:
            return [PinRow(*row) for row in connection.execute(stmt)]

    def pinned_once(self, run_id: str) -> bool:
        """Whether the session of ``run_id`` has a pin (it started), without reading the pin."""
        if self._hot is not None:
            return self._hot.one("pinned_once", {"b_run": run_id}) is not None
        with self.engine.connect() as connection:
            return connection.execute(_PINNED_ONCE, {"b_run": run_id}).first() is not None

    def pin_of(self, run_id: str, kind: str, name: str) -> PinRow | None:
        """The one pin row of ``kind`` named ``name`` in the session of ``run_id`` (the unique index finds it)."""
        values = {"b_run": run_id, "b_kind": kind, "b_name": name}
        if self._hot is not None:
            found = self._hot.one("pin_of", values)
            return None if found is None else PinRow(**found)
        with self.engine.connect() as connection:
            row = connection.execute(_PIN_OF, values).first()
        return None if row is None else PinRow(*row)

    def pin(self, rows: Sequence[PinRow | SessionPinTable]) -> bool:
        """Write a session's pin in one transaction; False when another worker pinned it first."""
        try:
            with self.engine.begin() as connection:
                connection.execute(_INSERT_PINS, [column_values(row, _PINS) for row in rows])
        except IntegrityError:
            return False
        return True

    def unpin(self, run_id: str) -> None:
        """Forget the session pin of ``run_id`` (a witness applies catalog changes mid-session with it)."""
        with self.engine.begin() as connection:
            connection.execute(delete(_PINS).where(_PINS.c.run_id == run_id))
