"""Round 4, decision 2: the ToolExecutionContext (identity, budget, deadline, target, workspace, artifact writer,
credential resolver, cancellation, mark_effect_sent), each pipeline one realistic mistake in how a member is built.
"""

from __future__ import annotations

import re
from pathlib import Path

from toolproof.reference.hooks import (
    CallState,
    ContextParts,
    Decision,
    ExecutionContext,
    FileArtifactWriter,
    Pipeline,
    ReferenceImplementation,
    Resolved,
    ScopedCredentials,
)
from toolproof.spec import ToolExecutionContext

from ._common import impl, replace_parts


class _BatchScopedCredentials(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        # The mistake: "resolve credentials once per step": the resolver is scoped to every scope any member of
        # the batch requires, so a tool can read its batch-mate's credential.
        scopes: set[str] = set()
        for call in s.request.calls:
            found = self.lookup(s.request.run_id, call.tool_name)
            if found is not None:
                scopes |= found[0].required_scopes
        return replace_parts(parts, credential_resolver=ScopedCredentials(frozenset(scopes), self.config.credentials))


def credentials_scoped_per_batch() -> ReferenceImplementation:
    """D2 (credential resolver; D2.5 least privilege): the resolver is built once per step from the union of the
    required scopes of every call in the batch, so in a batch [t.a requires 'a', t.b requires 'b'] t.a resolves
    'b' (its batch-mate's credential)."""
    return impl("r4-credentials-scoped-per-batch", _BatchScopedCredentials)


class _RelativeDeadline(Pipeline):
    def context_for(self, parts: ContextParts) -> ToolExecutionContext:
        # The mistake: the context's deadline member is the seconds the tool has left (a duration), not the
        # absolute time.time() instant the pipeline enforces; the pipeline's own watchdog is unchanged.
        from toolproof.reference._execute import wall_clock

        return ExecutionContext(replace_parts(parts, deadline=max(0.0, parts.deadline - wall_clock())))


def deadline_member_relative() -> ReferenceImplementation:
    """D2 (deadline member; D2.4 'a context's deadline is deadline_s after that context is built'): the context's
    deadline is handed to the tool as a duration (seconds left, e.g. 30.0) instead of the absolute wall-clock
    instant the pipeline enforces; a tool that budgets its work by context.deadline thinks it is long past."""
    return impl("r4-deadline-member-relative", _RelativeDeadline)


class _RawNameArtifactWriter(FileArtifactWriter):
    def _free_path(self, name: str) -> Path:
        # The mistake: uniqueness is checked on the name the tool gave, not on the file name it is reduced to, so
        # two different names that reduce alike ('a b.txt', 'a?b.txt') share one file and the second overwrites
        # the first after the first's reference (size, sha256) was handed out.
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "artifact"
        stem, dot, suffix = safe.partition(".")
        candidate, n = safe, 1
        while name in self._taken and (self._directory / candidate).exists():
            n += 1
            candidate = f"{stem}-{n}{dot}{suffix}"
        self._taken.add(name)
        self._directory.mkdir(parents=True, exist_ok=True)
        return self._directory / candidate


class _RawNameArtifacts(Pipeline):
    def artifact_writer(self, directory: Path) -> FileArtifactWriter:
        return _RawNameArtifactWriter(directory)


def artifact_names_reduced_alike_overwrite() -> ReferenceImplementation:
    """D2 (artifact writer; D2.8 size and digest of the bytes written): the writer de-duplicates files by the
    artifact name the tool gave rather than by the file name it is reduced to, so artifacts 'a b.txt' then
    'a?b.txt' in one execution land in the same file and the first reference's sha256 and size no longer describe
    the bytes at its URI."""
    return impl("r4-artifact-names-reduced-alike-overwrite", _RawNameArtifacts)


class _ApprovedUnscoped(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        if s.decision is Decision.APPROVAL:
            # The mistake: "a person approved this call", so its resolver hands out any configured credential.
            everything = frozenset(self.config.credentials)
            return replace_parts(parts, credential_resolver=ScopedCredentials(everything, self.config.credentials))
        return parts


def approved_call_resolver_unscoped() -> ReferenceImplementation:
    """D2 (credential resolver; D2.5): only on the approval path (a call held, then approved) the resolver is built
    from every configured credential instead of the tool's required scopes; an allowed call is scoped correctly.
    A consequential tool requiring 'repo', called from an untrusted context, approved, resolves 'admin'."""
    return impl("r4-approved-call-resolver-unscoped", _ApprovedUnscoped)
