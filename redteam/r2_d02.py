"""Round 2, decision 2: the execution context."""

from __future__ import annotations

from collections.abc import Mapping

from toolproof.reference.hooks import CallState, ContextParts, Pipeline, ReferenceImplementation, Resolved

from ._common import impl, replace_parts


class _HierarchicalScopes:
    """Resolves a scope when the tool requires it or any scope above it (``repo`` covers ``repo:admin``)."""

    def __init__(self, allowed: frozenset[str], credentials: Mapping[str, str]) -> None:
        self._allowed = allowed
        self._credentials = dict(credentials)

    async def resolve(self, scope: str) -> str | None:
        # The mistake: scopes are read as a hierarchy, so a required "repo" grants "repo:admin" too.
        granted = any(scope == allowed or scope.startswith(allowed + ":") for allowed in self._allowed)
        return self._credentials.get(scope) if granted else None


class _ScopePrefix(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        resolver = _HierarchicalScopes(r.spec.required_scopes, self.config.credentials)
        return replace_parts(parts, credential_resolver=resolver)  # type: ignore[no-any-return]


def scope_prefix_match() -> ReferenceImplementation:
    """D2 "credential resolver" (least privilege by required_scopes): scopes are matched as a hierarchy, so a tool
    requiring "repo" also resolves "repo:admin" (any configured scope below one it requires) instead of nothing."""
    return impl("r2-d02-scope-prefix-match", _ScopePrefix)
