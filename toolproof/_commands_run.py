"""``toolproof run`` and ``toolproof merge``: run the scenarios (or combine a run's shards) and say the verdicts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from toolproof.spec import ConfigurationError, HarnessError, ResultRow, Verdict, load_catalog

from ._console import EXIT_HARNESS, die, err, out
from ._interrupt import interrupted_status, say_interrupted, was_interrupted
from ._preflight import check_out_dir, require

if TYPE_CHECKING:
    from toolproof.scenarios import Shard

    from ._run import RunOutcome


def run(
    impl: Annotated[
        list[str] | None,
        typer.Option(
            "--impl",
            metavar="IMPL",
            help=(
                "Implementation: an entry-point name (see `toolproof impls`), package.module:factory (the working"
                " directory is importable while the module is imported), or a driver URL (http://127.0.0.1:PORT,"
                " see serve-reference). Repeatable: one report, side by side."
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
            " (every shard must be given the same one). Without it, shards get equal numbers of cells.",
        ),
    ] = None,
) -> None:
    """Run the conformance scenarios and write the report.

    Exit status: 0 when every claimed, covered rule passes or fails as expected;
    1 when any fails or errors, or an expectation is stale (one line each on stderr);
    2 for bad input (unknown implementation, rule or cell, a malformed --shard, bad or draft expectations file, unwritable --out,
    an existing --write-expectations file, unknown $TOOLPROOF_HYPOTHESIS_PROFILE);
    3 when the harness itself failed; 130 on Ctrl-C and 143 on SIGTERM (one line; what the run started is stopped,
    and results.duckdb keeps only complete runs).
    """
    try:
        load_catalog().select(rule_selectors)
        split = _shard(shard)
        check_out_dir(out_dir)
        if database_url:
            require("psycopg", "--database-url")
    except ConfigurationError as exc:
        raise die(str(exc)) from None

    try:
        outcome = _run_with_progress(
            impl,
            rule_selectors,
            out_dir,
            quiet,
            database_url,
            expectations,
            cells,
            write_expectations,
            (split, shard_durations),
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


def _run_with_progress(
    impl: list[str] | None,
    rule_selectors: str | None,
    out_dir: Path,
    quiet: bool,
    database_url: str | None,
    expectations: list[Path] | None,
    cells: list[str] | None,
    write_expectations: Path | None,
    sharding: tuple[Shard | None, Path | None] = (None, None),
) -> RunOutcome:
    from ._run import run_suite

    def progress(result: ResultRow, done: int, total: int) -> None:
        style = {"pass": "green", "fail": "red", "error": "red", "xfail": "yellow"}.get(result.verdict.value, "dim")
        width = len(str(total))
        # The cell's parameters are in brackets: escaped, or rich would take them for markup and drop them.
        err.print(
            f"[{done:>{width}}/{total}] [{style}]{result.verdict.value:<11}[/] "
            f"{escape(result.implementation)}  {escape(result.scenario)}",
            highlight=False,
        )

    try:
        outcome = run_suite(
            impl or [],
            rule_selectors,
            out_dir,
            progress=None if quiet else progress,
            notes=None if quiet else (lambda line: err.print(f"  ... {line}", markup=False, highlight=False)),
            database_url=database_url,
            expectations=expectations or [],
            cells=cells or [],
            write_expectations=write_expectations,
            shard=sharding[0],
            shard_durations=sharding[1],
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

    Exit status: as `run` for the merged run (0 conforms, 1 a failure or a stale expectation);
    2 when the folders are not every shard of one run (one missing or given twice; another catalog,
    implementation, selection or toolproof version).
    """

    from ._run import merge_runs

    try:
        outcome = merge_runs(folders, out_dir)
    except ConfigurationError as exc:
        raise die(str(exc)) from None
    _summarise(outcome)
