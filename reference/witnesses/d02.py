"""Witnesses of decision 2: ToolExecutionContext: nine members, no way back into the pipeline.

Each is the reference with one deliberate defect, named for it; ``breaks`` names the rules it breaks."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import anyio

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    CancellationSignal,
    ContextParts,
    ExecutionContext,
    FileArtifactWriter,
    Pipeline,
    PipelineHost,
    Prepared,
    Resolved,
    ScopedCredentials,
)
from toolproof.spec import (
    ArtifactRef,
    SideEffect,
    Step,
    ToolExecutionContext,
    ToolKind,
    ToolSource,
)

from ._registry import witness


class _LeakyContext(ExecutionContext):
    __slots__ = ("registry",)

    def __init__(self, parts: ContextParts, registry: object) -> None:
        super().__init__(parts)
        self.registry = registry


@witness("leaky_context", ("D2.1", "D2.2"), "adds a tenth member: the registry")
class _LeakyContextPipeline(Pipeline):
    def context_for(self, parts: ContextParts) -> ToolExecutionContext:
        return _LeakyContext(parts, self.registry)


class _StoreReachingWriter(FileArtifactWriter):
    def __init__(self, directory: Path, store: object) -> None:
        super().__init__(directory)
        self.store = store


@witness("store_reaching_artifacts", ("D2.2",), "the artifact writer exposes the store")
class _StoreReachingArtifacts(Pipeline):
    def artifact_writer(self, directory: Path) -> FileArtifactWriter:
        return _StoreReachingWriter(directory, self.store)


@witness("stale_identity", ("D2.3",), "hands the tool attempt 0 whatever the attempt")
class _StaleIdentity(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        return replace(parts, identity=parts.identity.model_copy(update={"attempt": 0}))


class _DeafSignal(CancellationSignal):
    def set(self) -> None:
        pass  # The tool watches a signal that never fires.

    def follow(self, scope: anyio.CancelScope) -> None:
        pass  # Nor when the deadline scope fires.


async def _deadline_as_crash(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.EXECUTE](p, s)
    if s.timed_out:
        s.timed_out, s.error = False, TimeoutError("deadline")


@witness("deadline_as_crash", ("D2.4",), "cancels at the deadline without setting the signal and calls it a crash")
class _DeadlineAsCrash(Pipeline):
    steps = STEP_TABLE | {Step.EXECUTE: _deadline_as_crash}

    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        return replace(super().context_parts(s, r), cancellation=_DeafSignal())


@witness("all_credentials", ("D2.5",), "resolves every configured scope for every tool")
class _AllCredentials(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        every = ScopedCredentials(frozenset(self.config.credentials), self.config.credentials)
        return replace(super().context_parts(s, r), credential_resolver=every)


@witness("wrong_workspace", ("D2.6",), "hands tools the store directory as their workspace")
class _WrongWorkspace(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        return replace(super().context_parts(s, r), workspace=Path(self.config.store_dir))


class _MisdigestingWriter(FileArtifactWriter):
    async def write(self, name: str, data: bytes) -> ArtifactRef:
        ref = await super().write(name, data)
        return ref.model_copy(update={"sha256": hashlib.sha256(name.encode()).hexdigest()})


@witness("misdigests_artifacts", ("D2.8",), "reports the digest of an artifact's name instead of its bytes")
class _MisdigestsArtifacts(Pipeline):
    def artifact_writer(self, directory: Path) -> FileArtifactWriter:
        return _MisdigestingWriter(directory)


class _AuditedCredentials(ScopedCredentials):
    def __init__(self, allowed: frozenset[str], credentials: Mapping[str, str], audit: Pipeline) -> None:
        super().__init__(allowed, credentials)
        self.audit = audit  # The defect: the pipeline, "to log credential use", three hops from its store.


@witness("resolver_reaches_pipeline", ("D2.2",), "the credential resolver keeps the pipeline as a public attribute")
class _ResolverReachesPipeline(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        resolver = _AuditedCredentials(r.spec.required_scopes, self.config.credentials, self)
        return dataclasses.replace(parts, credential_resolver=resolver)


class _HierarchicalScopes:
    """A resolver that reads ``repo`` as covering ``repo:admin``, ``repo:read:all`` and every scope below it."""

    def __init__(self, required: frozenset[str], credentials: Mapping[str, str]) -> None:
        self.required = required
        self.credentials = dict(credentials)

    async def resolve(self, scope: str) -> str | None:
        # The defect: a required scope grants every scope beneath it, as if scopes were a path.
        granted = any(scope == r or scope.startswith(f"{r}:") for r in self.required)
        return self.credentials.get(scope) if granted else None


@witness("scope_hierarchy_grants_children", ("D2.5",), "a required scope resolves every configured scope below it")
class _ScopeHierarchyGrantsChildren(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        resolver = _HierarchicalScopes(r.spec.required_scopes, self.config.credentials)
        return dataclasses.replace(parts, credential_resolver=resolver)


_prepare = STEP_TABLE[Step.PREPARE]


GRACE_S = 1.0
GRACE_S = 1.0
"""How long past its deadline the grace witness lets a tool run."""


async def _prepare_once(p: PipelineHost, s: CallState) -> None:
    if s.prepared is None:
        await _prepare(p, s)


@witness(
    "retry_reuses_first_context",
    ("D2.3", "D2.4", "D10.2"),
    "a TRANSIENT retry runs with the first attempt's context: attempt 1 in its identity, the first deadline",
)
class _RetryReusesFirstContext(Pipeline):
    steps = STEP_TABLE | {Step.PREPARE: _prepare_once}


async def _prepare_with_grace(p: PipelineHost, s: CallState) -> None:
    await _prepare(p, s)
    assert s.prepared is not None
    # The defect: the tool is told its deadline, but the watchdog waits a grace period past it.
    late = dataclasses.replace(s.prepared.parts, deadline=s.prepared.parts.deadline + GRACE_S)
    s.prepared = Prepared(parts=late, context=s.prepared.context)


@witness("deadline_with_grace", ("D2.4",), "a tool is cut off only a second past its deadline, so a late return counts")
class _DeadlineWithGrace(Pipeline):
    steps = STEP_TABLE | {Step.PREPARE: _prepare_with_grace}


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


class _DiskNumberedWriter(FileArtifactWriter):
    async def write(self, name: str, data: bytes) -> ArtifactRef:
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "artifact"
        stem, dot, suffix = safe.partition(".")
        candidate, n = safe, 1
        # The defect: a file name counts as taken only once its file is on disk, and the file is made after an await
        # (the directory is made first), so writes started together all choose the same free name.
        while (self._directory / candidate).exists():
            n += 1
            candidate = f"{stem}-{n}{dot}{suffix}"
        await anyio.Path(self._directory).mkdir(parents=True, exist_ok=True)
        path = self._directory / candidate
        await anyio.Path(path).write_bytes(data)
        ref = ArtifactRef(name=name, uri=path.as_uri(), size=len(data), sha256=hashlib.sha256(data).hexdigest())
        self._record(ref)
        return ref


@witness(
    "artifact_names_taken_by_disk_only",
    ("D2.8",),
    "the artifact writer numbers a name only when its file is already on disk, so writes of one name started at "
    "once share a file and all but the last reference describe bytes that are no longer there",
)
class _ArtifactNamesTakenByDiskOnly(Pipeline):
    def artifact_writer(self, directory: Path) -> FileArtifactWriter:
        return _DiskNumberedWriter(directory)


class _ContextWithAHandle(ExecutionContext):
    """The nine members, and in a private slot the pipeline's own entry for running a call."""

    __slots__ = ("_next",)

    def __init__(self, parts: ContextParts, next_call: object) -> None:
        super().__init__(parts)
        self._next = next_call  # The defect: "private", so a tool "will not use it"; a bound method holds its pipeline.


@witness(
    "context_keeps_run_call", ("D2.2",), "keeps the pipeline's run_call, a bound method, in a private context slot"
)
class _ContextKeepsRunCall(Pipeline):
    def context_for(self, parts: ContextParts) -> ToolExecutionContext:
        return _ContextWithAHandle(parts, self.run_call)


async def _default_tenant(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.RESOLVE](p, s)
    # The defect: past the key, the call is filed under the default tenant: its row and its context's identity agree
    # with each other, and neither with the request.
    s.request = s.request.model_copy(update={"tenant": "default"})


@witness("identity_in_default_tenant", ("D2.3",), "files the row and the context's identity under a default tenant")
class _IdentityInDefaultTenant(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _default_tenant}


@witness(
    "staging_workspace_for_writes",
    ("D2.6",),
    "hands a WORKSPACE_WRITE tool a staging folder inside the configured workspace instead of the workspace",
)
class _StagingWorkspaceForWrites(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        if r.spec.side_effect is not SideEffect.WORKSPACE_WRITE:
            return parts
        # The defect: writes land in a staging copy first, so the tool never sees the configured workspace.
        staging = parts.workspace / ".staging"
        staging.mkdir(parents=True, exist_ok=True)
        return replace(parts, workspace=staging)


@witness(
    "control_tools_run_without_deadline",
    ("D2.4",),
    "gives a control tool's execution no deadline, so a resumed control tool is never cut off",
)
class _ControlToolsRunWithoutDeadline(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        if r.spec.kind is not ToolKind.CONTROL:
            return parts
        # The defect: a control tool "waits on a person", so its execution is given all the time in the world.
        return replace(parts, deadline=float("inf"))


class _SetOnceFollowing(CancellationSignal):
    following = False

    def follow(self, scope: anyio.CancelScope) -> None:
        super().follow(scope)
        self.following = True

    def is_set(self) -> bool:
        # The defect: "it follows a deadline" is read as "it was cancelled"; the clock is never compared.
        return super().is_set() or self.following


@witness(
    "cancellation_set_while_following",
    ("D2.4",),
    "the cancellation signal reads set from the moment it follows the call's deadline, long before that deadline",
)
class _CancellationSetWhileFollowing(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        return replace(super().context_parts(s, r), cancellation=_SetOnceFollowing())


_UNCUT_S = 10 * 365 * 86_400.0
"""How much later than its deadline step 10 cuts a DEVICE tool off under ``device_deadline_told_not_enforced``: ten
years, far past any deadline_s a scenario gives, so the pushed deadline is told from a real one."""


@witness(
    "device_deadline_told_not_enforced",
    ("D2.4",),
    'tells a DEVICE tool its deadline but does not cut it off there ("the device channel enforces its own")',
)
class _DeviceDeadlineToldNotEnforced(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        if r.spec.source is ToolSource.DEVICE:
            return replace(parts, deadline=parts.deadline + _UNCUT_S)  # Step 10 cuts off at the parts' deadline.
        return parts

    def context_for(self, parts: ContextParts) -> ToolExecutionContext:
        if parts.deadline - time.time() > _UNCUT_S / 2:
            parts = replace(parts, deadline=parts.deadline - _UNCUT_S)  # The tool itself is told the true one.
        return super().context_for(parts)


@witness(
    "batch_shares_longest_deadline",
    ("D2.4",),
    "gives every member of a batch the longest deadline_s among the batch's tools",
)
class _BatchSharesLongestDeadline(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        found = [self.lookup(s.request.run_id, call.tool_name) for call in s.request.calls]
        longest = max((f[0].deadline_s for f in found if f is not None), default=r.spec.deadline_s)
        # The defect: a batch is one step, so it is given one deadline, the longest its members need, and a member
        # that should have been cut off at its own runs on beside the slowest.
        return replace(parts, deadline=time.time() + max(longest, r.spec.deadline_s))
