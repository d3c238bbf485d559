"""Round 5: which rules each red-team pipeline is run against (the MCP lifecycle rules its mistake touches)."""

from __future__ import annotations

MANIFEST: dict[str, str] = {
    "redteam.r5_d04:drop_unavailable_over_http": "D4.2,D4.20,D7.5",
    "redteam.r5_d04:drop_unavailable_new_era": "D4.2,D4.20,D7.5",
    "redteam.r5_d04:drop_always_raises": "D4.2,D4.20,D7.5",
    "redteam.r5_d05:prompt_segment_only_on_clash": "D5",
    "redteam.r5_d05:alike_prompts_first_wins": "D5",
    "redteam.r5_d05:alike_prompts_grouped_by_remote_name": "D5",
    "redteam.r5_d05:twin_prompt_yields_to_tool": "D5",
    "redteam.r5_d07:stdio_env_over_worker_env": "D7",
    "redteam.r5_d07:stdio_default_env_wins": "D7",
    "redteam.r5_d07:stdio_cwd_only_with_env": "D7",
    "redteam.r5_d07:lost_server_catalog_forgotten": "D7",
    "redteam.r5_d07:server_error_taken_for_loss": "D7",
    "redteam.r5_d07:first_listing_failure_propagates": "D7",
    "redteam.r5_d07:backoff_uncapped": "D7",
    "redteam.r5_d07:backoff_jitter_over_cap": "D7",
    "redteam.r5_d07:reconnect_failures_collapsed": "D7",
    "redteam.r5_d07:reconnect_gives_up": "D7",
    "redteam.r5_d07:calls_never_reconnect": "D7",
    "redteam.r5_d08:resources_without_templates": "D8",
    "redteam.r5_d08:templates_asked_first": "D8",
    "redteam.r5_d08:resources_judged_once": "D8",
    "redteam.r5_d08:cap_verdict_as_detail": "D8",
    "redteam.r5_d08:error_result_before_cap": "D8",
    "redteam.r5_d08:resource_cap_remote_rejected": "D8",
    "redteam.r5_d09:notices_before_listing_ignored": "D9",
    "redteam.r5_d09:notices_coalesced_per_instant": "D9",
    "redteam.r5_d09:listen_events_recorded_too": "D9",
    "redteam.r5_d09:unadvertised_notices_ignored": "D9",
}
MANIFEST |= {
    "redteam.r5_d05:prompt_name_not_normalized": "D5",
    "redteam.r5_d07:lose_marks_every_server": "D7",
    "redteam.r5_d07:restart_drops_env": "D7",
    "redteam.r5_d07:http_never_reconnected": "D7",
    "redteam.r5_d07:reconnect_due_strictly_after": "D7",
    "redteam.r5_d08:cap_refusal_transient": "D8",
    "redteam.r5_d09:notice_repins_sessions": "D9",
}
