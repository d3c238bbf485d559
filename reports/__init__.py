"""toolproof.reports: the results store (``results.duckdb``) and its renderers (``summary.json``, ``report.md``,
``report.html``, ``junit.xml``).

It stores and renders the records ``toolproof.spec`` defines: ``ResultRow``, ``CrashCell`` and ``StaleExpectation``.
"""

from toolproof.spec import publish_exports as _publish_exports

from ._assumptions import render_assumptions
from ._diff import RunDiff, VerdictChange, diff_runs
from ._files import rerender, write_run
from ._html import render_html
from ._junit import render_junit
from ._markdown import render_markdown
from ._results import RunInfo, rule_verdicts, selected_rules, verdict_table
from ._store import load_crash_cells, load_run
from ._verdict import RunVerdict, run_exit_code, run_verdict

__all__ = [
    "RunDiff",
    "RunInfo",
    "RunVerdict",
    "VerdictChange",
    "diff_runs",
    "load_crash_cells",
    "load_run",
    "render_assumptions",
    "render_html",
    "render_junit",
    "render_markdown",
    "rerender",
    "rule_verdicts",
    "run_exit_code",
    "run_verdict",
    "selected_rules",
    "verdict_table",
    "write_run",
]

_publish_exports(globals())
