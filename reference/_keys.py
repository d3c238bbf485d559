"""The idempotency key of decision 10."""

from __future__ import annotations

import hashlib

from toolproof.spec import JsonObject

from ._tables import dump_json

KEY_VERSION = "toolproof-key/1"
"""Version tag; changing the derivation changes this."""


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
    """Hex digest over the version tag and the seven inputs; attempt_number never enters."""
    material = dump_json([KEY_VERSION, tenant, run_id, step_number, call_id, tool_name, tool_version or "", arguments])
    return hashlib.sha256(material.encode("utf-8")).hexdigest()
