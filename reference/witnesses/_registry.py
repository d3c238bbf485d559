"""The witness registry: each witness is the reference with one deliberate defect."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from toolproof.reference._instance import ReferenceImplementation
from toolproof.reference._pipeline import CallState, Pipeline
from toolproof.spec import STEPS, Envelope, ProposedCall, Step, StepRequest, Success, Tool, ToolSpec, TrustLabel


@dataclass(frozen=True)
class Witness:
    """A defective implementation and the rules it breaks."""

    name: str
    """Implementation name in reports is ``witness:<name>``."""
    breaks: tuple[str, ...]
    """Rule ids the suite must reject it on."""
    defect: str
    """What is wrong with it, in one line."""
    pipeline: type[Pipeline]
    """The defective pipeline."""

    def __call__(self) -> ReferenceImplementation:
        """The implementation (so a witness is its own factory)."""
        return ReferenceImplementation(name=f"witness:{self.name}", pipeline_class=self.pipeline)


WITNESSES: dict[str, Witness] = {}
"""Every witness by name."""


def witness(name: str, breaks: tuple[str, ...], defect: str) -> Callable[[type[Pipeline]], type[Pipeline]]:
    """Register the decorated pipeline as the witness ``name``."""

    def register(cls: type[Pipeline]) -> type[Pipeline]:
        if name in WITNESSES:
            raise ValueError(f"witness {name!r} is registered twice")
        WITNESSES[name] = Witness(name, breaks, defect, cls)
        return cls

    return register


def reorder(move: Step, after: Step) -> tuple[Step, ...]:
    """The spec's step order with ``move`` placed right after ``after``."""
    order = [s for s in STEPS if s is not move]
    order.insert(order.index(after) + 1, move)
    return tuple(order)


async def outside_the_pipeline(
    pipeline: Pipeline, step: StepRequest, call: ProposedCall, found: tuple[ToolSpec, Tool]
) -> Success:
    """Execute ``call``'s tool directly: no row, no key, no policy (the defect of a bypassing witness)."""
    state = CallState(request=step, call=call)
    state.spec, state.tool, state.attempt, state.key = found[0], found[1], 1, call.call_id
    await pipeline.step_prepare(state)
    assert state.context is not None

    async def nowhere() -> None:
        return None  # No row to mark: the call never entered the pipeline.

    state.context._mark = nowhere
    result = await found[1].execute(dict(call.arguments), state.context)
    return Success(
        invocation_id=state.invocation_id,
        content=[
            Envelope(trust=TrustLabel.EXTERNAL_UNTRUSTED, source=call.tool_name, text=p.text) for p in result.content
        ],
    )
