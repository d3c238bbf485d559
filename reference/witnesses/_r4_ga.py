"""Witnesses of the fourth red team's gaps in the credential resolver: a resolver shared by a step's members, and
one left unscoped for a call run again from its stored row; and a context deadline on the wrong clock."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping

from toolproof.reference.hooks import (
    CallState,
    ContextParts,
    ExecutionContext,
    Pipeline,
    Resolved,
    ScopedCredentials,
)
from toolproof.spec import ToolExecutionContext

from ._registry import witness


class _GrowingScopes(ScopedCredentials):
    """Scoped to a set the step keeps adding to, read at resolve time."""

    def __init__(self, pooled: set[str], credentials: Mapping[str, str]) -> None:
        super().__init__(frozenset(), credentials)
        self._pooled = pooled

    async def resolve(self, scope: str) -> str | None:
        return self._credentials.get(scope) if scope in self._pooled else None


@witness(
    "step_resolver_shared_by_members",
    ("D2.5",),
    "one credential resolver per model step, each member adding its tool's scopes to it, so a batch member resolves "
    "the scopes its batch-mates require",
)
class _StepResolverShared(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        # The defect: "credentials are looked up once per step": the scopes pool in one set per step.
        pools: dict[tuple[str, str, int], set[str]] = self.__dict__.setdefault("_scope_pools", {})
        pooled = pools.setdefault((s.request.tenant, s.request.run_id, s.request.step_number), set())
        pooled |= r.spec.required_scopes
        return dataclasses.replace(parts, credential_resolver=_GrowingScopes(pooled, self.config.credentials))


@witness(
    "stored_row_resolver_unscoped",
    ("D2.5",),
    "a call run from its stored row (an approved hold, a resumed control call) gets a resolver over every "
    "configured credential; a call allowed outright is scoped to its required scopes",
)
class _StoredRowResolverUnscoped(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        if s.existing is not None:
            # The defect: "the row was already checked when it was recorded", so its resolver is not narrowed.
            everything = frozenset(self.config.credentials)
            return dataclasses.replace(
                parts, credential_resolver=ScopedCredentials(everything, self.config.credentials)
            )
        return parts


@witness(
    "deadline_on_monotonic_clock",
    ("D2.4",),
    "the context's deadline is handed to the tool on time.monotonic() (seconds since boot) rather than time.time(); "
    "the pipeline's own watchdog still enforces the wall-clock deadline",
)
class _DeadlineOnMonotonicClock(Pipeline):
    def context_for(self, parts: ContextParts) -> ToolExecutionContext:
        # The defect: the deadline the tool reads is converted to the monotonic clock, a different epoch.
        shifted = parts.deadline - time.time() + time.monotonic()
        return ExecutionContext(dataclasses.replace(parts, deadline=shifted))
