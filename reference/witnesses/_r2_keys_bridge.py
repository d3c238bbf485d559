"""Witnesses of the second red-team round's gaps in keys, holds, the breaker and the bridge: inputs run together
into one key, arrays sorted as if they were sets, one retry too many, the hold bound taken from the ADR instead of
the configuration, a breaker blind to the current step or to control tools, ordinals counted per tool, and script
calls credited to the whole context."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from toolproof.reference.hooks import STEP_TABLE, CallState, Pipeline, idempotency_key
from toolproof.spec import DEFAULT_APPROVAL_TIMEOUT_S, InvocationStatus, JsonObject, ReasonCode, Step, ToolKind

from ._registry import witness

_resolve = STEP_TABLE[Step.RESOLVE]
_execute = STEP_TABLE[Step.EXECUTE]
_hold = STEP_TABLE[Step.HOLD]


async def _resolve_run_together(p: Pipeline, s: CallState) -> None:
    await _resolve(p, s)
    version = s.resolved.spec.version if s.resolved is not None else ""
    request = s.request
    # The defect: the inputs are written one after another, nothing marking where one ends and the next begins.
    text = "".join(
        [
            "key/1",
            request.tenant,
            request.run_id,
            str(request.step_number),
            s.call.call_id,
            s.call.tool_name,
            version,
            json.dumps(s.call.arguments, sort_keys=True, separators=(",", ":")),
        ]
    )
    s.key = hashlib.sha256(text.encode()).hexdigest()


@witness("key_inputs_run_together", ("D10.1",), "hashes the key's inputs concatenated with no boundary between them")
class _KeyInputsRunTogether(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _resolve_run_together}


def _as_sets(value: Any) -> Any:
    """``value`` with every array, at every depth, sorted: arrays read as sets."""
    if isinstance(value, dict):
        return {name: _as_sets(member) for name, member in value.items()}
    if isinstance(value, list):
        return sorted((_as_sets(item) for item in value), key=lambda item: json.dumps(item, sort_keys=True))
    return value


async def _resolve_arrays_as_sets(p: Pipeline, s: CallState) -> None:
    await _resolve(p, s)
    arguments: JsonObject = _as_sets(s.call.arguments)  # The defect: element order "is not meaningful".
    s.key = idempotency_key(
        tenant=s.request.tenant,
        run_id=s.request.run_id,
        step_number=s.request.step_number,
        call_id=s.call.call_id,
        tool_name=s.call.tool_name,
        tool_version=s.resolved.spec.version if s.resolved is not None else None,
        arguments=arguments,
    )


@witness("key_sorts_arrays", ("D10.4",), "sorts the elements of every array before deriving the key")
class _KeySortsArrays(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _resolve_arrays_as_sets}


async def _execute_one_retry_too_many(p: Pipeline, s: CallState) -> None:
    config = p.config
    # The defect: max_attempts read as the retries after the first execution, so one execution more is allowed.
    p.config = config.model_copy(update={"max_attempts": config.max_attempts + 1})
    try:
        await _execute(p, s)
    finally:
        p.config = config


@witness("max_attempts_counts_retries", ("D10.2",), "retries a TRANSIENT failure max_attempts times after the first")
class _MaxAttemptsCountsRetries(Pipeline):
    steps = STEP_TABLE | {Step.EXECUTE: _execute_one_retry_too_many}


async def _hold_for_the_default(p: Pipeline, s: CallState) -> None:
    config = p.config
    # The defect: a hold is bounded by the ADR's default, whatever approval_timeout_s the instance was given.
    p.config = config.model_copy(update={"approval_timeout_s": DEFAULT_APPROVAL_TIMEOUT_S})
    try:
        await _hold(p, s)
    finally:
        p.config = config


@witness(
    "hold_bound_ignores_configuration",
    ("D11.6", "D17.4"),
    "bounds every approval hold by the default 300 s, not the configured approval_timeout_s",
)
class _HoldBoundIgnoresConfiguration(Pipeline):
    steps = STEP_TABLE | {Step.HOLD: _hold_for_the_default}


def _history(
    p: Pipeline, s: CallState, *, earlier_steps_only: bool
) -> list[tuple[InvocationStatus, ReasonCode | None]]:
    """The run's identical calls as the breaker reads them (optionally those of earlier steps only)."""
    return [
        (InvocationStatus(row.status), ReasonCode(row.reason_code) if row.reason_code else None)
        for row in p.store.identical(s.request.run_id, s.call_hash)
        if not earlier_steps_only or row.step_number < s.request.step_number
    ]


@witness(
    "breaker_blind_to_its_batch",
    ("D14.2", "D14.3", "D14.4"),
    "the breaker counts identical calls of earlier steps only, not those earlier in the same batch",
)
class _BreakerBlindToItsBatch(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        # The defect: "prior" read as "in a prior step".
        return _history(self, s, earlier_steps_only=True)


@witness("breaker_spares_control_tools", ("D16.1",), "step 4's breaker sees no history for a CONTROL tool's calls")
class _BreakerSparesControlTools(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        if s.resolved is not None and s.resolved.spec.kind is ToolKind.CONTROL:
            return []  # The defect: a control call acts on the run, not the world, "so it cannot loop".
        return super().prior_identical(s)
