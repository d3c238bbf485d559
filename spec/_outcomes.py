"""The checked-in reason_code -> (status, message, retryable) table (decision 13).

An outcome's status, message and retryable flag are a function of its reason code and
nothing else; external text never enters ``message``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._enums import FailureKind, InvocationStatus, ReasonCode


@dataclass(frozen=True)
class OutcomeEntry:
    """One row of the table."""

    status: InvocationStatus
    message: str
    retryable: bool


_D = InvocationStatus.DENIED
_F = InvocationStatus.FAILED
_U = InvocationStatus.UNAVAILABLE

OUTCOME_TABLE: dict[ReasonCode, OutcomeEntry] = {
    ReasonCode.UNKNOWN_TOOL: OutcomeEntry(_D, "The requested tool is not available to this run.", False),
    ReasonCode.INVALID_ARGUMENTS: OutcomeEntry(_F, "The arguments do not match the tool's input schema.", False),
    ReasonCode.POLICY_DENIED: OutcomeEntry(_D, "Policy does not allow this call.", False),
    ReasonCode.APPROVAL_DENIED: OutcomeEntry(_D, "The call was not approved.", False),
    ReasonCode.APPROVAL_EXPIRED: OutcomeEntry(_D, "The approval request expired before anyone answered.", False),
    ReasonCode.REPEATED_DENIAL: OutcomeEntry(
        _D, "This call was already denied; it will not be evaluated again in this run.", False
    ),
    ReasonCode.LOOP_DETECTED: OutcomeEntry(_D, "This call has been repeated too often in this run.", False),
    ReasonCode.PRIOR_UNCERTAIN: OutcomeEntry(
        _D, "An identical call in this run has an uncertain outcome; it will not be proposed again.", False
    ),
    ReasonCode.BUDGET_EXHAUSTED: OutcomeEntry(_D, "The run's budget or deadline does not admit this call.", False),
    ReasonCode.TOOL_WITHDRAWN: OutcomeEntry(_U, "The tool was withdrawn by its provider.", False),
    ReasonCode.TOOL_DEFINITION_CHANGED: OutcomeEntry(
        _U, "The tool's definition changed since this session started.", False
    ),
    ReasonCode.REMOTE_UNAVAILABLE: OutcomeEntry(_U, "The tool's remote service could not be reached.", True),
    ReasonCode.TOOL_ERROR: OutcomeEntry(_F, "The tool failed.", False),
    ReasonCode.TOOL_ERROR_TRANSIENT: OutcomeEntry(_F, "The tool failed; trying again may succeed.", True),
    ReasonCode.REMOTE_REJECTED: OutcomeEntry(_F, "The remote service refused the request.", False),
    ReasonCode.INVALID_TOOL_RESULT: OutcomeEntry(
        _F, "The tool returned a result the platform could not accept.", False
    ),
    ReasonCode.TOOL_CRASHED: OutcomeEntry(_F, "The tool stopped unexpectedly before acting.", True),
    ReasonCode.DEADLINE_EXCEEDED: OutcomeEntry(_F, "The tool did not finish before its deadline.", True),
    ReasonCode.EFFECT_UNKNOWN: OutcomeEntry(
        InvocationStatus.UNCERTAIN, "The call may or may not have taken effect; it needs review.", False
    ),
    ReasonCode.IN_PROGRESS: OutcomeEntry(_U, "This call is already being executed.", True),
}

FAILURE_REASONS: dict[FailureKind, ReasonCode] = {
    FailureKind.ERROR: ReasonCode.TOOL_ERROR,
    FailureKind.TRANSIENT: ReasonCode.TOOL_ERROR_TRANSIENT,
    FailureKind.REMOTE_REJECTED: ReasonCode.REMOTE_REJECTED,
    FailureKind.REMOTE_UNAVAILABLE: ReasonCode.REMOTE_UNAVAILABLE,
}
"""How the pipeline maps a tool's own word about its failure to a reason code."""


def outcome_entry(reason: ReasonCode) -> OutcomeEntry:
    """The table row for ``reason``."""
    return OUTCOME_TABLE[reason]
