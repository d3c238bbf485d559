"""Witnesses of decisions 17 (the bridge) and 18 (storage)."""

from __future__ import annotations

import hashlib
import uuid

from sqlalchemy import Column, Integer, MetaData, Table

from toolproof.reference.hooks import Bridge, Pipeline, bridge_call_id, dump_json
from toolproof.spec import ProposedCall, ScriptRequest, StepRequest, Success

from ._registry import outside_the_pipeline, witness


class _DirectBridge(Bridge):
    """Calls tools straight from the bridge: no row, no key, no policy."""

    async def direct(self, step: StepRequest, call: ProposedCall) -> Success:
        found = self.pipeline.registry.resolve(call.tool_name)
        assert found is not None
        return await outside_the_pipeline(self.pipeline, step, call, found)


class _BypassingPipeline(Pipeline):
    async def run_call(self, request: StepRequest, call: ProposedCall):  # type: ignore[no-untyped-def]
        if call.call_id.startswith("script-"):
            bridge = _DirectBridge(self)
            return await bridge.direct(request, call)
        return await super().run_call(request, call)


@witness("bridge_bypasses_pipeline", ("D17.1",), "the bridge calls tools directly instead of re-entering the pipeline")
class _BridgeBypassesPipeline(_BypassingPipeline):
    pass


class _RandomIds(Bridge):
    def call_id(self, request: ScriptRequest, digest: str, ordinal: int) -> str:
        return f"script-{uuid.uuid4().hex[:16]}-{ordinal}"


@witness("random_call_ids", ("D17.2", "D17.3"), "the bridge draws call ids from a random source")
class _RandomCallIds(Pipeline):
    bridge_class = _RandomIds


class _FreshIdsOnRerun(Bridge):
    def call_id(self, request: ScriptRequest, digest: str, ordinal: int) -> str:
        # Salted with how much the run already recorded: stable within a run of the script, new on re-execution.
        salt = len(self.pipeline.store.invocations(request.run_id)) if ordinal == 1 else self.salt
        self.salt = salt
        return bridge_call_id(hashlib.sha256(f"{salt}{digest}".encode()).hexdigest(), ordinal)

    salt = 0


@witness("fresh_ids_on_rerun", ("D17.4", "D17.6"), "re-executes a script under new call ids, repeating completed calls")
class _FreshIdsOnRerunPipeline(Pipeline):
    bridge_class = _FreshIdsOnRerun


class _Overwrites(Bridge):
    def divergence(self, request: ScriptRequest, call: ProposedCall, ordinal: int) -> str:
        recorded = self.pipeline.store.by_call(request.run_id, request.step_number, call.call_id)
        if recorded is not None and recorded.arguments_json != dump_json(call.arguments):
            self.pipeline.store.update(
                recorded.invocation_id,
                {"arguments_json": dump_json(call.arguments), "status": "RECORDED", "call_id": call.call_id + "-old"},
            )
        return ""


@witness("overwrites_on_divergence", ("D17.5",), "lets a diverging replay overwrite and re-run the recorded call")
class _OverwritesOnDivergence(Pipeline):
    bridge_class = _Overwrites


@witness("registry_snapshots", ("D18.1",), "keeps a tool_registry_snapshots table")
class _RegistrySnapshots(Pipeline):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        metadata = MetaData()
        Table("tool_registry_snapshots", metadata, Column("id", Integer, primary_key=True))
        metadata.create_all(self.store.engine)
