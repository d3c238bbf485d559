"""Witnesses of the second red team's result gaps: the tool's own artifacts beside an excerpt, scopes read as a
hierarchy, another worker's in-progress answer written to the shared row, and the byte limit applied per part."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from hashlib import sha256
from pathlib import Path

import anyio

from toolproof.reference.hooks import STEP_TABLE, CallState, ContextParts, FileArtifactWriter, Pipeline, Resolved
from toolproof.spec import ArtifactRef, InvocationStatus, Outcome, ReasonCode, Step, Success

from ._registry import witness

_excerpt = STEP_TABLE[Step.EXCERPT]
_claim = STEP_TABLE[Step.CLAIM]


async def _excerpt_keeps_only_the_whole(p: Pipeline, s: CallState) -> None:
    before = s.disposition
    await _excerpt(p, s)
    if s.disposition is not before and isinstance(s.disposition, Success):
        # The defect: once excerpted, "the artifact is the output", so the tool's own artifacts are dropped.
        s.disposition = s.disposition.model_copy(update={"artifacts": s.disposition.artifacts[-1:]})


@witness("excerpt_drops_tool_artifacts", ("D1.5",), "an excerpted success carries only the whole output's artifact")
class _ExcerptDropsToolArtifacts(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_keeps_only_the_whole}


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


async def _claim_then_own_the_answer(p: Pipeline, s: CallState) -> None:
    await _claim(p, s)
    if isinstance(s.disposition, Outcome) and s.disposition.reason_code is ReasonCode.IN_PROGRESS:
        s.leave_row = False  # The defect: the in-progress answer is written to the row another worker is running.


@witness(
    "in_progress_written_to_row",
    ("D3.2", "D3.7"),
    "a second submission of a running call completes its row UNAVAILABLE in_progress",
)
class _InProgressWrittenToRow(Pipeline):
    steps = STEP_TABLE | {Step.CLAIM: _claim_then_own_the_answer}


def _utf8_bytes(text: str, chunk: int = 1 << 16) -> int:
    """UTF-8 size of ``text``, a slice at a time, so no part is copied whole to measure it."""
    return sum(len(text[at : at + chunk].encode()) for at in range(0, len(text), chunk))


async def _excerpt_each_part_alone(p: Pipeline, s: CallState) -> None:
    if isinstance(s.disposition, Success):
        limit = p.config.max_output_bytes
        # The defect: the limit is held against each part, so many parts each within it pass whole, together over.
        if max((_utf8_bytes(e.text) for e in s.disposition.content), default=0) <= limit:
            return
    await _excerpt(p, s)


@witness("limit_per_part", ("D12.1", "D12.2"), "compares each content part with the byte limit, not the whole output")
class _LimitPerPart(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_each_part_alone}


class _OverwritingWriter(FileArtifactWriter):
    """Stores each artifact under its name made safe, whatever was stored under that name before."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.folder = directory
        self.stored: list[ArtifactRef] = []

    async def write(self, name: str, data: bytes) -> ArtifactRef:
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "artifact"
        self.folder.mkdir(parents=True, exist_ok=True)
        path = anyio.Path(self.folder / safe)
        await path.write_bytes(data)  # The mistake: a name written before is simply written over.
        ref = ArtifactRef(name=name, uri=(self.folder / safe).as_uri(), size=len(data), sha256=sha256(data).hexdigest())
        self.stored.append(ref)
        return ref

    def written(self) -> list[ArtifactRef]:
        return [*self.stored, *super().written()]


@witness("artifacts_overwrite_by_name", ("D1.5",), "stores a tool's artifacts by name, a later one over an earlier")
class _ArtifactsOverwriteByName(Pipeline):
    def artifact_writer(self, directory: Path) -> FileArtifactWriter:
        return _OverwritingWriter(directory)


async def _claim_own_lease(p: Pipeline, s: CallState) -> None:
    row = p.store.get(s.invocation_id)
    live = (row.lease_expires_at or 0) > p.clock.now()
    if row.status == InvocationStatus.RUNNING.value and live and row.lease_owner == p.worker_id:
        # The mistake: a live lease of its own is taken for a leftover of this worker's, and claimed again.
        p.store.update(s.invocation_id, {"lease_expires_at": 0.0})
    await STEP_TABLE[Step.CLAIM](p, s)


@witness("own_lease_claimed_again", ("D3.2", "D3.7"), "claims again a call running under its own live lease")
class _OwnLeaseClaimedAgain(Pipeline):
    steps = STEP_TABLE | {Step.CLAIM: _claim_own_lease}
