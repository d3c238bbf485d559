"""``toolproof run`` and ``toolproof merge``: run the scenarios (or combine a run's shards) and say the verdicts."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from toolproof.spec import ConfigurationError, HarnessError, ResultRow, Verdict, load_catalog

from ._console import EXIT_HARNESS, EXIT_NOTHING_JUDGED, die, err, out
from ._interrupt import interrupted_status, say_interrupted, was_interrupted
from ._jobs import check_jobs
from ._last_run import Eta, LastRun, header
from ._preflight import check_out_dir, check_out_is_ours, probe_database

if TYPE_CHECKING:
    from toolproof.scenarios import Shard

    from ._jobs import ShardedRun
    from ._outcome import RunOutcome


def run(
    impl: Annotated[
        list[str] | None,
        typer.Option(
            "--impl",
            metavar="IMPL",
            help=(
                "Implementation: an entry-point name (see `toolproof impls`), package.module:factory (the working"
                " directory is importable while the module is imported), or a driver URL (http://127.0.0.1:PORT,"
                " see serve-reference). Repeatable: one report, side by side. Default: reference (as pytest without"
                " arguments runs every test)."
            ),
        ),
    ] = None,
    rule_selectors: Annotated[
        str | None,
        typer.Option(
            "--rules", metavar="IDS", help="Comma-separated decisions or rule ids, e.g. D1,D5.3. Default: all."
        ),
    ] = None,
    out_dir: Annotated[
        Path,
        typer.Option(
            "--out", metavar="DIR", help="Folder for results.duckdb, summary.json, report.md, report.html, junit.xml."
        ),
    ] = Path("toolproof-report"),
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No per-scenario progress lines.")] = False,
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url",
            metavar="URL",
            envvar="TOOLPROOF_DATABASE_URL",
            help="PostgreSQL URL for the multi-worker crash scenarios (SIGKILL over PostgreSQL, the PostgreSQL lease race); "
            "without it they do not run and the crash matrix has no PostgreSQL column.",
        ),
    ] = None,
    cells: Annotated[
        list[str] | None,
        typer.Option(
            "--cell",
            metavar="CELL",
            help="Run only this scenario (module.py::test_name) or one cell of it (module.py::test_name\\[param]),"
            " named as the report names it; the report then holds the rules it judges. Repeatable. A failure's"
            " entry in the report gives the command that reruns it.",
        ),
    ] = None,
    expectations: Annotated[
        list[Path] | None,
        typer.Option(
            "--expectations",
            metavar="FILE",
            help="An expectations file (TOML; see docs/expectations.md): the failures it declares for the implementation "
            "it names read xfail, and an entry the run contradicts (a pass, or nothing selected ran) is stale "
            "and fails the run. Repeatable.",
        ),
    ] = None,
    write_expectations: Annotated[
        Path | None,
        typer.Option(
            "--write-expectations",
            metavar="FILE",
            help="Also draft an expectations file (a new FILE) from the run's failures, one entry each, for one"
            " --impl; the reasons are left empty and the file is refused by --expectations until you write them"
            " and delete its draft line.",
        ),
    ] = None,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            metavar="K/N",
            help="Run shard K of N: a deterministic share of the scenario cells, for N CI jobs; combine the N"
            " folders with `toolproof merge`. The shard's own report holds the rules its cells judge.",
        ),
    ] = None,
    shard_durations: Annotated[
        Path | None,
        typer.Option(
            "--shard-durations",
            metavar="DIR",
            help="With --shard: balance the shards by the cell durations of the latest run in this results folder"
            " (every shard must be given the same one). Without it, by the cell timings shipped with the suite (the"
            " reference's, per scenario).",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Write into an --out folder that holds files toolproof did not write.")
    ] = False,
    exitfirst: Annotated[bool, typer.Option("--exitfirst", "-x", help="Stop after the first failed cell.")] = False,
    maxfail: Annotated[
        int | None,
        typer.Option(
            "--maxfail",
            metavar="N",
            min=1,
            help="Stop after N failed cells. The report then holds the rules the cells that ran judge.",
        ),
    ] = None,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs",
            "-j",
            metavar="N",
            min=1,
            help="Run the selection as N shards side by side, each in a process of its own, and merge them into"
            " --out: one run, the same verdicts, in less time on a machine with cores to spare (progress lines"
            " name their shard). Not with --shard, --write-expectations, -x or --maxfail; --cell and --lf run in"
            " one process.",
        ),
    ] = 1,
    last_failed: Annotated[
        bool,
        typer.Option(
            "--lf",
            "--last-failed",
            help="Run only the cells that failed or errored in the last run in --out (with its --impl when none is"
            " given); the whole selection when none did.",
        ),
    ] = False,
) -> None:
    """Run the conformance scenarios and write the report.

    Without --impl it runs the reference, as pytest without arguments runs every test: the first line says what
    runs and how long it took the last time --out saw it.

    \b
    Examples:
      toolproof run --impl reference --rules D1,D13      a first verdict, in seconds
      toolproof run --impl mypackage.pipeline:make       the whole suite, about 5 minutes
      toolproof run --impl http://127.0.0.1:8787 --lf    what failed last time, again
      toolproof run --impl reference --jobs 2            the whole suite as two shards side by side

    \b
    Exit status:
      0    every claimed, covered rule passes or fails as expected;
      1    a rule fails or errors, or an expectation is stale (one line each on stderr);
      2    bad input (one line, nothing written): an unknown implementation, rule or cell, a bad --shard, a bad or draft expectations file, an unwritable or foreign --out, an existing --write-expectations file, an unreachable --database-url;
      3    the harness itself failed (one line naming it; no verdict is given);
      5    nothing was judged: every selected rule is not claimed, not covered or review-only, or the shard is empty;
      130  Ctrl-C, 143 SIGTERM (one line; what the run started is stopped, results.duckdb keeps only complete runs).
    """
    try:
        selection = load_catalog().select(rule_selectors)
        split = _shard(shard)
        check_jobs(jobs, shard, write_expectations, exitfirst or maxfail is not None)
        check_out_dir(out_dir)
        if not force:
            check_out_is_ours(out_dir)
        if expectations:
            from toolproof.expectations import check_expectations

            check_expectations(expectations)
        if database_url:
            probe_database(database_url)
    except ConfigurationError as exc:
        raise die(str(exc)) from None
    refs = list(impl or [])
    last = LastRun.find(out_dir)
    chosen = list(cells or [])
    if last_failed:
        chosen, refs = _last_failed(last, out_dir, chosen, refs)
        if rule_selectors is None and last is not None and not last.info.shard:
            # As pytest's --lf keeps the last run's arguments: its rules, not every rule of the catalog.
            rule_selectors = ",".join(last.info.selected_rules) or None
            selection = load_catalog().select(rule_selectors)
    announce = header(
        refs or ["reference"], not refs, rule_selectors, [rule.id for rule in selection], chosen, out_dir, last
    )
    same = last is not None and not chosen and last.ran(refs or ["reference"], [rule.id for rule in selection])
    if jobs > 1 and chosen:
        err.print(f"toolproof: --jobs {jobs}: the cells --cell or --lf chose run in one process", markup=False)
        jobs = 1
    try:
        if jobs > 1:
            from ._jobs import ShardedRun

            durations = out_dir if last is not None else None  # Balanced by the last run's cells, as --shard-durations.
            sharded = ShardedRun(refs, rule_selectors, database_url, expectations or [], durations, quiet)
            outcome = _run_in_shards(sharded, jobs, out_dir, None if quiet else announce)
        else:
            outcome = _run_with_progress(
                refs,
                rule_selectors,
                out_dir,
                quiet,
                database_url,
                expectations,
                chosen,
                write_expectations,
                (split, shard_durations),
                (announce, Eta(last, same, time.monotonic())),
                1 if exitfirst else maxfail,
            )
    except BaseException:
        # After Ctrl-C, whatever surfaces (pytest's own stop, a plugin failing as it unwinds) is the interruption.
        if was_interrupted():
            say_interrupted()
            raise typer.Exit(interrupted_status()) from None
        raise
    _summarise(outcome)


def _shard(text: str | None) -> Shard | None:
    if text is None:
        return None
    from toolproof.scenarios import Shard

    return Shard.parse(text)


def _run_in_shards(sharded: ShardedRun, jobs: int, out_dir: Path, announce: str | None) -> RunOutcome:
    from ._jobs import run_in_shards
    from ._run import merge_runs

    if announce is not None:
        err.print(announce, markup=False)
    try:
        return run_in_shards(
            sharded,
            jobs,
            out_dir,
            lambda line: err.print(line, markup=False, highlight=False, soft_wrap=True),
            merge_runs,
        )
    except ConfigurationError as exc:
        raise die(str(exc)) from None
    except HarnessError as exc:
        raise die(f"harness failure: {exc}", EXIT_HARNESS) from None


def _last_failed(last: LastRun | None, out_dir: Path, cells: list[str], refs: list[str]) -> tuple[list[str], list[str]]:
    """--lf: the cells that failed in the last run (and its implementations, when --impl is not given)."""
    failed = last.failed_cells() if last is not None else []
    if not failed:
        err.print(
            f"toolproof: --lf: no failed cell in the last run in {str(out_dir)!r}: running the whole selection",
            markup=False,
        )
        return cells, refs
    assert last is not None  # Invariant: only a run found can have failed cells.
    return [*cells, *failed], refs or last.failed_refs()


def _run_with_progress(
    impl: list[str],
    rule_selectors: str | None,
    out_dir: Path,
    quiet: bool,
    database_url: str | None,
    expectations: list[Path] | None,
    cells: list[str],
    write_expectations: Path | None,
    sharding: tuple[Shard | None, Path | None],
    start: tuple[str, Eta],
    maxfail: int | None,
) -> RunOutcome:
    from ._run import run_suite

    announce, eta = start

    def progress(result: ResultRow, done: int, total: int) -> None:
        style = {"pass": "green", "fail": "red", "error": "red", "xfail": "yellow"}.get(result.verdict.value, "dim")
        width = len(str(total))
        timing = eta.after(result.implementation, result.scenario, result.duration_s, done, total, time.monotonic())
        # The cell's parameters are in brackets: escaped, or rich would take them for markup and drop them.
        err.print(
            f"[{done:>{width}}/{total} {timing}] [{style}]{result.verdict.value:<11}[/] "
            f"{escape(result.implementation)}  {escape(result.scenario)}",
            highlight=False,
        )

    try:
        outcome = run_suite(
            impl,
            rule_selectors,
            out_dir,
            progress=None if quiet else progress,
            notes=None if quiet else (lambda line: err.print(f"  ... {line}", markup=False, highlight=False)),
            database_url=database_url,
            expectations=expectations or [],
            cells=cells,
            write_expectations=write_expectations,
            shard=sharding[0],
            shard_durations=sharding[1],
            announce=None if quiet else (lambda: err.print(announce, markup=False)),
            maxfail=maxfail,
        )
    except ConfigurationError as exc:
        raise die(str(exc)) from None
    except HarnessError as exc:
        raise die(f"harness failure: {exc}", EXIT_HARNESS) from None
    return outcome


def _summarise(outcome: RunOutcome) -> None:
    for name, verdicts in outcome.verdicts.items():
        counts = Counter(v.value for v in verdicts.values())
        shown = ", ".join(f"{counts[v.value]} {v.value}" for v in Verdict if counts[v.value])
        cells = outcome.cells.get(name, {})
        cells_shown = ", ".join(f"{cells[v]} {v.value}" for v in Verdict if cells.get(v)) or "none ran"
        out.print(f"{name}: rules: {shown}; scenario cells: {cells_shown}", markup=False)
        for rule_id in outcome.failed.get(name, []):
            out.print(f"  {verdicts[rule_id].value}: {rule_id} {load_catalog().rule(rule_id).text}", markup=False)
            cause = outcome.causes.get(name, {}).get(rule_id)
            if cause:
                err.print(f"toolproof: {name}: {rule_id}: {cause.removeprefix(f'{rule_id}: ')}", markup=False)
        for rule_id in outcome.uncovered.get(name, []):
            # Never a pass: named even when the run conforms, so it cannot conform silently on what it did not judge.
            out.print(f"  not-covered: {rule_id} {load_catalog().rule(rule_id).text}", markup=False)
            cause = outcome.causes.get(name, {}).get(rule_id)
            if cause:
                err.print(f"toolproof: {name}: {rule_id}: {cause.removeprefix(f'{rule_id}: ')}", markup=False)
    for item in outcome.stale:
        err.print(f"toolproof: stale expectation: {item.label}: {item.problem}", markup=False, soft_wrap=True)
    if outcome.stopped_after:
        err.print(
            f"toolproof: stopped after {outcome.stopped_after} failed cell{'s' if outcome.stopped_after > 1 else ''}"
            f" (-x/--maxfail): {outcome.not_run} not run; the report holds the rules the cells that ran judge",
            markup=False,
        )
    if outcome.exit_code == EXIT_NOTHING_JUDGED:
        err.print(
            "toolproof: nothing was judged: every selected rule is not claimed, not covered or review-only, or the"
            " shard holds no cell (exit status 5, as pytest's when it collects nothing)",
            markup=False,
        )
    out.print(
        f"report: {outcome.out_dir / 'report.md'} and {outcome.out_dir / 'report.html'} (run {outcome.run_id})",
        markup=False,
    )
    if outcome.draft is not None:
        out.print(
            f"expectations draft: {outcome.draft} (write its reasons, then delete its draft line)",
            markup=False,
            soft_wrap=True,
        )
    raise typer.Exit(outcome.exit_code)


def merge(
    folders: Annotated[
        list[Path], typer.Argument(metavar="DIR...", help="The results folders of every shard of one run.")
    ],
    out_dir: Annotated[
        Path,
        typer.Option("--out", metavar="DIR", help="Folder for the merged run's results.duckdb and reports."),
    ] = Path("toolproof-report"),
) -> None:
    """Combine the folders of `run --shard 1/N` ... `N/N` into one run, and render every report again.

    A rule's verdict is worked out from all the shards' rows, as in one unsharded run.

    \b
    Example:
      toolproof merge shard-1 shard-2 shard-3 --out toolproof-report

    Exit status: as `run` for the merged run (0 conforms, 1 a failure or a stale expectation, 5 nothing judged); 2
    when the folders are not every shard of one run (one missing or given twice; another catalog, implementation,
    selection or toolproof version).
    """

    from ._run import merge_runs

    try:
        outcome = merge_runs(folders, out_dir)
    except ConfigurationError as exc:
        raise die(str(exc)) from None
    _summarise(outcome)
