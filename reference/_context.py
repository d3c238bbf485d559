"""The reference ToolExecutionContext: nine members and no way back into the pipeline (decision 2)."""

from __future__ import annotations

import hashlib
import math
import re
import uuid
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio

from toolproof.spec import ArtifactRef, Budget, ContextBase, CredentialResolver, Identity


class FileArtifactWriter:
    """Writes artifacts as files under one invocation's directory."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._written: list[ArtifactRef] = []
        self._taken: set[str] = set()

    def _free_path(self, name: str) -> Path:
        """A file of its own for ``name``: reduced to a safe file name, numbered when that file is already taken (a
        name written twice, two names reduced alike, or the pipeline's own artifact), so no artifact overwrites
        another's bytes after its reference was made."""
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "artifact"
        stem, dot, suffix = safe.partition(".")
        candidate, n = safe, 1
        while candidate.casefold() in self._taken or (self._directory / candidate).exists():
            n += 1
            candidate = f"{stem}-{n}{dot}{suffix}"
        self._taken.add(candidate.casefold())
        self._directory.mkdir(parents=True, exist_ok=True)
        return self._directory / candidate

    async def write(self, name: str, data: bytes) -> ArtifactRef:
        """Store ``data`` as ``name`` in a file of its own (see ``_free_path``)."""
        path = self._free_path(name)
        await anyio.Path(path).write_bytes(data)
        ref = ArtifactRef(name=name, uri=path.as_uri(), size=len(data), sha256=hashlib.sha256(data).hexdigest())
        self._written.append(ref)
        return ref

    def stream(self, name: str) -> ArtifactStream:
        """A file artifact written chunk by chunk (for output too large to hold), hashed as it goes."""
        return ArtifactStream(self, name, self._free_path(name))

    def _record(self, ref: ArtifactRef) -> None:
        self._written.append(ref)

    def written(self) -> list[ArtifactRef]:
        """Artifacts written so far (read by the pipeline, not by tools)."""
        return list(self._written)


class ArtifactStream:
    """An artifact being written; ``finish`` closes it and returns its reference."""

    def __init__(self, writer: FileArtifactWriter, name: str, path: Path) -> None:
        self._writer, self._name, self._path = writer, name, path
        self._file = path.open("wb")
        self._digest = hashlib.sha256()
        self._size = 0

    def write(self, data: bytes) -> None:
        """Append ``data``."""
        self._file.write(data)
        self._digest.update(data)
        self._size += len(data)

    def finish(self) -> ArtifactRef:
        """Close the file and record the artifact."""
        self._file.close()
        ref = ArtifactRef(name=self._name, uri=self._path.as_uri(), size=self._size, sha256=self._digest.hexdigest())
        self._writer._record(ref)
        return ref

    def discard(self) -> None:
        """Close and delete the file: the output fitted, no artifact is needed."""
        self._file.close()
        self._path.unlink(missing_ok=True)


class ScopedCredentials:
    """Resolves only the scopes the tool's spec requires."""

    def __init__(self, allowed: frozenset[str], credentials: Mapping[str, str]) -> None:
        self._allowed = allowed
        self._credentials = dict(credentials)

    async def resolve(self, scope: str) -> str | None:
        """The credential for ``scope`` when the tool requires it."""
        return self._credentials.get(scope) if scope in self._allowed else None


class CancellationSignal:
    """Set by the pipeline when the invocation is cancelled (e.g. at its deadline).

    The pipeline runs the tool in a cancel scope with the call's deadline and has the signal ``follow`` it:
    the signal reads set from the moment that deadline fires, before the tool sees the cancellation (no
    watchdog task is needed to set it first).
    """

    def __init__(self) -> None:
        self._event = anyio.Event()
        # What the signal keeps of the deadline scope: only when it fires (a number), so neither the scope nor the
        # event loop behind its timer is within the tool's reach, not even through a closure (D2.2).
        self._deadline = math.inf

    def follow(self, scope: anyio.CancelScope) -> None:
        """Read set once ``scope``'s deadline (the call's) has passed (pipeline only)."""
        self._deadline = scope.deadline

    def is_set(self) -> bool:
        """Whether cancellation was requested."""
        return self._event.is_set() or _past(self._deadline)

    async def wait(self) -> None:
        """Return once cancellation is requested (also inside a shielded scope: the deadline still ends it)."""
        with anyio.CancelScope(deadline=self._deadline):
            await self._event.wait()

    def set(self) -> None:
        """Request cancellation (pipeline only)."""
        self._event.set()


def _past(deadline: float) -> bool:
    """Whether the clock the deadline scope runs on has reached ``deadline`` (False outside an event loop)."""
    if deadline == math.inf:
        return False
    try:
        return anyio.current_time() >= deadline
    except RuntimeError:  # Asked from outside the event loop: only an explicit set() counts there.
        return False


class MarksEffects(Protocol):
    """What an ``EffectMark`` writes through: the pipeline's ``mark_effect``."""

    def mark_effect(self, state: Any, /) -> Awaitable[None]:
        """Commit the watermark of ``state``'s invocation."""
        ...


_OPEN_MARKS: dict[str, tuple[weakref.ref[Any], weakref.ref[Any]]] = {}
"""Token -> (pipeline, call state), both held weakly; an entry goes with its call's state."""


class EffectMark:
    """What a context's ``mark_effect_sent`` awaits: an opaque token, not a reference to the pipeline or its store.

    The context must not carry the pipeline, even inside a closure or a bound method (D2.2), yet the watermark has to
    be written through it. So the context holds a token, and this module's table (not the context) maps it to the
    pipeline and the call, each weakly, for as long as the call's state lives.
    """

    __slots__ = ("token",)

    def __init__(self, pipeline: MarksEffects, state: object) -> None:
        self.token = uuid.uuid4().hex
        _OPEN_MARKS[self.token] = (weakref.ref(pipeline), weakref.ref(state))
        weakref.finalize(state, _OPEN_MARKS.pop, self.token, None)

    async def __call__(self) -> None:
        """Commit the watermark of the call this token was made for."""
        refs = _OPEN_MARKS.get(self.token)
        pipeline, state = (refs[0](), refs[1]()) if refs is not None else (None, None)
        if pipeline is None or state is None:
            raise RuntimeError("mark_effect_sent() was called after its invocation ended; call it before the effect")
        await pipeline.mark_effect(state)


@dataclass(frozen=True)
class ContextParts:
    """What step 9 builds a context from; the pipeline keeps a hand on the writer and the signal.

    A witness plants a defect in the context by replacing a part (``dataclasses.replace``) in
    ``Pipeline.context_parts``, or by returning another context from ``Pipeline.context_for``.
    """

    identity: Identity
    """Who and what this execution is."""
    budget: Budget
    """What the call may spend."""
    deadline: float
    """Absolute ``time.time()`` by which the tool must return."""
    target: str | None
    """The configured target, if any."""
    workspace: Path
    """The run's workspace."""
    artifact_writer: FileArtifactWriter
    """Stores blobs (step 12 streams an excerpted output through it too)."""
    credential_resolver: CredentialResolver
    """Resolves credentials of required scopes."""
    cancellation: CancellationSignal
    """Set by the pipeline at the deadline."""
    mark: Callable[[], Awaitable[None]]
    """Commits the watermark: what ``mark_effect_sent`` awaits."""


class ExecutionContext(ContextBase):
    """The nine members over one ``ContextParts``; the parts stay private, so a tool sees nothing else."""

    __slots__ = ("_mark",)

    def __init__(self, parts: ContextParts) -> None:
        super().__init__(
            identity=parts.identity,
            budget=parts.budget,
            deadline=parts.deadline,
            target=parts.target,
            workspace=parts.workspace,
            artifact_writer=parts.artifact_writer,
            credential_resolver=parts.credential_resolver,
            cancellation=parts.cancellation,
        )
        self._mark = parts.mark

    async def mark_effect_sent(self) -> None:
        """Commit effect_sent_at; returns after the commit."""
        await self._mark()
