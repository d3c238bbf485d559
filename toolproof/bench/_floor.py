"""The floor of ``toolproof bench``: the reference's design on plain ``sqlite3``, the yardstick of its efficiency.

Per call it does what the design requires and nothing else: the same tables (their DDL compiled
from the reference's sqlmodel metadata), the same statements in the same committed transactions
under the same PRAGMAs (WAL + FULL), the same idempotency key and call hash, the input schema
check, the tool run under its deadline, the same pydantic validation of the tool's result and the
same disposition written as JSON. No ORM, no connection pool, no task group: one driver
connection, statements prepared once. It runs every call straight through the happy path (a
call it cannot finish as the reference would is a ``HarnessError``), so it is the limit of this
design in Python, not a second pipeline.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import jsonschema
from anyio.from_thread import BlockingPortal, start_blocking_portal
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.schema import CreateIndex, CreateTable
from sqlmodel import SQLModel

from toolproof.fakes import FakeClock
from toolproof.reference.hooks import (
    DISPOSITION,
    CancellationSignal,
    ContextParts,
    EventTable,
    ExecutionContext,
    FileArtifactWriter,
    InvocationTable,
    ScopedCredentials,
    dump_json,
    idempotency_key,
)
from toolproof.spec import (
    Budget,
    Clock,
    EventKind,
    HarnessError,
    IdempotencyClass,
    Identity,
    InstanceConfig,
    InvocationStatus,
    Metric,
    ProposedCall,
    StepRequest,
    Success,
    Tool,
    ToolResult,
    TrustLabel,
    lowest_trust,
)
from toolproof.spec import Envelope as _Envelope
from toolproof.spec import call_hash as spec_call_hash

from ._pipeline import Sample
from ._sqlite import settings_of

_SQLITE = sqlite_dialect.dialect()
_INVOCATIONS = SQLModel.metadata.tables[InvocationTable.__tablename__]
_EVENTS = SQLModel.metadata.tables[EventTable.__tablename__]
_METRICS = "tool_metrics"
_RETURNING = "RETURNING run_id, status, reason_code"
_STORE_PRAGMAS = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", "PRAGMA busy_timeout=10000")
"""What the reference store runs on every new connection (``reference/_store.py``)."""


def schema_ddl() -> list[str]:
    """CREATE TABLE and CREATE INDEX for every table of the reference's metadata, compiled for SQLite."""
    statements: list[str] = []
    for table in SQLModel.metadata.sorted_tables:
        statements.append(str(CreateTable(table).compile(dialect=_SQLITE)).strip())
        statements.extend(str(CreateIndex(index).compile(dialect=_SQLITE)).strip() for index in table.indexes)
    return statements


def _insert(columns: Sequence[str], table: str) -> str:
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"


def _update(columns: Sequence[str], where: str) -> str:
    assignments = ", ".join(f"{name}=?" for name in columns)
    return f"UPDATE {_INVOCATIONS.name} SET {assignments} WHERE {where} {_RETURNING}"


_ROW_COLUMNS = tuple(c.name for c in _INVOCATIONS.columns if c.name != "seq")
_EVENT_COLUMNS = tuple(c.name for c in _EVENTS.columns if c.name != "seq")
_CLAIM_COLUMNS = ("status", "attempt", "lease_owner", "lease_expires_at", "started_at", "suspended_at")
_FINISH_COLUMNS = ("status", "reason_code", "finished_at", "lease_owner", "lease_expires_at", "disposition_json")
SQL = {
    "by_key": f"SELECT * FROM {_INVOCATIONS.name} WHERE idempotency_key = ?",
    "identical": f"SELECT * FROM {_INVOCATIONS.name} WHERE run_id = ? AND call_hash = ?",
    "record": _insert(_ROW_COLUMNS, _INVOCATIONS.name),
    "event": _insert(_EVENT_COLUMNS, _EVENTS.name),
    "claim": _update(_CLAIM_COLUMNS, "invocation_id = ? AND status = ? AND lease_owner IS NULL"),
    "mark": f"UPDATE {_INVOCATIONS.name} SET effect_sent_at=? WHERE invocation_id = ? AND effect_sent_at IS NULL",
    "finish": _update(_FINISH_COLUMNS, "invocation_id = ?"),
    "metric": f"INSERT INTO {_METRICS} (name, value) VALUES (?, 1) "
    f"ON CONFLICT (name) DO UPDATE SET value = {_METRICS}.value + 1",
}
"""The statements the floor runs: the ones the reference's hot path runs, column lists taken from the metadata."""


class FloorPipeline:
    """The happy path of the fourteen steps over one ``sqlite3`` connection to ``path``."""

    def __init__(self, path: Path, tools: Sequence[Tool], config: InstanceConfig, clock: Clock) -> None:
        self.path = path
        self.config = config
        self.clock = clock
        self.tools = {tool.spec.name: tool for tool in tools}
        self.validators = {
            name: jsonschema.validators.validator_for(tool.spec.input_schema)(tool.spec.input_schema)
            for name, tool in self.tools.items()
        }
        self.commits = 0
        """Transactions that committed a write."""
        self.worker_id = "floor-worker"
        self._marked = False
        self.connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        for pragma in _STORE_PRAGMAS:
            self.connection.execute(pragma)
        for statement in schema_ddl():
            self.connection.execute(statement.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1))

    def close(self) -> None:
        """Close the connection."""
        self.connection.close()

    def _transaction(self, *statements: tuple[str, Sequence[Any]]) -> list[Any]:
        """One committed transaction; the first row each statement returned (None when it returned none)."""
        connection = self.connection
        connection.execute("BEGIN")
        try:
            returned = [connection.execute(sql, params).fetchone() for sql, params in statements]
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        self.commits += 1
        return returned

    def _events(self, run_id: str, invocation_id: str, kind: EventKind, found: Any) -> tuple[str, Sequence[Any]]:
        values = {
            "run_id": run_id,
            "invocation_id": invocation_id,
            "kind": kind.value,
            "status": found[1] if found else None,
            "reason_code": found[2] if found else None,
            "data_json": "{}",
            "created_at": time.time(),
        }
        return SQL["event"], [values[name] for name in _EVENT_COLUMNS]

    async def call(self, request: StepRequest, call: ProposedCall) -> Success:
        """One call through the design's happy path; HarnessError where the reference would not succeed."""
        tool = self.tools[call.tool_name]
        spec = tool.spec
        # 1. resolve: key and hash.
        key = idempotency_key(
            tenant=request.tenant,
            run_id=request.run_id,
            step_number=request.step_number,
            call_id=call.call_id,
            tool_name=call.tool_name,
            tool_version=spec.version,
            arguments=call.arguments,
        )
        call_hash = spec_call_hash(call.tool_name, call.arguments)
        # 2. validate.
        if not self.validators[spec.name].is_valid(call.arguments):
            raise HarnessError(f"floor: arguments of {call.call_id} do not match {spec.name}'s input schema")
        # 3. label.
        labels = {item.id: item.trust for item in request.context}
        origin = lowest_trust(*labels.values())
        per_argument = [
            lowest_trust(
                *(labels.get(source, TrustLabel.EXTERNAL_UNTRUSTED) for source in call.provenance.get(name, []))
            )
            for name in call.arguments
        ]
        argument = min(per_argument) if per_argument else origin
        # 4. guard: the key, then the breaker's look-up.
        connection = self.connection
        if connection.execute(SQL["by_key"], (key,)).fetchone() is not None:
            raise HarnessError(f"floor: {call.call_id} is a replay")
        if connection.execute(SQL["identical"], (request.run_id, call_hash)).fetchall():
            raise HarnessError(f"floor: {call.call_id} repeats an identical call")
        # 5. decide (the bench's calls are allowed: they carry USER provenance).
        if spec.consequential and min(origin, argument) is TrustLabel.EXTERNAL_UNTRUSTED:
            raise HarnessError(f"floor: {call.call_id} would be held for approval")
        # 6. record.
        invocation_id = uuid.uuid4().hex
        now = self.clock.now()
        row = {
            "invocation_id": invocation_id,
            "tenant": request.tenant,
            "run_id": request.run_id,
            "step_number": request.step_number,
            "call_id": call.call_id,
            "tool_name": spec.name,
            "tool_version": spec.version,
            "attempt": 0,
            "idempotency_key": key,
            "call_hash": call_hash,
            "arguments_json": dump_json(call.arguments),
            "status": InvocationStatus.RECORDED.value,
            "decision": "allow",
            "origin_trust": origin.value,
            "argument_trust": argument.value,
            "created_at": now,
        }
        self._transaction(
            (SQL["record"], [row.get(name) for name in _ROW_COLUMNS]),
            self._events(request.run_id, invocation_id, EventKind.REQUESTED, (None, row["status"], None)),
        )
        # 7. hold: nothing to hold. 8. claim: compare-and-set the lease, the event from what it returned.
        claimed = self._claim(request.run_id, invocation_id, now)
        # 9. prepare.
        parts = ContextParts(
            identity=Identity(
                tenant=request.tenant,
                run_id=request.run_id,
                step_number=request.step_number,
                call_id=call.call_id,
                invocation_id=invocation_id,
                tool_name=spec.name,
                tool_version=spec.version,
                attempt=claimed,
                idempotency_key=key,
            ),
            budget=Budget(max_output_bytes=self.config.max_output_bytes),
            deadline=time.time() + spec.deadline_s,
            target=self.config.targets.get(spec.name),
            workspace=Path(self.config.workspace),
            artifact_writer=FileArtifactWriter(Path(self.config.store_dir) / "artifacts" / invocation_id / "1"),
            credential_resolver=ScopedCredentials(spec.required_scopes, self.config.credentials),
            cancellation=CancellationSignal(),
            mark=lambda: self._mark(invocation_id),
        )
        # 10. execute under the deadline.
        raw: Any = None
        with anyio.move_on_after(max(0.0, parts.deadline - time.time())):
            raw = await tool.execute(dict(call.arguments), ExecutionContext(parts))
        # 11. normalize: the tool's result revalidated, the disposition built.
        result = ToolResult.model_validate(raw.model_dump())
        if not result.ok or result.structured is not None:
            raise HarnessError(f"floor: {spec.name} did not return plain content")
        floor = spec.output_trust if result.trust is None else min(spec.output_trust, result.trust)
        disposition = Success(
            invocation_id=invocation_id,
            content=[
                _Envelope(
                    trust=floor if part.trust is None else min(floor, part.trust), source=spec.name, text=part.text
                )
                for part in result.content
            ],
            structured=None,
            artifacts=list(result.artifacts),
        )
        # 12. excerpt: under the limit.
        if 4 * sum(len(e.text) for e in disposition.content) > self.config.max_output_bytes:
            raise HarnessError(f"floor: {spec.name}'s output needs an excerpt")
        # 13. complete: terminal row, event and counter in one transaction.
        finish = [
            InvocationStatus.SUCCEEDED.value,
            None,
            self.clock.now(),
            None,
            None,
            DISPOSITION.dump_json(disposition).decode(),
        ]
        metrics = [Metric.INVOCATIONS.value]
        if spec.consequential and spec.idempotency is not IdempotencyClass.IDEMPOTENT and not self._marked:
            metrics.append(Metric.EFFECT_UNMARKED.value)
        connection.execute("BEGIN")
        try:
            found = connection.execute(SQL["finish"], [*finish, invocation_id]).fetchone()
            sql, params = self._events(request.run_id, invocation_id, EventKind.COMPLETED, found)
            connection.execute(sql, params)
            for name in metrics:
                connection.execute(SQL["metric"], (name,))
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        self.commits += 1
        self._marked = False
        # 14. publish.
        return disposition

    def _claim(self, run_id: str, invocation_id: str, now: float) -> int:
        connection = self.connection
        attempt = 1
        values = [InvocationStatus.RUNNING.value, attempt, self.worker_id, now + self.config.lease_s, now, None]
        connection.execute("BEGIN")
        try:
            found = connection.execute(
                SQL["claim"], [*values, invocation_id, InvocationStatus.RECORDED.value]
            ).fetchone()
            if found is None:
                raise HarnessError(f"floor: the claim of {invocation_id} found no recorded row")
            sql, params = self._events(run_id, invocation_id, EventKind.STARTED, found)
            connection.execute(sql, params)
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        self.commits += 1
        return attempt

    async def _mark(self, invocation_id: str) -> None:
        self._transaction((SQL["mark"], (self.clock.now(), invocation_id)))
        self._marked = True


FLOOR_NOTE = (
    "floor: the reference's design on plain sqlite3 (toolproof/bench/_floor.py): the same tables from the "
    "same metadata, the same statements and transactions under WAL + FULL, the same key, hash, schema check, "
    "result validation and disposition JSON, the same tool objects; one driver connection, no ORM, no pool, "
    "no task group. efficiency = floor ms per call ÷ reference ms per call, pairwise per repetition."
)
"""What the floor is, for the table and bench.json."""


class FloorRig:
    """The floor in its own event loop on a portal thread, timed like ``ReferenceRig``.

    Args:
        directory: Fresh folder for the floor's store and workspace.
        tools: The tools the reference rig registers (the floor calls the same objects).
    """

    def __init__(self, directory: Path, tools: Sequence[Tool]) -> None:
        workspace = directory / "workspace"
        workspace.mkdir(parents=True, exist_ok=True)
        self.config = InstanceConfig(store_dir=directory / "store", workspace=workspace)
        self.path = directory / "floor.sqlite3"
        self.tools = tools
        self.pipeline: FloorPipeline | None = None
        self._stack = ExitStack()
        self._portal: BlockingPortal | None = None

    def __enter__(self) -> FloorRig:
        self._portal = self._stack.enter_context(start_blocking_portal())
        self.pipeline = FloorPipeline(self.path, self.tools, self.config, FakeClock())
        self._stack.callback(self.pipeline.close)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def settings(self) -> dict[str, str]:
        """Journal mode and synchronous level of the floor's connection, read back."""
        assert self.pipeline is not None
        return settings_of(self.pipeline.connection)

    def run(self, requests: list[StepRequest]) -> Sample:
        """Submit ``requests`` (one call each) one after another, timed inside the floor's loop."""
        assert self._portal is not None
        return self._portal.call(self.timed, requests)

    async def timed(self, requests: list[StepRequest]) -> Sample:
        """Run ``requests`` in the current event loop, timed."""
        pipeline = self.pipeline
        assert pipeline is not None
        before = pipeline.commits
        started = time.perf_counter()
        for request in requests:
            for call in request.calls:
                await pipeline.call(request, call)
        seconds = time.perf_counter() - started
        calls = sum(len(request.calls) for request in requests)
        return Sample(seconds=seconds, calls=calls, commits=pipeline.commits - before)
