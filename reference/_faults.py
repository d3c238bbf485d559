"""Store faults on demand: the fault plan of ``InstanceConfig.fault``, made where the database would fail.

The pipeline says which persistence point a write belongs to (``FaultInjector.at``, a context variable, so the
calls of a parallel batch each carry their own); the store asks ``due`` inside each write's transaction, after
its statements ran and before it commits, and fails the way that kind of fault fails at the driver: an
``OperationalError`` for a raised error or a lock that timed out, a closed (SQLite) or invalidated (PostgreSQL)
connection for a lost one. The store turns every such failure into ``spec.StoreFault``.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import ParamSpec, TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, OperationalError

from toolproof.spec import FaultKind, FaultPlan, FaultPoint, StoreFault

_ARMED: ContextVar[tuple[FaultPoint, str] | None] = ContextVar("toolproof_fault_point", default=None)

_MESSAGES = {
    FaultKind.ERROR: "disk I/O error",
    FaultKind.BUSY: "database is locked",
    FaultKind.CONNECTION_LOST: "the connection to the database was lost",
}
"""What the database says for each kind (SQLite's words for an I/O error and a lock it gave up on)."""


class FaultInjector:
    """The instance's fault plan and where it stands: not yet fired, fired once, or the store down for good."""

    def __init__(self, plan: FaultPlan | None) -> None:
        self.plan = plan
        self.fired = False
        self.down = False

    @contextmanager
    def at(self, point: FaultPoint, call_id: str) -> Iterator[None]:
        """The writes inside belong to ``point`` of call ``call_id``."""
        token = _ARMED.set((point, call_id))
        try:
            yield
        finally:
            _ARMED.reset(token)

    def due(self) -> FaultKind | None:
        """The kind of fault this write meets now, or None; a plan fires once, and a store that does not return
        fails every write after it."""
        plan = self.plan
        if plan is None:
            return None
        if self.down:
            return plan.kind
        armed = _ARMED.get()
        if self.fired or armed is None:
            return None
        point, call_id = armed
        if point is not plan.point or (plan.call_id is not None and plan.call_id != call_id):
            return None
        self.fired, self.down = True, not plan.store_returns
        return plan.kind

    def fail_sqlite(self, connection: sqlite3.Connection) -> None:
        """Fail the open transaction of a driver connection if a fault is due (a lost one closes it)."""
        kind = self.due()
        if kind is None:
            return
        if kind is FaultKind.CONNECTION_LOST:
            connection.close()  # What the server's end going away leaves: nothing more runs on it.
            raise sqlite3.ProgrammingError(_MESSAGES[kind])
        raise sqlite3.OperationalError(_MESSAGES[kind])

    def fail_core(self, connection: Connection) -> None:
        """Fail the open transaction of an engine connection if a fault is due (a lost one is invalidated)."""
        kind = self.due()
        if kind is None:
            return
        lost = kind is FaultKind.CONNECTION_LOST
        if lost:
            connection.invalidate()
        raise OperationalError("COMMIT", None, Exception(_MESSAGES[kind]), connection_invalidated=lost)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def typed_faults(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """A store method whose database failures reach the pipeline as ``spec.StoreFault`` (a taken key stays
    ``DuplicateKey``): the transaction was rolled back, and the store serves the next call."""

    @functools.wraps(method)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(*args, **kwargs)
        except (sqlite3.Error, DBAPIError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StoreFault(f"the store failed {method.__name__}: {first}") from exc

    return run
