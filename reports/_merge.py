"""Shards of one run (``toolproof run --shard K/N``) combined into the run they split: ``toolproof merge``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from toolproof.spec import ConfigurationError, CrashCell, ResultRow, StaleExpectation, Verdict

from ._results import RunInfo
from ._store import load_everything

Recorded = tuple[RunInfo, list[ResultRow], list[CrashCell], list[StaleExpectation]]
"""One folder's latest run: its info, rows, crash cells and stale expectations."""

_KEPT_RULE_LEVEL = frozenset({Verdict.NOT_CLAIMED, Verdict.REVIEW_ONLY})
"""Rule-level verdicts a shard knows for the whole run; ``not-covered`` is worked out again from all the rows."""


def load_shards(folders: Sequence[Path]) -> list[Recorded]:
    """The latest run of each folder, refused unless together they are every shard of one run.

    Raises:
        ConfigurationError: a folder holds no results, or a whole run rather than a shard, or the runs differ in
            catalog, implementations, toolproof version or selection, or a shard is missing or given twice.
    """
    if not folders:
        raise ConfigurationError("merge needs the folders of a run's shards")
    recorded = [load_everything(folder) for folder in folders]
    first, where = recorded[0][0], folders[0]
    for (info, *_), folder in zip(recorded, folders, strict=True):
        if info.shard is None:
            raise ConfigurationError(
                f"{folder} holds a whole run ({info.run_id}), not a shard: run it with --shard K/N"
            )
        for what, mine, theirs in (
            ("rule catalog", info.catalog_sha256, first.catalog_sha256),
            ("implementations", info.implementations, first.implementations),
            ("implementation references", info.implementation_refs, first.implementation_refs),
            ("toolproof version", info.toolproof_version, first.toolproof_version),
            ("selected rules", info.whole_selection, first.whole_selection),
            ("shard count", info.shard.split("/")[1], (first.shard or "/").split("/")[1]),
        ):
            if mine != theirs:
                raise ConfigurationError(
                    f"{folder} and {where} are not shards of one run: their {what} differ ({mine} and {theirs})"
                )
    count = int((first.shard or "0/0").split("/")[1])
    seen: dict[int, Path] = {}
    for (info, *_), folder in zip(recorded, folders, strict=True):
        index = int((info.shard or "0/0").split("/")[0])
        if index in seen:
            raise ConfigurationError(f"shard {info.shard} is given twice: {seen[index]} and {folder}")
        seen[index] = folder
    missing = [f"{k}/{count}" for k in range(1, count + 1) if k not in seen]
    if missing:
        raise ConfigurationError(f"shard {', '.join(missing)} of the run is missing: merge needs all {count}")
    return sorted(recorded, key=lambda one: int((one[0].shard or "0/0").split("/")[0]))


def merge_shards(shards: Sequence[Recorded], run_id: str) -> Recorded:
    """The run the shards split, as ``run_id``: every scenario row and crash cell, the selection of the whole run.

    A rule's verdict is then worked out from all its rows, as in one unsharded run. A stale expectation any shard
    found is stale (each shard judged staleness against the whole selection, and an entry whose scenarios ran in
    another shard is not stale in this one). The run's exit code is left for the caller to work out.
    """
    infos = [info for info, *_ in shards]
    first = infos[0]
    info = RunInfo(
        run_id=run_id,
        implementations=first.implementations,
        selected_rules=first.whole_selection,
        started_at=min(infos, key=lambda one: one.started).started_at,
        toolproof_version=first.toolproof_version,
        profiles=first.profiles,
        implementation_refs=first.implementation_refs,
        catalog_sha256=first.catalog_sha256,
        rerun_options=first.rerun_options,
    )
    rows: list[ResultRow] = []
    rule_level: set[tuple[str, str, Verdict]] = set()
    cells: list[CrashCell] = []
    stale: dict[tuple[str, str, int], StaleExpectation] = {}
    for _, shard_rows, shard_cells, shard_stale in shards:
        for row in shard_rows:
            if row.scenario:
                rows.append(row.model_copy(update={"run_id": run_id}))
            elif row.verdict in _KEPT_RULE_LEVEL and (row.implementation, row.rule_id, row.verdict) not in rule_level:
                rule_level.add((row.implementation, row.rule_id, row.verdict))
                rows.append(row.model_copy(update={"run_id": run_id}))
        cells.extend(cell.model_copy(update={"run_id": run_id}) for cell in shard_cells)
        for entry in shard_stale:
            stale.setdefault(
                (entry.implementation, entry.file, entry.entry), entry.model_copy(update={"run_id": run_id})
            )
    return info, rows, cells, list(stale.values())
