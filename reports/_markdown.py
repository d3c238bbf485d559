"""``report.md``: the run for people, deterministic so two renderings of one run are byte-identical."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from toolproof.spec import CrashCell, FaultCell, ResultRow, Rule, StaleExpectation, Verdict, load_catalog

from ._crash import (
    CRASH_LEGEND,
    CrashTable,
    cell_where,
    crash_order,
    crash_tables,
    effects_text,
    point_text,
    unlisted_failures,
)
from ._evidence import evidence_facts, printable, rerun_command
from ._fault import fault_tables, markdown_fault_matrix
from ._results import RunInfo, row_order, scenario_modules, selected_rules, verdict_table
from ._verdict import run_verdict

# Column order of every count table; the enum's own order (pass first, not-covered last).
_COUNTED: tuple[Verdict, ...] = tuple(Verdict)
# Verdicts a reader must not miss: bold in the rule list, with their evidence under "Failures".
_FAILING = frozenset({Verdict.FAIL, Verdict.ERROR})


def render_markdown(
    info: RunInfo,
    rows: Sequence[ResultRow],
    crash_cells: Sequence[CrashCell] = (),
    stale: Sequence[StaleExpectation] = (),
    *,
    fault_cells: Sequence[FaultCell] = (),
) -> str:
    """The text of ``report.md``.

    Title, the verdict line (conforms or not per implementation and claimed profile, the exit code, what
    was not claimed or not covered), verdict counts, a per-decision summary table, the rule × implementation matrix (with
    several implementations), the stale expectations (when there are any), one section per decision
    listing each selected rule (ID, profile, catalog text, verdict per implementation, scenarios,
    interpretation), the crash matrix per implementation and mode, every failing or erroring row (with the
    command that reruns its cell, and its evidence: the call trace) and crash cell with its evidence, then every expected failure (``xfail``) with its evidence and reason.
    Rule text comes only from the catalog. Characters XML cannot carry (a terminal escape among them)
    are shown as Python escapes such as ``\\x1b``.

    Raises:
        ConfigurationError: a selected rule ID is not in the catalog.
    """
    catalog = load_catalog()
    rules = selected_rules(info, catalog)
    table = verdict_table(info, rows, rules)
    ordered = sorted(rows, key=row_order(info))
    lines: list[str] = []
    lines += _title(info, table, len(rules))
    lines[1:1] = ["", f"**Verdict:** {run_verdict(info, table, rules, stale).line}"]
    lines += _decision_summary(info, table, rules)
    if len(info.implementations) > 1:
        lines += _matrix(info, table, rules)
    lines += _stale(stale)
    titles = {decision.number: decision.title for decision in catalog.decisions}
    for number in sorted({rule.decision for rule in rules}):
        lines += ["", f"## D{number}. {titles[number]}", ""]
        for rule in (r for r in rules if r.decision == number):
            lines += _rule_entry(info, table, rule, ordered)
    lines += _crash_matrix(crash_tables(info, crash_cells))
    lines += markdown_fault_matrix(fault_tables(info, fault_cells))
    lines += _failures(info, ordered, {rule.id for rule in rules}, sorted(crash_cells, key=crash_order(info)))
    lines += _expected_failures(ordered, {rule.id for rule in rules})
    # Evidence may quote a hostile tool: a raw escape character must not reach a terminal that cats the file.
    return printable("\n".join(lines) + "\n")


def _title(info: RunInfo, table: dict[str, dict[str, Verdict]], rule_count: int) -> list[str]:
    names = ", ".join(info.implementations)
    lines = [
        f"# toolproof run {info.run_id}: {names}",
        "",
        f"Started {info.started_at} with toolproof {info.toolproof_version}; {rule_count} rules selected.",
        "",
        _row(["Implementation", "Profiles", *_COUNTED]),
        _row(["---"] * 2 + ["---:"] * len(_COUNTED)),
    ]
    for name in info.implementations:
        claimed = info.profiles.get(name)
        profiles = ", ".join(claimed) if claimed else "(none stated)"
        lines.append(_row([name, profiles, *_counts(table[name].values())]))
    return lines


def _decision_summary(info: RunInfo, table: dict[str, dict[str, Verdict]], rules: Sequence[Rule]) -> list[str]:
    titles = {decision.number: decision.title for decision in load_catalog().decisions}
    lines = [
        "",
        "## Summary by decision",
        "",
        _row(["Decision", "Title", "Implementation", *_COUNTED]),
        _row(["---"] * 3 + ["---:"] * len(_COUNTED)),
    ]
    for number in sorted({rule.decision for rule in rules}):
        ids = [rule.id for rule in rules if rule.decision == number]
        for name in info.implementations:
            counts = _counts(table[name][rule_id] for rule_id in ids)
            lines.append(_row([f"D{number}", titles[number], name, *counts]))
    return lines


def _matrix(info: RunInfo, table: dict[str, dict[str, Verdict]], rules: Sequence[Rule]) -> list[str]:
    lines = [
        "",
        "## Rule × implementation",
        "",
        _row(["Rule", "Profile", *info.implementations]),
        _row(["---"] * (2 + len(info.implementations))),
    ]
    for rule in rules:
        lines.append(
            _row([rule.id, rule.profile.value, *(_verdict(table[name][rule.id]) for name in info.implementations)])
        )
    return lines


def _stale(stale: Sequence[StaleExpectation]) -> list[str]:
    if not stale:
        return []
    lines = [
        "",
        "## Stale expectations",
        "",
        "Entries of an expectations file this run contradicted; each fails the run until it is removed or corrected.",
        "",
        _row(["Implementation", "File", "Entry", "Names", "Problem"]),
        _row(["---"] * 5),
    ]
    for item in stale:
        lines.append(_row([item.implementation, _code(item.file), str(item.entry), item.target, item.problem]))
    return lines


def _rule_entry(
    info: RunInfo, table: dict[str, dict[str, Verdict]], rule: Rule, rows: Sequence[ResultRow]
) -> list[str]:
    verdicts = "; ".join(f"{name} {_verdict(table[name][rule.id])}" for name in info.implementations)
    scenarios = sorted({row.scenario for row in rows if row.rule_id == rule.id and row.scenario})
    lines = [
        f"- **{rule.id}** ({rule.profile.value}): {_indented(rule.text)}",
        f"  - Verdict: {verdicts}",
        f"  - Scenarios: {', '.join(_code(s) for s in scenarios) if scenarios else '(none)'}",
    ]
    if rule.interpretation:
        lines.append(f"  - Interpretation: {_indented(rule.interpretation)}")
    modules = scenario_modules(rows, rule.id)
    if modules:
        lines.append(f"  - How it is judged: the docstrings of {', '.join(_code(m) for m in modules)}")
    if rule.review_only:
        lines.append(f"  - Review-only (no run can judge it, a reviewer does): {_indented(rule.review_only)}")
    return lines


def _failures(
    info: RunInfo, rows: Sequence[ResultRow], selected: set[str], crash_cells: Sequence[CrashCell]
) -> list[str]:
    failing = [row for row in rows if row.verdict in _FAILING and row.rule_id in selected]
    crashed = unlisted_failures(crash_cells, failing)
    lines = ["", "## Failures", ""]
    if not failing and not crashed:
        return [*lines, "No failures."]
    for row in failing:
        lines += [
            f"### {row.implementation}: {row.rule_id}, {_code(row.scenario)} ({row.verdict.value})",
            "",
            f"Rerun: {_code(rerun_command(info.implementation_refs, row.implementation, row.rule_id, row.scenario, info.rerun_options))}",
            "",
        ]
        lines += _evidence(row.evidence, evidence_facts(row.evidence))
    for cell in crashed:
        lines += [
            f"### {cell.implementation}: crash at {cell.crash_point}, {cell.idempotency}, {cell.position},"
            f" {cell.path}, {cell.recovery}"
            f" ({cell.mode}, {cell.verdict.value})",
            "",
        ]
        facts = [
            ("Crash point", cell.crash_point),
            ("Expected", cell.expected),
            ("Observed", cell.observed),
            ("Effects", effects_text(cell)),
        ]
        lines += _evidence(cell.evidence, facts + [f for f in evidence_facts(cell.evidence) if f[0] != "Crash point"])
    lines.pop()  # Invariant: every entry ends with a blank line, and the report ends with one newline.
    return lines


def _expected_failures(rows: Sequence[ResultRow], selected: set[str]) -> list[str]:
    expected = [row for row in rows if row.verdict is Verdict.XFAIL and row.rule_id in selected]
    if not expected:
        return []
    lines = ["", "## Expected failures", ""]
    for row in expected:
        lines += [f"### {row.implementation}: {row.rule_id}, {_code(row.scenario)} (xfail)", ""]
        lines += _evidence(row.evidence, evidence_facts(row.evidence))
    lines.pop()  # Invariant: as in _failures, the last entry's blank line goes.
    return lines


def _crash_matrix(tables: Sequence[CrashTable]) -> list[str]:
    lines = ["", "## Crash matrix", ""]
    if not tables:
        return [*lines, "No crash scenarios ran."]
    lines += [f"- **{label}**: {text}" for label, text in CRASH_LEGEND]
    for crash in tables:
        lines += ["", f"### {crash.implementation}, {crash.mode}", ""]
        lines.append(_row(["Crash point", *crash.classes]))
        lines.append(_row(["---"] * (len(crash.classes) + 1)))
        for point in crash.crash_points:
            entries = [
                "; ".join(_crash_entry(c) for c in crash.cells.get((point, k), ())) or "—" for k in crash.classes
            ]
            lines.append(_row([f"{point} ({point_text(point)})", *entries]))
    return lines


def _crash_entry(cell: CrashCell) -> str:
    where = cell_where(cell)
    observed = cell.observed or "(none)"
    if cell.verdict is Verdict.PASS:
        text = observed
    else:
        expected = f" (expected {cell.expected})" if cell.differs else ""
        text = f"**✗ {cell.verdict.value}: {observed}**{expected}"
    return f"{where}{text}, {effects_text(cell)}"


def _evidence(evidence: str, facts: Sequence[tuple[str, str]]) -> list[str]:
    lines: list[str] = []
    if facts:
        lines += [" · ".join(f"{label}: {_code(value)}" for label, value in facts), ""]
    if evidence:
        fence = "`" * max(3, _longest_backtick_run(evidence) + 1)
        lines += [f"{fence}text", evidence.rstrip("\n"), fence, ""]
    else:
        lines += ["(no evidence recorded)", ""]
    return lines


def _counts(verdicts: Iterable[Verdict]) -> list[str]:
    seen = list(verdicts)
    return [str(seen.count(verdict)) for verdict in _COUNTED]


def _verdict(verdict: Verdict) -> str:
    return f"**{verdict.value}**" if verdict in _FAILING else verdict.value


def _row(cells: Sequence[str]) -> str:
    # A pipe or a line break inside a cell would end the cell or the table.
    return "| " + " | ".join(re.sub(r"\s*\n\s*", " ", c).replace("|", "\\|") for c in cells) + " |"


def _code(text: str) -> str:
    # A code span must be fenced by more backticks than it contains.
    ticks = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _indented(text: str) -> str:
    # Continuation lines must stay inside their list item.
    return text.strip().replace("\n", "\n    ")


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)
