"""Round 3: which rules each red-team pipeline is run against (the decisions its mistake touches)."""

from __future__ import annotations

MANIFEST: dict[str, str] = {
    "redteam.r3_d02:retry_keeps_first_context": "D2",
    "redteam.r3_d02:scope_match_folds_case": "D2",
    "redteam.r3_d02:deadline_grace_second": "D2",
    "redteam.r3_d02:workspace_per_run": "D2",
    "redteam.r3_d04:unmarked_flag_non_idempotent_only": "D4",
    "redteam.r3_d04:unmarked_flag_success_only": "D4",
    "redteam.r3_d04:uncertain_metric_skips_claim_path": "D4",
    "redteam.r3_d04:recovered_control_loses_answer": "D4,D16",
    "redteam.r3_d04:sweep_takes_unexpired_holds": "D4",
    "redteam.r3_d04:own_lease_reentered": "D4,D3",
    "redteam.r3_d05:grammar_allows_hyphen": "D5",
    "redteam.r3_d05:collision_third_name_readmitted": "D5",
    "redteam.r3_d08:resource_reads_uncapped": "D8",
    "redteam.r3_d08:cap_ignores_structured": "D8",
    "redteam.r3_d09:changed_reported_as_withdrawn": "D9",
    "redteam.r3_d09:withdrawn_dropped_from_advertisement": "D9",
    "redteam.r3_d09:definition_hash_key_order_sensitive": "D9",
    "redteam.r3_d11:origin_from_latest_item": "D11",
    "redteam.r3_d11:argument_label_max_over_contributors": "D11",
    "redteam.r3_d11:hold_expiry_in_memory": "D11",
    "redteam.r3_d12:marker_appended_to_head": "D12",
    "redteam.r3_d12:tail_pieces_reversed": "D12",
    "redteam.r3_d12:artifact_holds_omitted_middle": "D12",
    "redteam.r3_d14:breaker_counts_in_memory": "D14",
    "redteam.r3_d15:parallel_admits_conditionally_idempotent": "D15",
    "redteam.r3_d17:divergence_checked_after_call": "D17",
    "redteam.r3_d17:bridge_unnamed_arguments_user": "D17,D11",
}
