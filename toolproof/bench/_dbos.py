"""The peer in ``toolproof bench``: the same two workloads as steps of DBOS workflows on a SQLite system database.

DBOS (``pip install 'toolproof[bench]'``) is optional: without it the peer is reported unavailable,
never estimated. Its own SQLite engine sets no journal mode or synchronous level (so it would run
with a rollback journal), so the bench hands DBOS a ``system_database_engine`` (a DBOSConfig option)
that repeats DBOS's connect hook and adds the reference's durability pragmas.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine

from ._pipeline import Sample, Workload
from ._sqlite import CommitCounter, apply_durability, engine_settings

PEER_NOTE = (
    "DBOS: one workflow per call whose single step does the tool's work (echo, or append one effect); "
    "DBOS checkpoints a step's output after it returns and has no watermark, so a crash inside the write "
    "step re-executes it on recovery."
)
"""What the peer's workloads are, for the table and bench.json."""

# Workflows are registered once per process: DBOS keeps a global registry across instances.
_WORKFLOWS: dict[Workload, Any] = {}
EFFECTS: list[str] = []
"""Effects the peer's write step left (its stand-in for the fake world's ledger)."""


def unavailable_reason() -> str | None:
    """Why the peer cannot run here, or None when it can."""
    try:
        importlib.import_module("dbos")
    except ImportError as exc:
        return f"dbos is not installed ({exc}); install the optional extra: pip install 'toolproof[bench]'"
    return None


def _register(dbos_class: Any) -> dict[Workload, Any]:
    if _WORKFLOWS:
        return _WORKFLOWS

    @dbos_class.step()  # type: ignore[untyped-decorator]
    def echo(text: str) -> str:
        return text

    @dbos_class.step()  # type: ignore[untyped-decorator]
    def write(text: str) -> str:
        EFFECTS.append(text)
        return f"effect {len(EFFECTS)}"

    @dbos_class.workflow()  # type: ignore[untyped-decorator]
    def bench_read_call(text: str) -> str:
        result: str = echo(text)
        return result

    @dbos_class.workflow()  # type: ignore[untyped-decorator]
    def bench_write_call(text: str) -> str:
        result: str = write(text)
        return result

    _WORKFLOWS.update({"read": bench_read_call, "write": bench_write_call})
    return _WORKFLOWS


def _connect(dbapi_connection: Any, _record: Any) -> None:
    # What DBOS's own SQLite engine does on connect (dbos/_sys_db_sqlite.py), then the reference's durability.
    dbapi_connection.isolation_level = "IMMEDIATE"
    dbapi_connection.execute("PRAGMA busy_timeout=30000")
    dbapi_connection.execute("PRAGMA foreign_keys=ON")
    apply_durability(dbapi_connection)


class DbosRig:
    """DBOS launched on a SQLite system database in ``directory``; calls run synchronously on this thread."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._dbos: Any = None
        self._engine: Engine | None = None
        self._counter: CommitCounter | None = None
        self._workflows: dict[Workload, Any] = {}

    @staticmethod
    def version() -> str:
        """The installed DBOS version."""
        return importlib.metadata.version("dbos")

    def __enter__(self) -> DbosRig:
        self.directory.mkdir(parents=True, exist_ok=True)
        dbos_class = importlib.import_module("dbos").DBOS
        self._workflows = _register(dbos_class)
        url = f"sqlite:///{self.directory / 'dbos.sqlite3'}"
        self._engine = create_engine(url)
        event.listen(self._engine, "connect", _connect)
        config = {
            "name": "toolproof-bench",
            "system_database_url": url,
            "system_database_engine": self._engine,
            "log_level": "WARNING",
        }
        dbos_class(config=config)
        dbos_class.launch()
        self._dbos = dbos_class
        self._counter = CommitCounter(self._engine)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._counter is not None:
            self._counter.detach()
        if self._dbos is not None:
            self._dbos.destroy()
        if self._engine is not None:
            self._engine.dispose()

    def settings(self) -> dict[str, str]:
        """Journal mode and synchronous level of the DBOS system database, read back from its engine."""
        assert self._engine is not None
        return engine_settings(self._engine)

    def run_calls(self, workload: Workload, calls: int, tag: str) -> Sample:
        """``calls`` workflows of ``workload``, one after another."""
        assert self._counter is not None
        workflow = self._workflows[workload]
        texts = [f"{tag} {index}" for index in range(calls)]
        before = self._counter.count
        started = time.perf_counter()
        for text in texts:
            workflow(text)
        seconds = time.perf_counter() - started
        return Sample(seconds=seconds, calls=calls, commits=self._counter.count - before)
