"""Real store faults the harness makes in a database it owns, for any implementation that keeps the ADR's
``tool_invocations`` table in the harness's PostgreSQL schema.

- ``pg-trigger``: a trigger on ``tool_invocations`` raises on the point's write, recognised by the ADR's columns
  (a new row; ``status`` going AWAITING_APPROVAL or ``suspended_at`` set; ``status`` going RUNNING under a new
  ``lease_owner``; ``effect_sent_at`` set; ``status`` going terminal). The database rolls the transaction back.
- ``pg-terminate``: the same trigger terminates the implementation's own backend (``pg_terminate_backend``): the
  connection is lost mid-transaction.
- ``pg-lock-timeout``: a second session of the harness holds the call's row (``SELECT ... FOR UPDATE``) while the
  implementation writes it, and the implementation's session has a ``lock_timeout``: the watermark (the harness's
  tool takes the lock right before ``mark_effect_sent``) and the completion (taken after the tool's effect, held
  until the submission returns). The timeout only says when the refusal comes; the lock is held until then, so
  the verdict does not depend on it.

A trigger fires once when the store returns (a sequence counts firings: a sequence is not rolled back); when the
store stays down, it fires on the point's write and on every write after it.
"""

from __future__ import annotations

import uuid
from typing import Any

from toolproof.spec import (
    TERMINAL_STATUSES,
    FaultPoint,
    HarnessError,
    InvocationStatus,
    JsonObject,
    Tool,
    ToolExecutionContext,
    ToolResult,
    ToolSpec,
)

TABLE = "tool_invocations"
"""The ADR's table: what the triggers and the row locks name."""
LOCK_TIMEOUT_MS = 300
"""``lock_timeout`` of the implementation's sessions in ``pg-lock-timeout`` cells: when the refusal comes."""

_TERMINAL = ", ".join(f"'{status.value}'" for status in sorted(TERMINAL_STATUSES))
_WHEN: dict[FaultPoint, str] = {
    FaultPoint.RECORD: "TG_OP = 'INSERT'",
    FaultPoint.HOLD: (
        f"TG_OP = 'UPDATE' AND ((NEW.status = '{InvocationStatus.AWAITING_APPROVAL.value}'"
        f" AND OLD.status <> '{InvocationStatus.AWAITING_APPROVAL.value}')"
        " OR (NEW.suspended_at IS NOT NULL AND OLD.suspended_at IS NULL))"
    ),
    FaultPoint.CLAIM: (
        f"TG_OP = 'UPDATE' AND NEW.status = '{InvocationStatus.RUNNING.value}'"
        f" AND (OLD.status <> '{InvocationStatus.RUNNING.value}' OR NEW.lease_owner IS DISTINCT FROM OLD.lease_owner)"
    ),
    FaultPoint.WATERMARK: "TG_OP = 'UPDATE' AND NEW.effect_sent_at IS NOT NULL AND OLD.effect_sent_at IS NULL",
    FaultPoint.COMPLETE: f"TG_OP = 'UPDATE' AND NEW.status IN ({_TERMINAL}) AND OLD.status NOT IN ({_TERMINAL})",
}
"""The point's write, told apart by the ADR's columns alone."""


def _connect(url: str) -> Any:
    import psycopg  # Optional (the postgres extra); these cells run only with a database URL.

    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=5)
    except psycopg.Error as exc:
        raise HarnessError(f"PostgreSQL at {url} refused the harness's own session: {exc}") from None


class FaultTrigger:
    """A trigger on the implementation's ``tool_invocations`` that fails one point's write of one call."""

    def __init__(self, url: str, point: FaultPoint, call_id: str | None, *, terminate: bool, once: bool) -> None:
        self.url = url
        self.name = f"tp_fault_{uuid.uuid4().hex[:8]}"
        match = _WHEN[point] + ("" if call_id is None else f" AND NEW.call_id = '{call_id}'")
        fire = (
            "PERFORM pg_terminate_backend(pg_backend_pid());"
            if terminate
            else f"RAISE EXCEPTION 'toolproof: the {point.value} write is refused' USING ERRCODE = 'XX000';"
        )
        if once:
            body = f"IF {match} AND nextval('{self.name}') = 1 THEN {fire} END IF;"
        else:  # From the point's write on, every write: the sequence remembers, whatever was rolled back.
            body = f"IF {match} THEN PERFORM nextval('{self.name}'); END IF;"
            body += f" IF (SELECT is_called FROM {self.name}) THEN {fire} END IF;"
        self.sql = [
            f"CREATE SEQUENCE {self.name}",
            f"CREATE FUNCTION {self.name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {body} RETURN NEW; END $$",
            f"CREATE TRIGGER {self.name} BEFORE INSERT OR UPDATE ON {TABLE} FOR EACH ROW EXECUTE FUNCTION {self.name}()",
        ]

    def arm(self) -> None:
        """Create it (the table must exist: the implementation made it when it opened)."""
        with _connect(self.url) as connection:
            for statement in self.sql:
                connection.execute(statement)

    def fired(self) -> bool:
        """Whether it met the point's write (the sequence moved)."""
        with _connect(self.url) as connection:
            row = connection.execute(f"SELECT is_called FROM {self.name}").fetchone()
        return bool(row and row[0])

    def disarm(self) -> None:
        """Drop it: the store is back."""
        with _connect(self.url) as connection:
            connection.execute(f"DROP TRIGGER IF EXISTS {self.name} ON {TABLE}")
            connection.execute(f"DROP FUNCTION IF EXISTS {self.name}()")


class RowHolder:
    """The harness's second session, holding one ``tool_invocations`` row locked until released."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._connection: Any = None
        self.held = 0

    def hold(self, invocation_id: str) -> None:
        """Lock the row of ``invocation_id`` in an open transaction."""
        self.release()
        connection = _connect(self.url)
        connection.autocommit = False
        found = connection.execute(
            f"SELECT 1 FROM {TABLE} WHERE invocation_id = %s FOR UPDATE", [invocation_id]
        ).fetchone()
        if found is None:
            connection.close()
            raise HarnessError(f"no {TABLE} row {invocation_id!r} to hold: is the implementation on the ADR's tables?")
        self._connection = connection
        self.held += 1

    def release(self) -> None:
        """End the transaction and the session."""
        if self._connection is not None:
            self._connection.rollback()
            self._connection.close()
            self._connection = None


class _HeldMark:
    """The tool's context, whose ``mark_effect_sent`` runs while the harness holds the call's row."""

    def __init__(self, context: ToolExecutionContext, holder: RowHolder) -> None:
        self._context, self._holder = context, holder

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)

    async def mark_effect_sent(self) -> None:
        self._holder.hold(self._context.identity.invocation_id)
        try:
            await self._context.mark_effect_sent()
        finally:
            self._holder.release()


class RowLockingTool:
    """The target tool, holding its own row at the point: around its watermark, or from its effect on."""

    def __init__(self, inner: Tool, holder: RowHolder, point: FaultPoint) -> None:
        self._inner, self._holder, self._point = inner, holder, point

    @property
    def spec(self) -> ToolSpec:
        """The inner tool's spec."""
        return self._inner.spec

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        """Run the inner tool; the row is held around its mark, or held once it returns (until released)."""
        if self._point is FaultPoint.WATERMARK:
            held: Any = _HeldMark(context, self._holder)
            return await self._inner.execute(arguments, held)
        result = await self._inner.execute(arguments, context)
        self._holder.hold(context.identity.invocation_id)
        return result


def with_lock_timeout(url: str) -> str:
    """``url`` whose sessions give up on a lock after ``LOCK_TIMEOUT_MS``."""
    return f"{url}%20-clock_timeout%3D{LOCK_TIMEOUT_MS}"
