"""The idempotency key of decision 10, as the pipeline derives it (the derivation itself: ``spec.idempotency_key``)."""

from __future__ import annotations

from toolproof.spec import KEY_VERSION, JsonObject
from toolproof.spec import idempotency_key as spec_idempotency_key

__all__ = ["KEY_VERSION", "idempotency_key"]


def idempotency_key(
    *,
    tenant: str,
    run_id: str,
    step_number: int,
    call_id: str,
    tool_name: str,
    tool_version: str | None,
    arguments: JsonObject,
) -> str:
    """Hex digest over the version tag and the seven inputs (RFC 8785 canonical JSON); attempt_number never enters."""
    return spec_idempotency_key(
        tenant=tenant,
        run_id=run_id,
        step_number=step_number,
        call_id=call_id,
        tool_name=tool_name,
        tool_version=tool_version,
        arguments=arguments,
    )
