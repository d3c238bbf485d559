"""``toolproof bench``: what the reference costs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def bench(
    out_dir: Annotated[Path, typer.Option("--out", metavar="DIR", help="Folder for bench.json.")] = Path(
        "toolproof-bench"
    ),
    quick: Annotated[bool, typer.Option("--quick", help="Fewer repetitions: under a minute.")] = False,
    decisions: Annotated[
        bool,
        typer.Option(
            "--decisions",
            help="Also time each decision's conformance run on the reference in a process of its own: cells, wall,"
            " CPU of the process and what it started, and waiting (wall minus CPU). Adds a whole run's time and more.",
        ),
    ] = False,
) -> None:
    """Measure what the reference costs: commit limit, throughput, DBOS, batches, catalog, excerpts, the suite.

    Prints a table and writes bench.json. Exit status 0 once written: a missed target is a figure, not an error.

    \b
    Examples:
      toolproof bench --quick --out toolproof-bench
      toolproof bench --quick --decisions       where a conformance run's time goes, per decision
    """
    from toolproof.bench import bench_command

    raise typer.Exit(bench_command(out_dir, quick=quick, decisions=decisions))
