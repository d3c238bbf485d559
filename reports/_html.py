"""``report.html``: the run for reviewers, one self-contained page that reads without JavaScript."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

from toolproof.spec import CrashCell, FaultCell, ResultRow, Rule, StaleExpectation, Verdict, load_catalog

from ._crash import (
    CRASH_LEGEND,
    CrashTable,
    cell_identity,
    cell_where,
    crash_order,
    crash_tables,
    effects_text,
    point_text,
    unlisted_failures,
)
from ._evidence import evidence_facts, printable, rerun_command
from ._fault import fault_tables, html_fault_matrix
from ._html_assets import MEANINGS, SCRIPT, STYLE, SYMBOLS
from ._results import RunInfo, row_order, scenario_modules, selected_rules, verdict_table
from ._verdict import RunVerdict, run_verdict

_FAILING = frozenset({Verdict.FAIL, Verdict.ERROR})
_Table = dict[str, dict[str, Verdict]]


def render_html(
    info: RunInfo,
    rows: Sequence[ResultRow],
    crash_cells: Sequence[CrashCell] = (),
    stale: Sequence[StaleExpectation] = (),
    *,
    fault_cells: Sequence[FaultCell] = (),
) -> str:
    """The text of ``report.html``.

    The verdict line first (conforms or not per implementation and claimed profile, the exit code, what was
    not claimed or not covered), then summary counts per implementation and per decision, the stale expectations (when there are
    any), the rule × implementation matrix, the crash
    matrix per implementation and mode, every rule with its text, interpretation, scenarios and
    verdicts, then every failing or erroring row (with the command that reruns its cell) and crash cell with
    its evidence verbatim in a ``<pre>`` that wraps long lines (characters HTML cannot carry shown as escapes). Every verdict is a word and a symbol
    as well as a colour. Style and script are inline; the script only adds the filters (decision,
    profile, verdict), which stay hidden without it.

    Raises:
        ConfigurationError: a selected rule ID is not in the catalog.
    """
    catalog = load_catalog()
    rules = selected_rules(info, catalog)
    titles = {decision.number: decision.title for decision in catalog.decisions}
    table = verdict_table(info, rows, rules)
    ordered = sorted(rows, key=row_order(info))
    selected = {rule.id for rule in rules}
    failing = [row for row in ordered if row.verdict in _FAILING and row.rule_id in selected]
    crashed = unlisted_failures(sorted(crash_cells, key=crash_order(info)), failing)
    anchors: dict[tuple[str, str], str] = {}
    by_evidence: dict[tuple[str, str], str] = {}
    for index, row in enumerate(failing, 1):
        anchors.setdefault((row.implementation, row.rule_id), f"failure-{index}")
        by_evidence.setdefault((row.implementation, row.evidence), f"failure-{index}")
    # A crash cell that failed with a listed row's evidence links to that row, any other to its own entry.
    cell_anchors = {_cell_key(cell): f"crash-failure-{index}" for index, cell in enumerate(crashed, 1)}
    for cell in crash_cells:
        if cell.verdict is not Verdict.PASS and _cell_key(cell) not in cell_anchors:
            cell_anchors[_cell_key(cell)] = by_evidence[cell.implementation, cell.evidence]
    title = f"toolproof run {info.run_id}: {', '.join(info.implementations)}"
    stale_link = f' <a href="#stale">Stale expectations ({len(stale)})</a>' if stale else ""
    fault_link = ' <a href="#fault-matrix">Fault matrix</a>' if fault_cells else ""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        "<header>",
        f"<h1>{_e(title)}</h1>",
        _verdict_line(run_verdict(info, table, rules, stale)),
        f'<p class="meta">Started {_e(info.started_at)} with toolproof {_e(info.toolproof_version)};'
        f" {len(rules)} rules selected.</p>",
        f'<nav><a href="#summary">Summary</a>{stale_link} <a href="#matrix">Rule × implementation</a>'
        f' <a href="#crash-matrix">Crash matrix</a>{fault_link} <a href="#rules">Rules</a>'
        f' <a href="#failures">Failures ({len(failing) + len(crashed)})</a></nav>',
        "</header>",
        "<main>",
        *_summary(info, table, rules, titles),
        *_stale(stale),
        *_filters(rules, titles),
        *_matrix(info, table, rules, titles, anchors),
        *_crash_matrix(crash_tables(info, crash_cells), cell_anchors),
        *html_fault_matrix(fault_tables(info, fault_cells)),
        *_rules(info, table, rules, titles, ordered),
        *_failures(info, failing, crashed, {rule.id: rule for rule in rules}),
        "</main>",
        f"<script>{SCRIPT}</script>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


def _verdict_line(verdict: RunVerdict) -> str:
    shown = {True: Verdict.PASS, False: Verdict.FAIL, None: Verdict.NOT_COVERED}[verdict.conforms]
    return (
        f'<p id="verdict" class="verdict {_class(shown)}"><strong>{SYMBOLS[shown]} Verdict:</strong>'
        f" {_e(verdict.line)}</p>"
    )


def _summary(info: RunInfo, table: _Table, rules: Sequence[Rule], titles: dict[int, str]) -> list[str]:
    heads = "".join(f'<th scope="col" class="num {_class(v)}">{_verdict(v)}</th>' for v in Verdict)
    lines = [
        '<section id="summary">',
        "<h2>Summary</h2>",
        '<table class="counts"><thead><tr><th scope="col">Implementation</th><th scope="col">Profiles</th>'
        f"{heads}</tr></thead><tbody>",
    ]
    for name in info.implementations:
        claimed = info.profiles.get(name)
        profiles = ", ".join(claimed) if claimed else "(none stated)"
        lines.append(f'<tr><th scope="row">{_e(name)}</th><td>{_e(profiles)}</td>{_counts(table[name].values())}</tr>')
    lines += [
        "</tbody></table>",
        '<ul class="legend">',
        *(f"<li>{_badge(v)}: {_e(MEANINGS[v])}</li>" for v in Verdict),
        "</ul>",
        "<h3>By decision</h3>",
        '<table class="counts"><thead><tr><th scope="col">Decision</th><th scope="col">Title</th>'
        f'<th scope="col">Implementation</th>{heads}</tr></thead><tbody>',
    ]
    span = len(info.implementations)
    for number in sorted({rule.decision for rule in rules}):
        ids = [rule.id for rule in rules if rule.decision == number]
        for index, name in enumerate(info.implementations):
            # The decision and its title head the first of its implementation rows only.
            head = (
                f'<th scope="rowgroup" rowspan="{span}"><a href="#decision-D{number}">D{number}</a></th>'
                f'<td rowspan="{span}">{_e(titles[number])}</td>'
                if index == 0
                else ""
            )
            lines.append(f"<tr>{head}<td>{_e(name)}</td>{_counts(table[name][i] for i in ids)}</tr>")
    return [*lines, "</tbody></table>", "</section>"]


def _stale(stale: Sequence[StaleExpectation]) -> list[str]:
    if not stale:
        return []
    lines = [
        '<section id="stale">',
        "<h2>Stale expectations</h2>",
        '<p class="note">Entries of an expectations file this run contradicted; each fails the run until it is'
        " removed or corrected.</p>",
        '<table class="stale"><thead><tr><th scope="col">Implementation</th><th scope="col">File</th>'
        '<th scope="col">Entry</th><th scope="col">Names</th><th scope="col">Problem</th></tr></thead><tbody>',
    ]
    for item in stale:
        lines.append(
            f"<tr><td>{_e(item.implementation)}</td><td><code>{_e(item.file)}</code></td><td>{item.entry}</td>"
            f"<td>{_e(item.target)}</td><td>{_e(item.problem)}</td></tr>"
        )
    return [*lines, "</tbody></table>", "</section>"]


def _filters(rules: Sequence[Rule], titles: dict[int, str]) -> list[str]:
    decisions = sorted({rule.decision for rule in rules})
    profiles = sorted({rule.profile.value for rule in rules})

    def select(name: str, label: str, options: Iterable[tuple[str, str]]) -> str:
        choices = "".join(f'<option value="{_e(value)}">{_e(text)}</option>' for value, text in options)
        return f'<label>{label}<select name="{name}"><option value="">all</option>{choices}</select></label>'

    return [
        # Hidden until the script runs: without JavaScript there is nothing to filter with.
        '<form id="filters" hidden>',
        select("decision", "Decision", ((f"D{n}", f"D{n}. {titles[n]}") for n in decisions)),
        select("profile", "Profile", ((p, p) for p in profiles)),
        select("verdict", "Verdict (any implementation)", ((v.value, v.value) for v in Verdict)),
        '<button type="reset">Show all</button>',
        '<p id="filter-status" class="status" aria-live="polite"></p>',
        "</form>",
    ]


def _matrix(
    info: RunInfo, table: _Table, rules: Sequence[Rule], titles: dict[int, str], anchors: dict[tuple[str, str], str]
) -> list[str]:
    names = "".join(f'<th scope="col">{_e(name)}</th>' for name in info.implementations)
    lines = [
        '<section id="matrix">',
        "<h2>Rule × implementation</h2>",
        '<table class="matrix">',
        "<caption>Each rule's verdict per implementation; a failing verdict links to its evidence.</caption>",
        f'<thead><tr><th scope="col">Rule</th><th scope="col">Profile</th><th scope="col">Text</th>{names}</tr></thead>',
    ]
    for number in sorted({rule.decision for rule in rules}):
        lines += [
            f'<tbody class="group" data-group="D{number}">',
            f'<tr class="group-head"><th colspan="{3 + len(info.implementations)}" scope="colgroup">'
            f'<a href="#decision-D{number}">D{number}. {_e(titles[number])}</a></th></tr>',
        ]
        for rule in (r for r in rules if r.decision == number):
            cells = []
            for name in info.implementations:
                verdict = table[name][rule.id]
                anchor = anchors.get((name, rule.id))
                shown = f'<a href="#{anchor}">{_verdict(verdict)}</a>' if anchor else _verdict(verdict)
                cells.append(f'<td class="v {_class(verdict)}">{shown}</td>')
            lines.append(
                f"<tr{_filter_attrs(rule, (table[n][rule.id] for n in info.implementations))}>"
                f'<th scope="row"><a href="#rule-{rule.id}">{rule.id}</a></th><td>{rule.profile.value}</td>'
                f'<td class="text">{_e(rule.text)}</td>{"".join(cells)}</tr>'
            )
        lines.append("</tbody>")
    return [*lines, "</table>", "</section>"]


def _crash_matrix(tables: Sequence[CrashTable], anchors: dict[tuple[str, ...], str]) -> list[str]:
    lines = ['<section id="crash-matrix">', "<h2>Crash matrix</h2>"]
    if not tables:
        return [*lines, '<p class="note">No crash scenarios ran.</p>', "</section>"]
    legend = "".join(f"<dt>{_e(label)}</dt><dd>{_e(text)}</dd>" for label, text in CRASH_LEGEND)
    lines.append(f'<dl class="facts legend crash-legend">{legend}</dl>')
    for crash in tables:
        heads = "".join(f'<th scope="col">{_e(k)}</th>' for k in crash.classes)
        lines += [
            f"<h3>{_e(crash.implementation)}, {_e(crash.mode)}</h3>",
            '<table class="crash"><caption>Crash point × idempotency class</caption>',
            f'<thead><tr><th scope="col">Crash point</th>{heads}</tr></thead><tbody>',
        ]
        for point in crash.crash_points:
            cells = []
            for kind in crash.classes:
                entries = crash.cells.get((point, kind), ())
                if not entries:
                    cells.append('<td class="none">—</td>')
                    continue
                worst = next(c.verdict for c in sorted(entries, key=_crash_rank))
                cells.append(f'<td class="{_class(worst)}">{"".join(_crash_entry(c, anchors) for c in entries)}</td>')
            lines.append(
                f'<tr><th scope="row">{_e(point)}<br><small>{_e(point_text(point))}</small></th>{"".join(cells)}</tr>'
            )
        lines.append("</tbody></table>")
    return [*lines, "</section>"]


def _crash_entry(cell: CrashCell, anchors: dict[tuple[str, ...], str]) -> str:
    where = _e(cell_where(cell))
    observed = _e(cell.observed or "(none)")
    if cell.verdict is Verdict.PASS:
        head = f"{SYMBOLS[Verdict.PASS]} {observed}"
    else:
        head = f'<a href="#{anchors[_cell_key(cell)]}">{_verdict(cell.verdict)}: {observed}</a>'
        if cell.differs:
            head += f' <span class="expected">(expected {_e(cell.expected)})</span>'
    return f'<div class="entry {_class(cell.verdict)}">{where}{head}<br><span class="effects">{effects_text(cell)}</span></div>'


def _rules(
    info: RunInfo, table: _Table, rules: Sequence[Rule], titles: dict[int, str], rows: Sequence[ResultRow]
) -> list[str]:
    names = "".join(f'<th scope="col">{_e(name)}</th>' for name in info.implementations)
    lines = ['<section id="rules">', "<h2>Rules</h2>"]
    for number in sorted({rule.decision for rule in rules}):
        lines += [
            f'<section id="decision-D{number}" data-group="D{number}">',
            f"<h3>D{number}. {_e(titles[number])}</h3>",
        ]
        for rule in (r for r in rules if r.decision == number):
            verdicts = [table[name][rule.id] for name in info.implementations]
            lines += [
                f'<article class="rule" id="rule-{rule.id}"{_filter_attrs(rule, verdicts)}>',
                f"<h4>{rule.id} <small>({rule.profile.value})</small></h4>",
                f'<p class="text">{_e(rule.text)}</p>',
            ]
            if rule.interpretation:
                lines.append(
                    f'<p class="interpretation"><strong>Interpretation:</strong> {_e(rule.interpretation)}</p>'
                )
            if modules := scenario_modules(rows, rule.id):
                shown = ", ".join(f"<code>{_e(m)}</code>" for m in modules)
                lines.append(f'<p class="judged"><strong>How it is judged:</strong> the docstrings of {shown}</p>')
            if rule.review_only:
                lines.append(
                    '<p class="interpretation"><strong>Review-only</strong> (no run can judge it, a reviewer does): '
                    f"{_e(rule.review_only)}</p>"
                )
            lines.append(
                f'<table class="scenarios"><thead><tr><th scope="col">Scenario</th>{names}</tr></thead><tbody>'
            )
            own = [row for row in rows if row.rule_id == rule.id and row.scenario]
            for scenario in sorted({row.scenario for row in own}):
                cells = []
                for name in info.implementations:
                    found = [row.verdict for row in own if row.scenario == scenario and row.implementation == name]
                    cells.append(
                        f'<td class="v {_class(found[0])}">{_verdict(found[0])}</td>'
                        if found
                        else '<td class="none">—</td>'
                    )
                lines.append(f'<tr><th scope="row"><code>{_e(scenario)}</code></th>{"".join(cells)}</tr>')
            if not own:
                lines.append(
                    f'<tr><td colspan="{1 + len(info.implementations)}">No scenario judges this rule.</td></tr>'
                )
            verdict_cells = "".join(f'<td class="v {_class(v)}">{_verdict(v)}</td>' for v in verdicts)
            lines += [
                f'</tbody><tfoot><tr><th scope="row">Rule verdict</th>{verdict_cells}</tr></tfoot></table>',
                "</article>",
            ]
        lines.append("</section>")
    return [*lines, "</section>"]


def _failures(
    info: RunInfo, failing: Sequence[ResultRow], crashed: Sequence[CrashCell], by_id: dict[str, Rule]
) -> list[str]:
    lines = ['<section id="failures">', "<h2>Failures</h2>"]
    if not failing and not crashed:
        return [*lines, "<p>No failures.</p>", "</section>"]
    lines.append(
        '<p class="note">Each failure names the command that reruns exactly its scenario cell against its'
        " implementation, then its evidence verbatim: the rule it broke, the message, and the call sequence"
        " that reproduces it (with the crash point and seed when there are any).</p>"
    )
    for index, row in enumerate(failing, 1):
        rule = by_id[row.rule_id]
        facts = [
            ("Rule", f'<a href="#rule-{rule.id}">{rule.id}</a> ({rule.profile.value})'),
            ("Implementation", _e(row.implementation)),
            ("Scenario", f"<code>{_e(row.scenario)}</code>"),
            (
                "Rerun",
                '<code class="command">'
                f"{_e(rerun_command(info.implementation_refs, row.implementation, row.rule_id, row.scenario, info.rerun_options))}</code>",
            ),
            *((label, f"<code>{_e(value)}</code>") for label, value in evidence_facts(row.evidence)),
        ]
        lines += [
            f'<article class="failure" id="failure-{index}"{_filter_attrs(rule, [row.verdict])}>',
            f"<h3>{_badge(row.verdict)} {rule.id}: <code>{_e(row.scenario)}</code> ({_e(row.implementation)})</h3>",
            *_evidence(facts, row.evidence),
            "</article>",
        ]
    for index, cell in enumerate(crashed, 1):
        facts = [
            ("Implementation", _e(cell.implementation)),
            ("Mode", _e(cell.mode)),
            ("Crash point", f"<code>{_e(cell.crash_point)}</code>"),
            ("Idempotency", _e(cell.idempotency)),
            ("Position", _e(cell.position)),
            ("Decision path", _e(cell.path)),
            ("Recovery", _e(cell.recovery)),
            ("Expected", _e(cell.expected)),
            ("Observed", _e(cell.observed)),
            ("Effects", effects_text(cell)),
            *((label, f"<code>{_e(v)}</code>") for label, v in evidence_facts(cell.evidence) if label != "Crash point"),
        ]
        lines += [
            f'<article class="failure" id="crash-failure-{index}">',
            f"<h3>{_badge(cell.verdict)} crash at <code>{_e(cell.crash_point)}</code>, {_e(cell.idempotency)},"
            f" {_e(cell.position)}, {_e(cell.path)}, {_e(cell.recovery)} ({_e(cell.implementation)}, {_e(cell.mode)})</h3>",
            *_evidence(facts, cell.evidence),
            "</article>",
        ]
    return [*lines, "</section>"]


def _evidence(facts: Sequence[tuple[str, str]], evidence: str) -> list[str]:
    # Facts arrive as HTML already escaped; the evidence is escaped here.
    pairs = "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in facts)
    text = _e(evidence.rstrip("\n")) if evidence else "(no evidence recorded)"
    return [f'<dl class="facts">{pairs}</dl>', f'<pre class="evidence">{text}</pre>']


def _filter_attrs(rule: Rule, verdicts: Iterable[Verdict]) -> str:
    seen = " ".join(dict.fromkeys(v.value for v in verdicts))
    return f' data-decision="D{rule.decision}" data-profile="{rule.profile.value}" data-verdicts="{seen}"'


def _counts(verdicts: Iterable[Verdict]) -> str:
    seen = list(verdicts)
    return "".join(f'<td class="num">{seen.count(v)}</td>' for v in Verdict)


def _cell_key(cell: CrashCell) -> tuple[str, ...]:
    return cell_identity(cell)


def _crash_rank(cell: CrashCell) -> int:
    return (Verdict.FAIL, Verdict.ERROR, Verdict.PASS).index(cell.verdict)


def _badge(verdict: Verdict) -> str:
    return f'<span class="v {_class(verdict)}">{_verdict(verdict)}</span>'


def _verdict(verdict: Verdict) -> str:
    return f"{SYMBOLS[verdict]} {verdict.value}"


def _class(verdict: Verdict) -> str:
    return f"v-{verdict.value}"


def _e(text: str) -> str:
    return html.escape(printable(text), quote=True)
