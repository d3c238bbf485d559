"""The reference store's tables (sqlmodel): ``tool_invocations``, ``tool_events``, ``tool_metrics``, and for MCP
``mcp_catalog_history`` and ``mcp_session_pins``; plus the canonical JSON every stored payload uses."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Enum, Index, Table, UniqueConstraint
from sqlmodel import Field, SQLModel

from toolproof.spec import ReasonCode, TrustLabel

TRUST_LABEL = Enum(
    TrustLabel,
    native_enum=False,
    create_constraint=False,
    values_callable=lambda labels: [label.value for label in labels],
)
"""Column type of a trust label: stored as its value (the text it always had), loaded as the enum."""


class InvocationTable(SQLModel, table=True):
    """One row per invocation (the ADR's ``tool_invocations``)."""

    __tablename__ = "tool_invocations"
    # The breaker's look-up (step 4) by run and call hash: a run's rows are not scanned for every call.
    __table_args__ = (Index("ix_tool_invocations_run_id_call_hash", "run_id", "call_hash"),)

    seq: int | None = Field(default=None, primary_key=True)
    invocation_id: str = Field(unique=True, index=True)
    tenant: str
    run_id: str = Field(index=True)
    step_number: int
    call_id: str
    tool_name: str
    tool_version: str | None = None
    attempt: int = 0
    idempotency_key: str = Field(unique=True)
    call_hash: str = Field(default="", index=True)
    arguments_json: str
    status: str
    reason_code: str | None = None
    decision: str | None = None
    origin_trust: TrustLabel = Field(sa_type=TRUST_LABEL)
    argument_trust: TrustLabel = Field(sa_type=TRUST_LABEL)
    effect_sent_at: float | None = None
    lease_owner: str | None = None
    lease_expires_at: float | None = None
    suspended_at: float | None = None
    hold_expires_at: float | None = None
    control_answer: str | None = None
    """The run's answer to a resumed control call, committed with its claim so a recovering worker has it."""
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    disposition_json: str | None = None


class EventTable(SQLModel, table=True):
    """Tool events: classification only, never payload."""

    __tablename__ = "tool_events"

    seq: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(index=True)
    invocation_id: str
    kind: str
    status: str | None = None
    reason_code: str | None = None
    data_json: str = "{}"
    created_at: float


class MetricTable(SQLModel, table=True):
    """Counters that survive a restart."""

    __tablename__ = "tool_metrics"

    name: str = Field(primary_key=True)
    value: int = 0


class CatalogHistoryTable(SQLModel, table=True):
    """Decision 9's catalog history: every change the MCP adapter saw, in order."""

    __tablename__ = "mcp_catalog_history"

    seq: int | None = Field(default=None, primary_key=True)
    server_id: str = Field(index=True)
    kind: str
    observed_at: float
    remote_name: str | None = None
    registered_name: str | None = None
    definition_sha256: str | None = None


class SessionPinTable(SQLModel, table=True):
    """What a session advertised, pinned when it started (decision 9; ADR-0020's pin extended to MCP)."""

    __tablename__ = "mcp_session_pins"
    __table_args__ = (UniqueConstraint("run_id", "kind", "name"),)

    seq: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(index=True)
    kind: str
    """``tool`` or ``skill``."""
    name: str
    server_id: str
    remote_name: str | None = None
    definition_sha256: str
    body_json: str
    """The pinned ToolSpec (tool) or Skill (skill), as JSON."""
    as_of_seq: int


@dataclass(frozen=True, slots=True)
class CatalogRow:
    """One ``mcp_catalog_history`` row without the ORM: what the adapter records and reads back in bulk.

    A catalog of thousands of tools makes thousands of rows at once; an ORM object costs ~100 µs to build.
    """

    server_id: str
    kind: str
    observed_at: float
    remote_name: str | None = None
    registered_name: str | None = None
    definition_sha256: str | None = None
    seq: int | None = None
    """None until stored."""


@dataclass(frozen=True, slots=True)
class PinRow:
    """One ``mcp_session_pins`` row without the ORM: what a session pin writes and reads back in bulk."""

    run_id: str
    kind: str
    name: str
    server_id: str
    definition_sha256: str
    body_json: str
    as_of_seq: int
    remote_name: str | None = None
    seq: int | None = None
    """None until stored."""


def column_values(row: object, table: Table) -> dict[str, Any]:
    """The column values of ``row`` (a table object or its row dataclass) for a Core insert; an unset ``seq`` is left
    to the database."""
    values = {column.name: getattr(row, column.name) for column in table.columns}
    if values.get("seq", 0) is None:
        del values["seq"]
    return values


def dump_json(value: Any) -> str:
    """Canonical JSON text (sorted members, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def reason_or_none(value: str | None) -> ReasonCode | None:
    """Parse a stored reason code."""
    return ReasonCode(value) if value is not None else None
