"""Pipelines with one defect the witness matrix cannot hold: the reference behind a port that misbehaves.

Each is a zero-argument factory for ``--impl helpers.fake_pipelines:NAME`` (in-process, or served by
``python -m toolproof.driver``), with ``tests/`` on the import path:

- ``undecoded_run_ids``: a driver that does not decode a run id's percent-encoded path segment: reading the rows of
  a run whose id holds a reserved character (``run-call_id|tool``) answers none;
- ``lives_on_tool_crash``: a pipeline that catches its tool's death (a crash point inside step 10) as an
  ordinary exception, and completes the call FAILED ``tool_crashed`` instead of dying with it;
- ``memory_store``: a store that lives as long as the process: every instance of one process over one
  ``store_dir`` shares it, and a new process starts with nothing (a driver keeping its store in memory).
"""

from __future__ import annotations

import atexit
import hashlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from toolproof.spec import (
    Clock,
    Implementation,
    InstanceConfig,
    InvocationRow,
    JsonObject,
    Profile,
    SimulatedCrash,
    Tool,
    ToolExecutionContext,
    ToolSpec,
    load_implementation,
)


class _Reference:
    """The reference, under another name, with its instances and configurations passed through ``wrap``/``config``."""

    def __init__(
        self,
        name: str,
        wrap: Callable[[Any], Any] = lambda instance: instance,
        config: Callable[[InstanceConfig], InstanceConfig] = lambda config: config,
        tools: Callable[[Tool], Tool] = lambda tool: tool,
        profiles: frozenset[Profile] = frozenset({Profile.CORE}),
    ) -> None:
        self._impl: Implementation = load_implementation("reference")
        self._name = name
        self._wrap = wrap
        self._config = config
        self._tools = tools
        self._profiles = profiles

    @property
    def name(self) -> str:
        return self._name

    @property
    def profiles(self) -> frozenset[Profile]:
        return self._profiles

    def open(self, config: InstanceConfig, tools: Sequence[Tool], clock: Clock) -> AbstractAsyncContextManager[Any]:
        return self._open(config, tools, clock)

    @asynccontextmanager
    async def _open(self, config: InstanceConfig, tools: Sequence[Tool], clock: Clock) -> AsyncIterator[Any]:
        async with self._impl.open(self._config(config), [self._tools(t) for t in tools], clock) as instance:
            yield self._wrap(instance)


class _UndecodedRunIds:
    """An instance whose run reads look the run up by its id still percent-encoded."""

    def __init__(self, instance: Any) -> None:
        self._instance = instance

    def __getattr__(self, name: str) -> Any:
        return getattr(self._instance, name)

    async def invocations(self, run_id: str) -> list[InvocationRow]:
        rows: list[InvocationRow] = await self._instance.invocations(quote(run_id, safe=""))
        return rows


def undecoded_run_ids() -> Implementation:
    """The reference behind a port that reads a run's rows by its percent-encoded id."""
    return _Reference("undecoded-run-ids", wrap=_UndecodedRunIds)


class _SurvivesItsTool:
    """A tool whose death reaches the pipeline as an ordinary exception, which it survives."""

    def __init__(self, tool: Tool) -> None:
        self._tool = tool

    @property
    def spec(self) -> ToolSpec:
        return self._tool.spec

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        try:
            return await self._tool.execute(arguments, context)
        except SimulatedCrash as exc:
            raise RuntimeError("the tool died") from exc


def lives_on_tool_crash() -> Implementation:
    """The reference (core and recovery), living on when its tool dies inside step 10."""
    return _Reference(
        "lives-on-tool-crash", tools=_SurvivesItsTool, profiles=frozenset({Profile.CORE, Profile.RECOVERY})
    )


_MEMORY = Path(tempfile.mkdtemp(prefix="toolproof-memory-store-"))
atexit.register(shutil.rmtree, _MEMORY, True)


def _in_memory(config: InstanceConfig) -> InstanceConfig:
    # This process's own folder per store_dir: shared by the process's instances, gone with the process.
    where = _MEMORY / hashlib.sha256(str(config.store_dir).encode()).hexdigest()[:16]
    where.mkdir(exist_ok=True)
    return config.model_copy(update={"store_dir": where})


def memory_store() -> Implementation:
    """The reference with a store that lives only as long as its process."""
    return _Reference("memory-store", config=_in_memory)
