"""SQLite as every system in ``toolproof bench`` uses it: one durability setting, commits counted, its ceiling.

The reference store opens SQLite with ``journal_mode=WAL`` and ``synchronous=FULL``; the commit
limit probe and the DBOS peer are given exactly those, and each system's live connection is
asked what it actually runs with, so the table never states a setting it did not read back.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

DURABILITY_PRAGMAS: tuple[tuple[str, str], ...] = (("journal_mode", "WAL"), ("synchronous", "FULL"))
"""The reference store's durability settings (``reference/_store.py``), applied to every system measured."""

DURABILITY_PROMISE = (
    "journal_mode=WAL + synchronous=FULL. A COMMIT returns only after the transaction's frames are appended to "
    "the WAL file and that file is fsynced: in WAL mode FULL adds this sync to every commit, where NORMAL syncs "
    "only at checkpoints. SIGKILL of the worker: every transaction whose COMMIT returned survives, because its "
    "frames are already in the WAL file (the kernel keeps what a killed process wrote) and the next connection "
    "replays them; an open transaction rolls back. SQLite promises this much for any synchronous setting. "
    "Power loss or OS crash: with FULL every returned COMMIT survives as well, provided the storage honours "
    "fsync; a disk or hypervisor that acknowledges a flush it has not done voids it, and nothing inside this VM "
    "can tell. (WAL + NORMAL would stay consistent but could lose the last commits.) "
    "Sources: sqlite.org/pragma.html#pragma_synchronous, sqlite.org/wal.html."
)
"""What the settings promise, stated once for the table and bench.json."""

_SYNCHRONOUS_NAMES = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def apply_durability(dbapi_connection: Any) -> None:
    """Run the durability pragmas on a fresh DB-API (sqlite3) connection."""
    for name, value in DURABILITY_PRAGMAS:
        dbapi_connection.execute(f"PRAGMA {name}={value}")


def settings_of(dbapi_connection: Any) -> dict[str, str]:
    """What a live sqlite3 connection runs with: journal mode and synchronous level, read back."""
    journal = str(dbapi_connection.execute("PRAGMA journal_mode").fetchone()[0]).upper()
    level = int(dbapi_connection.execute("PRAGMA synchronous").fetchone()[0])
    return {"journal_mode": journal, "synchronous": _SYNCHRONOUS_NAMES.get(level, str(level))}


def engine_settings(engine: Engine) -> dict[str, str]:
    """``settings_of`` a connection from ``engine``'s pool."""
    with engine.connect() as connection:
        return settings_of(connection.connection.dbapi_connection)


class CommitCounter:
    """Counts transactions that commit a write on ``engine``, from SQLAlchemy's commit event.

    A commit with nothing written (a read-only session, an empty transaction) is not counted:
    sqlite3 opens a transaction only before a write, so ``in_transaction`` tells the two apart.
    """

    def __init__(self, engine: Engine, elsewhere: Callable[[], int] = lambda: 0) -> None:
        self.engine = engine
        self._events = 0
        self._elsewhere = elsewhere
        event.listen(engine, "commit", self._on_commit)

    @property
    def count(self) -> int:
        """Commits so far: those the engine's events saw, plus those ``elsewhere`` reports (the reference store's
        hot path commits on the driver connection, past the engine's events)."""
        return self._events + self._elsewhere()

    def _on_commit(self, connection: Connection) -> None:
        dbapi = connection.connection.dbapi_connection
        if getattr(dbapi, "in_transaction", True):
            self._events += 1

    def detach(self) -> None:
        """Stop counting."""
        event.remove(self.engine, "commit", self._on_commit)


class CommitProbe:
    """One-row committed transactions per second at ``path`` with the durability settings, on a reused WAL.

    Plain sqlite3 with no framework above it: the ceiling any pipeline on this file shares. The reference
    store keeps its connection open, so its WAL file has long reached its size and, checkpointed, is
    rewritten from its start; a fresh file's WAL grows with every commit instead (growing a file costs
    the filesystem more per fsync), and SQLite deletes the WAL when the last connection closes. So the
    probe keeps one connection open across repetitions, writes as many untimed commits as the first
    repetition will time (the WAL reaches the size the timed commits need), and checkpoints before each
    repetition (the next commit restarts the WAL at its start without shrinking it).
    """

    def __init__(self, path: Path) -> None:
        self.connection = sqlite3.connect(path)
        apply_durability(self.connection)
        self.connection.execute("CREATE TABLE IF NOT EXISTS probe (id INTEGER PRIMARY KEY, payload TEXT NOT NULL)")
        self.connection.commit()
        self._warm = 0

    def close(self) -> None:
        """Close the connection (SQLite then checkpoints and removes the WAL)."""
        self.connection.close()

    def settings(self) -> dict[str, str]:
        """What the probe's own connection runs with."""
        return settings_of(self.connection)

    def measure(self, commits: int) -> float:
        """Time ``commits`` one-row commits on the checkpointed, reused WAL; commits per second."""
        connection = self.connection
        for index in range(self._warm, commits):
            connection.execute("INSERT INTO probe (payload) VALUES (?)", (f"warm {index}",))
            connection.commit()
        self._warm = max(self._warm, commits)
        connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
        started = time.perf_counter()
        for index in range(commits):
            connection.execute("INSERT INTO probe (payload) VALUES (?)", (f"row {index}",))
            connection.commit()
        return commits / (time.perf_counter() - started)


# The child commits one row per transaction and prints its id only after the commit returned.
_CHILD = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1])
for statement in sys.argv[2:]:
    connection.execute(statement)
connection.execute("CREATE TABLE IF NOT EXISTS acked (id INTEGER PRIMARY KEY)")
connection.commit()
index = 0
while True:
    index += 1
    connection.execute("INSERT INTO acked (id) VALUES (?)", (index,))
    connection.commit()
    print(index, flush=True)
"""


def sigkill_survival(path: Path, acknowledged: int) -> dict[str, Any]:
    """SIGKILL a writer mid-stream and check that every commit it acknowledged is in the file.

    The child keeps committing while it is killed, so the kill usually lands inside a transaction.
    """
    pragmas = [f"PRAGMA {name}={value}" for name, value in DURABILITY_PRAGMAS]
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path), *pragmas], stdout=subprocess.PIPE, text=True, bufsize=1
    )
    acked: list[int] = []
    try:
        assert child.stdout is not None
        for line in child.stdout:
            acked.append(int(line))
            if len(acked) >= acknowledged:
                break
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    connection = sqlite3.connect(path)
    try:
        found = {row[0] for row in connection.execute("SELECT id FROM acked")}
        integrity = str(connection.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        connection.close()
    return {
        "acknowledged": len(acked),
        "missing_after_kill": sum(1 for index in acked if index not in found),
        "rows_after_kill": len(found),
        "killed_by_signal": -child.returncode if child.returncode < 0 else None,
        "integrity_check": integrity,
    }
