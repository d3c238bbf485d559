"""Decision 2: the ToolExecutionContext."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolproof.reference.hooks import (
    CallState,
    ContextParts,
    ExecutionContext,
    Pipeline,
    ReferenceImplementation,
    Resolved,
    ScopedCredentials,
)
from toolproof.spec import ToolExecutionContext

from ._common import impl, make_execute, replace_parts, table


class _AllCreds(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        everything = frozenset(self.config.credentials)  # the run's credentials, not the tool's scopes
        return replace_parts(parts, credential_resolver=ScopedCredentials(everything, self.config.credentials))


def credentials_not_scoped() -> ReferenceImplementation:
    """D2 "credential resolver": the resolver is built over every credential configured for the run instead of the
    tool's required_scopes, so a tool can resolve a scope it never declared."""
    return impl("d02-credentials-not-scoped", _AllCreds)


class _ZeroBasedAttempt(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        identity = parts.identity.model_copy(update={"attempt": max(0, s.attempt - 1)})  # zero-based for tools
        return replace_parts(parts, identity=identity)


def identity_attempt_zero_based() -> ReferenceImplementation:
    """D2 "identity": the identity hands the tool a zero-based attempt while the row records a one-based one, so
    identity no longer matches the recorded row (first attempt reads 0, row reads 1)."""
    return impl("d02-identity-attempt-zero-based", _ZeroBasedAttempt)


class _NoSignal(Pipeline):
    steps = table(EXECUTE=make_execute(set_signal=False))


def deadline_without_signal() -> ReferenceImplementation:
    """D2 "cancellation": at the deadline the pipeline cancels the tool's task but never sets the context's
    cancellation signal, so a tool polling ``cancellation.is_set()`` (or shielding) never learns of it."""
    return impl("d02-deadline-without-signal", _NoSignal)


class _RunIdContext(ExecutionContext):
    __slots__ = ()

    @property
    def run_id(self) -> str:
        """Convenience: the run id (also in identity)."""
        return self._parts.identity.run_id


class _TenthMember(Pipeline):
    def context_for(self, parts: ContextParts) -> ToolExecutionContext:
        return _RunIdContext(parts)


def context_tenth_member() -> ReferenceImplementation:
    """D2 "It receives identity, budget, ...": a harmless-looking convenience member ``run_id`` is added to the
    context, so it exposes ten public members instead of exactly nine."""
    return impl("d02-context-tenth-member", _TenthMember)


class _AuditedCredentials(ScopedCredentials):
    def __init__(self, allowed: frozenset[str], credentials: Any, audit: Any) -> None:
        super().__init__(allowed, credentials)
        self.audit = audit  # the pipeline, to log credential use


class _ResolverReachesPipeline(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        resolver = _AuditedCredentials(r.spec.required_scopes, self.config.credentials, self)
        return replace_parts(parts, credential_resolver=resolver)


def resolver_reaches_pipeline() -> ReferenceImplementation:
    """D2 "no database session, no repository, no policy engine, and no registry": the credential resolver keeps a
    public ``audit`` reference to the pipeline (to log credential use), so a tool reaches the store, registry and
    pipeline through context.credential_resolver.audit."""
    return impl("d02-resolver-reaches-pipeline", _ResolverReachesPipeline)


_ = Path
