"""toolproof-minimal: a small pipeline that claims only toolproof's ``core`` profile.

The example of how to plug a pipeline into toolproof. ``make()`` is the zero-argument
factory registered under the ``toolproof.implementations`` entry-point group; the
harness calls ``open(config, tools, clock)`` and talks to the instance through
``toolproof.spec.Instance``. What the sample leaves out, and so fails, is listed with
a reason in ``expectations.toml`` next to this package.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from toolproof.spec import Clock, Instance, InstanceConfig, Profile, Tool

from ._pipeline import MinimalInstance, registry
from ._store import Store

__all__ = ["MinimalImplementation", "MinimalInstance", "make"]


class MinimalImplementation:
    """The implementation the harness sees: a name, the profiles it claims, and ``open``."""

    name = "minimal"
    profiles: frozenset[Profile] = frozenset({Profile.CORE})

    def open(
        self, config: InstanceConfig, tools: Sequence[Tool], clock: Clock
    ) -> AbstractAsyncContextManager[Instance]:
        """Start an instance over ``config.store_dir``; ConfigurationError refuses the registry."""
        return _running(config, tools, clock)


@asynccontextmanager
async def _running(config: InstanceConfig, tools: Sequence[Tool], clock: Clock) -> AsyncIterator[Instance]:
    found = registry(tools)  # Before the store opens: a refused registry leaves nothing behind.
    store = Store(config.store_dir / "minimal.sqlite3")
    try:
        yield MinimalInstance(config, found, clock, store)
    finally:
        store.close()


def make() -> MinimalImplementation:
    """The entry point: ``toolproof run --impl minimal`` (installed) or ``--impl toolproof_minimal:make``."""
    return MinimalImplementation()
