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
from ._merge import load_shards, merge_shards
from ._results import RunInfo, rule_verdicts, selected_rules, verdict_table
from ._server_check import (
    CallObservation,
    EraCheck,
    ErrorShape,
    Finding,
    FindingKind,
    ListedPrompt,
    ListedTool,
    ServerCheck,
    ServerCheckReport,
    ServerRequest,
    render_server_check_html,
    render_server_check_text,
    server_check_section,
)
from ._store import load_crash_cells, load_fault_cells, load_run
from ._verdict import RunVerdict, run_exit_code, run_verdict

__all__ = [
    "CallObservation",
    "EraCheck",
    "ErrorShape",
    "Finding",
    "FindingKind",
    "ListedPrompt",
    "ListedTool",
    "RunDiff",
    "RunInfo",
    "RunVerdict",
    "ServerCheck",
    "ServerCheckReport",
    "ServerRequest",
    "VerdictChange",
    "diff_runs",
    "load_crash_cells",
    "load_fault_cells",
    "load_run",
    "load_shards",
    "merge_shards",
    "render_assumptions",
    "render_html",
    "render_junit",
    "render_markdown",
    "render_server_check_html",
    "render_server_check_text",
    "rerender",
    "rule_verdicts",
    "run_exit_code",
    "run_verdict",
    "selected_rules",
    "server_check_section",
    "verdict_table",
    "write_run",
]

_publish_exports(globals())
