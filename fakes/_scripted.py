"""A tool that does what a declared ``Behaviour`` says: the executable half of the model's catalog."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel

from toolproof.spec import (
    ContentPart,
    CrashPoint,
    JsonObject,
    ToolExecutionContext,
    ToolFailure,
    ToolResult,
    crash_now,
)
from toolproof.spec.model import RAISED_TEXT, STRUCTURES, ModelTool
from toolproof.spec.model.d02 import PROBED_SCOPES

from ._tools import FakeTool
from ._world import World


class ScriptedToolError(RuntimeError):
    """What a scripted tool raises when its behaviour says ``raise``."""


class ScriptedTool(FakeTool):
    """Executes ``tool.behaviour`` under ``tool.spec``; every execution, effect, start and end lands in ``world``."""

    def __init__(
        self, world: World, tool: ModelTool, crash: tuple[CrashPoint, tuple[str, int, str]] | None = None
    ) -> None:
        """``crash``: die (SimulatedCrash) at that point inside step 10 of the first execution of the call named
        (run, step, call_id): before the mark, after it, or after the effect, before returning."""
        super().__init__(world, tool.spec.name)
        self._spec = tool.spec
        self.behaviour = tool.behaviour
        self.crash = crash

    def _die_at(self, point: CrashPoint, context: ToolExecutionContext) -> None:
        if self.crash is None or self.crash[0] is not point:
            return
        i = context.identity
        if (i.run_id, i.step_number, i.call_id) == self.crash[1]:
            self.crash = None
            crash_now("raise")

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        call_id = context.identity.call_id
        self.world.observations.setdefault("identities", []).append(context.identity)
        # What the context hands over, read by the tool itself: the context (walked by the judge, D2.1, D2.2, D2.6)
        # and what its resolver gives for every probed scope (D2.5).
        resolved = {scope: await context.credential_resolver.resolve(scope) for scope in PROBED_SCOPES}
        self.world.observations.setdefault("contexts", []).append((self.spec, context, resolved))
        self.world.order.append(("start", call_id))
        i = context.identity
        during = self.world.during.pop((i.run_id, i.step_number, i.call_id), None)
        try:
            if during is not None:
                await during()
            return await self._act(arguments, context)
        finally:
            # Also when cut off at the deadline: the execution ends when its task does.
            self.world.order.append(("end", call_id))

    async def _write_artifacts(self, context: ToolExecutionContext) -> list[Any]:
        """The behaviour's artifacts through the writer, one after another or all started at once; the references in
        the behaviour's order either way."""
        b, writer = self.behaviour, context.artifact_writer
        if not b.artifacts_at_once:
            return [await writer.write(name, text.encode()) for name, text in b.artifacts]
        refs: list[Any] = [None] * len(b.artifacts)

        async def one(index: int, name: str, data: bytes) -> None:
            refs[index] = await writer.write(name, data)

        async with anyio.create_task_group() as group:
            for index, (name, text) in enumerate(b.artifacts):
                group.start_soon(one, index, name, text.encode())
        return refs

    async def _act(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        b = self.behaviour
        await anyio.lowlevel.checkpoint()  # A checkpoint: members run concurrently would interleave here.
        refs = await self._write_artifacts(context)
        self._die_at(CrashPoint.BEFORE_WATERMARK, context)
        if b.mark:
            await context.mark_effect_sent()
            self._die_at(CrashPoint.AFTER_WATERMARK, context)
        if b.effect:
            self.world.leave_mark(self.spec.name, arguments, context)
        self._die_at(CrashPoint.AFTER_EFFECT, context)
        ending = b.ending_at(context.identity.attempt)
        if ending == "raise":
            raise ScriptedToolError(RAISED_TEXT)
        if ending == "overrun":
            await anyio.sleep_forever()
        if ending != "ok":
            return ToolResult(ok=False, failure=ToolFailure(kind=ending, detail=b.detail))
        structure = STRUCTURES[b.structure]
        return ToolResult(
            ok=True,
            content=[ContentPart(text=text, trust=label) for text, label in b.parts],
            structured=dict(structure) if structure is not None else None,
            artifacts=refs,
            trust=b.result_trust,
        )
