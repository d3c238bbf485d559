"""Applying expectations to a run's rows: the failures they declare read ``xfail``, the entries the run
contradicts are stale."""

from __future__ import annotations

from collections.abc import Sequence

from toolproof.spec import ResultRow, StaleExpectation, Verdict

from ._file import Expectation, LoadedExpectations
from ._index import ScenarioIndex

# Verdicts of a scenario that ran and judged; ``not-claimed`` rows never ran, so nothing there can fail.
_JUDGED = frozenset({Verdict.PASS, Verdict.FAIL, Verdict.ERROR})


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
    suite does not have. A row whose verdict is neither (expected ``fail``, got ``error``) stays as it is.

    Returns:
        The rows, in the order given, and the stale entries, in file and entry order.
    """
    result = list(rows)
    stale: list[StaleExpectation] = []
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
    return result, stale


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
        return f"{entry.rule} is selected but no scenario of it ran for {implementation}"
    function, scenario = entry.function or "", entry.scenario or ""
    if function not in index.rules:
        return f"the suite has no scenario {function}"
    if scenario not in index.cells | index.rules.keys():
        return f"the suite has no cell {scenario}"
    if scenario not in index.kept:
        return ""  # Its rules are not selected, or it needs a database the run lacks.
    return f"{scenario} ran, but no row of it judged a selected rule for {implementation}"


def _with_reason(evidence: str, loaded: LoadedExpectations, number: int) -> str:
    entry = loaded.entries[number - 1]
    link = f" {entry.link}" if entry.link else ""
    note = f"expected {entry.verdict} ({loaded.path} entry {number}): {entry.reason}{link}"
    return f"{evidence.rstrip()}\n\n{note}" if evidence.strip() else note
