"""toolproof.reports: the results store (``results.duckdb``) and its renderers (``summary.json``, ``report.md``)."""

from ._files import rerender, write_run
from ._markdown import render_markdown
from ._results import ResultRow, RunInfo, rule_verdicts, selected_rules, verdict_table
from ._store import load_run

__all__ = [
    "ResultRow",
    "RunInfo",
    "load_run",
    "render_markdown",
    "rerender",
    "rule_verdicts",
    "selected_rules",
    "verdict_table",
    "write_run",
]
