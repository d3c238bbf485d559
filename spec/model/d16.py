"""Decision 16: control tools run the full pipeline, suspend by a marker, and resume with the run's answer."""

from __future__ import annotations

from toolproof.spec import CONTROL_ANSWER_ARGUMENT, ProposedCall


def with_answer(call: ProposedCall, answer: str | None) -> dict[str, object]:
    """D16.4: the control tool executes with its arguments plus the answer (spec.CONTROL_ANSWER_ARGUMENT)."""
    arguments: dict[str, object] = dict(call.arguments)
    if answer is not None:
        arguments[CONTROL_ANSWER_ARGUMENT] = answer
    return arguments
