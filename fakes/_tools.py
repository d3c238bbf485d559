"""Fake tools: well-behaved ones, and hostile ones with one named misbehaviour each.

Every fake records its executions in a ``World``; effects are recorded only by tools
that leave one. Names follow the behaviour, not the defect being tested.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import anyio

from toolproof.spec import (
    ContentPart,
    CrashMode,
    CrashPoint,
    IdempotencyClass,
    JsonObject,
    Risk,
    SideEffect,
    ToolExecutionContext,
    ToolFailure,
    ToolKind,
    ToolResult,
    ToolSource,
    ToolSpec,
    TrustLabel,
    crash_now,
)

from ._world import World

Probe = Callable[[ToolExecutionContext], Awaitable[Any]]
"""A callback a probing tool runs mid-execution; its result lands in ``World.observations``."""


class FakeTool:
    """Base of every fake: a spec, a world, and ``behave``.

    Args:
        world: Where executions and effects are recorded.
        name: Registered name; defaults to the class's ``default_name``.
        **spec: Further ToolSpec fields overriding the class defaults.
    """

    default_name: ClassVar[str] = "fake.tool"
    default_spec: ClassVar[dict[str, Any]] = {}

    def __init__(self, world: World, name: str | None = None, **spec: Any) -> None:
        self.world = world
        fields = {**self.default_spec, **spec}
        self._spec = ToolSpec(name=name or self.default_name, **fields)

    @property
    def spec(self) -> ToolSpec:
        """The registered spec."""
        return self._spec

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        """Record the execution, then behave."""
        self.world.executed(self._spec.name, arguments, context)
        result: ToolResult = await self.behave(arguments, context)
        return result

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        """What the tool does; subclasses override."""
        return ToolResult(ok=True, content=[ContentPart(text="ok")])


class EchoTool(FakeTool):
    """Read-only and idempotent: returns ``arguments['text']``."""

    default_name = "files.echo"
    default_spec: ClassVar[dict[str, Any]] = {
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "additionalProperties": False}
    }

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        return ToolResult(ok=True, content=[ContentPart(text=str(arguments.get("text", "")))])


class WriteTool(FakeTool):
    """Consequential: marks the watermark, then leaves one effect (the disciplined author)."""

    default_name = "tickets.create"
    default_spec: ClassVar[dict[str, Any]] = {
        "side_effect": SideEffect.EXTERNAL_WRITE,
        "risk": Risk.MEDIUM,
        "idempotency": IdempotencyClass.NON_IDEMPOTENT,
    }

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        await context.mark_effect_sent()
        effect = self.world.leave_mark(self.spec.name, arguments, context)
        return ToolResult(ok=True, content=[ContentPart(text=f"effect {effect.effect_id}")])


class ProbeTool(FakeTool):
    """Runs ``probe`` mid-execution and records what it returned under the tool's name."""

    default_name = "probe.look"

    def __init__(self, world: World, name: str | None = None, probe: Probe | None = None, **spec: Any) -> None:
        super().__init__(world, name, **spec)
        self.probe = probe

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        if self.probe is not None:
            self.world.observations[self.spec.name] = await self.probe(context)
        return ToolResult(ok=True, content=[ContentPart(text="probed")])


class MarkThenProbeTool(ProbeTool):
    """Consequential: marks the watermark, runs ``probe``, then leaves its effect."""

    default_name = "probe.write"
    default_spec = WriteTool.default_spec

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        await context.mark_effect_sent()
        if self.probe is not None:
            self.world.observations[self.spec.name] = await self.probe(context)
        self.world.leave_mark(self.spec.name, arguments, context)
        return ToolResult(ok=True, content=[ContentPart(text="written")])


class ReturnsTool(FakeTool):
    """Returns whatever it was given, unchecked: a dict claiming a status, a bad structure, anything.

    With ``act_first`` it marks the watermark and leaves an effect before returning.
    """

    default_name = "fake.returns"

    def __init__(
        self, world: World, returns: Any, name: str | None = None, act_first: bool = False, **spec: Any
    ) -> None:
        super().__init__(world, name, **spec)
        self.returns = returns
        self.act_first = act_first

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        if self.act_first:
            await context.mark_effect_sent()
            self.world.leave_mark(self.spec.name, arguments, context)
        return self.returns


class ClaimsStatusTool(ReturnsTool):
    """Returns a result that claims the status DENIED, as a plain mapping."""

    default_name = "fake.claims_status"

    def __init__(self, world: World, status: str = "DENIED", name: str | None = None, **spec: Any) -> None:
        super().__init__(world, {"ok": True, "status": status, "content": [{"text": "done"}]}, name, **spec)


class FailsTool(FakeTool):
    """Returns ``ok=False`` with a ToolFailure of ``kind``, carrying remote ``detail`` text."""

    default_name = "fake.fails"

    def __init__(
        self, world: World, kind: str = "ERROR", detail: str | None = None, name: str | None = None, **spec: Any
    ) -> None:
        super().__init__(world, name, **spec)
        self.kind = kind
        self.detail = detail

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        return ToolResult(ok=False, failure=ToolFailure.model_validate({"kind": self.kind, "detail": self.detail}))


class RaisesTool(FakeTool):
    """Raises RuntimeError; with ``after_watermark`` it marks its effect and acts first."""

    default_name = "fake.raises"
    default_spec = WriteTool.default_spec

    def __init__(self, world: World, after_watermark: bool = False, name: str | None = None, **spec: Any) -> None:
        super().__init__(world, name, **spec)
        self.after_watermark = after_watermark

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        if self.after_watermark:
            await context.mark_effect_sent()
            self.world.leave_mark(self.spec.name, arguments, context)
        raise RuntimeError("the connection dropped mid-request")


class HangsTool(FakeTool):
    """Never returns; records whether its cancellation signal was set when it was cancelled."""

    default_name = "fake.hangs"
    default_spec: ClassVar[dict[str, Any]] = {"deadline_s": 0.2}

    def __init__(self, world: World, after_watermark: bool = False, name: str | None = None, **spec: Any) -> None:
        super().__init__(world, name, **spec)
        self.after_watermark = after_watermark

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        if self.after_watermark:
            await context.mark_effect_sent()
            self.world.leave_mark(self.spec.name, arguments, context)
        try:
            await anyio.sleep_forever()
        finally:
            self.world.observations[f"{self.spec.name}.cancellation_set"] = context.cancellation.is_set()
        raise AssertionError("unreachable")  # pragma: no cover


class ArtifactTool(FakeTool):
    """Writes ``arguments['data']`` as an artifact and returns its reference."""

    default_name = "files.archive"

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        data = str(arguments.get("data", "")).encode()
        ref = await context.artifact_writer.write("archive.txt", data)
        self.world.observations[self.spec.name] = ref
        return ToolResult(ok=True, content=[ContentPart(text="archived")], artifacts=[ref])


def device_tool(world: World, name: str = "sensors.read", source: ToolSource = ToolSource.DEVICE) -> EchoTool:
    """An echo tool from a device (or sandbox) source that declares an over-trusting output label."""
    return EchoTool(world, name=name, source=source, output_trust=TrustLabel.OPERATOR)


class SlowTool(FakeTool):
    """Records ``("start", call_id)``, yields for ``pause_s``, records ``("end", call_id)``: concurrency shows in the order."""

    default_name = "files.slow_read"

    def __init__(self, world: World, name: str | None = None, pause_s: float = 0.02, **spec: Any) -> None:
        super().__init__(world, name, **spec)
        self.pause_s = pause_s

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        self.world.order.append(("start", context.identity.call_id))
        if self.spec.consequential and self.spec.idempotency is not IdempotencyClass.IDEMPOTENT:
            await context.mark_effect_sent()
            self.world.leave_mark(self.spec.name, arguments, context)
        await anyio.sleep(self.pause_s)
        self.world.order.append(("end", context.identity.call_id))
        return ToolResult(ok=True, content=[ContentPart(text=self.spec.name)])


class TransientOnceTool(FakeTool):
    """Fails TRANSIENT on its first attempt and succeeds after; records each attempt's identity."""

    default_name = "weather.lookup"

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        attempts = self.world.observations.setdefault(self.spec.name, [])
        attempts.append(context.identity)
        if len(attempts) == 1:
            return ToolResult(ok=False, failure=ToolFailure(kind="TRANSIENT"))
        return ToolResult(ok=True, content=[ContentPart(text="sunny")])


class AskUserTool(FakeTool):
    """The control tool ``conversation.ask_user``: returns the run's answer, labelled USER."""

    default_name = "conversation.ask_user"
    default_spec: ClassVar[dict[str, Any]] = {"kind": ToolKind.CONTROL, "output_trust": TrustLabel.USER}

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        return ToolResult(ok=True, content=[ContentPart(text=str(arguments.get("answer", "")))])


class PartsTool(FakeTool):
    """Returns ``parts`` (``(text, label)`` pairs) as its content: for excerpt scenarios."""

    default_name = "logs.dump"

    def __init__(
        self, world: World, parts: list[tuple[str, TrustLabel | None]], name: str | None = None, **spec: Any
    ) -> None:
        super().__init__(world, name, **spec)
        self.parts = parts

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        return ToolResult(ok=True, content=[ContentPart(text=text, trust=label) for text, label in self.parts])


class ForgetsWatermarkTool(WriteTool):
    """Consequential and non-idempotent, and leaves its effect without calling mark_effect_sent."""

    default_name = "tickets.create_unmarked"

    def __init__(self, world: World, name: str | None = None, ends: str = "success", **spec: Any) -> None:
        """``ends``: how the call ends after its effect: ``success``, ``raise``, ``overrun`` (past its deadline),
        or a ToolFailure kind answered ok=false."""
        super().__init__(world, name, **spec)
        self.ends = ends

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        effect = self.world.leave_mark(self.spec.name, arguments, context)
        if self.ends == "raise":
            raise RuntimeError("the connection dropped after the request was sent")
        if self.ends == "overrun":
            await anyio.sleep_forever()
        if self.ends != "success":
            return ToolResult(ok=False, failure=ToolFailure(kind=self.ends))
        return ToolResult(ok=True, content=[ContentPart(text=f"effect {effect.effect_id}")])


class CrashingTool(FakeTool):
    """Marks, acts and returns, and on its first attempt dies at ``crash_at`` if that is a point inside step 10.

    CONDITIONALLY_IDEMPOTENT effects carry the key to a world that deduplicates on it.
    """

    default_name = "orders.place"
    default_spec: ClassVar[dict[str, Any]] = {
        "side_effect": SideEffect.EXTERNAL_WRITE,
        "idempotency": IdempotencyClass.NON_IDEMPOTENT,
        "input_schema": {"type": "object"},
    }

    def __init__(
        self,
        world: World,
        name: str | None = None,
        crash_at: CrashPoint | str | None = None,
        mode: CrashMode = "raise",
        **spec: Any,
    ) -> None:
        super().__init__(world, name, **spec)
        self.crash_at = CrashPoint(crash_at) if crash_at is not None else None
        self.mode: CrashMode = mode

    def _die_at(self, point: CrashPoint, context: ToolExecutionContext) -> None:
        if self.crash_at is point and context.identity.attempt == 1:
            crash_now(self.mode)

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        self._die_at(CrashPoint.BEFORE_WATERMARK, context)
        await context.mark_effect_sent()
        self._die_at(CrashPoint.AFTER_WATERMARK, context)
        honour = self.spec.idempotency is IdempotencyClass.CONDITIONALLY_IDEMPOTENT
        effect = self.world.leave_mark(self.spec.name, arguments, context, honour_key=honour)
        self._die_at(CrashPoint.AFTER_EFFECT, context)
        return ToolResult(ok=True, content=[ContentPart(text=f"effect {effect.effect_id}")])
