"""Decision 10: what the idempotency key is derived from. The model states which calls share a key, not its value."""

from __future__ import annotations

from toolproof.spec import ProposedCall, canonical_json


def key_inputs(
    tenant: str, run_id: str, step_number: int, call: ProposedCall, tool_version: str | None
) -> tuple[object, ...]:
    """D10.1, D10.3, D10.4, D10.5: equal inputs share a key, any difference gives another (attempt never enters)."""
    return (tenant, run_id, step_number, call.call_id, call.tool_name, tool_version, canonical_json(call.arguments))


KEY_RULES = ("D10.1", "D10.3", "D10.4", "D10.5")
"""The rules a key partition that differs from the model's breaks."""
