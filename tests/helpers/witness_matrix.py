"""The witness matrix: every witness's run, shared out among the xdist workers.

Witnesses of one decision share a run in chunks of ``CHUNK`` (each judged only on the cells of its own selection);
the chunks are dealt round-robin to ``PARTS`` modules (``tests/test_witnesses_part<k>.py``), slowest decisions
first, in turns. Whichever part's module a worker runs, it makes every run of the matrix no worker holds yet, in the matrix's
order (a queue the workers share through file locks), and only then waits for its part's runs that another worker is
still making: no worker waits while some run is left to start, however many workers there are.
"""

from __future__ import annotations

import itertools

import pytest

from toolproof.reference.witnesses import WITNESSES
from toolproof.spec import ResultRow, Verdict, load_catalog

from ._runs import Run, run_and_load, shared_root, try_shared_run

SOLO_DECISIONS = frozenset({"D4", "D17"})
"""Decisions whose scenarios include a crash matrix: their witnesses run alone, on their own rules only (a shared run
would give every witness of the decision the union of their rules' cells)."""

EVERY_CELL = frozenset({"watermark_after_effect", "answer_forgotten_by_recovery", "retries_with_new_key"})
"""Solo witnesses whose runs go on past a scenario's first failed cell: between them they fail the crash matrix in
both modes and at after_claim, after_watermark and after_effect (D3's ``no_dedupe`` fails it at after_complete), which
``test_witnesses.py`` asks of the matrix; and ``retries_with_new_key``, whose D4.5 fails only in a cell of a scenario
after the cell where its D4.4 failed. Every other run stops a scenario at its first failed cell: one is enough to
reject a witness, and the rest of a crash or fault matrix (hundreds of cells for a D4.7 witness) proves nothing more.
Every other run also runs no cell for a witness once each of its rules the cell judges has failed for it (in any
scenario): a witness that never records a notice waits out a real-time bound once, not once per scenario of its rule.
The scenarios whose only failures were spared that way are run again for the witnesses that spared them
(``spared_failures``), so that each still fails against some witness."""

CHUNK = 4
"""At most this many witnesses of one decision share a run: a run per witness would repeat the suite's fixed start-up,
a run per decision would leave one worker holding a decision's slow cells (servers restarted through a long outage,
say) while the others wait."""

PARTS = 4
"""How many modules share the matrix out (``tests/test_witnesses_part0.py`` to ``…part3.py``)."""

SLOW_FIRST = ("D7", "D9", "D8", "D2", "D1", "D5", "D11")
"""Decisions whose runs took longest (pytest --durations, 2026-12-04), dealt first (in turns) so that the last runs
to start are short ones."""


def groups() -> dict[str, list[str]]:
    """Run key → the witnesses sharing that run. A witness of a crash-matrix decision, or one seen through another
    decision's scenarios (``Witness.through``), runs alone, on its own selection. The slow decisions' chunks come
    first, dealt in turns (one chunk of each, then the next of each): D7's runs mostly wait on real processes and
    clocks, so spreading them lets the others use the cores meanwhile."""
    decisions: dict[str, list[str]] = {}
    for name, witness in WITNESSES.items():
        decision = witness.breaks[0].split(".")[0]
        decisions.setdefault(name if decision in SOLO_DECISIONS or witness.through else decision, []).append(name)
    chunked: dict[str, list[tuple[str, list[str]]]] = {}
    for key, names in decisions.items():
        chunks = [names[start : start + CHUNK] for start in range(0, len(names), CHUNK)]
        chunked[key] = [(key if len(chunks) == 1 else f"{key}-{n}", chunk) for n, chunk in enumerate(chunks, 1)]
    slow = [chunked.pop(decision) for decision in SLOW_FIRST if decision in chunked]
    turns = [pair for turn in itertools.zip_longest(*slow) for pair in turn if pair is not None]
    return dict(turns + [pair for pairs in chunked.values() for pair in pairs])


def partition(part: int) -> list[str]:
    """The run keys one part's module makes first: every ``PARTS``-th key from its own place."""
    return list(groups())[part::PARTS]


def _made(factory: pytest.TempPathFactory, key: str, *, wait: bool) -> Run | None:
    names = groups()[key]
    rules = sorted({rule for name in names for rule in WITNESSES[name].selection.split(",")})
    refs = {f"toolproof.reference.witnesses:{name}": WITNESSES[name].selection for name in names}
    # One failed cell of a scenario rejects a witness on its rules; the EVERY_CELL runs go on, since the crash
    # matrix's modes and points are each asked to fail somewhere.
    first_failure = key not in EVERY_CELL
    root = shared_root(factory, "witness-runs")
    return try_shared_run(
        root, key, list(refs), ",".join(rules), refs, first_failure, first_rule_failure=first_failure, wait=wait
    )


def matrix_runs(factory: pytest.TempPathFactory, wanted: list[str]) -> dict[str, Run]:
    """Witness name → its run, for every witness of the ``wanted`` run keys. Every run of the matrix no worker has
    started is made first, in the matrix's order (slowest first: each worker takes the next one nobody holds), and
    only then does this worker wait for the wanted runs others are still making."""
    runs: dict[str, Run] = {}
    for key in groups():
        run = _made(factory, key, wait=False)
        if run is not None:
            runs.update(dict.fromkeys(groups()[key], run))
    for key in wanted:
        if groups()[key][0] not in runs:
            run = _made(factory, key, wait=True)
            assert run is not None  # Invariant: a waiting call always gets the run.
            runs.update(dict.fromkeys(groups()[key], run))
    return {name: runs[name] for key in wanted for name in groups()[key]}


def judge_witness(name: str, run: Run) -> None:
    """The witness is rejected on every rule it breaks, and its report names each."""
    witness = WITNESSES[name]
    verdicts = run.outcome.verdicts[f"witness:{name}"]
    assert {rule: verdicts[rule] for rule in witness.breaks} == dict.fromkeys(witness.breaks, Verdict.FAIL)
    assert run.outcome.exit_code == 1
    report = (run.out / "report.md").read_text()
    for rule in witness.breaks:
        assert f"### witness:{name}: {rule}," in report
    assert "reproduction:" in report


def scenario_function(cell: str) -> str:
    """A cell's scenario function (``module.py::test_name``): a parametrized scenario's cells share one check."""
    return cell.split("[", 1)[0]


def spared_failures(
    factory: pytest.TempPathFactory, reference: list[ResultRow], runs: dict[str, Run], functions: set[str]
) -> Run | None:
    """A run of the scenario ``functions`` (none failed in the matrix) for every witness whose matrix run spared a cell
    of one of them after its rules had failed elsewhere, stopping a scenario at its first failed cell for any of
    them; None when no witness spared one (``reference`` is the reference's rows: which cells each function has,
    judging what)."""
    judged: dict[str, set[str]] = {}
    for row in reference:
        if row.scenario and scenario_function(row.scenario) in functions:
            judged.setdefault(row.scenario, set()).add(row.rule_id)
    refs: dict[str, str] = {}
    spared: set[str] = set()
    for name, run in runs.items():
        own = {rule.id for rule in load_catalog().select(WITNESSES[name].selection)}
        ran = {row.scenario for row in run.rows if row.implementation == f"witness:{name}"}
        missed = {cell for cell, rules in judged.items() if rules & own} - ran
        if missed:
            refs[f"toolproof.reference.witnesses:{name}"] = WITNESSES[name].selection
            spared |= {scenario_function(cell) for cell in missed}
    if not refs:
        return None
    rules = sorted({rule.id for selection in refs.values() for rule in load_catalog().select(selection)})
    out = factory.mktemp("spared-failures")
    return run_and_load(list(refs), ",".join(rules), out, refs, first_failure_of_any=True, cells=sorted(spared))
