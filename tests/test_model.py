"""The model held against the reference, and the model judge held against the witnesses.

The reference and the model are two statements of the ADR written apart (the model never reads
reference/): every workload they disagree on is a bug in one of them. The default run draws a few
hundred workloads; the slow test draws TOOLPROOF_MODEL_WORKLOADS (default 10,000) across every cell.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from toolproof.reference.witnesses import WITNESSES
from toolproof.scenarios._model_explore import FAMILIES, FIXED, judge_workloads
from toolproof.scenarios._model_workloads import workloads
from toolproof.spec import load_implementation
from toolproof.spec.model import Workload


def _agree(tmp_path: Path, per_family: int, seed: int | None = None, families: list[str] | None = None) -> None:
    reference = load_implementation("reference")
    for family in families or sorted(FAMILIES):
        strategy = workloads(**FAMILIES[family][1])
        found = judge_workloads(reference, tmp_path, strategy, per_family, True, seed, FIXED.get(family, ()))
        assert found is None, f"cell {family}: {found}"


def test_the_model_and_the_reference_agree_on_generated_workloads(tmp_path: Path) -> None:
    _agree(tmp_path, 15)


@pytest.mark.slow
@pytest.mark.thorough
def test_the_model_and_the_reference_agree_on_ten_thousand_workloads(tmp_path: Path) -> None:
    """TOOLPROOF_MODEL_WORKLOADS in all (default 10,000); TOOLPROOF_MODEL_SEED draws another sample than the
    derandomized one, and TOOLPROOF_MODEL_FAMILIES (comma-separated) limits the cells, to split a run across
    processes."""
    total = int(os.environ.get("TOOLPROOF_MODEL_WORKLOADS", "10000"))
    seed = os.environ.get("TOOLPROOF_MODEL_SEED")
    families = [f for f in os.environ.get("TOOLPROOF_MODEL_FAMILIES", "").split(",") if f] or sorted(FAMILIES)
    _agree(tmp_path, -(-total // len(families)), int(seed) if seed else None, families)


def judged_witnesses() -> list[str]:
    """Witnesses that break a rule a cell of the model judge judges, by name; TOOLPROOF_MODEL_CATCH_DECISIONS
    (comma-separated, e.g. D10,D14) keeps those that break a rule of one of those decisions."""
    judged = {rule for rules, _ in FAMILIES.values() for rule in rules}
    decisions = [d for d in os.environ.get("TOOLPROOF_MODEL_CATCH_DECISIONS", "").split(",") if d]
    return sorted(
        name
        for name, w in WITNESSES.items()
        if judged & set(w.breaks) and (not decisions or any(r.split(".")[0] in decisions for r in w.breaks))
    )


CAUGHT = (
    "trust_raising",
    "exceptions_are_failures",
    "no_dedupe",
    "retries_invalid_results",
    "no_uncertain_metric",
    "unvalidated_structure",
    "merging_excerpt",
    "artifact_writer_remembers_reduced_names",
    "tenantless_key",
    "success_forgives_denials",
    "late_approval_honoured",
    "provenance_ids_folded",
    "breaker_spares_control_tools",
    "parallel_results_in_completion_order",
    "unmarked_flagged_on_success_only",
    "versionless_key",
    "breaker_counts_this_worker_only",
    "hold_bound_known_to_its_worker",
    "sandbox_rows_unversioned",
    "device_calls_bypass_breaker",
    "device_raise_ignores_watermark",
    "empty_parts_left_out",
    "excerpt_joins_kindred_pieces",
    "artifact_names_taken_by_disk_only",
    "replayed_refusal_keeps_its_new_id",
    "refusal_replay_raises",
    "parallel_members_uncounted",
    "own_lease_claimed_again",
    "script_calls_lose_their_tenant",
    "script_calls_numbered_as_steps",
    "script_outcomes_prefixed",
)
"""Witnesses the judge has to reject, each on a rule it names (from the ninth on a path of the tour's rare runs, the
sixteenth to the eighteenth after its restart, then the classes the tour draws for the witnesses outside the generic
draws' reach: sources, parts, concurrent artifact writes, replayed refusals, parallel batch-mates, a concurrent
submission, a bridge script)."""


STORE_FAULTS_CAUGHT = (
    "logs_failed_write_and_carries_on",
    "poisoned_session",
    "swallows_failed_watermark",
    "succeeds_without_stored_completion",
    "replays_remembered_completion",
    "own_lease_rows_retried",
    "own_marked_rows_uncertain",
    "refusals_recorded_before_completion",
    "read_only_runs_without_row",
    "failed_watermark_is_a_tool_crash",
    "failed_hold_still_asks_approver",
)
"""Store-fault witnesses the judge's store_faults cell has to reject: one breaking each of its four rules, then three
that recover a failed completion in place wrongly, and four that a failed write of a refusal, a record, a watermark or
a hold shows (the cell's fixed workloads)."""


@pytest.mark.parametrize("name", STORE_FAULTS_CAUGHT)
def test_the_model_judge_rejects_a_store_fault_witness_on_a_store_fault_rule(tmp_path: Path, name: str) -> None:
    """A mistake after a failed write shows first wherever the workload meets it (a write carried on past shows in
    the next step as D3.11, a raw driver error at the completion as D4.22): any of the cell's rules is a rejection."""
    implementation = load_implementation(f"toolproof.reference.witnesses:{name}")
    rules, _ = FAMILIES["store_faults"]
    strategy = workloads(**FAMILIES["store_faults"][1])
    found = judge_workloads(implementation, tmp_path, strategy, 40, False, None, FIXED["store_faults"])
    assert found is not None, f"the model judge's store_faults cell did not reject {name}"
    assert set(found.rules) & set(rules), f"{name} was rejected on {found.rules}, none of {rules}"


CRASHES_CAUGHT = (
    "assume_the_worst",
    "orphans_fail",
    "retries_after_watermark",
    "read_only_orphan_retried",
    "watermark_after_effect",
    "uncommitted_watermark",
    "uncertain_at_claim_uncounted",
    "uncertain_metric_in_process_only",
    "sweep_takes_live_leases",
    "sweep_takes_waiting_approvals",
    "timestamp_inference",
    "recorded_rows_skip_hold",
    "answer_forgotten_by_recovery",
    "recovery_logged_after_decision",
    "in_progress_written_to_row",
    "twice_crashed_call_given_up",
    "answer_forgotten_by_recovery",
    "recovered_uncertain_message_explains",
    "retries_with_new_key",
)
"""Crash and recovery witnesses the judge's crashes cell has to reject, each on a rule it breaks (the last five on
the cell's fixed workload)."""


@pytest.mark.parametrize("name", CRASHES_CAUGHT)
def test_the_model_judge_rejects_a_crash_witness_on_a_rule_it_breaks(tmp_path: Path, name: str) -> None:
    witness = WITNESSES[name]
    implementation = load_implementation(f"toolproof.reference.witnesses:{name}")
    strategy = workloads(**FAMILIES["crashes"][1])
    found = judge_workloads(implementation, tmp_path, strategy, 60, False, None, FIXED["crashes"])
    assert found is not None, f"the model judge's crashes cell did not reject {name}"
    named = set(witness.breaks) | set(witness.through)
    assert named & set(found.rules), f"{name} was rejected on {found.rules}, none of {sorted(named)}"


MCP_CAUGHT = (
    "annotations_classify",
    "cap_verdict_as_remote_text",
    "changed_tool_called",
    "drift_judged_by_input_schema",
    "first_name_wins",
    "listing_reused_for_writes",
    "mcp_cap_in_characters",
    "mcp_error_result_cut_to_cap",
    "mcp_excerpt_limit_is_server_cap",
    "mcp_marks_external_writes_only",
    "mcp_resolve_normalizes",
    "no_mcp_output_cap",
    "permissive_unclassified",
    "read_tool_arguments_unvalidated",
    "read_tool_without_resources",
    "remote_read_resource_wins",
    "resource_read_uncapped",
    "resource_reads_bypass_breaker",
    "resource_reads_delivered_whole",
    "resource_tool_always_read_only",
    "schema_only_hash",
    "session_starts_at_first_mcp_step",
    "title_edit_not_a_change",
    "tool_per_resource",
    "trusted_mcp_output",
    "trusted_requests_skip_scopes",
    "withdrawn_tool_called",
)
"""MCP witnesses the judge's mcp cell has to reject, each on a rule it breaks, within 15 derandomized workloads and
the cell's fixed workload (``_model_mcp.mcp_tour``)."""


@pytest.mark.parametrize("name", MCP_CAUGHT)
def test_the_model_judge_rejects_an_mcp_witness_on_a_rule_it_breaks(tmp_path: Path, name: str) -> None:
    witness = WITNESSES[name]
    implementation = load_implementation(f"toolproof.reference.witnesses:{name}")
    strategy = workloads(**FAMILIES["mcp"][1])
    found = judge_workloads(implementation, tmp_path, strategy, 15, False, None, FIXED["mcp"])
    assert found is not None, f"the model judge's mcp cell did not reject {name}"
    named = set(witness.breaks) | set(witness.through)
    assert named & set(found.rules), f"{name} was rejected on {found.rules}, none of {sorted(named)}"


@pytest.mark.parametrize("name", CAUGHT)
def test_the_model_judge_rejects_a_witness_on_a_rule_it_breaks(tmp_path: Path, name: str) -> None:
    witness = WITNESSES[name]
    implementation = load_implementation(f"toolproof.reference.witnesses:{name}")
    named = set(witness.breaks) | set(witness.through)
    for _, shape in FAMILIES.values():
        found = judge_workloads(implementation, tmp_path, workloads(**shape), 60, False)
        if found is not None and named & set(found.rules):
            return
    pytest.fail(f"the model judge did not reject {name} on {sorted(named)}")


def catch(name: str, directory: Path, examples: int) -> tuple[bool, tuple[str, ...]]:
    """Whether the model judge alone rejects witness ``name`` on a rule it names, and the rules it named: ``examples``
    generic workloads, then as many of the crashes cell's, then of the store_faults cell's, then of the mcp cell's (each
    cell's fixed ones with them)."""
    witness = WITNESSES[name]
    implementation = load_implementation(f"toolproof.reference.witnesses:{name}")
    named = set(witness.breaks) | set(witness.through)
    rules: tuple[str, ...] = ()
    # The generic draws, then the crashes cell's (a crash and its recovery: the generic draws have none), then the
    # store_faults cell's (a failed write: the others have none), then the mcp cell's (MCP servers: the others have none).
    cells: tuple[tuple[dict[str, Any], tuple[Workload, ...]], ...] = (
        ({"max_actions": 8}, ()),
        (FAMILIES["crashes"][1], FIXED["crashes"]),
        (FAMILIES["store_faults"][1], FIXED["store_faults"]),
        (FAMILIES["mcp"][1], FIXED.get("mcp", ())),
    )
    for shape, fixed in cells:
        try:
            found = judge_workloads(implementation, directory, workloads(**shape), examples, False, None, fixed)
        except Exception as exc:  # The witness raised: an error, not a rejection on a rule it names.
            return False, (*rules, f"error: {type(exc).__name__}")
        rules = found.rules if found is not None else rules
        if named & set(rules):
            return True, rules
    return False, rules


@pytest.mark.slow
@pytest.mark.thorough
def test_the_model_judges_catch_rate_against_the_witnesses_it_covers(tmp_path: Path) -> None:
    """Prints one line per witness and the rate; TOOLPROOF_MODEL_CATCH_EXAMPLES workloads each (default 15) of the
    generic draws and as many of the crashes cell's,
    TOOLPROOF_MODEL_CATCH_DECISIONS limits the witnesses to some decisions' (see judged_witnesses)."""
    examples = int(os.environ.get("TOOLPROOF_MODEL_CATCH_EXAMPLES", "15"))
    names = judged_witnesses()
    caught = 0
    for name in names:
        hit, rules = catch(name, tmp_path, examples)
        caught += hit
        print(
            f"{'caught' if hit else 'missed'} {name} breaks={','.join(WITNESSES[name].breaks)} named={','.join(rules)}",
            flush=True,
        )
    print(f"model judge alone: {caught} of {len(names)} witnesses rejected on a rule they name")
    assert caught >= len(CAUGHT)
