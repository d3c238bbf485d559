"""Decision 18: no tool_registry_snapshots table."""

from __future__ import annotations

import pytest

from toolproof.fakes import EchoTool

from ._harness import Harness


@pytest.mark.rules("D18.1")
async def test_the_store_has_no_registry_snapshot_table(harness: Harness) -> None:
    async with harness.open(EchoTool(harness.world)) as session:
        await session.call("files.echo", {"text": "t"})
        tables = await session.instance.store_tables()
    harness.log.append(f"store tables: {tables}")
    harness.expect("D18.1", bool(tables), "the store reported no tables at all")
    harness.expect(
        "D18.1",
        "tool_registry_snapshots" not in tables,
        f"the store has a tool_registry_snapshots table: {tables}",
    )
