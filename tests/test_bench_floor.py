"""The bench's floor writes what the reference writes, the efficiency is floor ÷ reference, and the commit
probe reuses its WAL. Never a timing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from toolproof.bench import ReferenceRig, Sample
from toolproof.bench._floor import FloorRig, schema_ddl
from toolproof.bench._run import efficiency
from toolproof.bench._sqlite import CommitProbe
from toolproof.fakes import EchoTool, World, WriteTool

# Columns that differ between any two stores by construction: generated ids, wall-clock times, the worker's name.
_VOLATILE = {"seq", "invocation_id", "lease_owner"}


def _contents(path: Path) -> dict[str, list[dict[str, Any]]]:
    connection = sqlite3.connect(path)
    connection.row_factory = sqlite3.Row
    try:
        invocations = [dict(r) for r in connection.execute("SELECT * FROM tool_invocations ORDER BY seq")]
        events = [dict(r) for r in connection.execute("SELECT * FROM tool_events ORDER BY seq")]
        metrics = [dict(r) for r in connection.execute("SELECT * FROM tool_metrics ORDER BY name")]
    finally:
        connection.close()
    ids = {row["invocation_id"]: f"invocation-{n}" for n, row in enumerate(invocations)}
    for row in invocations:
        disposition = json.loads(row["disposition_json"])
        assert disposition["invocation_id"] == row["invocation_id"]
        row["disposition_json"] = disposition | {"invocation_id": ids[row["invocation_id"]]}
        row["invocation_id"] = ids[row["invocation_id"]]
        del row["seq"], row["lease_owner"]
    for event in events:
        assert isinstance(event.pop("created_at"), float)
        event["invocation_id"] = ids[event["invocation_id"]]
        del event["seq"]
    return {"tool_invocations": invocations, "tool_events": events, "tool_metrics": metrics}


def test_the_floor_writes_the_rows_the_reference_writes(tmp_path: Path) -> None:
    with ReferenceRig(tmp_path / "reference", batch_wait_s=0.01) as rig:
        requests = rig.requests("read", "same", 1) + rig.requests("write", "same", 1)
        ours = rig.run(requests, "one read, one write")
        # Tools of their own in a world of their own: the write's effect number is part of its disposition.
        world = World()
        with FloorRig(tmp_path / "floor", [EchoTool(world), WriteTool(world)]) as floor:
            theirs = floor.run(requests)
    assert ours.commits == theirs.commits == 3 + 4
    reference = _contents(tmp_path / "reference" / "store" / "toolproof.sqlite3")
    floored = _contents(tmp_path / "floor" / "floor.sqlite3")
    assert [row["tool_name"] for row in reference["tool_invocations"]] == ["files.echo", "tickets.create"]
    assert reference["tool_invocations"][1]["effect_sent_at"] is not None
    assert [e["kind"] for e in reference["tool_events"]] == [
        f"tool_call.{kind}" for kind in ("requested", "started", "completed")
    ] * 2
    assert floored == reference


def test_the_floor_builds_its_tables_from_the_reference_metadata(tmp_path: Path) -> None:
    with ReferenceRig(tmp_path / "reference", batch_wait_s=0.01), FloorRig(tmp_path / "floor", []):
        pass

    def schema(path: Path) -> list[tuple[str, str]]:
        connection = sqlite3.connect(path)
        try:
            rows = connection.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name")
            return [(name, " ".join(sql.split())) for name, sql in rows]
        finally:
            connection.close()

    assert schema(tmp_path / "floor" / "floor.sqlite3") == schema(
        tmp_path / "reference" / "store" / "toolproof.sqlite3"
    )
    assert any(statement.startswith("CREATE TABLE tool_invocations") for statement in schema_ddl())


@pytest.mark.parametrize(
    ("floor_s", "reference_s", "expected"),
    [(1.0, 2.0, 0.5), (3.0, 3.0, 1.0), (0.7, 1.0, 0.7), (2.0, 1.0, 2.0)],
)
def test_efficiency_is_the_floor_per_call_time_over_the_reference_per_call_time(
    floor_s: float, reference_s: float, expected: float
) -> None:
    # Different call counts on each side: the ratio is of per-call times, not of totals.
    floor = Sample(seconds=floor_s, calls=100, commits=300)
    reference = Sample(seconds=reference_s * 2, calls=200, commits=600)
    assert efficiency(floor, reference) == pytest.approx(expected)


def test_the_commit_probe_rewrites_one_checkpointed_wal_instead_of_growing_a_fresh_one(tmp_path: Path) -> None:
    path = tmp_path / "probe.sqlite3"
    wal = Path(f"{path}-wal")
    probe = CommitProbe(path)
    try:
        assert probe.measure(60) > 0
        size = wal.stat().st_size
        assert size > 0
        for _ in range(3):
            probe.measure(60)
            assert wal.stat().st_size == size
        (rows,) = probe.connection.execute("SELECT count(*) FROM probe").fetchone()
        assert rows == 60 * 5  # the untimed commits once, then 60 timed per repetition
        assert probe.settings() == {"journal_mode": "WAL", "synchronous": "FULL"}
    finally:
        probe.close()
