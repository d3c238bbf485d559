"""The reference behind the implementation port."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

from toolproof.spec import (
    Advertisement,
    CatalogChange,
    Clock,
    Disposition,
    Event,
    InstanceConfig,
    InvocationRow,
    InvocationStatus,
    Profile,
    ScriptRequest,
    ScriptRun,
    StepRequest,
    Tool,
)

from ._pipeline import Pipeline
from ._store import Store
from ._tables import reason_or_none


class ReferenceInstance:
    """One worker of the reference pipeline over its store."""

    def __init__(self, pipeline: Pipeline) -> None:
        self._pipeline = pipeline
        self._store = pipeline.store
        self._clock = pipeline.clock

    @property
    def store(self) -> Store:
        """The instance's store, for measuring it (``toolproof bench`` counts the commits on its engine)."""
        return self._store

    async def submit(self, step: StepRequest) -> list[Disposition]:
        """Run the batch through the pipeline."""
        return await self._pipeline.run_step(step)

    async def resolve_approval(self, invocation_id: str, approved: bool) -> Disposition:
        """Answer an approval hold."""
        return await self._pipeline.resolve_approval(invocation_id, approved)

    async def resume(self, invocation_id: str, answer: str) -> Disposition:
        """Resume a suspended control call."""
        return await self._pipeline.resume(invocation_id, answer)

    async def sweep(self) -> list[Disposition]:
        """Expire holds and recover orphans."""
        return await self._pipeline.sweep()

    async def run_script(self, request: ScriptRequest) -> ScriptRun:
        """Run a script through the bridge."""
        return await self._pipeline.run_script(request)

    async def advertise(self, run_id: str) -> Advertisement:
        """The session pin of ``run_id`` (pinned now if the session has not started)."""
        assert self._pipeline.mcp is not None  # Invariant: every reference instance has an adapter.
        return await self._pipeline.mcp.advertise(run_id)

    async def catalog_history(self) -> list[CatalogChange]:
        """The catalog history of the store."""
        assert self._pipeline.mcp is not None
        return self._pipeline.mcp.history()

    async def store_tables(self) -> list[str]:
        """Tables of the store."""
        return self._store.tables()

    async def invocations(self, run_id: str) -> list[InvocationRow]:
        """Rows of ``run_id`` read back from the store."""
        return [
            InvocationRow(
                invocation_id=r.invocation_id,
                tenant=r.tenant,
                run_id=r.run_id,
                step_number=r.step_number,
                call_id=r.call_id,
                tool_name=r.tool_name,
                tool_version=r.tool_version,
                attempt=r.attempt,
                idempotency_key=r.idempotency_key,
                status=InvocationStatus(r.status),
                reason_code=reason_or_none(r.reason_code),
                origin_trust=r.origin_trust,
                argument_trust=r.argument_trust,
                effect_sent_at=r.effect_sent_at,
                suspended=r.suspended_at is not None,
                arguments=json.loads(r.arguments_json),
            )
            for r in self._store.invocations(run_id)
        ]

    async def events(self, run_id: str) -> list[Event]:
        """Events of ``run_id`` read back from the store."""
        return [
            Event(
                seq=e.seq or 0,
                kind=e.kind,
                run_id=e.run_id,
                invocation_id=e.invocation_id,
                status=InvocationStatus(e.status) if e.status else None,
                reason_code=reason_or_none(e.reason_code),
                data=json.loads(e.data_json),
            )
            for e in self._store.events(run_id)
        ]

    async def metrics(self) -> dict[str, int]:
        """Counters from the store."""
        return self._store.metrics()


class ReferenceImplementation:
    """The reference pipeline, registered under the entry point ``reference``.

    Args:
        name: Name shown in reports.
        pipeline_class: The pipeline to run; witnesses pass a deliberately defective one.
    """

    def __init__(self, name: str = "reference", pipeline_class: type[Pipeline] = Pipeline) -> None:
        self._name = name
        self._pipeline_class = pipeline_class

    @property
    def name(self) -> str:
        """Name shown in reports."""
        return self._name

    @property
    def profiles(self) -> frozenset[Profile]:
        """Claimed profiles: every pipeline profile (contract rules bind tools, not pipelines).

        A rule no scenario exercises yet still reads not-covered, never pass.
        """
        return frozenset(Profile) - {Profile.CONTRACT}

    def open(
        self, config: InstanceConfig, tools: Sequence[Tool], clock: Clock
    ) -> AbstractAsyncContextManager[ReferenceInstance]:
        """Register ``tools`` (ConfigurationError on a bad registry) and open the store."""
        return self._open(config, tools, clock)

    @asynccontextmanager
    async def _open(
        self, config: InstanceConfig, tools: Sequence[Tool], clock: Clock
    ) -> AsyncIterator[ReferenceInstance]:
        registry = self._pipeline_class.registry_class(tools)
        store = (
            Store(config.store_url, config.fault)
            if config.store_url
            else Store.in_directory(Path(config.store_dir), config.fault)
        )
        try:
            adapter = self._pipeline_class.mcp_class(config, store, clock)
            async with adapter.running():
                pipeline = self._pipeline_class(
                    config=config,
                    registry=registry,
                    store=store,
                    worker_id=f"worker-{uuid.uuid4().hex[:8]}",
                    clock=clock,
                    mcp=adapter,
                )
                yield ReferenceInstance(pipeline)
        finally:
            store.close()
