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
from toolproof.spec import ToolSource

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


def sqlite_text(directory: Path) -> dict[str, str]:
    """Every table of every SQLite database file under ``directory`` ("file: table") -> the text of all its rows, read
    from the file itself, read-only (bytes as UTF-8)."""
    found: dict[str, str] = {}
    for file, tables in sqlite_tables(directory).items():
        connection = sqlite3.connect(f"{(directory / file).as_uri()}?mode=ro", uri=True)
        try:
            for table in tables:
                quoted = '"' + table.replace('"', '""') + '"'  # A name the file itself holds, quoted as SQL quotes one.
                rows = connection.execute(f"SELECT * FROM {quoted}").fetchall()
                found[f"{file}: {table}"] = "\n".join(
                    " ".join(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in row)
                    for row in rows
                )
        finally:
            connection.close()
    return found


_REGISTERED = [
    ("ledger.tally", ToolSource.BUILTIN),
    ("ledger.audit", ToolSource.BUILTIN),
    ("thermostat.read_dial", ToolSource.DEVICE),
    ("sandbox_jobs.compile_unit", ToolSource.SANDBOX),
]
"""Tools registered beside the one called, of every source; none is ever called, so no row of a call names them."""


def _registered(harness: Harness) -> list[EchoTool]:
    # Each spec carries words of its own (a description, an argument name) that only a copy of the spec can hold.
    return [
        EchoTool(
            harness.world,
            name=name,
            source=source,
            description=f"Registry copy marker {index}: {name} as registered.",
            input_schema={"type": "object", "properties": {f"registry_marker_{index}": {"type": "string"}}},
        )
        for index, (name, source) in enumerate(_REGISTERED)
    ]


def _copies(tables: dict[str, str]) -> dict[str, list[str]]:
    """Table -> the uncalled tools whose name and spec (its description's or its argument's words) it holds."""
    found: dict[str, list[str]] = {}
    for table, text in tables.items():
        held = [
            name
            for index, (name, _) in enumerate(_REGISTERED)
            if name in text and (f"Registry copy marker {index}:" in text or f"registry_marker_{index}" in text)
        ]
        if held:
            found[table] = held
    return found


@pytest.mark.rules("D18.1")
async def test_no_table_of_the_store_holds_a_copy_of_the_registry(harness: Harness) -> None:
    # Judged by what the store holds, not by a table's name (D18.1's interpretation): a worker started, a call made,
    # and a second worker started on the same store, then every table of every SQLite file read by the harness.
    tools = [EchoTool(harness.world), *_registered(harness)]
    for worker in ("first", "second"):
        async with harness.open(*tools) as session:
            await session.call("files.echo", {"text": worker})
    tables = sqlite_text(harness.directory / "store")
    harness.log.append(f"tables of the SQLite files under the store directory, read by the harness: {sorted(tables)}")
    copies = _copies(tables)
    harness.expect(
        "D18.1",
        not copies,
        f"the store holds a copy of the registry: {copies} (table: registered tools never called, each with its "
        "description or its argument names); decision 18 forbids a third record of what was registered, whatever "
        "its table is called",
    )
