"""Decision 4, explored: random sequences of submit, crash at a point, recover, approve and replay.

Invariants after every step: no NON_IDEMPOTENT effect twice; UNCERTAIN only where the
watermark is set on a NON_IDEMPOTENT call; every effect of one invocation carries one key.
At the end, after a last recovery, every call is terminal or held (approval or control).
Examples: the exploration profile's (``TOOLPROOF_HYPOTHESIS_PROFILE``: ci 200, dev 10, thorough 5,000).
"""

from __future__ import annotations

import uuid
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
    TrustLabel,
)

from ._exploration import selected_exploration
from ._harness import USER_ITEM, Harness

LEASE_S = 60.0
PAGE = ContextItem(id="page-1", trust=TrustLabel.EXTERNAL_UNTRUSTED, text="untrusted page")
TOOLS = {idempotency: f"orders.{idempotency.value.lower()}" for idempotency in IdempotencyClass}


def machine_for(implementation: Implementation, directory: Path, log: list[str]) -> type[RuleBasedStateMachine]:
    """A state machine over a fresh store per example."""

    class Recovery(RuleBasedStateMachine):
        @initialize()
        def start(self) -> None:
            self.store = directory / uuid.uuid4().hex[:8]
            self.world = World()
            self.clock = FakeClock()
            self.steps: list[StepRequest] = []
            self.held: list[str] = []
            self.trace: list[str] = []

        def _config(self, crash: CrashPlan | None = None) -> InstanceConfig:
            return InstanceConfig(store_dir=self.store, workspace=directory, lease_s=LEASE_S, crash=crash)

        def _tools(self, crash_at: CrashPoint | None) -> list[Any]:
            return [
                CrashingTool(self.world, name=name, idempotency=idempotency, crash_at=crash_at)
                for idempotency, name in TOOLS.items()
            ]

        async def _life(self, step: StepRequest | None, crash: CrashPoint | None, sweep: bool) -> list[Any]:
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
            except SimulatedCrash:
                self.trace.append("  worker died")
            except BaseExceptionGroup as group:
                if group.subgroup(SimulatedCrash) is None:
                    raise
                self.trace.append("  worker died")
            return out

        def _run(self, step: StepRequest | None, crash: CrashPoint | None = None, sweep: bool = False) -> list[Any]:
            return anyio.run(self._life, step, crash, sweep)

        def _submit(self, idempotency: IdempotencyClass, crash: CrashPoint | None, untrusted: bool) -> None:
            number = len(self.steps) + 1
            source = PAGE.id if untrusted else USER_ITEM.id
            call = ProposedCall(
                call_id=f"call-{number}",
                tool_name=TOOLS[idempotency],
                arguments={"n": number},
                provenance={"n": [source]},
            )
            context = [USER_ITEM, PAGE] if untrusted else [USER_ITEM]
            step = StepRequest(run_id="run-1", step_number=number, calls=[call], context=context)
            self.steps.append(step)
            self.trace.append(f"submit step {number} {idempotency.value} untrusted={untrusted} crash={crash}")
            for d in self._run(step, crash):
                if isinstance(d, Suspended):
                    self.held.append(d.invocation_id)

        @rule(idempotency=st.sampled_from(list(IdempotencyClass)), untrusted=st.booleans())
        def submit(self, idempotency: IdempotencyClass, untrusted: bool) -> None:
            self._submit(idempotency, None, untrusted)

        # Crash and recovery in one rule: a worker dies at a point, another picks its work up.
        @rule(idempotency=st.sampled_from(list(IdempotencyClass)), crash=st.sampled_from(list(CrashPoint)))
        def crash_then_recover(self, idempotency: IdempotencyClass, crash: CrashPoint) -> None:
            self._submit(idempotency, crash, False)
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
        @rule(approve=st.booleans())
        def answer(self, approve: bool) -> None:
            invocation_id = self.held.pop(0)
            self.trace.append(f"{'approve' if approve else 'deny'} {invocation_id[:8]}")

            async def resolve() -> None:
                async with implementation.open(self._config(), self._tools(None), self.clock) as instance:
                    rows = {r.invocation_id: r for r in await instance.invocations("run-1")}
                    if rows[invocation_id].status is InvocationStatus.AWAITING_APPROVAL:
                        await instance.resolve_approval(invocation_id, approve)

            anyio.run(resolve)

        def rows(self) -> list[InvocationRow]:
            async def read() -> list[InvocationRow]:
                async with implementation.open(self._config(), self._tools(None), self.clock) as instance:
                    return await instance.invocations("run-1")

            return anyio.run(read)

        def _fail(self, message: str) -> None:
            log.extend(self.trace)
            raise AssertionError(message)

        @invariant()
        def no_non_idempotent_effect_twice(self) -> None:
            seen: dict[tuple[str, object], int] = {}
            for effect in self.world.effects:
                if effect.tool_name == TOOLS[IdempotencyClass.NON_IDEMPOTENT]:
                    key = (effect.tool_name, effect.arguments.get("n"))
                    seen[key] = seen.get(key, 0) + 1
            twice = {k: n for k, n in seen.items() if n > 1}
            if twice:
                self._fail(f"NON_IDEMPOTENT effects happened more than once: {twice}")

        @invariant()
        def uncertain_only_with_a_watermark(self) -> None:
            for row in self.rows():
                if row.status is InvocationStatus.UNCERTAIN and (
                    row.effect_sent_at is None or row.tool_name != TOOLS[IdempotencyClass.NON_IDEMPOTENT]
                ):
                    self._fail(f"{row.tool_name} call {row.call_id} is UNCERTAIN without a NON_IDEMPOTENT watermark")

        @invariant()
        def one_key_per_invocation(self) -> None:
            keys: dict[str, set[str]] = {}
            for effect in self.world.effects:
                keys.setdefault(effect.invocation_id, set()).add(effect.idempotency_key)
            if any(len(k) > 1 for k in keys.values()):
                self._fail(f"a retry carried a different key: {keys}")

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


@pytest.mark.rules("D4.6", "D4.7")
async def test_random_crash_and_recovery_sequences_keep_the_invariants(harness: Harness) -> None:
    machine = machine_for(harness.implementation, harness.directory, harness.log)
    options = settings(
        selected_exploration().hypothesis_settings(),
        stateful_step_count=10,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )

    def explore() -> None:
        run_state_machine_as_test(machine, settings=options)

    try:
        await anyio.to_thread.run_sync(explore)
    except AssertionError as failure:
        rule = "D4.7" if "UNCERTAIN" in str(failure) else "D4.6"
        notes = "\n".join(getattr(failure, "__notes__", []))
        harness.fail(rule, f"{failure}\n{notes}")
