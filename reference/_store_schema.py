"""The store's tables on a new SQLite file, from DDL compiled once per process.

``MetaData.create_all`` compiles every table's and index's DDL again for each new engine and asks the database
about each table first: a scenario run opens a store per instance, hundreds of times. On SQLite a file that holds
none of the tables gets the DDL compiled once (per dialect and set of tables) in one transaction; a file holding
all of them is left as it is; anything else, and every other database, goes through ``create_all``.
"""

from __future__ import annotations

import sqlite3

from sqlalchemy.engine import Dialect, Engine
from sqlalchemy.schema import CreateIndex, CreateTable
from sqlmodel import SQLModel

_DDL: dict[tuple[str, tuple[str, ...]], tuple[str, ...]] = {}
"""(dialect name, table names) -> the statements that create those tables and their indexes, in dependency order."""


def _ddl(dialect: Dialect, names: tuple[str, ...]) -> tuple[str, ...]:
    key = (dialect.name, names)
    found = _DDL.get(key)
    if found is None:
        statements: list[str] = []
        for table in SQLModel.metadata.sorted_tables:
            statements.append(str(CreateTable(table).compile(dialect=dialect)))
            statements += [str(CreateIndex(index).compile(dialect=dialect)) for index in table.indexes]
        found = _DDL[key] = tuple(statements)
    return found


def create_tables(engine: Engine) -> None:
    """Create the store's tables where they are missing (``SQLModel.metadata.create_all``'s effect).

    On SQLite the check and the creation are one ``BEGIN IMMEDIATE`` transaction: one commit for every table, and
    two processes opening one new file cannot both create it.
    """
    if engine.dialect.name != "sqlite":
        SQLModel.metadata.create_all(engine)
        return
    names = tuple(sorted(SQLModel.metadata.tables))
    proxy = engine.raw_connection()  # The connect hook has set WAL, FULL and the busy timeout.
    try:
        connection = proxy.driver_connection
        assert isinstance(connection, sqlite3.Connection)  # Invariant: a SQLite engine's driver connection.
        connection.execute("BEGIN IMMEDIATE")
        try:
            existing = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            partial = bool(existing & set(names)) and not set(names) <= existing
            if not existing & set(names):
                for statement in _ddl(engine.dialect, names):
                    connection.execute(statement)
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
    finally:
        proxy.close()
    if partial:  # Some tables but not all: create_all works out which.
        SQLModel.metadata.create_all(engine)
