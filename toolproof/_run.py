"""Run the scenarios against implementations and write the results (wiring only)."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path

import hypothesis.configuration
import pytest

from toolproof.driver import is_driver_url, load
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
from toolproof.scenarios import (
    PLUGIN,
    ResultCollector,
    Shard,
    ShardSelector,
    cell_key,
    selected_exploration,
)
from toolproof.spec import (
    ConfigurationError,
    HarnessError,
    Implementation,
    ResultRow,
    Rule,
    catalog_digest,
    load_catalog,
    new_run_id,
)

from . import __version__
from ._interrupt import mark_written, was_interrupted
from ._out_lock import hold_out_dir
from ._outcome import FAILING, causes, cell_counts
from ._outcome import RunOutcome as RunOutcome  # Where the tests and the bench import it from.
from ._preflight import check_out_dir, require, shown_database_url
from ._run_plugins import HarnessFault, QuietAfterInterrupt, ShortTracebacks
from .expectations import Expectations, draft_expectations

Progress = Callable[[ResultRow, int, int], None]


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
    first_rule_failure: bool = False,
    first_failure_of_any: bool = False,
    announce: Callable[[], None] | None = None,
    maxfail: int | None = None,
) -> RunOutcome:
    """Run the scenarios of ``rules`` against ``impls`` and write the report into ``out_dir``.

    ``expectations`` are expectations files (see ``toolproof.expectations``): the failures they
    declare are reported ``xfail``, and the entries the run contradicts are stale and fail it.
    ``cells`` narrow the run to those scenarios (``module.py::test_name``) or cells (``…[param]``), as reports
    name them; the selected rules are then the ones they judge (within ``rules``). ``write_expectations`` is a
    new file to draft an expectations file into from the run's failures (one implementation only).
    ``shard`` runs one deterministic share of the cells (``toolproof merge`` combines the shards' folders), balanced
    by the cell durations of the latest run in ``shard_durations`` (a results folder) when given, else by the
    shipped cell timings (``toolproof.scenarios.CELL_SECONDS``);
    the shard's report holds the rules its cells judge.
    ``impl_rules`` narrows some of ``impls`` (keyed by the ref given in ``impls``) to rules of their own, within
    ``rules``: such an implementation runs only the cells that judge one of them, and its other selected rules read
    ``not-covered`` (the witness matrix runs a decision's witnesses side by side, each on the rules it breaks).
    ``notes`` hears a long scenario say how far it has gone while it runs (examples done, of how many).
    ``first_failure`` runs no more cells of a scenario for an implementation once one failed for it (they leave no
    row): one failed cell rejects it on the scenario's rules, which is all the witness matrix asks of a run.
    ``first_rule_failure`` runs no more cells for an implementation whose every rule it is judged on in the cell has
    failed for it already, in any scenario (they leave no row either); ``first_failure_of_any`` runs no more cells of
    a scenario once one failed for any of the implementations (the witness matrix asks that some witness fails each).
    ``announce`` is called once everything is checked, just before the scenarios start; ``maxfail`` stops the run after
    that many failed cells (the report then holds the rules the cells that ran judge).

    Raises:
        ConfigurationError: an unknown implementation or rule, an ``impl_rules`` key not in ``impls``, a cell that selects no scenario (nothing runs),
            a bad expectations file (``ExpectationsError``), an unknown ``TOOLPROOF_HYPOTHESIS_PROFILE``
            (``ExplorationError``), an unwritable ``out_dir``, or a ``write_expectations``
            file that exists or a run of several implementations to draft it from (checked before anything runs,
            so nothing is half-written); ``--shard`` with ``--cell`` or ``--write-expectations``, or a
            ``shard_durations`` folder that holds no results.
        HarnessError: the scenarios could not be collected, a cell met a harness failure (a HarnessError: nothing
            is written), or pytest stopped on its own.
    """
    refs = list(impls) or ["reference"]
    selected_exploration()
    selection = load_catalog().select(rules)
    check_out_dir(out_dir)
    if database_url:  # The command line probed it already (probe_database): a run asks the database nothing twice.
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
    with hold_out_dir(out_dir):
        if announce is not None:
            announce()
        stops = _Stops(first_failure, first_rule_failure, first_failure_of_any)
        asked = _Asked(database_url, cells, write_expectations, shard, impl_rules, stops, maxfail)
        return _run_and_write(refs, loaded, rules, selection, out_dir, expected, selector, asked, progress, notes)


@dataclass(frozen=True)
class _Asked:
    """What a run was asked for beyond its implementations and rules (``run_suite``'s arguments of those names)."""

    database_url: str | None
    cells: Sequence[str]
    write_expectations: Path | None
    shard: Shard | None
    impl_rules: Mapping[str, str] | None
    stops: _Stops
    maxfail: int | None


@dataclass(frozen=True)
class _Stops:
    """Which cells a run spares once others failed (``run_suite``'s arguments of those names)."""

    first_failure: bool
    first_rule_failure: bool
    first_failure_of_any: bool


def _run_and_write(
    refs: list[str],
    loaded: list[Implementation],
    rules: str | None,
    selection: Sequence[Rule],
    out_dir: Path,
    expected: Expectations,
    selector: ShardSelector | None,
    asked: _Asked,
    progress: Progress | None,
    notes: Callable[[str], None] | None,
) -> RunOutcome:
    database_url, cells, write_expectations, shard = (
        asked.database_url,
        asked.cells,
        asked.write_expectations,
        asked.shard,
    )
    impl_rules, stops, maxfail = asked.impl_rules, asked.stops, asked.maxfail
    names = [impl.name for impl in loaded]

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
    if maxfail is not None:
        args.append(f"--maxfail={maxfail}")
    for ref in refs:
        args += ["--toolproof-impl", ref]
    if rules is not None:
        args += ["--toolproof-rules", rules]
    if database_url:
        args += ["--toolproof-database-url", database_url]
    for cell in cells:
        args += ["--toolproof-cell", cell]
    # Each stop is the plugin's option of its name: first_rule_failure is --toolproof-first-rule-failure.
    args += [f"--toolproof-{name.replace('_', '-')}" for name, on in vars(stops).items() if on]
    for ref, own in (impl_rules or {}).items():
        if ref not in refs:
            raise ConfigurationError(f"impl_rules names {ref!r}, which is not one of the implementations {refs}")
        load_catalog().select(own)  # An unknown rule is refused here, before pytest starts.
        args += ["--toolproof-impl-rules", f"{ref}={own}"]
    # Hypothesis keeps caches under .hypothesis/ in the working folder; a run leaves only its report behind.
    with tempfile.TemporaryDirectory(prefix="toolproof-hypothesis-") as scratch:
        hypothesis.configuration.set_hypothesis_home_dir(scratch)
        try:
            fault = HarnessFault()
            plugins: list[object] = [collector, expected.index, QuietAfterInterrupt(), fault, ShortTracebacks()]
            plugins += [selector] if selector is not None else []
            code = pytest.main(args, plugins=plugins)
        finally:
            hypothesis.configuration.set_hypothesis_home_dir(None)
    if collector.port_violation is not None:  # The collector stopped the session: checked before INTERRUPTED.
        raise ConfigurationError(collector.port_violation)
    if fault.fault is not None:  # The fault stopped the session: checked before INTERRUPTED.
        raise HarnessError(f"{fault.fault} (no verdict is given, and nothing was written)")
    if collector.collection_errors:  # Before INTERRUPTED: pytest reports a collection error as interrupted too.
        raise HarnessError("scenarios could not be collected: " + "; ".join(collector.collection_errors))
    if code == pytest.ExitCode.INTERRUPTED or was_interrupted():
        # pytest caught Ctrl-C and stopped, or a cell swallowed it: nothing of this run is written.
        raise KeyboardInterrupt
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise HarnessError(f"pytest stopped with exit code {int(code)} before the scenarios finished")
    if collector.selection_problems:
        raise ConfigurationError("; ".join(collector.selection_problems))

    narrowed = collector.cell_rules
    whole = [rule.id for rule in selection if narrowed is None or rule.id in narrowed]
    # A shard's own report holds the rules its cells are tagged with, and those the harness judged on them.
    reached = selector.judged | {row.rule_id for row in collector.results} if selector is not None else frozenset()
    selected = [rule_id for rule_id in whole if selector is None or rule_id in reached]
    stopped = collector.done < collector.total and maxfail is not None
    if stopped:  # -x or --maxfail: the report holds the rules the cells that ran judge.
        ran = {row.rule_id for row in collector.results}
        selected = [rule_id for rule_id in selected if rule_id in ran]
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
        rerun_options=["--database-url", shown_database_url(database_url)] if database_url else [],
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
    wall_s = (datetime.now(UTC) - started).total_seconds()
    write_run(
        out_dir,
        info.model_copy(update={"exit_code": code, "wall_s": wall_s}),
        rows,
        collector.crash_cells,
        stale,
        fault_cells=collector.fault_cells,
    )
    if write_expectations is not None:
        # Drafted from the rows as the scenarios gave them: a failure an expectations file already expects stays in.
        # A driver's file names it without its address (as docs/expectations.md says), so the port can change.
        named = names[0].rpartition("@")[0] if is_driver_url(refs[0]) and "@" in names[0] else names[0]
        _write_draft(write_expectations, draft_expectations(names[0], judged, run_id, named))
    mark_written(out_dir / "summary.json")
    return RunOutcome(
        run_id=run_id,
        out_dir=out_dir,
        verdicts=verdicts,
        stale=tuple(stale),
        draft=write_expectations,
        exit_code=code,
        cells=cell_counts(rows),
        causes=causes(rows),
        # Cells, not rows: a cell that fails several rules is one failed cell.
        stopped_after=len({(row.implementation, row.scenario) for row in collector.results if row.verdict in FAILING})
        if stopped
        else 0,
        not_run=collector.total - collector.done if stopped else 0,
    )


def merge_runs(folders: Sequence[Path], out_dir: Path, wall_s: float | None = None) -> RunOutcome:
    """Combine the folders of a run's shards into one run in ``out_dir``, with every report rendered again;
    ``wall_s`` is the whole run's wall time when the shards ran together (``run --jobs``), else none is recorded.

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
    with hold_out_dir(out_dir):
        recorded = info.model_copy(update={"exit_code": code, "wall_s": wall_s})
        write_run(out_dir, recorded, rows, crash_cells, stale, fault_cells=faults)
    mark_written(out_dir / "summary.json")
    return RunOutcome(
        run_id=run_id,
        out_dir=out_dir,
        verdicts=verdicts,
        stale=tuple(stale),
        exit_code=code,
        cells=cell_counts(rows),
        causes=causes(rows),
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
