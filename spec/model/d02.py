"""Decision 2: what the ToolExecutionContext hands a tool, on every execution of every path.

The identity (D2.3) is the request's, compared by the judge; D2.2's "no way back into the pipeline" is a walk over
the objects the context reaches, done by the judge (it needs the instance under test), so this page states the rest.
"""

from __future__ import annotations

from toolproof.spec import CONTEXT_MEMBERS, ToolSpec

PROBED_SCOPES = ("scope.read", "scope.write", "scope.read:admin", "scope")
"""Every scope a scripted tool asks its resolver for: the catalog's, one below a catalog scope and one above it."""


def members() -> list[str]:
    """D2.1: exactly the nine public members, whatever the tool and the path."""
    return sorted(CONTEXT_MEMBERS)


def credentials(spec: ToolSpec, configured: tuple[str, ...]) -> dict[str, str | None]:
    """D2.5: a probed scope resolves exactly when the tool requires it (a whole string, no hierarchy) and the instance
    has a credential for it (``credential-<scope>``, the judge's configuration); any other resolves to nothing."""
    return {
        scope: f"credential-{scope}" if scope in spec.required_scopes and scope in configured else None
        for scope in PROBED_SCOPES
    }
