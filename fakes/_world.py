"""The fake world: a ledger of every effect and every execution a fake tool saw."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from toolproof.spec import JsonObject, ToolExecutionContext


@dataclass(frozen=True)
class Effect:
    """One mark left on the world."""

    effect_id: int
    """Unique, in order of arrival."""
    tool_name: str
    """Registered name of the tool that left it."""
    invocation_id: str
    """Invocation that left it."""
    idempotency_key: str
    """Key it carried."""
    arguments: JsonObject
    """Arguments of the call."""
    deduplicated: bool = False
    """The external service recognised the key and did nothing."""


@dataclass(frozen=True)
class Execution:
    """One entry into a fake tool's execute()."""

    tool_name: str
    """Registered name."""
    invocation_id: str
    """Invocation executing."""
    attempt: int
    """Attempt number from the context."""
    arguments: JsonObject
    """Arguments received."""


@dataclass
class World:
    """Records what fake tools did; scenarios judge from it, never from the implementation's word.

    With ``ledger``, every execution and effect is also appended to that file and synced
    before the tool goes on, so a worker process killed right after an effect leaves it on
    record for the harness (``World.read_ledger``).
    """

    effects: list[Effect] = field(default_factory=list)
    """Every effect, in order."""
    executions: list[Execution] = field(default_factory=list)
    """Every execution, in order."""
    observations: dict[str, Any] = field(default_factory=dict)
    """What probing tools saw, by name."""
    order: list[tuple[str, str]] = field(default_factory=list)
    """``(event, call_id)`` pairs: ``start``/``end`` of each execution, for concurrency judgements."""
    ledger: Path | None = None
    """File that also receives every execution and effect, for worker processes."""
    during: dict[tuple[str, int, str], Callable[[], Awaitable[None]]] = field(default_factory=dict)
    """What to do while the call named (run, step, call_id) executes, once: awaited inside its first execution, before
    the tool acts (the model judge submits the call's step again there, D3.2)."""

    def _append(self, kind: str, record: object) -> None:
        if self.ledger is None:
            return
        line = json.dumps({"kind": kind, **asdict(record)}, sort_keys=True) + "\n"  # type: ignore[call-overload]
        with self.ledger.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def executed(self, tool_name: str, arguments: Mapping[str, Any], context: ToolExecutionContext) -> None:
        """Note an entry into execute()."""
        execution = Execution(tool_name, context.identity.invocation_id, context.identity.attempt, dict(arguments))
        self.executions.append(execution)
        self._append("execution", execution)

    def leave_mark(
        self,
        tool_name: str,
        arguments: Mapping[str, Any],
        context: ToolExecutionContext,
        *,
        honour_key: bool = False,
    ) -> Effect:
        """Record an effect; with ``honour_key`` a key already seen is deduplicated, as an external service would."""
        known = self.read_ledger(self.ledger)[1] if self.ledger is not None else self.effects
        key = context.identity.idempotency_key
        effect = Effect(
            effect_id=len(known) + 1,
            tool_name=tool_name,
            invocation_id=context.identity.invocation_id,
            idempotency_key=key,
            arguments=dict(arguments),
            deduplicated=honour_key and any(e.idempotency_key == key and not e.deduplicated for e in known),
        )
        self.effects.append(effect)
        self._append("effect", effect)
        return effect

    @staticmethod
    def read_ledger(path: Path | None) -> tuple[list[Execution], list[Effect]]:
        """Executions and effects recorded in a ledger file, by any process."""
        executions: list[Execution] = []
        effects: list[Effect] = []
        if path is None or not path.exists():
            return executions, effects
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue  # A torn last line cannot happen (one write, synced), but an empty one can.
            record = json.loads(line)
            kind = record.pop("kind")
            if kind == "execution":
                executions.append(Execution(**record))
            else:
                effects.append(Effect(**record))
        return executions, effects

    def effects_of(self, tool_name: str) -> list[Effect]:
        """Effects left by ``tool_name``."""
        return [e for e in self.effects if e.tool_name == tool_name]

    def executions_of(self, tool_name: str) -> list[Execution]:
        """Executions of ``tool_name``."""
        return [e for e in self.executions if e.tool_name == tool_name]
