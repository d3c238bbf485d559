"""Steps 1-5, logic: nothing here touches the world or writes the store."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema

from toolproof.spec import (
    ContextItem,
    ProposedCall,
    ReasonCode,
    Tool,
    ToolSpec,
    TrustLabel,
    call_hash,
    domain_of,
    lowest_trust,
)

from ._host import PipelineHost, resolved_step
from ._keys import idempotency_key
from ._policy import Decision
from ._policy import decide as policy_decision
from ._state import CallState, Resolved
from ._tables import dump_json


async def resolve(p: PipelineHost, s: CallState) -> None:
    """1. Name to registered spec; unknown or ungrammatical names are denied; MCP names resolve in the
    session's pin, and a pinned tool its server withdrew or changed is unavailable."""
    found: tuple[ToolSpec, Tool] | ReasonCode | None
    if p.mcp is not None and domain_of(s.call.tool_name) == "mcp":
        found = await p.mcp.resolve(s.request.run_id, s.call.tool_name)
    else:
        found = p.registry.resolve(s.call.tool_name)
    if found is None:
        s.finish(ReasonCode.UNKNOWN_TOOL)
    elif isinstance(found, ReasonCode):
        s.finish(found)
    else:
        s.resolved = Resolved(*found)
    s.key = idempotency_key(
        tenant=s.request.tenant,
        run_id=s.request.run_id,
        step_number=s.request.step_number,
        call_id=s.call.call_id,
        tool_name=s.call.tool_name,
        tool_version=s.resolved.spec.version if s.resolved else None,
        arguments=s.call.arguments,
    )
    s.call_hash = call_hash(s.call.tool_name, s.call.arguments)


@resolved_step
async def validate(p: PipelineHost, s: CallState, r: Resolved) -> None:
    """2. Arguments against the input schema."""
    if not conforms(s.call.arguments, r.spec.input_schema):
        s.finish(ReasonCode.INVALID_ARGUMENTS)


async def label(p: PipelineHost, s: CallState) -> None:
    """3. origin_trust over the request's context; argument_trust from carried provenance."""
    s.origin_trust = origin_trust(s.request.context)
    s.argument_trust = argument_trust(s.call, s.request.context, s.origin_trust)


async def guard(p: PipelineHost, s: CallState) -> None:
    """4. The one breaker; a replay of a recorded call is not another proposal."""
    s.existing = p.store.find_by_key(s.key)
    if s.existing is not None:
        return
    reason = p.trip(p.prior_identical(s))
    if reason is not None:
        s.finish(reason)


@resolved_step
async def decide(p: PipelineHost, s: CallState, r: Resolved) -> None:
    """5. Policy: deny, hold for approval, suspend (control), or allow."""
    if s.existing is not None:
        s.decision = Decision(s.existing.decision or Decision.ALLOW)
        return
    s.decision = policy_decision(r.spec, p.config, s.origin_trust, s.argument_trust)
    if s.decision is Decision.DENY:
        s.finish(ReasonCode.POLICY_DENIED)


@functools.lru_cache(maxsize=1024)
def _compiled(schema_json: str) -> Any:
    # What jsonschema.validate does on every call (pick the draft, check the schema, build the validator), once.
    schema = json.loads(schema_json)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


def conforms(instance: Any, schema: Mapping[str, Any]) -> bool:
    """Whether ``instance`` is valid under ``schema``; keyed by the schema's canonical JSON, so a changed schema
    is compiled anew."""
    return bool(_compiled(dump_json(schema)).is_valid(instance))


def origin_trust(context: Sequence[ContextItem]) -> TrustLabel:
    """Decision 11: the minimum label over the context items of the request (none: EXTERNAL_UNTRUSTED)."""
    return lowest_trust(*(item.trust for item in context))


def argument_trust(call: ProposedCall, context: Sequence[ContextItem], origin: TrustLabel) -> TrustLabel:
    """Decision 11: per argument, the minimum over its contributors; unknown provenance is EXTERNAL_UNTRUSTED.

    A call without arguments carries no argument-borne content and takes the origin's label.
    """
    # Invariant: an id names every item that bears it, so a contributor's label is the lowest of them (D11.3).
    labels: dict[str, TrustLabel] = {}
    for item in context:
        labels[item.id] = lowest_trust(item.trust, labels.get(item.id, item.trust))
    per_argument = [
        lowest_trust(*(labels.get(source, TrustLabel.EXTERNAL_UNTRUSTED) for source in call.provenance.get(name, [])))
        for name in call.arguments
    ]
    return min(per_argument) if per_argument else origin
