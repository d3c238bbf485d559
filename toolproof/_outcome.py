"""What a run produced, as the command line reports it: the verdicts, the cells, and each failure's cause."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from toolproof.spec import ResultRow, StaleExpectation, Verdict

FAILING = frozenset({Verdict.FAIL, Verdict.ERROR})


@dataclass(frozen=True)
class RunOutcome:
    """What a run produced."""

    run_id: str
    """The run's id in results.duckdb."""
    out_dir: Path
    """Where the files were written."""
    verdicts: dict[str, dict[str, Verdict]]
    """Implementation -> rule -> verdict."""
    stale: tuple[StaleExpectation, ...] = ()
    """Expectations file entries the run contradicted."""
    draft: Path | None = None
    """The expectations file drafted from the run's failures, when one was asked for."""
    exit_code: int = 0
    """0 when every claimed, covered rule passed (or failed as expected) and no expectation is stale, else 1;
    stored with the run, so the report states it."""
    cells: dict[str, dict[Verdict, int]] = field(default_factory=dict)
    """Implementation -> how many scenario cells (a scenario with one set of parameters) ended in each verdict."""
    causes: dict[str, dict[str, str]] = field(default_factory=dict)
    """Implementation -> failed, errored or not-covered rule -> the first line of its first such scenario's evidence."""
    stopped_after: int = 0
    """How many cells had failed when -x or --maxfail stopped the run; 0 when it ran to the end."""
    not_run: int = 0
    """How many selected cells a stop left unrun."""

    @property
    def uncovered(self) -> dict[str, list[str]]:
        """Implementation -> rules no scenario could judge (``not-covered``): never a pass, so a run's closing lines
        name them even when it conforms."""
        return {
            impl: [rule for rule, v in table.items() if v is Verdict.NOT_COVERED]
            for impl, table in self.verdicts.items()
        }

    @property
    def failed(self) -> dict[str, list[str]]:
        """Implementation -> rules that failed or errored."""
        return {
            impl: [rule for rule, v in table.items() if v in FAILING]
            for impl, table in self.verdicts.items()
            if any(v in FAILING for v in table.values())
        }


_WORST_FIRST = (
    Verdict.FAIL,
    Verdict.ERROR,
    Verdict.XFAIL,
    Verdict.NOT_COVERED,
    Verdict.REVIEW_ONLY,
    Verdict.PASS,
    Verdict.NOT_CLAIMED,
)


def cell_counts(rows: Sequence[ResultRow]) -> dict[str, dict[Verdict, int]]:
    # A cell judges several rules; its verdict is the worst of its rows.
    cells: dict[tuple[str, str], set[Verdict]] = {}
    for row in rows:
        if row.scenario:
            cells.setdefault((row.implementation, row.scenario), set()).add(row.verdict)
    counts: dict[str, dict[Verdict, int]] = {}
    for (impl, _), verdicts in cells.items():
        worst = next((v for v in _WORST_FIRST if v in verdicts), Verdict.ERROR)
        table = counts.setdefault(impl, {})
        table[worst] = table.get(worst, 0) + 1
    return counts


def first_cause(evidence: str) -> str:
    """The line of ``evidence`` that says what went wrong: a traceback's ``E`` line, else its first line."""
    lines = [line.strip() for line in evidence.splitlines() if line.strip()]
    raised = [line.removeprefix("E").strip() for line in lines if line.startswith("E ")]
    return raised[0] if raised else (lines[0] if lines else "")


def causes(rows: Sequence[ResultRow]) -> dict[str, dict[str, str]]:
    causes: dict[str, dict[str, str]] = {}
    for row in rows:
        if (row.verdict in FAILING or row.verdict is Verdict.NOT_COVERED) and row.scenario:
            causes.setdefault(row.implementation, {}).setdefault(row.rule_id, first_cause(row.evidence))
    return causes
