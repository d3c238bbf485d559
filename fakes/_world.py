"""The fake world: a ledger of every effect and every execution a fake tool saw."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
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
    """Records what fake tools did; scenarios judge from it, never from the implementation's word."""

    effects: list[Effect] = field(default_factory=list)
    """Every effect, in order."""
    executions: list[Execution] = field(default_factory=list)
    """Every execution, in order."""
    observations: dict[str, Any] = field(default_factory=dict)
    """What probing tools saw, by name."""
    order: list[tuple[str, str]] = field(default_factory=list)
    """``(event, call_id)`` pairs: ``start``/``end`` of each execution, for concurrency judgements."""

    def executed(self, tool_name: str, arguments: Mapping[str, Any], context: ToolExecutionContext) -> None:
        """Note an entry into execute()."""
        self.executions.append(
            Execution(tool_name, context.identity.invocation_id, context.identity.attempt, dict(arguments))
        )

    def leave_mark(self, tool_name: str, arguments: Mapping[str, Any], context: ToolExecutionContext) -> Effect:
        """Record an effect; a key seen before is honoured only by tools that ask for dedupe."""
        effect = Effect(
            effect_id=len(self.effects) + 1,
            tool_name=tool_name,
            invocation_id=context.identity.invocation_id,
            idempotency_key=context.identity.idempotency_key,
            arguments=dict(arguments),
        )
        self.effects.append(effect)
        return effect

    def effects_of(self, tool_name: str) -> list[Effect]:
        """Effects left by ``tool_name``."""
        return [e for e in self.effects if e.tool_name == tool_name]

    def executions_of(self, tool_name: str) -> list[Execution]:
        """Executions of ``tool_name``."""
        return [e for e in self.executions if e.tool_name == tool_name]
