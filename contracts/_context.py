"""The instrumented ToolExecutionContext: the nine members of decision 2 and nothing else.

Its ``mark_effect_sent`` takes its number on the example's trace only after the transport
has numbered every request already sent and the workspace has been snapshotted, so the
trace orders the watermark against the world's own observations. In the deadline probe
the context *stalls* after the watermark (and in the artifact writer and the credential
resolver) until cancellation, so a tool meets its deadline inside a call it made.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from toolproof.spec import ArtifactRef, Budget, ContextBase, Identity

from ._trace import EventKind, TraceSink


class ContractCancellation:
    """The cancellation signal; the harness sets it at the deadline, before cancelling the tool's scope."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def is_set(self) -> bool:
        """Whether cancellation was requested."""
        return self._event.is_set()

    async def wait(self) -> None:
        """Return once cancellation is requested."""
        await self._event.wait()

    def set(self) -> None:
        """Request cancellation (harness only)."""
        self._event.set()


class ContractArtifacts:
    """Keeps artifacts in memory: storing a blob is the pipeline's business, not an effect on the world."""

    def __init__(self, cancellation: ContractCancellation, stall: bool) -> None:
        self._cancellation = cancellation
        self._stall = stall
        self.written: dict[str, bytes] = {}

    async def write(self, name: str, data: bytes) -> ArtifactRef:
        """Store ``data`` under ``name``."""
        if self._stall:
            await self._cancellation.wait()
        self.written[name] = bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        return ArtifactRef(name=name, uri=f"contract-artifact:{name}", size=len(data), sha256=digest)


class ContractCredentials:
    """Hands out a fixed fake credential for each scope the spec requires, and nothing for others."""

    def __init__(self, scopes: frozenset[str], cancellation: ContractCancellation, stall: bool) -> None:
        self._scopes = scopes
        self._cancellation = cancellation
        self._stall = stall

    async def resolve(self, scope: str) -> str | None:
        """``contract-credential:{scope}`` for a required scope, else None."""
        if self._stall:
            await self._cancellation.wait()
        return f"contract-credential:{scope}" if scope in self._scopes else None


class ContractContext(ContextBase):
    """A ToolExecutionContext whose watermark is numbered on the trace."""

    __slots__ = ("_before_mark", "_signal", "_stall", "_trace")

    def __init__(
        self,
        *,
        identity: Identity,
        deadline: float,
        target: str,
        workspace: Path,
        scopes: frozenset[str],
        trace: TraceSink,
        before_mark: Callable[[], Awaitable[None]],
        stall: bool = False,
    ) -> None:
        signal = ContractCancellation()
        super().__init__(
            identity=identity,
            budget=Budget(max_output_bytes=64 * 1024),
            deadline=deadline,
            target=target,
            workspace=workspace,
            artifact_writer=ContractArtifacts(signal, stall),
            credential_resolver=ContractCredentials(scopes, signal, stall),
            cancellation=signal,
        )
        self._signal = signal
        self._trace = trace
        self._before_mark = before_mark
        self._stall = stall

    async def mark_effect_sent(self) -> None:
        """Number the watermark after everything already sent; stall afterwards in the deadline probe."""
        await self._before_mark()
        self._trace.add(EventKind.MARK, "mark_effect_sent()")
        if self._stall:
            await self._signal.wait()


def request_cancellation(context: ContractContext) -> None:
    """Set the context's cancellation signal (harness side; not part of the nine members)."""
    context._signal.set()
