"""Decision 18: no tool_registry_snapshots table.

The harness reads the store itself where it can: every SQLite database file the implementation keeps under the
store directory the harness gave it is opened read-only and its tables listed from its own schema. The
implementation's listing (``store_tables``) is judged too, never alone when a file can be read.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from toolproof.fakes import EchoTool

from ._harness import Harness

_SQLITE_HEADER = b"SQLite format 3\x00"
_SNAPSHOTS = "tool_registry_snapshots"


def sqlite_tables(directory: Path) -> dict[str, list[str]]:
    """Every SQLite database file under ``directory`` (by its header, whatever its name) -> its tables, read from the
    file's own schema, read-only."""
    found: dict[str, list[str]] = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        with path.open("rb") as handle:
            if handle.read(len(_SQLITE_HEADER)) != _SQLITE_HEADER:
                continue
        connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        finally:
            connection.close()
        found[str(path.relative_to(directory))] = sorted(name for (name,) in rows)
    return found


@pytest.mark.rules("D18.1")
async def test_the_store_has_no_registry_snapshot_table(harness: Harness) -> None:
    async with harness.open(EchoTool(harness.world)) as session:
        await session.call("files.echo", {"text": "t"})
        tables = await session.instance.store_tables()
        files = sqlite_tables(harness.directory / "store")
    harness.log.append(f"store tables as listed by the implementation: {tables}")
    harness.log.append(f"SQLite files under the store directory, read by the harness: {files or 'none'}")
    harness.expect("D18.1", bool(tables), "the store reported no tables at all")
    harness.expect("D18.1", _SNAPSHOTS not in tables, f"the store lists a {_SNAPSHOTS} table: {tables}")
    kept = [name for name, names in files.items() if _SNAPSHOTS in names]
    harness.expect(
        "D18.1",
        not kept,
        f"the harness found a {_SNAPSHOTS} table in the store's own files {kept} (the implementation listed {tables})",
    )
