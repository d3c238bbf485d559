"""The store: one SQLite file with the invocation rows and their events.

Writes happen inside ``transaction()``: each persist step is one committed transaction,
durable before the next step begins, and none is held open while a tool runs.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from toolproof.spec import Event, EventKind, InvocationRow, InvocationStatus

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tool_invocations (
    invocation_id   TEXT PRIMARY KEY,
    tenant          TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    step_number     INTEGER NOT NULL,
    call_id         TEXT NOT NULL,
    tool_name       TEXT NOT NULL,
    tool_version    TEXT,
    attempt         INTEGER NOT NULL DEFAULT 0,
    idempotency_key TEXT NOT NULL UNIQUE,
    call_hash       TEXT NOT NULL,            -- tool name + canonical arguments: the breaker's 'identical'
    status          TEXT NOT NULL,
    reason_code     TEXT,
    origin_trust    TEXT NOT NULL,
    argument_trust  TEXT NOT NULL,
    effect_sent_at  REAL,                     -- the watermark
    suspended_at    REAL,                     -- the control tools' nullable marker
    hold_until      REAL,                     -- approval holds: when they expire (injected clock)
    arguments       TEXT NOT NULL,
    disposition     TEXT                      -- what step 13 returned, for replays answered at step 8
);
CREATE INDEX IF NOT EXISTS tool_invocations_breaker ON tool_invocations (run_id, call_hash);
CREATE TABLE IF NOT EXISTS tool_events (
    seq           INTEGER PRIMARY KEY,
    run_id        TEXT NOT NULL,
    invocation_id TEXT NOT NULL,
    kind          TEXT NOT NULL,
    status        TEXT,
    reason_code   TEXT
);
"""


class Store:
    """Rows and events over one SQLite connection."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path)
        self._db.row_factory = sqlite3.Row
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Commit what the block writes as one transaction, or nothing if it raises."""
        with self._db:
            yield

    def insert(self, row: dict[str, Any]) -> None:
        marks = ", ".join("?" * len(row))
        self._db.execute(f"INSERT INTO tool_invocations ({', '.join(row)}) VALUES ({marks})", [*row.values()])

    def update(self, invocation_id: str, **columns: Any) -> None:
        assignments = ", ".join(f"{name} = ?" for name in columns)
        self._db.execute(
            f"UPDATE tool_invocations SET {assignments} WHERE invocation_id = ?", [*columns.values(), invocation_id]
        )

    def emit(self, invocation_id: str, *kinds: EventKind) -> None:
        """Events copy classification from the row as it is now: ids, status, reason. Never payload."""
        for kind in kinds:
            self._db.execute(
                "INSERT INTO tool_events (run_id, invocation_id, kind, status, reason_code) "
                "SELECT run_id, invocation_id, ?, status, reason_code FROM tool_invocations WHERE invocation_id = ?",
                (kind.value, invocation_id),
            )

    def mark_effect_sent(self, invocation_id: str, at: float) -> None:
        """Commit the watermark; the first mark wins."""
        with self._db:
            self._db.execute(
                "UPDATE tool_invocations SET effect_sent_at = ? WHERE invocation_id = ? AND effect_sent_at IS NULL",
                (at, invocation_id),
            )

    def get(self, invocation_id: str) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self._db.execute(
            "SELECT * FROM tool_invocations WHERE invocation_id = ?", (invocation_id,)
        ).fetchone()
        return row

    def by_key(self, key: str) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self._db.execute(
            "SELECT * FROM tool_invocations WHERE idempotency_key = ?", (key,)
        ).fetchone()
        return row

    def identical(self, run_id: str, call_hash: str, key: str) -> list[sqlite3.Row]:
        """Earlier rows of the same call in the run; a replay (same key) is not a new proposal."""
        return self._db.execute(
            "SELECT status, reason_code FROM tool_invocations WHERE run_id = ? AND call_hash = ? AND idempotency_key <> ?",
            (run_id, call_hash, key),
        ).fetchall()

    def expired_holds(self, now: float) -> list[sqlite3.Row]:
        return self._db.execute(
            "SELECT * FROM tool_invocations WHERE status = ? AND hold_until <= ? ORDER BY rowid",
            (InvocationStatus.AWAITING_APPROVAL.value, now),
        ).fetchall()

    def rows(self, run_id: str) -> list[InvocationRow]:
        found = self._db.execute(
            "SELECT invocation_id, tenant, run_id, step_number, call_id, tool_name, tool_version, attempt, "
            "idempotency_key, status, reason_code, origin_trust, argument_trust, effect_sent_at, "
            "suspended_at IS NOT NULL AS suspended, arguments FROM tool_invocations WHERE run_id = ? ORDER BY rowid",
            (run_id,),
        )
        return [InvocationRow.model_validate({**dict(r), "arguments": json.loads(r["arguments"])}) for r in found]

    def events(self, run_id: str) -> list[Event]:
        found = self._db.execute(
            "SELECT seq, kind, run_id, invocation_id, status, reason_code FROM tool_events WHERE run_id = ? ORDER BY seq",
            (run_id,),
        )
        return [Event.model_validate(dict(r)) for r in found]

    def tables(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
