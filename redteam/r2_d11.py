"""Round 2, decision 11 (and 17's hold bound): trust labels and approval holds."""

from __future__ import annotations

from typing import Any

from toolproof.reference.hooks import STEP_TABLE, CallState, Pipeline, ReferenceImplementation
from toolproof.spec import DEFAULT_APPROVAL_TIMEOUT_S, Step, TrustLabel, lowest_trust

from ._common import impl, table

_reference_label = STEP_TABLE[Step.LABEL]
_reference_hold = STEP_TABLE[Step.HOLD]


async def _label_origin_per_run(p: Pipeline, s: CallState) -> None:
    await _reference_label(p, s)
    cache: dict[str, TrustLabel] = p.__dict__.setdefault("_run_origin", {})
    # The mistake: origin_trust is worked out once, from the first request of the run, and reused.
    origin = cache.setdefault(s.request.run_id, lowest_trust(*(item.trust for item in s.request.context)))
    if origin != s.origin_trust:
        from toolproof.reference._logic import argument_trust

        s.origin_trust = origin
        s.argument_trust = argument_trust(s.call, s.request.context, origin)


class _OriginPerRun(Pipeline):
    steps = table(LABEL=_label_origin_per_run)


def origin_cached_per_run() -> ReferenceImplementation:
    """D11 "origin_trust is the minimum trust label over the context items present in the request that produced the
    call": origin_trust is computed from the run's first request and cached for the run, so a later step whose
    request carries an EXTERNAL_UNTRUSTED item keeps the first step's (trusted) origin and its consequential call
    runs without approval."""
    return impl("r2-d11-origin-cached-per-run", _OriginPerRun)


async def _hold_default_bound(p: Pipeline, s: CallState) -> None:
    config: Any = p.config
    # The mistake: the bound is the ADR's default constant, not the configured approval_timeout_s.
    p.config = config.model_copy(update={"approval_timeout_s": DEFAULT_APPROVAL_TIMEOUT_S})
    try:
        await _reference_hold(p, s)
    finally:
        p.config = config


class _DefaultBound(Pipeline):
    steps = table(HOLD=_hold_default_bound)


def hold_bound_ignores_configuration() -> ReferenceImplementation:
    """D17 "Approval holds are bounded (default 300s)" / D11 holds: every hold is bounded by the ADR's default of
    300 s whatever approval_timeout_s the instance is configured with, so with a 10 s bound an approval answered
    after 20 s is honoured and the call executes instead of DENIED approval_expired (and a sweep at 20 s leaves
    the hold open)."""
    return impl("r2-d11-hold-bound-ignores-config", _DefaultBound)
