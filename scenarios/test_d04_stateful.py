"""Decision 4, explored: random sequences of submit, crash at a point, recover, approve, resume and replay.

Calls are trusted, untrusted (an argument from an EXTERNAL_UNTRUSTED page: held for approval)
or control (suspended until resumed with an answer); a worker may die at any point, while
submitting or while answering a hold. Invariants after every step: no NON_IDEMPOTENT effect
twice; UNCERTAIN only where the watermark is set on a NON_IDEMPOTENT call; every effect of one
invocation carries one key; nothing consequential from untrusted content runs unapproved; a
control call runs only once resumed, and with its answer. At the end, after a last recovery,
every call is terminal or held (approval or control).
Examples: the exploration profile's (``TOOLPROOF_HYPOTHESIS_PROFILE``: ci 200, dev 10, thorough 5,000).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from toolproof.fakes import CrashingTool, FakeClock, World
from toolproof.spec import (
    TOOL_CRASH_POINTS,
    ContextItem,
    CrashPlan,
    CrashPoint,
    IdempotencyClass,
    Implementation,
    InstanceConfig,
    InvocationRow,
    InvocationStatus,
    ProposedCall,
    SimulatedCrash,
    StepRequest,
    Suspended,
    ToolKind,
    TrustLabel,
)

from ._exploration import selected_exploration
from ._harness import USER_ITEM, Harness

LEASE_S = 60.0
PAGE = ContextItem(id="page-1", trust=TrustLabel.EXTERNAL_UNTRUSTED, text="untrusted page")
TOOLS = {idempotency: f"orders.{idempotency.value.lower()}" for idempotency in IdempotencyClass}
CONTROL = "conversation.ask_user"
"""A control tool that, once resumed, leaves an effect carrying the answer it ran with."""
NON_IDEMPOTENT = frozenset({TOOLS[IdempotencyClass.NON_IDEMPOTENT], CONTROL})
"""The NON_IDEMPOTENT tools (the control tool is one)."""
STEPS_PER_EXAMPLE = 10
"""Rules one example runs at most: the exploration is bounded by the profile's examples times this."""
KINDS = ("trusted", "untrusted", "control")
"""What a submitted call is: allowed, held for approval, or a control suspension."""


Answer = Callable[[Any], Awaitable[Any]]
"""What a worker life does after its sweep and submission: answer a hold through the instance it is given."""


class Stopped(KeyboardInterrupt):
    """The run was stopped (Ctrl-C, SIGTERM) while the exploration ran in its thread: it ends at the next worker life.

    A KeyboardInterrupt, so hypothesis ends the exploration at once, neither shrinking it nor reporting a failure."""


class Pace:
    """How far the exploration has gone, said to ``say`` as it goes, and whether it was told to stop."""

    def __init__(self, examples: int, profile: str, say: Callable[[str], None]) -> None:
        self.examples = examples
        self.profile = profile
        self.say = say
        self.started = 0
        self.stop = threading.Event()
        self._every = max(1, examples // 20)

    def example(self) -> None:
        """One more sequence starts; the first, and one every twentieth of the profile's examples, is said."""
        self.check()
        self.started += 1
        if self.started == 1 or self.started % self._every == 0:
            self.say(
                f"{self.started} sequences tried, for the {self.profile} profile's {self.examples} examples of at "
                f"most {STEPS_PER_EXAMPLE} steps (hypothesis also tries sequences it discards, and replays a failing one)"
            )

    def check(self) -> None:
        """Raise ``Stopped`` once the run was told to stop, or its process is ending (its main thread is done)."""
        if self.stop.is_set() or not threading.main_thread().is_alive():
            raise Stopped


def machine_for(
    implementation: Implementation, directory: Path, log: list[str], pace: Pace | None = None
) -> type[RuleBasedStateMachine]:
    """A state machine over a fresh store per example; ``pace`` counts the examples and stops them when told."""

    class Recovery(RuleBasedStateMachine):
        @initialize()
        def start(self) -> None:
            if pace is not None:
                pace.example()
            self.store = directory / uuid.uuid4().hex[:8]
            self.world = World()
            self.clock = FakeClock()
            self.steps: list[StepRequest] = []
            self.held: list[str] = []
            self.trace: list[str] = []
            self.untrusted: set[int] = set()
            """The ``n`` of every call whose argument came from the untrusted page."""
            self.approved: set[str] = set()
            """Invocations approved (before the approving worker ran them)."""
            self.answers: dict[str, str] = {}
            """Control invocations resumed, and the answer each was resumed with."""

        def _config(self, crash: CrashPlan | None = None) -> InstanceConfig:
            return InstanceConfig(store_dir=self.store, workspace=directory, lease_s=LEASE_S, crash=crash)

        def _tools(self, crash_at: CrashPoint | None) -> list[Any]:
            control = CrashingTool(self.world, name=CONTROL, kind=ToolKind.CONTROL, crash_at=crash_at)
            return [
                *(
                    CrashingTool(self.world, name=name, idempotency=idempotency, crash_at=crash_at)
                    for idempotency, name in TOOLS.items()
                ),
                control,
            ]

        async def _life(
            self, step: StepRequest | None, crash: CrashPoint | None, sweep: bool, answer: Answer | None = None
        ) -> list[Any]:
            boundary = crash is not None and crash not in TOOL_CRASH_POINTS
            plan = CrashPlan(point=crash) if crash is not None and boundary else None
            tools = self._tools(None if boundary else crash)
            out: list[Any] = []
            try:
                async with implementation.open(self._config(plan), tools, self.clock) as instance:
                    if sweep:
                        out.extend(await instance.sweep())
                    if step is not None:
                        out.extend(await instance.submit(step))
                    if answer is not None:
                        out.append(await answer(instance))
            except SimulatedCrash:
                self.trace.append("  worker died")
            except BaseExceptionGroup as group:
                if group.subgroup(SimulatedCrash) is None:
                    raise
                self.trace.append("  worker died")
            for d in out:
                if isinstance(d, Suspended) and d.invocation_id not in self.held:
                    self.held.append(d.invocation_id)
            return out

        def _run(
            self,
            step: StepRequest | None,
            crash: CrashPoint | None = None,
            sweep: bool = False,
            answer: Answer | None = None,
        ) -> list[Any]:
            if pace is not None:
                pace.check()  # A stopped run ends here, between two worker lives.
            return anyio.run(self._life, step, crash, sweep, answer)

        def _submit(self, idempotency: IdempotencyClass, crash: CrashPoint | None, kind: str) -> None:
            number = len(self.steps) + 1
            untrusted = kind == "untrusted"
            source = PAGE.id if untrusted else USER_ITEM.id
            call = ProposedCall(
                call_id=f"call-{number}",
                tool_name=CONTROL if kind == "control" else TOOLS[idempotency],
                arguments={"n": number},
                provenance={"n": [source]},
            )
            if untrusted:
                self.untrusted.add(number)
            context = [USER_ITEM, PAGE] if untrusted else [USER_ITEM]
            step = StepRequest(run_id="run-1", step_number=number, calls=[call], context=context)
            self.steps.append(step)
            self.trace.append(f"submit step {number} {call.tool_name} {kind} crash={crash}")
            self._run(step, crash)

        @rule(idempotency=st.sampled_from(list(IdempotencyClass)), kind=st.sampled_from(KINDS))
        def submit(self, idempotency: IdempotencyClass, kind: str) -> None:
            self._submit(idempotency, None, kind)

        # Crash and recovery in one rule: a worker dies at a point, another picks its work up.
        @rule(
            idempotency=st.sampled_from(list(IdempotencyClass)),
            crash=st.sampled_from(list(CrashPoint)),
            kind=st.sampled_from(KINDS),
        )
        def crash_then_recover(self, idempotency: IdempotencyClass, crash: CrashPoint, kind: str) -> None:
            self._submit(idempotency, crash, kind)
            self.recover()

        @rule()
        def recover(self) -> None:
            self.clock.advance(LEASE_S + 1)
            self.trace.append("recover in another worker after the lease")
            self._run(None, sweep=True)

        @precondition(lambda self: bool(self.steps))
        @rule(data=st.data())
        def replay(self, data: st.DataObject) -> None:
            step = data.draw(st.sampled_from(self.steps))
            self.trace.append(f"replay step {step.step_number}")
            self._run(step)

        @precondition(lambda self: bool(self.held))
        @rule(approve=st.booleans(), crash=st.none() | st.sampled_from(list(CrashPoint)))
        def answer(self, approve: bool, crash: CrashPoint | None) -> None:
            """Approve or deny a hold, or resume a suspended control call, in a worker that may die doing it."""
            invocation_id = self.held.pop(0)
            n = len(self.answers) + 1

            async def give(instance: Any) -> Any:
                rows = {r.invocation_id: r for r in await instance.invocations("run-1")}
                row = rows[invocation_id]
                if row.status is InvocationStatus.AWAITING_APPROVAL:
                    self.trace.append(f"{'approve' if approve else 'deny'} {invocation_id[:8]} crash={crash}")
                    if approve:
                        self.approved.add(invocation_id)
                    return await instance.resolve_approval(invocation_id, approve)
                if row.suspended:
                    self.trace.append(f"resume {invocation_id[:8]} with answer-{n} crash={crash}")
                    self.answers[invocation_id] = f"answer-{n}"
                    return await instance.resume(invocation_id, f"answer-{n}")
                return None

            self._run(None, crash, answer=give)
            if crash is not None:
                self.recover()

        def rows(self) -> list[InvocationRow]:
            async def read() -> list[InvocationRow]:
                async with implementation.open(self._config(), self._tools(None), self.clock) as instance:
                    return await instance.invocations("run-1")

            if pace is not None:
                pace.check()
            return anyio.run(read)

        def _fail(self, message: str) -> None:
            log.extend(self.trace)
            raise AssertionError(message)

        @invariant()
        def no_non_idempotent_effect_twice(self) -> None:
            seen: dict[tuple[str, object], int] = {}
            for effect in self.world.effects:
                if effect.tool_name in NON_IDEMPOTENT:
                    key = (effect.tool_name, effect.arguments.get("n"))
                    seen[key] = seen.get(key, 0) + 1
            twice = {k: n for k, n in seen.items() if n > 1}
            if twice:
                self._fail(f"NON_IDEMPOTENT effects happened more than once: {twice}")

        @invariant()
        def uncertain_only_with_a_watermark(self) -> None:
            for row in self.rows():
                if row.status is InvocationStatus.UNCERTAIN and (
                    row.effect_sent_at is None or row.tool_name not in NON_IDEMPOTENT
                ):
                    self._fail(f"{row.tool_name} call {row.call_id} is UNCERTAIN without a NON_IDEMPOTENT watermark")

        @invariant()
        def one_key_per_invocation(self) -> None:
            keys: dict[str, set[str]] = {}
            for effect in self.world.effects:
                keys.setdefault(effect.invocation_id, set()).add(effect.idempotency_key)
            if any(len(k) > 1 for k in keys.values()):
                self._fail(f"a retry carried a different key: {keys}")

        @invariant()
        def nothing_untrusted_runs_unapproved(self) -> None:
            unapproved = [
                (e.tool_name, e.arguments.get("n"))
                for e in self.world.executions
                if e.arguments.get("n") in self.untrusted and e.invocation_id not in self.approved
            ]
            if unapproved:
                self._fail(f"consequential calls from untrusted content ran unapproved: {unapproved}")

        @invariant()
        def control_runs_only_resumed_with_its_answer(self) -> None:
            wrong = [
                (e.arguments.get("n"), e.arguments.get("answer"), self.answers.get(e.invocation_id))
                for e in self.world.executions
                if e.tool_name == CONTROL and e.arguments.get("answer") != self.answers.get(e.invocation_id, "(none)")
            ]
            if wrong:
                self._fail(
                    f"control calls ran without their suspension and answer (n, ran with, resumed with): {wrong}"
                )

        def teardown(self) -> None:
            self.clock.advance(LEASE_S + 1)
            self._run(None, sweep=True)
            open_rows = [
                r
                for r in self.rows()
                if not r.status.is_terminal and not r.suspended and r.status is not InvocationStatus.AWAITING_APPROVAL
            ]
            if open_rows:
                self._fail(f"after a final recovery these calls are neither terminal nor held: {open_rows}")

    return Recovery


@pytest.mark.rules("D4.6", "D4.7", "D4.14", "D4.16")
async def test_random_crash_and_recovery_sequences_keep_the_invariants(harness: Harness) -> None:
    exploration = selected_exploration()
    pace = Pace(exploration.stateful_examples, exploration.name, harness.progress)
    machine = machine_for(harness.implementation, harness.directory, harness.log, pace)
    options = settings(
        exploration.hypothesis_settings(),
        stateful_step_count=STEPS_PER_EXAMPLE,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )

    def explore() -> None:
        try:
            run_state_machine_as_test(machine, settings=options)
        except Stopped:
            return  # The run is being stopped: nothing was judged, and the caller is gone.

    try:
        # Cancelled (the run stopped by Ctrl-C or SIGTERM), the wait ends at once and the thread at its next worker
        # life, instead of the run waiting for every example to finish.
        await anyio.to_thread.run_sync(explore, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        pace.stop.set()
        raise
    except AssertionError as failure:
        text = str(failure)
        rule = (
            "D4.7"
            if "UNCERTAIN" in text
            else "D4.14"
            if "unapproved" in text
            else "D4.16"
            if "control calls ran" in text
            else "D4.6"
        )
        notes = "\n".join(getattr(failure, "__notes__", []))
        harness.fail(rule, f"{failure}\n{notes}")
