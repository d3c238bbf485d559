"""Pipelines with one defect the witness matrix cannot hold: the reference behind a port that misbehaves.

Each is a zero-argument factory for ``--impl helpers.fake_pipelines:NAME`` (in-process, or served by
``python -m toolproof.driver``), with ``tests/`` on the import path:

- ``undecoded_run_ids``: a driver that does not decode a run id's percent-encoded path segment: reading the rows of
  a run whose id holds a reserved character (``run-call_id|tool``) answers none;
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

from toolproof.spec import Clock, Implementation, InstanceConfig, InvocationRow, Profile, Tool, load_implementation


class _Reference:
    """The reference, under another name, with its instances and configurations passed through ``wrap``/``config``."""

    def __init__(
        self,
        name: str,
        wrap: Callable[[Any], Any] = lambda instance: instance,
        config: Callable[[InstanceConfig], InstanceConfig] = lambda config: config,
    ) -> None:
        self._impl: Implementation = load_implementation("reference")
        self._name = name
        self._wrap = wrap
        self._config = config

    @property
    def name(self) -> str:
        return self._name

    @property
    def profiles(self) -> frozenset[Profile]:
        return frozenset({Profile.CORE})

    def open(self, config: InstanceConfig, tools: Sequence[Tool], clock: Clock) -> AbstractAsyncContextManager[Any]:
        return self._open(config, tools, clock)

    @asynccontextmanager
    async def _open(self, config: InstanceConfig, tools: Sequence[Tool], clock: Clock) -> AsyncIterator[Any]:
        async with self._impl.open(self._config(config), tools, clock) as instance:
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
