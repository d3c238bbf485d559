"""Which rules each red-team pipeline is run against (the decisions its mistake touches)."""

from __future__ import annotations

PG_DECISIONS = frozenset({"D4", "D18"})
"""Decisions run with --database-url (PostgreSQL cells)."""

MANIFEST: dict[str, str] = {
    "redteam.d01:lenient_result_fields": "D1",
    "redteam.d01:repairs_ok_failure_mismatch": "D1",
    "redteam.d01:result_trust_can_raise": "D1",
    "redteam.d01:structure_without_schema_passes": "D1",
    "redteam.d02:credentials_not_scoped": "D2",
    "redteam.d02:identity_attempt_zero_based": "D2",
    "redteam.d02:deadline_without_signal": "D2",
    "redteam.d02:context_tenth_member": "D2",
    "redteam.d02:resolver_reaches_pipeline": "D2",
    "redteam.d03:refused_calls_leave_no_row": "D3",
    "redteam.d03:replay_reruns_failed": "D3",
    "redteam.d03:retries_rejected_result": "D3",
    "redteam.d03:refused_without_requested_event": "D3",
    "redteam.d03:running_not_committed_before_execute": "D3",
}
