"""``junit.xml``: the run for CI systems, one test case per scenario and implementation."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import UTC

from toolproof.spec import ResultRow, Rule, Verdict, load_catalog

from ._evidence import headline, printable
from ._results import PRECEDENCE, RunInfo, row_order, selected_rules, verdict_table

# What each scenario verdict becomes in JUnit: a child element (None for a plain pass) and its type attribute.
_OUTCOME: dict[Verdict, tuple[str | None, str]] = {
    Verdict.FAIL: ("failure", "fail"),
    Verdict.ERROR: ("error", "error"),
    Verdict.XFAIL: ("skipped", "xfail"),
    Verdict.NOT_CLAIMED: ("skipped", "not-claimed"),
    Verdict.NOT_COVERED: ("skipped", "not-covered"),
    Verdict.REVIEW_ONLY: ("skipped", "review-only"),
    Verdict.PASS: (None, "pass"),
}


def render_junit(info: RunInfo, rows: Sequence[ResultRow]) -> str:
    """The text of ``junit.xml``.

    One ``<testsuite>`` per implementation (``name`` = implementation) holding one ``<testcase>`` per
    scenario it ran (``classname`` = implementation, ``name`` = scenario, ``time`` = the scenario's
    seconds). Each test case lists the rules it judged as ``<property name="rule" value="D1.1"/>``,
    in catalog order. The scenario's verdict is the worst of its rule rows: ``fail`` gives ``<failure>``
    and ``error`` gives ``<error>``, both with the evidence as text; ``xfail`` and ``not-claimed`` give
    ``<skipped>``. Rules no scenario judged are not test cases: the suite lists them in its properties
    ``not-covered``, ``not-claimed`` and ``review-only`` (space-separated rule IDs, ``""`` when none), beside ``run_id``,
    ``toolproof_version`` and ``profiles``. Characters XML cannot carry are shown as escapes (``\\x1b``).

    Raises:
        ConfigurationError: a selected rule ID is not in the catalog.
    """
    catalog = load_catalog()
    rules = selected_rules(info, catalog)
    by_id = {rule.id: rule for rule in catalog.rules}
    table = verdict_table(info, rows, rules)
    ordered = sorted(rows, key=row_order(info))
    root = ET.Element("testsuites", {"name": printable(f"toolproof run {info.run_id}")})
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    total_time = 0.0
    for name in info.implementations:
        own = [row for row in ordered if row.implementation == name and row.scenario]
        suite, counts, seconds = _suite(info, name, own, by_id, table[name])
        root.append(suite)
        totals = {key: totals[key] + counts[key] for key in totals}
        total_time += seconds
    _set_counts(root, totals, total_time)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _suite(
    info: RunInfo, name: str, rows: Sequence[ResultRow], by_id: dict[str, Rule], verdicts: dict[str, Verdict]
) -> tuple[ET.Element, dict[str, int], float]:
    suite = ET.Element("testsuite", {"name": printable(name)})
    # JUnit's timestamp is a local time without an offset; UTC keeps it one instant.
    started = info.started.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    properties = ET.SubElement(suite, "properties")
    claimed = info.profiles.get(name)
    judged = {row.rule_id for row in rows}
    for key, value in (
        ("run_id", info.run_id),
        ("toolproof_version", info.toolproof_version),
        ("profiles", " ".join(claimed) if claimed is not None else "(none stated)"),
        ("not-covered", " ".join(r for r, v in verdicts.items() if v is Verdict.NOT_COVERED)),
        ("not-claimed", " ".join(r for r, v in verdicts.items() if v is Verdict.NOT_CLAIMED and r not in judged)),
        ("review-only", " ".join(r for r, v in verdicts.items() if v is Verdict.REVIEW_ONLY)),
    ):
        ET.SubElement(properties, "property", {"name": key, "value": printable(value)})
    scenarios: dict[str, list[ResultRow]] = {}
    for row in rows:
        scenarios.setdefault(row.scenario, []).append(row)
    counts = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    seconds = 0.0
    for scenario, scenario_rows in scenarios.items():
        case, verdict, duration = _case(name, scenario, scenario_rows, by_id)
        suite.append(case)
        counts["tests"] += 1
        counts["failures"] += verdict is Verdict.FAIL
        counts["errors"] += verdict is Verdict.ERROR
        counts["skipped"] += verdict in (Verdict.XFAIL, Verdict.NOT_CLAIMED)
        seconds += duration
    _set_counts(suite, counts, seconds)
    suite.set("timestamp", started)
    return suite, counts, seconds


def _case(
    name: str, scenario: str, rows: Sequence[ResultRow], by_id: dict[str, Rule]
) -> tuple[ET.Element, Verdict, float]:
    # Every rule row of a scenario carries the scenario's duration; the largest is the safe one to report.
    duration = max(row.duration_s for row in rows)
    case = ET.Element(
        "testcase", {"classname": printable(name), "name": printable(scenario), "time": f"{duration:.3f}"}
    )
    properties = ET.SubElement(case, "properties")
    for rule_id in dict.fromkeys(row.rule_id for row in rows):
        ET.SubElement(properties, "property", {"name": "rule", "value": printable(rule_id)})
    verdict = next(v for v in PRECEDENCE if any(row.verdict is v for row in rows))
    tag, kind = _OUTCOME[verdict]
    if tag is None:
        return case, verdict, duration
    # The rows that decided the verdict speak for the case; a rule the failure stopped is only "not judged".
    evidence = "\n\n".join(dict.fromkeys(row.evidence for row in rows if row.verdict is verdict and row.evidence))
    if verdict is Verdict.NOT_CLAIMED:
        profiles = sorted({by_id[row.rule_id].profile.value for row in rows if row.rule_id in by_id})
        message = f"not-claimed: {name} does not claim the {' or '.join(profiles) or 'needed'} profile"
    elif verdict is Verdict.XFAIL:
        message = f"xfail: expected failure: {headline(evidence)}" if evidence else "xfail: expected failure"
    else:
        message = headline(evidence) or f"{kind} without evidence"
    outcome = ET.SubElement(case, tag, {"message": message, "type": kind})
    if evidence:
        outcome.text = printable(evidence)
    return case, verdict, duration


def _set_counts(element: ET.Element, counts: dict[str, int], seconds: float) -> None:
    for key, value in counts.items():
        element.set(key, str(value))
    element.set("time", f"{seconds:.3f}")
