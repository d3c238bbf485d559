"""The ToolExecutionContext's property block, written once: eight read-only members over private slots.

An implementation (the reference), the contract check and the driver's tool host each give a
tool a context; they differ only in what ``mark_effect_sent`` does and in the parts they pass
in. ``ContextBase`` holds the parts and answers the eight properties; a subclass supplies
``mark_effect_sent``. It imports nothing but the port's types, so any package may build on it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

from ._port import ArtifactWriter, Cancellation, CredentialResolver
from ._types import Budget, Identity


class ContextBase(ABC):
    """Decision 2's nine members: eight properties over the parts given, and ``mark_effect_sent`` to supply.

    The parts stay in private slots and nothing else is public, so a subclass that adds no
    public member exposes exactly ``spec.CONTEXT_MEMBERS``.
    """

    __slots__ = (
        "_artifact_writer",
        "_budget",
        "_cancellation",
        "_credential_resolver",
        "_deadline",
        "_identity",
        "_target",
        "_workspace",
    )

    def __init__(
        self,
        *,
        identity: Identity,
        budget: Budget,
        deadline: float,
        target: str | None,
        workspace: Path,
        artifact_writer: ArtifactWriter,
        credential_resolver: CredentialResolver,
        cancellation: Cancellation,
    ) -> None:
        self._identity = identity
        self._budget = budget
        self._deadline = deadline
        self._target = target
        self._workspace = workspace
        self._artifact_writer = artifact_writer
        self._credential_resolver = credential_resolver
        self._cancellation = cancellation

    @property
    def identity(self) -> Identity:
        """Who and what this execution is."""
        return self._identity

    @property
    def budget(self) -> Budget:
        """What the call may spend."""
        return self._budget

    @property
    def deadline(self) -> float:
        """Absolute ``time.time()`` by which the tool must return."""
        return self._deadline

    @property
    def target(self) -> str | None:
        """The configured target the tool acts on, if any."""
        return self._target

    @property
    def workspace(self) -> Path:
        """The run's workspace directory."""
        return self._workspace

    @property
    def artifact_writer(self) -> ArtifactWriter:
        """Stores blobs."""
        return self._artifact_writer

    @property
    def credential_resolver(self) -> CredentialResolver:
        """Resolves credentials of the scopes the tool's spec requires."""
        return self._credential_resolver

    @property
    def cancellation(self) -> Cancellation:
        """Set when the invocation is cancelled (e.g. at its deadline)."""
        return self._cancellation

    @abstractmethod
    async def mark_effect_sent(self) -> None:
        """Commit ``effect_sent_at`` now; returns once committed."""
