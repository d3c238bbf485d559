"""The model held against the reference, and the model judge held against the witnesses.

The reference and the model are two statements of the ADR written apart (the model never reads
reference/): every workload they disagree on is a bug in one of them. The default run draws a few
hundred workloads; the slow test draws TOOLPROOF_MODEL_WORKLOADS (default 10,000) across every cell.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolproof.reference.witnesses import WITNESSES
from toolproof.scenarios._model_explore import FAMILIES, judge_workloads
from toolproof.scenarios._model_workloads import workloads
from toolproof.spec import load_implementation

COVERED = ("D1.", "D2.3", "D2.8", "D3.", "D4.", "D10.", "D11.", "D12.", "D13.", "D14.", "D15.", "D16.")
"""The rules the model's branches name (docs/model.md: what it does not cover)."""


def _agree(tmp_path: Path, per_family: int) -> None:
    reference = load_implementation("reference")
    for family, (_, shape) in sorted(FAMILIES.items()):
        found = judge_workloads(reference, tmp_path, workloads(**shape), per_family, True)
        assert found is None, f"cell {family}: {found}"


def test_the_model_and_the_reference_agree_on_generated_workloads(tmp_path: Path) -> None:
    _agree(tmp_path, 15)


@pytest.mark.slow
def test_the_model_and_the_reference_agree_on_ten_thousand_workloads(tmp_path: Path) -> None:
    total = int(os.environ.get("TOOLPROOF_MODEL_WORKLOADS", "10000"))
    _agree(tmp_path, -(-total // len(FAMILIES)))


def judged_witnesses() -> list[str]:
    """Witnesses whose broken rules the model covers, by name."""
    return sorted(name for name, w in WITNESSES.items() if any(r.startswith(COVERED) for r in w.breaks))


CAUGHT = (
    "trust_raising",
    "exceptions_are_failures",
    "no_dedupe",
    "retries_invalid_results",
    "no_uncertain_metric",
    "unvalidated_structure",
)
"""Witnesses the judge has to reject, each on a rule it names."""


@pytest.mark.parametrize("name", CAUGHT)
def test_the_model_judge_rejects_a_witness_on_a_rule_it_breaks(tmp_path: Path, name: str) -> None:
    witness = WITNESSES[name]
    implementation = load_implementation(f"toolproof.reference.witnesses:{name}")
    named = set(witness.breaks) | set(getattr(witness, "through", ()))
    for _, shape in FAMILIES.values():
        found = judge_workloads(implementation, tmp_path, workloads(**shape), 60, False)
        if found is not None and named & set(found.rules):
            return
    pytest.fail(f"the model judge did not reject {name} on {sorted(named)}")
