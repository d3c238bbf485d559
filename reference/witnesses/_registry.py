"""The witness registry: each witness is the reference with one deliberate defect."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from toolproof.reference.hooks import (
    FINISHING,
    STEP_TABLE,
    CallState,
    McpAdapter,
    Pipeline,
    PipelineHost,
    ReferenceImplementation,
    Resolved,
    StepFunction,
    idempotency_key,
)
from toolproof.spec import (
    READ_RESOURCE,
    Envelope,
    ProposedCall,
    Step,
    StepRequest,
    Success,
    Tool,
    ToolSource,
    ToolSpec,
    TrustLabel,
)


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
    through: tuple[str, ...] = ()
    """Decisions whose scenarios observe the defect, when the rules it breaks are judged there by the harness's
    checks on everything a scenario observes (``Rule.everywhere``) rather than by their own scenarios."""

    @property
    def selection(self) -> str:
        """The ``--rules`` that judge it: the rules it breaks and the decisions it is seen through."""
        return ",".join((*self.breaks, *self.through))

    def __call__(self) -> ReferenceImplementation:
        """The implementation (so a witness is its own factory)."""
        return ReferenceImplementation(name=f"witness:{self.name}", pipeline_class=self.pipeline)


WITNESSES: dict[str, Witness] = {}
"""Every witness by name."""


def witness(
    name: str, breaks: tuple[str, ...], defect: str, *, through: tuple[str, ...] = ()
) -> Callable[[type[Pipeline]], type[Pipeline]]:
    """Register the decorated pipeline as the witness ``name`` (``through``: see ``Witness.through``)."""

    def register(cls: type[Pipeline]) -> type[Pipeline]:
        if name in WITNESSES:
            raise ValueError(f"witness {name!r} is registered twice")
        WITNESSES[name] = Witness(name, breaks, defect, cls, through)
        return cls

    return register


def moved(move: Step, after: Step) -> Mapping[Step, StepFunction]:
    """The reference step table with step ``move`` run right after step ``after`` instead of in its own place."""
    run_moved, run_after = STEP_TABLE[move], STEP_TABLE[after]

    async def in_its_place(p: PipelineHost, s: CallState) -> None:
        return None  # It runs later, right after ``after``.

    async def after_then_moved(p: PipelineHost, s: CallState) -> None:
        await run_after(p, s)
        if s.disposition is None or move in FINISHING:  # What drive would skip, this skips too.
            await run_moved(p, s)

    return STEP_TABLE | {move: in_its_place, after: after_then_moved}


async def outside_the_pipeline(
    pipeline: PipelineHost, step: StepRequest, call: ProposedCall, found: tuple[ToolSpec, Tool]
) -> Success:
    """Execute ``call``'s tool directly: no row, no key, no policy (the defect of a bypassing witness)."""
    state = CallState(request=step, call=call, resolved=Resolved(*found), attempt=1, key=call.call_id)

    async def nowhere() -> None:
        return None  # No row to mark: the call never entered the pipeline.

    parts = replace(pipeline.context_parts(state, Resolved(*found)), mark=nowhere)
    # Parsed as the pipeline parses any result: behind the driver a tool's result arrives as JSON.
    result = pipeline.parse_result(await found[1].execute(dict(call.arguments), pipeline.context_for(parts)))
    return Success(
        invocation_id=state.invocation_id,
        content=[
            Envelope(trust=TrustLabel.EXTERNAL_UNTRUSTED, source=call.tool_name, text=p.text)
            for p in (result.content if result is not None else [])
        ],
    )


def adapter_pipeline(adapter: type[McpAdapter]) -> type[Pipeline]:
    """The reference pipeline with ``adapter`` as its MCP adapter (a witness whose defect is in the adapter)."""
    return type(f"_{adapter.__name__}Pipeline", (Pipeline,), {"mcp_class": adapter})


def key_without(*blank: str) -> StepFunction:
    """Step 1, then the key computed again with the ``blank`` inputs blanked."""

    async def resolve(p: PipelineHost, s: CallState) -> None:
        await STEP_TABLE[Step.RESOLVE](p, s)
        s.key = key_blanking(s, *blank)

    return resolve


def key_with(s: CallState, **replaced: Any) -> str:
    """The call's idempotency key (after step 1 resolved the tool), with the ``replaced`` inputs in place of its own."""
    inputs: dict[str, Any] = {
        "tenant": s.request.tenant,
        "run_id": s.request.run_id,
        "step_number": s.request.step_number,
        "call_id": s.call.call_id,
        "tool_name": s.call.tool_name,
        "tool_version": s.resolved.spec.version if s.resolved else None,
        "arguments": s.call.arguments,
    }
    return idempotency_key(**(inputs | replaced))


def key_blanking(s: CallState, *blank: str) -> str:
    """The call's idempotency key with the ``blank`` inputs blanked (after step 1 resolved the tool)."""
    return key_with(s, **{name: 0 if name == "step_number" else "" for name in blank})


def reads_a_resource(s: CallState) -> bool:
    """Whether the call is to a server's synthetic ``read_resource`` tool (the witnesses that single it out)."""
    spec = s.resolved.spec if s.resolved is not None else None
    return spec is not None and spec.source is ToolSource.MCP and spec.name.endswith(f".{READ_RESOURCE}")
