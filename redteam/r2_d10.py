"""Round 2, decision 10: the idempotency key and the bounded retry."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import anyio

from toolproof.reference.hooks import STEP_TABLE, CallState, Pipeline, ReferenceImplementation, Resolved, resolved_step
from toolproof.spec import CONTROL_ANSWER_ARGUMENT, FailureKind, IdempotencyClass, Step

from ._common import impl, table

_reference_resolve = STEP_TABLE[Step.RESOLVE]
KEY_VERSION = "toolproof-key/1"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


async def _resolve_concatenated_key(p: Pipeline, s: CallState) -> None:
    await _reference_resolve(p, s)
    version = s.resolved.spec.version if s.resolved else ""
    r = s.request
    # The mistake: the inputs are concatenated without a separator or length prefix before hashing.
    material = f"{KEY_VERSION}{r.tenant}{r.run_id}{r.step_number}{s.call.call_id}{s.call.tool_name}{version}"
    s.key = hashlib.sha256((material + _canonical(s.call.arguments)).encode()).hexdigest()


class _ConcatenatedKey(Pipeline):
    steps = table(RESOLVE=_resolve_concatenated_key)


def key_inputs_concatenated() -> ReferenceImplementation:
    """D10 "The idempotency key adds a version tag and tool_version to Section 8.4's five inputs": the inputs are
    joined without separators before hashing, so distinct inputs that concatenate alike share a key (tenant "t1" +
    run "r" and tenant "t" + run "1r"; step 1 + call "23" and step 12 + call "3"): the second is answered with the
    first's recorded outcome, across tenants too."""
    return impl("r2-d10-key-inputs-concatenated", _ConcatenatedKey)


def _sorted_arrays(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted_arrays(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted((_sorted_arrays(v) for v in value), key=_canonical)
    return value


async def _resolve_set_like_key(p: Pipeline, s: CallState) -> None:
    await _reference_resolve(p, s)
    from toolproof.reference.hooks import idempotency_key

    r = s.request
    s.key = idempotency_key(
        tenant=r.tenant,
        run_id=r.run_id,
        step_number=r.step_number,
        call_id=s.call.call_id,
        tool_name=s.call.tool_name,
        tool_version=s.resolved.spec.version if s.resolved else None,
        # The mistake: "canonical" taken as order-independent all the way down, so arrays are sorted too.
        arguments=_sorted_arrays(s.call.arguments),
    )


class _SetLikeKey(Pipeline):
    steps = table(RESOLVE=_resolve_set_like_key)


def key_sorts_arrays() -> ReferenceImplementation:
    """D10 "canonical arguments": canonicalization sorts array elements as well as object members, so arguments
    that differ only in the order of an array (["a", "b"] vs ["b", "a"], a different value) get the same key and the
    second call is answered with the first one's recorded outcome."""
    return impl("r2-d10-key-sorts-arrays", _SetLikeKey)


async def _run_tool(s: CallState, r: Resolved) -> None:
    from toolproof.reference._execute import wall_clock

    prepared = s.prepared
    assert prepared is not None
    signal, deadline = prepared.parts.cancellation, prepared.parts.deadline
    arguments = dict(s.call.arguments)
    if s.answer is not None:
        arguments[CONTROL_ANSWER_ARGUMENT] = s.answer
    async with anyio.create_task_group() as group:

        async def watchdog() -> None:
            await anyio.sleep(max(0.0, deadline - wall_clock()))
            s.timed_out = True
            signal.set()
            group.cancel_scope.cancel()

        group.start_soon(watchdog)
        try:
            s.raw_result = await r.tool.execute(arguments, prepared.context)
        except Exception as exc:
            s.error = exc
        group.cancel_scope.cancel()


def _may_retry(p: Pipeline, s: CallState, r: Resolved) -> bool:
    result = p.parse_result(s.raw_result)
    transient = result is not None and result.failure is not None and result.failure.kind == FailureKind.TRANSIENT
    escaped = s.marked and r.spec.idempotency is IdempotencyClass.NON_IDEMPOTENT
    # The mistake: max_attempts read as the number of retries after the first execution.
    return transient and not escaped and s.attempt <= p.config.max_attempts


@resolved_step
async def _execute_one_extra(p: Pipeline, s: CallState, r: Resolved) -> None:
    await _run_tool(s, r)
    while _may_retry(p, s, r):
        s.attempt += 1
        p.store.update(s.invocation_id, {"attempt": s.attempt})
        s.raw_result, s.error, s.timed_out = None, None, False
        await p.steps[Step.PREPARE](p, s)
        await _run_tool(s, r)


class _RetriesNotAttempts(Pipeline):
    steps = table(EXECUTE=_execute_one_extra)


def max_attempts_counts_retries() -> ReferenceImplementation:
    """D10 "a bounded retry reuses the key" (bounded by InstanceConfig.max_attempts executions in all): the bound is
    compared with ``<=``, i.e. read as retries after the first execution, so a tool that keeps reporting TRANSIENT is
    executed max_attempts + 1 times (3 with the default 2)."""
    return impl("r2-d10-max-attempts-counts-retries", _RetriesNotAttempts)
