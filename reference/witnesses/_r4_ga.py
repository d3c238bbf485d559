"""Witnesses of the fourth red team's gaps in decision 2: a credential resolver shared by a step's members, one
left unscoped for a call run again from its stored row, a context deadline on the wrong clock, and an artifact
writer whose bookkeeping lets names reduced alike overwrite one another."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import time
from collections.abc import Mapping
from pathlib import Path

import anyio

from toolproof.reference.hooks import (
    CallState,
    ContextParts,
    ExecutionContext,
    FileArtifactWriter,
    Pipeline,
    Resolved,
    ScopedCredentials,
)
from toolproof.spec import ArtifactRef, ToolExecutionContext

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
    scope_pools: dict[tuple[str, str, int], set[str]]
    """The scopes each step's members required so far, by (tenant, run, step)."""

    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        # The defect: "credentials are looked up once per step": the scopes pool in one set per step.
        if not hasattr(self, "scope_pools"):
            self.scope_pools = {}
        pooled = self.scope_pools.setdefault((s.request.tenant, s.request.run_id, s.request.step_number), set())
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


class _ReducedNameBookkeeping(FileArtifactWriter):
    def reduced_path(self, name: str) -> Path:
        """The file for ``name``: reduced to a safe file name, numbered when that reduced name was seen before."""
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "artifact"
        stem, dot, suffix = safe.partition(".")
        candidate, n = safe, 1
        while candidate in self._taken:
            n += 1
            candidate = f"{stem}-{n}{dot}{suffix}"
        # The defect: the writer remembers the reduced name, not the numbered file it chose, and trusts its memory
        # over the directory, so 'a b.txt', 'a?b.txt' (-> a_b-2.txt), then 'a_b-2.txt' overwrite the second file.
        self._taken.add(safe)
        self._directory.mkdir(parents=True, exist_ok=True)
        return self._directory / candidate

    async def write(self, name: str, data: bytes) -> ArtifactRef:
        path = self.reduced_path(name)
        await anyio.Path(path).write_bytes(data)
        ref = ArtifactRef(name=name, uri=path.as_uri(), size=len(data), sha256=hashlib.sha256(data).hexdigest())
        self._record(ref)
        return ref


@witness(
    "artifact_writer_remembers_reduced_names",
    ("D2.8",),
    "the artifact writer numbers a name reduced like an earlier one but remembers only the reduced names, not the "
    "numbered files it chose, so a later name reducing to a numbered file overwrites an earlier artifact",
)
class _ArtifactWriterRemembersReducedNames(Pipeline):
    def artifact_writer(self, directory: Path) -> FileArtifactWriter:
        return _ReducedNameBookkeeping(directory)
