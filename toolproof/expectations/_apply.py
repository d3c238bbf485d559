"""Applying expectations to a run's rows: the failures they declare read ``xfail``, the entries the run
contradicts are stale."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolproof.spec import ResultRow, StaleExpectation, Verdict

from ._file import Expectation, LoadedExpectations

if TYPE_CHECKING:  # The index imports pytest: the CLI reads an expectations file before that loads.
    from ._index import ScenarioIndex

# Verdicts of a scenario that ran and judged; ``not-claimed`` rows never ran, so nothing there can fail.
_JUDGED = frozenset({Verdict.PASS, Verdict.FAIL, Verdict.ERROR})
_FAILING = frozenset({Verdict.FAIL, Verdict.ERROR})
# What each failing verdict means, for a reader told that the run gave the other one.
_IN_WORDS = {
    "fail": "failed (the scenario saw the implementation break the rule)",
    "error": "errored (the scenario could not judge: the implementation or the harness raised)",
}


def apply_expectations(
    run_id: str,
    files: Sequence[LoadedExpectations],
    rows: Sequence[ResultRow],
    selected: frozenset[str],
    index: ScenarioIndex,
) -> tuple[list[ResultRow], list[StaleExpectation]]:
    """Turn the rows the entries expect into ``xfail`` and find the stale entries.

    A scenario row of the file's implementation that an entry names and whose verdict is the entry's
    becomes ``xfail``, its evidence kept and the entry's reason appended. An entry is stale when a row
    it names passed (an unexpected pass: the row stays ``pass``), or when it names no row that ran
    although it was selected: its rule is selected, or its scenario is one the run executed or one the
    suite does not have. A row whose verdict is neither (expected ``fail``, got ``error``) stays as it is, and
    its evidence says so in words, naming the entry. A stale rule entry whose rule still fails in some
    scenarios lists them, so the entry can be narrowed to those.

    Returns:
        The rows, in the order given, and the stale entries, in file and entry order.
    """
    result = list(rows)
    stale: list[StaleExpectation] = []
    mismatched: dict[int, list[str]] = {}
    for loaded in files:
        for number, entry in enumerate(loaded.entries, 1):
            named = [
                i for i, row in enumerate(rows) if row.implementation == loaded.implementation and entry.matches(row)
            ]
            judged = [i for i in named if rows[i].verdict in _JUDGED]
            problem = ""
            if not judged:
                problem = _unmatched(entry, loaded.implementation, [rows[i] for i in named], selected, index)
            passed = [rows[i] for i in judged if rows[i].verdict is Verdict.PASS]
            if passed:
                more = f" (and {len(passed) - 1} more)" if len(passed) > 1 else ""
                problem = f"unexpected pass: {passed[0].scenario} passed {passed[0].rule_id}{more}"
                if entry.rule is not None and entry.scenario is None:
                    problem += _still_failing([rows[i] for i in judged if rows[i].verdict in _FAILING])
            if problem:
                stale.append(
                    StaleExpectation(
                        run_id=run_id,
                        implementation=loaded.implementation,
                        file=loaded.path,
                        entry=number,
                        target=entry.target,
                        problem=problem,
                    )
                )
            for i in judged:
                # Invariant: the actual verdict is the one the scenario gave, whatever an earlier entry made of it.
                if rows[i].verdict.value == entry.verdict and result[i].verdict is not Verdict.XFAIL:
                    result[i] = rows[i].model_copy(
                        update={"verdict": Verdict.XFAIL, "evidence": _with_reason(rows[i].evidence, loaded, number)}
                    )
                elif rows[i].verdict in _FAILING and rows[i].verdict.value != entry.verdict:
                    mismatched.setdefault(i, []).append(
                        f"{loaded.path} entry {number} ({entry.target}) expected this scenario to"
                        f" {entry.verdict}, but it {_IN_WORDS[rows[i].verdict.value]}; the entry does not describe"
                        f' this failure: if it is the one you know of, write verdict = "{rows[i].verdict.value}"'
                    )
    for i, notes in mismatched.items():
        if result[i].verdict is not Verdict.XFAIL:  # Another entry expecting what it gave settles it.
            result[i] = result[i].model_copy(update={"evidence": "\n\n".join([result[i].evidence.rstrip(), *notes])})
    return result, stale


def _still_failing(failing: Sequence[ResultRow]) -> str:
    """For a rule entry some of whose scenarios passed: the scenarios that still fail, to narrow it to."""
    if not failing:
        return "; nothing it names fails any more: remove the entry"
    cells = sorted({row.scenario for row in failing})
    return f"; still failing: {', '.join(cells)}: narrow the entry to scenario entries for these"


def _unmatched(
    entry: Expectation, implementation: str, named: Sequence[ResultRow], selected: frozenset[str], index: ScenarioIndex
) -> str:
    """Why an entry that named no judged row is stale; ``""`` when the run had no reason to reach it."""
    if named:  # Rows exist, but none ran: the implementation does not claim the profile.
        return f"{implementation} does not claim the profile: every scenario it names is not-claimed"
    if entry.rule is not None:
        judging = {name for name, rules in index.rules.items() if entry.rule in rules}
        if entry.rule not in selected or (judging and not judging & index.kept):
            return ""  # Not selected, or its scenarios did not run (they need a database the run lacks).
        if not judging:
            return f"no scenario of the suite judges {entry.rule}, so nothing can fail"
        if entry.scenario is None:
            return f"{entry.rule} is selected but no scenario of it ran for {implementation}"
    function, scenario = entry.function or "", entry.scenario or ""
    if function not in index.rules:
        return f"the suite has no scenario {function}"
    if scenario not in index.cells | index.rules.keys():
        return f"the suite has no cell {scenario}"
    if scenario not in index.kept:
        return ""  # Its rules are not selected, or it needs a database the run lacks.
    if entry.rule is not None:
        return f"{scenario} ran, but no row of it judged {entry.rule} for {implementation}"
    return f"{scenario} ran, but no row of it judged a selected rule for {implementation}"


def _with_reason(evidence: str, loaded: LoadedExpectations, number: int) -> str:
    entry = loaded.entries[number - 1]
    link = f" {entry.link}" if entry.link else ""
    note = f"expected {entry.verdict} ({loaded.path} entry {number}): {entry.reason}{link}"
    return f"{evidence.rstrip()}\n\n{note}" if evidence.strip() else note
