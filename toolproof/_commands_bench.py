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
) -> None:
    """Measure what the reference costs: commit limit, throughput, DBOS, batches, catalog, excerpts, the suite.

    Prints a table and writes bench.json. Exit status 0 once written: a missed target is a figure, not an error.

    \b
    Example:
      toolproof bench --quick --out toolproof-bench
    """
    from toolproof.bench import bench_command

    raise typer.Exit(bench_command(out_dir, quick=quick))
