"""Run the scenarios against implementations and write the results (wiring only)."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path

import hypothesis.configuration
import pytest

from toolproof.driver import load
from toolproof.reports import (
    RunInfo,
    load_fault_cells,
    load_run,
    load_shards,
    merge_shards,
    run_exit_code,
    selected_rules,
    verdict_table,
    write_run,
)
from toolproof.scenarios import PLUGIN, ResultCollector, Shard, ShardSelector, cell_key, selected_exploration
from toolproof.spec import (
    ConfigurationError,
    HarnessError,
    ResultRow,
    StaleExpectation,
    Verdict,
    catalog_digest,
    load_catalog,
    new_run_id,
)

from . import __version__
from ._interrupt import quiet_debris, was_interrupted
from ._preflight import check_out_dir, require
from .expectations import Expectations, draft_expectations

FAILING = frozenset({Verdict.FAIL, Verdict.ERROR})
Progress = Callable[[ResultRow, int, int], None]


@dataclass(frozen=True)
class RunOutcome:
    """What a run produced."""

    run_id: str
    """The run's id in results.duckdb."""
    out_dir: Path
    """Where the files were written."""
    verdicts: dict[str, dict[str, Verdict]]
    """Implementation -> rule -> verdict."""
    stale: tuple[StaleExpectation, ...] = ()
    """Expectations file entries the run contradicted."""
    draft: Path | None = None
    """The expectations file drafted from the run's failures, when one was asked for."""
    exit_code: int = 0
    """0 when every claimed, covered rule passed (or failed as expected) and no expectation is stale, else 1;
    stored with the run, so the report states it."""
    cells: dict[str, dict[Verdict, int]] = field(default_factory=dict)
    """Implementation -> how many scenario cells (a scenario with one set of parameters) ended in each verdict."""
    causes: dict[str, dict[str, str]] = field(default_factory=dict)
    """Implementation -> failed, errored or not-covered rule -> the first line of its first such scenario's evidence."""

    @property
    def uncovered(self) -> dict[str, list[str]]:
        """Implementation -> rules no scenario could judge (``not-covered``): never a pass, so a run's closing lines
        name them even when it conforms."""
        return {
            impl: [rule for rule, v in table.items() if v is Verdict.NOT_COVERED]
            for impl, table in self.verdicts.items()
        }

    @property
    def failed(self) -> dict[str, list[str]]:
        """Implementation -> rules that failed or errored."""
        return {
            impl: [rule for rule, v in table.items() if v in FAILING]
            for impl, table in self.verdicts.items()
            if any(v in FAILING for v in table.values())
        }


def _check_writable(out_dir: Path) -> None:
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / f".toolproof-write-check-{uuid.uuid4().hex}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ConfigurationError(
            f"--out {str(out_dir)!r} is not a writable directory ({exc.strerror or exc})"
        ) from None


class _QuietAfterInterrupt:
    """After Ctrl-C, pytest's unconfigure collects garbage and warns of what failed to be collected (an object the
    interrupt left half-built): debris, quieted before pytest's own unconfigure runs."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_unconfigure(self) -> None:
        if was_interrupted():
            quiet_debris()


def run_suite(
    impls: Sequence[str],
    rules: str | None,
    out_dir: Path,
    *,
    progress: Progress | None = None,
    notes: Callable[[str], None] | None = None,
    database_url: str | None = None,
    expectations: Sequence[Path] = (),
    cells: Sequence[str] = (),
    write_expectations: Path | None = None,
    shard: Shard | None = None,
    shard_durations: Path | None = None,
    impl_rules: Mapping[str, str] | None = None,
    first_failure: bool = False,
) -> RunOutcome:
    """Run the scenarios of ``rules`` against ``impls`` and write the report into ``out_dir``.

    ``expectations`` are expectations files (see ``toolproof.expectations``): the failures they
    declare are reported ``xfail``, and the entries the run contradicts are stale and fail it.
    ``cells`` narrow the run to those scenarios (``module.py::test_name``) or cells (``…[param]``), as reports
    name them; the selected rules are then the ones they judge (within ``rules``). ``write_expectations`` is a
    new file to draft an expectations file into from the run's failures (one implementation only).
    ``shard`` runs one deterministic share of the cells (``toolproof merge`` combines the shards' folders), balanced
    by the cell durations of the latest run in ``shard_durations`` (a results folder) when given, else by count;
    the shard's report holds the rules its cells judge.
    ``impl_rules`` narrows some of ``impls`` (keyed by the ref given in ``impls``) to rules of their own, within
    ``rules``: such an implementation runs only the cells that judge one of them, and its other selected rules read
    ``not-covered`` (the witness matrix runs a decision's witnesses side by side, each on the rules it breaks).
    ``notes`` hears a long scenario say how far it has gone while it runs (examples done, of how many).
    ``first_failure`` runs no more cells of a scenario for an implementation once one failed for it (they leave no
    row): one failed cell rejects it on the scenario's rules, which is all the witness matrix asks of a run.

    Raises:
        ConfigurationError: an unknown implementation or rule, an ``impl_rules`` key not in ``impls``, a cell that selects no scenario (nothing runs),
            a bad expectations file (``ExpectationsError``), an unknown ``TOOLPROOF_HYPOTHESIS_PROFILE``
            (``ExplorationError``), an unwritable ``out_dir``, or a ``write_expectations``
            file that exists or a run of several implementations to draft it from (checked before anything runs,
            so nothing is half-written); ``--shard`` with ``--cell`` or ``--write-expectations``, or a
            ``shard_durations`` folder that holds no results.
        HarnessError: the scenarios could not be collected or pytest stopped on its own.
    """
    refs = list(impls) or ["reference"]
    selected_exploration()
    selection = load_catalog().select(rules)
    check_out_dir(out_dir)
    if database_url:
        require("psycopg", "--database-url")
    loaded = [load(ref, patience_s=0) for ref in refs]  # A driver URL is probed once: it answers now or never.
    names = [impl.name for impl in loaded]
    if len(set(names)) != len(names):
        raise ConfigurationError(f"--impl names an implementation twice: {names}")
    expected = Expectations.load(expectations, names)
    _check_writable(out_dir)
    if write_expectations is not None:
        _check_draft(write_expectations, names)
    selector = _shard_selector(shard, shard_durations, cells, write_expectations)

    started = datetime.now(UTC)
    run_id = new_run_id(started)
    collector = ResultCollector(progress, notes)
    scenarios_dir = Path(str(files("toolproof.scenarios")))
    args = [
        "--pyargs",
        "toolproof.scenarios",
        "-p",
        PLUGIN,
        "-p",
        "no:terminal",
        "-p",
        "no:cacheprovider",
        "-c",
        os.devnull,
        "--rootdir",
        str(scenarios_dir),
        "-W",
        "ignore::DeprecationWarning",
        "--toolproof-run-id",
        run_id,
    ]
    for ref in refs:
        args += ["--toolproof-impl", ref]
    if rules is not None:
        args += ["--toolproof-rules", rules]
    if database_url:
        args += ["--toolproof-database-url", database_url]
    for cell in cells:
        args += ["--toolproof-cell", cell]
    if first_failure:
        args.append("--toolproof-first-failure")
    for ref, own in (impl_rules or {}).items():
        if ref not in refs:
            raise ConfigurationError(f"impl_rules names {ref!r}, which is not one of the implementations {refs}")
        load_catalog().select(own)  # An unknown rule is refused here, before pytest starts.
        args += ["--toolproof-impl-rules", f"{ref}={own}"]
    # Hypothesis keeps caches under .hypothesis/ in the working folder; a run leaves only its report behind.
    with tempfile.TemporaryDirectory(prefix="toolproof-hypothesis-") as scratch:
        hypothesis.configuration.set_hypothesis_home_dir(scratch)
        try:
            plugins: list[object] = [collector, expected.index, _QuietAfterInterrupt()]
            plugins += [selector] if selector is not None else []
            code = pytest.main(args, plugins=plugins)
        finally:
            hypothesis.configuration.set_hypothesis_home_dir(None)
    if collector.port_violation is not None:  # The collector stopped the session: checked before INTERRUPTED.
        raise ConfigurationError(collector.port_violation)
    if collector.collection_errors:  # Before INTERRUPTED: pytest reports a collection error as interrupted too.
        raise HarnessError("scenarios could not be collected: " + "; ".join(collector.collection_errors))
    if code == pytest.ExitCode.INTERRUPTED:
        raise KeyboardInterrupt  # pytest caught Ctrl-C and stopped: nothing of this run is written.
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise HarnessError(f"pytest stopped with exit code {int(code)} before the scenarios finished")
    if collector.selection_problems:
        raise ConfigurationError("; ".join(collector.selection_problems))

    narrowed = collector.cell_rules
    whole = [rule.id for rule in selection if narrowed is None or rule.id in narrowed]
    # A shard's own report holds the rules its cells are tagged with, and those the harness judged on them.
    reached = selector.judged | {row.rule_id for row in collector.results} if selector is not None else frozenset()
    selected = [rule_id for rule_id in whole if selector is None or rule_id in reached]
    info = RunInfo(
        run_id=run_id,
        implementations=names,
        selected_rules=selected,
        started_at=started.isoformat(),
        toolproof_version=__version__,
        profiles={impl.name: sorted(p.value for p in impl.profiles) for impl in loaded},
        implementation_refs=dict(zip(names, refs, strict=True)),
        catalog_sha256=catalog_digest(),
        shard=str(shard) if shard is not None else None,
        whole_selection=whole if shard is not None else [],
    )
    chosen = set(selected)
    # A scenario may also judge rules outside the selection.
    judged = [row for row in collector.results if row.rule_id in chosen]
    # A shard judges staleness against the whole selection: an entry whose rows ran in another shard is not stale
    # here (its scenarios did not run here), and one stale in every shard is stale in the merged run.
    rows, stale = expected.apply(run_id, judged, frozenset(whole))
    verdicts = verdict_table(info, rows, selected_rules(info))
    # The exit code is known before anything is written, so the report can state it.
    code = run_exit_code(verdicts, stale)
    updated = info.model_copy(update={"exit_code": code})
    write_run(out_dir, updated, rows, collector.crash_cells, stale, fault_cells=collector.fault_cells)
    if write_expectations is not None:
        # Drafted from the rows as the scenarios gave them: a failure an expectations file already expects stays in.
        _write_draft(write_expectations, draft_expectations(names[0], judged, run_id))
    return RunOutcome(
        run_id=run_id,
        out_dir=out_dir,
        verdicts=verdicts,
        stale=tuple(stale),
        draft=write_expectations,
        exit_code=code,
        cells=_cell_counts(rows),
        causes=_causes(rows),
    )


def merge_runs(folders: Sequence[Path], out_dir: Path) -> RunOutcome:
    """Combine the folders of a run's shards into one run in ``out_dir``, with every report rendered again.

    Raises:
        ConfigurationError: the folders are not every shard of one run (``load_shards``), ``out_dir`` is one of
            them, or it cannot be written.
    """
    check_out_dir(out_dir)
    resolved = out_dir.resolve()
    if any(folder.resolve() == resolved for folder in folders):
        raise ConfigurationError(f"--out {out_dir} is one of the shards' folders: merge into a folder of its own")
    shards = load_shards(folders)
    run_id = new_run_id()
    info, rows, crash_cells, stale = merge_shards(shards, run_id)
    faults = [
        cell.model_copy(update={"run_id": run_id})
        for folder, (shard, *_) in zip(folders, shards, strict=True)
        for cell in load_fault_cells(folder, shard.run_id)
    ]
    _check_writable(out_dir)
    verdicts = verdict_table(info, rows, selected_rules(info))
    code = run_exit_code(verdicts, stale)
    write_run(out_dir, info.model_copy(update={"exit_code": code}), rows, crash_cells, stale, fault_cells=faults)
    return RunOutcome(
        run_id=run_id,
        out_dir=out_dir,
        verdicts=verdicts,
        stale=tuple(stale),
        exit_code=code,
        cells=_cell_counts(rows),
        causes=_causes(rows),
    )


def _shard_selector(
    shard: Shard | None, durations_from: Path | None, cells: Sequence[str], draft: Path | None
) -> ShardSelector | None:
    if shard is None:
        if durations_from is not None:
            raise ConfigurationError("--shard-durations balances shards: give --shard K/N with it")
        return None
    if cells:
        raise ConfigurationError("--shard splits the whole selection: run --cell without --shard")
    if draft is not None:
        raise ConfigurationError(
            "--write-expectations drafts from a whole run: merge the shards, or run without --shard"
        )
    durations: dict[str, float] = {}
    if durations_from is not None:
        folder = durations_from.parent if durations_from.is_file() else durations_from
        _, earlier = load_run(folder)
        for row in earlier:
            if row.scenario:
                key = cell_key(row.implementation, row.scenario)
                durations[key] = max(durations.get(key, 0.0), row.duration_s)
    return ShardSelector(shard, durations)


def _check_draft(path: Path, names: Sequence[str]) -> None:
    if len(names) != 1:
        raise ConfigurationError(
            f"--write-expectations drafts one implementation's file, and the run has {len(names)}: give one --impl"
        )
    if path.exists():
        raise ConfigurationError(f"--write-expectations {str(path)!r} already exists: give a new file")
    if not path.parent.is_dir():
        raise ConfigurationError(f"--write-expectations {str(path)!r}: its folder does not exist")


def _write_draft(path: Path, text: str) -> None:
    try:
        with path.open("x", encoding="utf-8") as stream:
            stream.write(text)
    except OSError as exc:
        raise ConfigurationError(
            f"--write-expectations {str(path)!r} cannot be written ({exc.strerror or exc})"
        ) from None


_WORST_FIRST = (
    Verdict.FAIL,
    Verdict.ERROR,
    Verdict.XFAIL,
    Verdict.NOT_COVERED,
    Verdict.REVIEW_ONLY,
    Verdict.PASS,
    Verdict.NOT_CLAIMED,
)


def _cell_counts(rows: Sequence[ResultRow]) -> dict[str, dict[Verdict, int]]:
    # A cell judges several rules; its verdict is the worst of its rows.
    cells: dict[tuple[str, str], set[Verdict]] = {}
    for row in rows:
        if row.scenario:
            cells.setdefault((row.implementation, row.scenario), set()).add(row.verdict)
    counts: dict[str, dict[Verdict, int]] = {}
    for (impl, _), verdicts in cells.items():
        worst = next((v for v in _WORST_FIRST if v in verdicts), Verdict.ERROR)
        table = counts.setdefault(impl, {})
        table[worst] = table.get(worst, 0) + 1
    return counts


def first_cause(evidence: str) -> str:
    """The line of ``evidence`` that says what went wrong: a traceback's ``E`` line, else its first line."""
    lines = [line.strip() for line in evidence.splitlines() if line.strip()]
    raised = [line.removeprefix("E").strip() for line in lines if line.startswith("E ")]
    return raised[0] if raised else (lines[0] if lines else "")


def _causes(rows: Sequence[ResultRow]) -> dict[str, dict[str, str]]:
    causes: dict[str, dict[str, str]] = {}
    for row in rows:
        if (row.verdict in FAILING or row.verdict is Verdict.NOT_COVERED) and row.scenario:
            causes.setdefault(row.implementation, {}).setdefault(row.rule_id, first_cause(row.evidence))
    return causes
