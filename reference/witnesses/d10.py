"""Witnesses of decision 10: The idempotency key.

Each is the reference with one deliberate defect, named for it; ``breaks`` names the rules it breaks."""

from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import replace
from typing import Any

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    ContextParts,
    Pipeline,
    PipelineHost,
    Resolved,
    StepFunction,
)
from toolproof.spec import (
    JsonObject,
    Step,
    ToolSource,
)

from ._registry import key_blanking, key_with, key_without, witness


@witness("tenantless_key", ("D10.1",), "leaves the tenant out of the key")
class _TenantlessKey(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: key_without("tenant")}


@witness("stepless_key", ("D10.3",), "leaves step_number out of the key")
class _SteplessKey(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: key_without("step_number")}


@witness("versionless_key", ("D10.5",), "leaves tool_version out of the key")
class _VersionlessKey(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: key_without("tool_version")}


@witness("attempt_in_key", ("D10.2",), "mixes attempt_number into the key each execution carries")
class _AttemptInKey(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        key = hashlib.sha256(f"{s.key}/{s.attempt}".encode()).hexdigest()
        return replace(parts, identity=parts.identity.model_copy(update={"idempotency_key": key}))


async def _order_sensitive_key(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.RESOLVE](p, s)
    s.key = hashlib.sha256((s.key + json.dumps(s.call.arguments)).encode()).hexdigest()


@witness("order_sensitive_key", ("D10.4",), "hashes the arguments in the order they arrived")
class _OrderSensitiveKey(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _order_sensitive_key}


async def _top_level_sorted_key(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.RESOLVE](p, s)
    # The mistake: only the top-level members are put in order; a nested object hashes as it arrived.
    top_sorted = json.dumps(dict(sorted(s.call.arguments.items())), separators=(",", ":"))
    s.key = hashlib.sha256((s.key + top_sorted).encode()).hexdigest()


@witness("key_sorts_top_level_only", ("D10.4",), "sorts only the top-level argument members before hashing the key")
class _KeySortsTopLevelOnly(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _top_level_sorted_key}


_resolve = STEP_TABLE[Step.RESOLVE]


_execute = STEP_TABLE[Step.EXECUTE]


def _resolve_joined(separator: str) -> StepFunction:
    """Step 1 whose key hashes its inputs joined by `separator`: nothing marks where one input ends when the
    separator is empty, and an input may itself contain a non-empty one, unescaped."""

    async def resolve(p: PipelineHost, s: CallState) -> None:
        await _resolve(p, s)
        version = s.resolved.spec.version if s.resolved is not None else ""
        request = s.request
        # The defect: the inputs are joined as plain text, no length or escape keeping them apart.
        text = separator.join(
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

    return resolve


@witness("key_inputs_joined_unescaped", ("D10.1",), "joins the key's inputs with '|' though an input may contain it")
class _KeyInputsJoinedUnescaped(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _resolve_joined("|")}


@witness("key_inputs_run_together", ("D10.1",), "hashes the key's inputs concatenated with no boundary between them")
class _KeyInputsRunTogether(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _resolve_joined("")}


def _as_sets(value: Any) -> Any:
    """``value`` with every array, at every depth, sorted: arrays read as sets."""
    if isinstance(value, dict):
        return {name: _as_sets(member) for name, member in value.items()}
    if isinstance(value, list):
        return sorted((_as_sets(item) for item in value), key=lambda item: json.dumps(item, sort_keys=True))
    return value


async def _resolve_arrays_as_sets(p: PipelineHost, s: CallState) -> None:
    await _resolve(p, s)
    arguments: JsonObject = _as_sets(s.call.arguments)  # The defect: element order "is not meaningful".
    s.key = key_with(s, arguments=arguments)


@witness("key_sorts_arrays", ("D10.4",), "sorts the elements of every array before deriving the key")
class _KeySortsArrays(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _resolve_arrays_as_sets}


async def _execute_one_retry_too_many(p: PipelineHost, s: CallState) -> None:
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


async def _resolve_dumped_key(p: PipelineHost, s: CallState) -> None:
    await _resolve(p, s)
    # The defect: the arguments enter the key as json.dumps(sort_keys=True) writes them, so 1 and 1.0 (one JSON
    # number) are two encodings and two keys.
    dumped = json.dumps(s.call.arguments, sort_keys=True, separators=(",", ":"))
    s.key = hashlib.sha256((s.key + dumped).encode()).hexdigest()


@witness("key_hashes_sorted_dumps", ("D10.4",), "hashes the arguments as json.dumps(sort_keys=True) writes them")
class _KeyHashesSortedDumps(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _resolve_dumped_key}


def _transient(p: PipelineHost, s: CallState) -> bool:
    result = p.parse_result(s.raw_result)
    return result is not None and result.failure is not None and result.failure.kind == "TRANSIENT"


async def _execute_retrying_escaped(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.EXECUTE](p, s)
    # The defect: a TRANSIENT failure is retried up to max_attempts whatever the watermark, so a NON_IDEMPOTENT
    # call that marked its effect (and may have left it) runs, and acts, again.
    while _transient(p, s) and s.attempt < p.config.max_attempts:
        await _run_again(p, s)


async def _run_again(p: PipelineHost, s: CallState) -> None:
    """Steps 9 and 10 once more, as the next attempt under the same key."""
    s.attempt += 1
    p.store.update(s.invocation_id, {"attempt": s.attempt})
    s.raw_result, s.error, s.timed_out = None, None, False
    await p.steps[Step.PREPARE](p, s)
    await STEP_TABLE[Step.EXECUTE](p, s)


@witness(
    "transient_retry_ignores_watermark",
    ("D10.2",),
    "retries a TRANSIENT failure up to max_attempts even after a NON_IDEMPOTENT tool marked its effect",
)
class _TransientRetryIgnoresWatermark(Pipeline):
    steps = STEP_TABLE | {Step.EXECUTE: _execute_retrying_escaped}


def _source(s: CallState) -> ToolSource | None:
    return s.resolved.spec.source if s.resolved is not None else None


async def _execute_retrying_marked_sandbox(p: PipelineHost, s: CallState) -> None:
    await _execute(p, s)
    # The defect: a sandbox is discarded after each run, so what it marked is taken to have gone with it, and its
    # TRANSIENT failure is retried up to max_attempts as if nothing had left.
    while _source(s) is ToolSource.SANDBOX and _transient(p, s) and s.attempt < p.config.max_attempts:
        await _run_again(p, s)


@witness(
    "sandbox_marked_transient_retried",
    ("D10.2",),
    "retries a SANDBOX tool's TRANSIENT failure up to max_attempts even after its NON_IDEMPOTENT effect was marked",
)
class _SandboxMarkedTransientRetried(Pipeline):
    steps = STEP_TABLE | {Step.EXECUTE: _execute_retrying_marked_sandbox}


async def _resolve_device_key_unversioned(p: PipelineHost, s: CallState) -> None:
    await _resolve(p, s)
    if _source(s) is ToolSource.DEVICE:
        # The defect: a device tool's version is its firmware's, which the device keeps, so the key leaves it out.
        s.key = key_blanking(s, "tool_version")


@witness("device_key_versionless", ("D10.5",), "leaves tool_version out of a DEVICE tool's key")
class _DeviceKeyVersionless(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _resolve_device_key_unversioned}


def _nfkc(value: Any) -> Any:
    """``value`` with every string in it, member names included, at every depth, in Unicode NFKC."""
    if isinstance(value, str):
        return unicodedata.normalize("NFKC", value)
    if isinstance(value, dict):
        return {_nfkc(name): _nfkc(member) for name, member in value.items()}
    if isinstance(value, list):
        return [_nfkc(item) for item in value]
    return value


async def _resolve_folded_key(p: PipelineHost, s: CallState) -> None:
    await _resolve(p, s)
    # The defect: "\ufb01le" and "file" look alike to a person, so the key is taken over the NFKC-folded arguments and
    # the second is answered as a replay of the first.
    arguments: JsonObject = _nfkc(s.call.arguments)
    s.key = key_with(s, arguments=arguments)


@witness("key_folds_unicode_arguments", ("D10.4",), "derives the key over the arguments' strings folded to NFKC")
class _KeyFoldsUnicodeArguments(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _resolve_folded_key}
