"""Generated crashes for the model judge: a worker dies at a drawn point, and another worker recovers the call.

After a drawn workload, one call in a run of its own (``CRASH_RUN``) dies at a crash point on its first run, or
after its approval or its resume; then, mostly past the lease, a sweep or the same step submitted again (sometimes a
sweep first under the live lease, or the step again under it, and a replay after the recovery), and an answer to a hold a recovery opened. The
model's page ``d04_crash`` says what every observable must be.

The catalog's overruns become raises (an overrun may be cut before its mark: the wall-clock deadline would leave open
what a crash inside step 10 finds), and its TRANSIENT failures become ERROR ones: whether a recovering worker's own
retries count from its claim's attempt or from 1 is left open by D10.2's interpretation.
"""

from __future__ import annotations

import zlib
from dataclasses import replace
from typing import Any

from hypothesis import strategies as st

from toolproof.spec import (
    ContextItem,
    CrashPoint,
    IdempotencyClass,
    InvocationStatus,
    ProposedCall,
    SideEffect,
    ToolKind,
    TrustLabel,
)
from toolproof.spec.model import (
    Advance,
    Answer,
    Crash,
    Model,
    ModelTool,
    Overlap,
    Reopen,
    Resume,
    Submit,
    Sweep,
    Workload,
)
from toolproof.spec.model.d03 import propose
from toolproof.spec.model.d04_crash import (
    AFTER_RUN,
    BEFORE_CLAIM,
    BEFORE_ROW,
    CLAIMED,
    IN_TOOL,
    orphan,
    recovery_points,
)

from ._model_workloads import CONTROL_SCHEMA, WEEK_S, _again, arguments, contexts, provenance, tools

CRASH_RUN = "run-crash"
"""The run of the call that crashes (its own, so no earlier identical call meets the breaker there)."""
CRASH_TENANT = "tenant-1"


def _calm(tool: ModelTool) -> ModelTool:
    b, spec = tool.behaviour, tool.spec
    if b.ending == "overrun":
        return ModelTool(spec.model_copy(update={"deadline_s": 30.0}), replace(b, ending="raise"))
    if b.ending == "TRANSIENT":
        return ModelTool(spec, replace(b, ending="ERROR"))
    return tool


def _apply(model: Model, action: Any) -> None:
    """``action`` on the drawing model, as the judge applies it (an answer to a call no longer waiting is skipped)."""
    if isinstance(action, Submit):
        model.submit(action)
    elif isinstance(action, Answer):
        record = model.by_ref.get(action.call)
        if record is not None and record.status is InvocationStatus.AWAITING_APPROVAL:
            model.answer(action)
    elif isinstance(action, Resume):
        record = model.by_ref.get(action.call)
        if record is not None and record.suspended:
            model.resume(action)
    elif isinstance(action, Advance):
        model.advance(action.seconds)
    elif isinstance(action, Sweep):
        model.sweep()
    elif isinstance(action, Reopen):
        model.reopen(action)
    elif isinstance(action, Overlap):
        model.overlap(action)
    else:
        model.crash(action)


def _sweepable(model: Model) -> bool:
    """A sweep is drawn only when no hold sits exactly at its bound (left open, D11.7)."""
    return all(
        model.past_bound(r) is not None
        for r in model.records
        if r.held_since is not None and r.status is InvocationStatus.AWAITING_APPROVAL
    )


@st.composite
def _crashing_tool(draw: st.DrawFn, model: Model, want: str) -> ModelTool:
    """The tool whose call crashes, added to the catalog: any classification and behaviour (marking two times in
    three), unscoped, never denied, its input open; a control tool for the control paths, a consequential one for the
    approval paths."""
    drawn = draw(tools(len(model.workload.tools), model.workload.max_output_bytes))
    side = drawn.spec.side_effect
    if want == "approval" and side is SideEffect.READ_ONLY:
        side = draw(st.sampled_from([SideEffect.WORKSPACE_WRITE, SideEffect.EXTERNAL_WRITE]))
    control = want == "control"
    spec = drawn.spec.model_copy(
        update={
            "name": f"t{len(model.workload.tools)}.{'ask' if control else 'op'}",
            "kind": ToolKind.CONTROL if control else ToolKind.ACTION,
            "side_effect": side,
            "required_scopes": frozenset(),
            "input_schema": CONTROL_SCHEMA if control else {"type": "object"},
        }
    )
    salt = (spec.name, drawn.behaviour)
    # NON_IDEMPOTENT twice as often: its marked orphan is the one recovery must not retry (D4.6).
    classes = [*IdempotencyClass, IdempotencyClass.NON_IDEMPOTENT]
    spec = spec.model_copy(update={"idempotency": _pick(draw, classes, salt)})
    behaviour = replace(drawn.behaviour, mark=_pick(draw, [True, True, False], salt))
    return _calm(ModelTool(spec, behaviour))


@st.composite
def _target(draw: st.DrawFn, model: Model, tool: ModelTool, number: int, want: str) -> Submit:
    """A one-call step of ``tool`` in CRASH_RUN whose recorded decision is ``want`` (allow, approval, control) and that
    no step before 6 refuses, when a few draws find one, else the last drawn."""
    step = None
    for _ in range(8):
        context = draw(contexts())
        if want == "approval":  # An argument from an untrusted page holds a consequential call (D11.5).
            context = (*context, ContextItem(id="e", trust=TrustLabel.EXTERNAL_UNTRUSTED, text="item e"))
        args = draw(arguments(tool))
        prov = {name: ["e"] for name in args} if want == "approval" else draw(provenance(args, context))
        call = ProposedCall(call_id=f"k{number}", tool_name=tool.spec.name, arguments=args, provenance=prov)
        step = Submit(CRASH_RUN, number, (call,), context, CRASH_TENANT)
        ref = (CRASH_RUN, number, call.call_id)
        record = propose(model.workload, model.tools, model.records, CRASH_TENANT, ref, call, context)
        if not record.pre_record and record.decided == want:
            break
    assert step is not None
    return step


WEIGHTS: dict[CrashPoint, int] = {
    **dict.fromkeys(BEFORE_ROW, 1),
    **dict.fromkeys(BEFORE_CLAIM, 4),
    **dict.fromkeys(CLAIMED, 2),
    **dict.fromkeys(IN_TOOL, 5),
    **dict.fromkeys(AFTER_RUN, 3),
    CrashPoint.AFTER_COMPLETE: 3,
}
"""How often each point is drawn: the watermark's points most (they decide recovery), a point with no row least."""


def _pick(draw: st.DrawFn, choices: list[Any], salt: object) -> Any:
    """One of ``choices``, about evenly: the draw turned by a digest of ``salt`` (something drawn before), since the
    generator falls on index 0 far more often than on any other, so a repeated entry weighs what it says."""
    turn = zlib.crc32(repr(salt).encode())
    return choices[(draw(st.integers(0, len(choices) - 1)) + turn) % len(choices)]


def _weighted(choices: list[CrashPoint]) -> list[CrashPoint]:
    """``choices`` repeated by weight."""
    return [p for p in sorted(choices, key=lambda p: -WEIGHTS[p]) for _ in range(WEIGHTS[p])]


def _decided_by_the_adr(choices: list[CrashPoint], tool: ModelTool) -> list[CrashPoint]:
    """``choices`` but after_excerpt when the tool's execution does not end ok: step 12 excerpts a tool's output, and
    the ADR does not say whether a pipeline passes it for an execution that gave none (a failure, a raise, an
    overrun). The reference does; the TypeScript example answers such a call without meeting the point."""
    if tool.behaviour.ending == "ok":
        return choices
    return [point for point in choices if point is not CrashPoint.AFTER_EXCERPT]


@st.composite
def crashed(draw: st.DrawFn, workload: Workload) -> Workload:
    """``workload``, then a call that crashes and its recovery (module docstring)."""
    catalog = tuple(_calm(t) for t in workload.tools)
    prefix = replace(workload, tools=catalog)
    model = Model(replace(prefix, actions=()))
    for action in prefix.actions:
        _apply(model, action)
    actions: list[Any] = []

    def act(action: Any) -> None:
        _apply(model, action)
        actions.append(action)

    path = _pick(draw, ["allow"] * 3 + ["approval", "control", "approved", "resumed"] * 2, prefix.actions)
    number = 1
    decision = {"approved": "approval", "resumed": "control"}.get(path, path)
    tool = draw(_crashing_tool(model, decision))
    catalog = (*catalog, tool)
    prefix = replace(prefix, tools=catalog)
    model.workload = replace(model.workload, tools=catalog)
    model.tools[tool.spec.name] = tool
    step = draw(_target(model, tool, number, decision))
    ref = (CRASH_RUN, number, step.calls[0].call_id)
    record = propose(model.workload, model.tools, model.records, CRASH_TENANT, ref, step.calls[0], step.context)
    held = record.decided != "allow" and not record.pre_record
    if path in ("approved", "resumed") and held:
        act(step)  # Held first; the crash comes in the life that answers it.
        answer = draw(st.sampled_from(["yes", "é"]))
        inner: Any = Answer(ref, True) if record.decided == "approval" else Resume(ref, answer)
        # Any point: the ones before the claim are never met on this path (the worker lives).
        crash = Crash(inner, _pick(draw, _decided_by_the_adr(_weighted(list(CrashPoint)), tool), step))
    else:
        if record.pre_record:
            # A refusal before step 6 meets the boundary points it passes as its implementation does: a point inside
            # step 10 is never met, so the worker lives.
            choices = list(IN_TOOL)  # Drawn as they are (never met).
        elif held:
            # A held call stops at step 7: the points after its hold but the finishing ones are never met (two of them
            # drawn, the worker living), and whether the finishing ones (after_excerpt, after_complete) are is the
            # implementation's.
            # Recorded and never held most often (D4.14, D4.15).
            choices = [*BEFORE_ROW, CrashPoint.AFTER_CLAIM, CrashPoint.BEFORE_WATERMARK]
            choices += [CrashPoint.AFTER_RECORD] * 6 + [CrashPoint.AFTER_HOLD] * 3
        else:
            choices = _decided_by_the_adr(_weighted(list(CrashPoint)), tool)
        crash = Crash(step, _pick(draw, choices, step))
    act(crash)
    left = model.by_ref.get(ref)
    if (
        left is not None
        and left.status is InvocationStatus.RUNNING
        and not left.terminal
        and draw(st.integers(0, 2)) == 0
    ):
        act(step)  # Under the live lease: another worker's run, answered in_progress, the row untouched (D3.2).
    if draw(st.integers(0, 3)) == 0 and _sweepable(model):
        act(Sweep())  # Under the live lease (D4.18), and before a recorded row's lease (D4.8).
    # Past the lease; now and then a week past it (its age says nothing of escape, D4.8).
    act(Advance(_pick(draw, [model.workload.lease_s + 1] * 2 + [WEEK_S], step)))
    # No row (a crash before step 6): only a replay finds the call again.
    via = _pick(draw, ["sweep", "replay", "replay", "both"], crash) if ref in model.by_ref else "replay"
    target = model.by_ref.get(ref)
    # Now and then the recovering worker dies too, where it runs the tool again (a crash on the swept or replayed
    # path), and a third worker recovers the call.
    dies = draw(st.integers(0, 2)) == 0 and target is not None
    if via != "replay" and _sweepable(model):
        met = dies and target is not None and recovery_points(target, sweep=True)
        if met and target is not None and orphan(target, model.clock, model.workload.lease_s):
            act(Crash(Sweep(), _pick(draw, _decided_by_the_adr(_weighted(list(met)), tool), step), ref))
            act(Advance(model.workload.lease_s + 1))
        act(Sweep())
    if via != "sweep" or not _sweepable(model):
        again = _again(step) if draw(st.booleans()) else step
        met = dies and target is not None and recovery_points(target, sweep=False)
        if met and target is not None and not target.terminal:
            act(Crash(again, _pick(draw, _decided_by_the_adr(_weighted(list(met)), tool), step)))
            act(Advance(model.workload.lease_s + 1))
        act(again)
    target = model.by_ref.get(ref)
    if target is not None and target.status is InvocationStatus.AWAITING_APPROVAL and model.past_bound(target) is False:
        act(Answer(ref, draw(st.sampled_from([True, True, False]))))
    elif target is not None and target.suspended:
        act(Resume(ref, "yes"))
    if target is not None and target.terminal and draw(st.booleans()):
        act(step)  # D4.12, D3.4: a replay of the recovered call is answered from its row.
    return replace(prefix, actions=(*prefix.actions, *actions))
