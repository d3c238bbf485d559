"""``python -m toolproof._cell_seconds RESULTS_FOLDER``: write the shipped cell timings (``scenarios/cell_seconds.json``)
from the folder's latest run, which shards and ``--jobs`` balance by when no earlier run is at hand.

Take them from a whole run against the reference with ``--jobs 2`` on an idle machine, and commit the file with the
scenario changes that moved them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from toolproof.reports import load_run
from toolproof.scenarios import CELL_SECONDS, write_shipped
from toolproof.spec import ConfigurationError


def main(argv: Sequence[str]) -> int:
    """Write the file; 2 with a usage line when the folder is not given."""
    if len(argv) != 1:
        print("usage: python -m toolproof._cell_seconds RESULTS_FOLDER", file=sys.stderr)
        return 2
    try:
        _, rows = load_run(Path(argv[0]))
    except (ConfigurationError, OSError) as exc:
        print(f"toolproof._cell_seconds: {exc}", file=sys.stderr)
        return 2
    cells: dict[str, float] = {}
    for row in rows:
        if row.scenario:
            cells[row.scenario] = max(cells.get(row.scenario, 0.0), row.duration_s)
    count = write_shipped(cells)
    print(f"{CELL_SECONDS}: {count} scenarios from {len(cells)} cells")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
