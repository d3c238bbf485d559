"""Round 4: which rules each red-team pipeline is run against (the decisions its mistake touches).

The three decision-4 pipelines are run against the decision-4 rules their mistake touches rather than all of D4:
a whole-D4 run (recovery crash matrix, PostgreSQL) takes 4-10 minutes on the shared machine and round 4 had 35.
"""

from __future__ import annotations

MANIFEST: dict[str, str] = {
    "redteam.r4_d02:credentials_scoped_per_batch": "D2",
    "redteam.r4_d02:deadline_member_relative": "D2",
    "redteam.r4_d02:artifact_names_reduced_alike_overwrite": "D2",
    "redteam.r4_d02:approved_call_resolver_unscoped": "D2",
    "redteam.r4_d04:recovery_resumes_recorded_at_claim": "D4.14,D4.15",
    "redteam.r4_d04:mcp_marks_after_remote_call": "D8,D4.1,D4.2,D4.10,D4.11,D4.20",
    "redteam.r4_d04:escape_judged_per_step": "D4.3,D4.7",
    "redteam.r4_d08:read_resource_skips_claim": "D8",
    "redteam.r4_d08:cap_skips_error_results": "D8",
    "redteam.r4_d08:cap_checked_per_block": "D8",
    "redteam.r4_d08:cap_rejects_at_limit": "D8",
    "redteam.r4_d08:read_resource_default_deadline": "D8",
    "redteam.r4_d11:approval_external_write_only": "D11",
    "redteam.r4_d11:origin_over_contributors_only": "D11",
    "redteam.r4_d11:argument_label_cached_per_step": "D11",
    "redteam.r4_d11:pending_holds_in_memory": "D11",
    "redteam.r4_d11:empty_contributors_take_origin": "D11,D17",
    "redteam.r4_d14:denials_counted_consecutively": "D14",
    "redteam.r4_d14:loop_checked_before_uncertain": "D14",
    "redteam.r4_d14:uncertain_remembered_in_process": "D14",
    "redteam.r4_d14:loop_counts_succeeded_only": "D14",
    "redteam.r4_d14:identical_ignores_tool_name": "D14",
    "redteam.r4_d12:excerpt_skips_mcp_results": "D12,D8",
    "redteam.r4_d15:parallel_admits_idempotent_writes": "D15",
    "redteam.r4_d15:sequential_batch_stops_at_hold": "D15",
    "redteam.r4_d15:batch_dedupes_identical_members": "D15,D14",
}
