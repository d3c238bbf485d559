"""What a tool receives: the nine members of decision 2, and no way back into the pipeline.

Nothing here holds the store, the registry or the instance, not even inside a closure: the one private
member, ``Context._mark``, is a token that this module's table maps to the watermark's commit.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from toolproof.spec import ArtifactRef, Budget, Identity


class Cancellation:
    """Read-only view of the pipeline's cancellation event: the tool can watch it, never set it."""

    def __init__(self, event: anyio.Event) -> None:
        self._event = event

    def is_set(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        await self._event.wait()


class ArtifactWriter:
    """Writes an invocation's blobs into its own folder under the store directory."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._count = 0

    async def write(self, name: str, data: bytes) -> ArtifactRef:
        # Never outside the invocation's folder, and a file of its own: a name written twice keeps both.
        self._count += 1
        path = self._directory / f"{self._count}-{Path(name).name}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return ArtifactRef(name=name, uri=path.as_uri(), size=len(data), sha256=hashlib.sha256(data).hexdigest())


_OPEN_MARKS: dict[str, Callable[[], None]] = {}
"""Token -> the callable that commits that call's watermark, for as long as the call's attempt runs."""


class MarkToken:
    """What the context holds instead of a closure over the pipeline (D2.2 reads closures too): an opaque token that
    this module's table maps to the watermark's commit while the attempt runs."""

    __slots__ = ("token",)

    def __init__(self, mark: Callable[[], None]) -> None:
        self.token = uuid.uuid4().hex
        _OPEN_MARKS[self.token] = mark

    def __call__(self) -> None:
        mark = _OPEN_MARKS.get(self.token)
        if mark is None:
            raise RuntimeError("mark_effect_sent() was called after its attempt ended; call it before the effect")
        mark()

    def close(self) -> None:
        _OPEN_MARKS.pop(self.token, None)


class CredentialResolver:
    """Holds only the credentials of the scopes the tool's spec requires."""

    def __init__(self, granted: dict[str, str]) -> None:
        self._granted = granted

    async def resolve(self, scope: str) -> str | None:
        return self._granted.get(scope)


@dataclass(frozen=True)
class Context:
    """The nine members of decision 2; ``_mark`` is private and leads nowhere but the watermark."""

    identity: Identity
    budget: Budget
    deadline: float
    target: str | None
    workspace: Path
    artifact_writer: ArtifactWriter
    credential_resolver: CredentialResolver
    cancellation: Cancellation
    _mark: MarkToken

    async def mark_effect_sent(self) -> None:
        self._mark()  # A synchronous commit: the watermark is durable when this returns.
