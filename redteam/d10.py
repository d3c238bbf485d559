"""Decision 10: the idempotency key."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from toolproof.reference.hooks import STEP_TABLE, CallState, Pipeline, ReferenceImplementation
from toolproof.spec import Step

from ._common import impl, make_execute, table

_reference_resolve = STEP_TABLE[Step.RESOLVE]

KeyMaterial = Callable[[CallState], Any]


def _resolve_with(material: KeyMaterial, *, dumps: Callable[[Any], str] | None = None) -> Any:
    dump = dumps or (lambda v: json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False))

    async def resolve(p: Pipeline, s: CallState) -> None:
        await _reference_resolve(p, s)
        s.key = hashlib.sha256(dump(material(s)).encode()).hexdigest()

    return resolve


def _version(s: CallState) -> str:
    return s.resolved.spec.version if s.resolved else ""


def _full(s: CallState) -> list[Any]:
    r = s.request
    return ["k/1", r.tenant, r.run_id, r.step_number, s.call.call_id, s.call.tool_name, _version(s), s.call.arguments]


class _Unsorted(Pipeline):
    steps = table(RESOLVE=_resolve_with(_full, dumps=lambda v: json.dumps(v, separators=(",", ":"))))


def key_arguments_not_canonical() -> ReferenceImplementation:
    """D10 "canonical arguments": the key hashes json.dumps of the arguments in their proposed member order
    (no sort_keys), so {"a":1,"b":2} and {"b":2,"a":1} get different keys."""
    return impl("d10-key-arguments-not-canonical", _Unsorted)


def _top_sorted(v: Any) -> str:
    head, arguments = v[:-1], v[-1]
    return json.dumps([*head, dict(sorted(arguments.items()))], separators=(",", ":"))


class _TopSorted(Pipeline):
    steps = table(RESOLVE=_resolve_with(_full, dumps=_top_sorted))


def key_sorts_top_level_only() -> ReferenceImplementation:
    """D10 "canonical arguments": only the top-level members are sorted before hashing; nested objects keep their
    proposed order, so {"q":{"a":1,"b":2}} and {"q":{"b":2,"a":1}} get different keys."""
    return impl("d10-key-sorts-top-level-only", _TopSorted)


class _NoCallId(Pipeline):
    steps = table(
        RESOLVE=_resolve_with(
            lambda s: [
                "k/1",
                s.request.tenant,
                s.request.run_id,
                s.request.step_number,
                s.call.tool_name,
                _version(s),
                s.call.arguments,
            ]
        )
    )


def key_without_call_id() -> ReferenceImplementation:
    """D10/D15 "distinguished inside the key by call_id": the key is Section 8.4's five inputs plus version only,
    so two identical calls in one batch share a key and the second is answered as a replay of the first."""
    return impl("d10-key-without-call-id", _NoCallId)


class _NoVersion(Pipeline):
    steps = table(
        RESOLVE=_resolve_with(
            lambda s: [
                "k/1",
                s.request.tenant,
                s.request.run_id,
                s.request.step_number,
                s.call.call_id,
                s.call.tool_name,
                s.call.arguments,
            ]
        )
    )


def key_without_tool_version() -> ReferenceImplementation:
    """D10 "adds a version tag and tool_version": tool_version is left out of the key, so the same call against a
    new tool version replays the old version's recorded outcome."""
    return impl("d10-key-without-tool-version", _NoVersion)


class _NoStep(Pipeline):
    steps = table(
        RESOLVE=_resolve_with(
            lambda s: [
                "k/1",
                s.request.tenant,
                s.request.run_id,
                s.call.call_id,
                s.call.tool_name,
                _version(s),
                s.call.arguments,
            ]
        )
    )


def key_without_step_number() -> ReferenceImplementation:
    """D10 "step_number is included, so a legitimate repeat in a later step executes": step_number is left out,
    so the same call_id/tool/arguments in a later step is answered from the earlier step's row."""
    return impl("d10-key-without-step-number", _NoStep)


class _NoTenant(Pipeline):
    steps = table(
        RESOLVE=_resolve_with(
            lambda s: [
                "k/1",
                s.request.run_id,
                s.request.step_number,
                s.call.call_id,
                s.call.tool_name,
                _version(s),
                s.call.arguments,
            ]
        )
    )


def key_without_tenant() -> ReferenceImplementation:
    """D10 (8.4's inputs include the tenant): the tenant is left out ("run ids are unique anyway"), so two tenants
    whose runs share a run_id collide: the second tenant's call is answered with the first tenant's outcome."""
    return impl("d10-key-without-tenant", _NoTenant)


class _RekeyRetry(Pipeline):
    steps = table(EXECUTE=make_execute(rekey_retry=True))


def retry_gets_new_key() -> ReferenceImplementation:
    """D10 "deliberately excludes attempt_number, so a bounded retry reuses the key": each in-step retry of a
    TRANSIENT failure is given a key derived with its attempt number."""
    return impl("d10-retry-gets-new-key", _RekeyRetry)
