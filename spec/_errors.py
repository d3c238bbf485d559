"""The one exception root, split by who must act."""

from __future__ import annotations


class ToolproofError(Exception):
    """Root of every error toolproof raises on purpose."""


class ConformanceFailure(ToolproofError, AssertionError):
    """The implementation under test broke a rule; carries the rule and a reproduction."""

    def __init__(self, rule_id: str, message: str, *, reproduction: str = "") -> None:
        self.rule_id = rule_id
        self.reproduction = reproduction
        text = f"{rule_id}: {message}"
        if reproduction:
            text += f"\nreproduction:\n{reproduction}"
        super().__init__(text)


class NotCovered(ToolproofError):
    """A scenario cannot judge its rule against this implementation (e.g. behind the driver protocol).

    The scenario's rules read ``not-covered`` with the reason as evidence: never a pass.
    """

    def __init__(self, rule_id: str, reason: str) -> None:
        self.rule_id = rule_id
        self.reason = reason
        super().__init__(f"{rule_id}: not covered: {reason}")


class ContractViolation(ToolproofError):
    """A tool broke the tool-author contract (e.g. acted before mark_effect_sent)."""

    def __init__(self, rule_id: str, message: str) -> None:
        self.rule_id = rule_id
        super().__init__(f"{rule_id}: {message}")


class ConfigurationError(ToolproofError, ValueError):
    """Something was configured wrong: a bad tool name, an unknown implementation, a bad option.

    Implementations raise it from ``Implementation.open`` to refuse a configuration
    (e.g. a builtin in a reserved domain); the message names the offending value.
    """


class McpOpenError(ConfigurationError):
    """An MCP server could not be opened in the era it is configured for (D7.7, D7.8).

    One line naming the server, the era asked, what the server answered (its error or versions, "no
    answer within N s", "exited", "wrote non-JSON ..."), and the cause.
    """

    def __init__(self, server_id: str, era: str, answer: str, cause: str) -> None:
        super().__init__(
            f"MCP server {server_id!r} refused at open: asked era {era}; the server {answer}; cause: {cause}"
        )
        self.server_id = server_id
        """The configured server_id."""
        self.era = era
        """The protocol era asked for: ``legacy`` (the initialize handshake) or ``2026-07-28``."""
        self.answer = answer
        """What the server said, in words."""
        self.cause = cause
        """The error that ended the attempt, ``Type: text``."""


class HarnessError(ToolproofError):
    """toolproof itself failed; not the implementation's fault nor the user's."""


class ImplementationError(ToolproofError):
    """The implementation under test misbehaved outside any one rule's judgement.

    Its driver refused or failed a request the harness sent by the protocol, or a port method
    returned what the port does not allow. A scenario that meets it reports ``error``, blaming
    the implementation, not the harness.
    """


class PortViolation(ImplementationError, ConfigurationError):
    """The implementation broke the port's types (a method returned the wrong shape): bad input, not a verdict.

    A run meeting it stops and exits 2 with its one line, naming the method and the field.
    """


def sole_exception(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The one leaf exception of nested single-member groups, or None when any level holds several.

    anyio task groups wrap whatever their body raises; a caller that wants a single error raised
    as itself unwraps it with this.
    """
    inner: BaseException = group
    while isinstance(inner, BaseExceptionGroup):
        if len(inner.exceptions) != 1:
            return None
        inner = inner.exceptions[0]
    return inner
