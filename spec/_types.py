"""The port's data types (decisions 1, 2, 11, 13): what tools return and what callers get."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from ._canonical import canonical_json
from ._enums import (
    NON_SUCCESS_STATUSES,
    IdempotencyClass,
    InvocationStatus,
    ReasonCode,
    Risk,
    SideEffect,
    ToolKind,
    ToolSource,
    TrustLabel,
)
from ._outcomes import OUTCOME_TABLE

JsonObject = dict[str, JsonValue]
"""A JSON object."""


def _object_schema() -> JsonObject:
    return {"type": "object"}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolSpec(_Frozen):
    """What the registry knows of a tool."""

    name: str
    """Registered name, ``domain.name`` in the grammar of decision 5."""
    version: str = "1"
    """tool_version; part of the idempotency key."""
    description: str = ""
    """Shown to the model."""
    kind: ToolKind = ToolKind.ACTION
    """ACTION or CONTROL."""
    source: ToolSource = ToolSource.BUILTIN
    """Where the implementation lives; decides the output-trust floor."""
    side_effect: SideEffect = SideEffect.READ_ONLY
    """Where the tool may leave a mark."""
    risk: Risk = Risk.LOW
    """Operator-assigned risk."""
    idempotency: IdempotencyClass = IdempotencyClass.IDEMPOTENT
    """What repeating the effect does."""
    required_scopes: frozenset[str] = frozenset()
    """Credential scopes the tool may resolve."""
    input_schema: JsonObject = Field(default_factory=_object_schema)
    """JSON Schema of the arguments."""
    output_schema: JsonObject | None = None
    """JSON Schema of ``ToolResult.structured``, when the tool returns structure."""
    output_trust: TrustLabel = TrustLabel.INTERNAL
    """The label of the tool's output; a result may only lower it."""
    deadline_s: float = 30.0
    """Seconds the tool may run before it is cancelled."""

    @property
    def consequential(self) -> bool:
        """Whether the tool can leave a mark outside a read (and so owes the watermark when not idempotent)."""
        return self.side_effect is not SideEffect.READ_ONLY


class ContentPart(_Frozen):
    """One piece of a tool's textual output."""

    text: str
    """The text."""
    trust: TrustLabel | None = None
    """A lower label for this part (e.g. quoted external data); never raises it."""


class ArtifactRef(_Frozen):
    """A stored blob an invocation produced."""

    name: str
    """Name the tool gave it."""
    uri: str
    """Where the implementation stored it."""
    size: int
    """Bytes."""
    sha256: str
    """Hex digest of the bytes."""


class ToolFailure(_Frozen):
    """A tool's own word that it failed; the pipeline chooses the status."""

    kind: Literal["ERROR", "TRANSIENT", "REMOTE_REJECTED", "REMOTE_UNAVAILABLE"] = "ERROR"
    """What went wrong, in the tool's words (a FailureKind)."""
    detail: str | None = None
    """Text from the remote side; delivered only inside an EXTERNAL_UNTRUSTED envelope."""


class ToolResult(_Frozen):
    """What a tool returns (decision 1). There is no status: status is the pipeline's judgement."""

    ok: bool
    """Whether the tool believes it succeeded."""
    content: list[ContentPart] = Field(default_factory=list)
    """Textual output."""
    structured: JsonObject | None = None
    """Structured output, validated against the spec's output schema."""
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    """Blobs written through the artifact writer."""
    failure: ToolFailure | None = None
    """Present exactly when ``ok`` is false."""
    trust: TrustLabel | None = None
    """A lower label for the whole output; the pipeline never lets it raise the label."""

    @model_validator(mode="after")
    def _failure_iff_not_ok(self) -> ToolResult:
        if self.ok == (self.failure is not None):
            raise ValueError(f"ok={self.ok!r} requires failure to be {'absent' if self.ok else 'present'}")
        return self


class Envelope(_Frozen):
    """A trust envelope: text delivered to the model together with its label and source."""

    trust: TrustLabel
    """Label of the text."""
    source: str
    """Who produced it: the registered name of the tool whose output it is (``tickets.create``), ``remote`` for a
    remote system's error text in ``external_detail``, and ``EXCERPT_MARKER_SOURCE`` (``x-toolproof``'s
    ``excerpt_marker_source``) for the marker an excerpt adds."""
    text: str
    """The text itself, verbatim."""


class Outcome(_Frozen):
    """The one six-field shape of every non-success disposition (decision 13)."""

    status: InvocationStatus
    """DENIED, FAILED, UNAVAILABLE or UNCERTAIN."""
    reason_code: ReasonCode
    """Stable code from the checked-in table."""
    message: str
    """The table's message for ``reason_code``; never external text."""
    retryable: bool
    """The table's retryable flag for ``reason_code``."""
    invocation_id: str
    """The invocation row this outcome completes."""
    external_detail: Envelope | None = None
    """Remote text, enveloped EXTERNAL_UNTRUSTED, or nothing."""

    @model_validator(mode="after")
    def _non_success(self) -> Outcome:
        if self.status not in NON_SUCCESS_STATUSES:
            raise ValueError(f"status={self.status!r} is not a non-success status")
        return self

    @classmethod
    def of(cls, reason: ReasonCode, invocation_id: str, external_detail: Envelope | None = None) -> Outcome:
        """The outcome the table prescribes for ``reason``."""
        entry = OUTCOME_TABLE[reason]
        return cls(
            status=entry.status,
            reason_code=reason,
            message=entry.message,
            retryable=entry.retryable,
            invocation_id=invocation_id,
            external_detail=external_detail,
        )


class Success(_Frozen):
    """The disposition of a call that succeeded."""

    status: Literal[InvocationStatus.SUCCEEDED] = InvocationStatus.SUCCEEDED
    """Always SUCCEEDED."""
    invocation_id: str
    """The invocation row."""
    content: list[Envelope] = Field(default_factory=list)
    """The output, each part in its envelope."""
    structured: JsonObject | None = None
    """Validated structured output."""
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    """Blobs the tool wrote."""


class Suspended(_Frozen):
    """The disposition of a call held at step 7 (an approval hold or a suspended control tool)."""

    status: Literal["SUSPENDED"] = "SUSPENDED"
    """Not a row status: the row keeps its status and carries the marker."""
    invocation_id: str
    """The invocation row."""
    reason: Literal["approval", "control"]
    """What it waits for."""


Disposition = Annotated[Success | Outcome | Suspended, Field(union_mode="left_to_right")]
"""What a caller gets back for one proposed call."""


class ContextItem(_Frozen):
    """One item of the context that produced a model call."""

    id: str
    """Stable id, referenced by argument provenance."""
    trust: TrustLabel
    """Its label."""
    text: str = ""
    """Its text."""


class ProposedCall(_Frozen):
    """A tool call the model proposed, with provenance carried from where it was built."""

    call_id: str
    """The model's id for the call; unique within the step."""
    tool_name: str
    """The name the model used."""
    arguments: JsonObject = Field(default_factory=dict)
    """Arguments as proposed."""
    provenance: dict[str, list[str]] = Field(default_factory=dict)
    """Top-level argument name -> ids of the context items that contributed to it; missing means unknown."""

    @field_validator("arguments")
    @classmethod
    def _arguments_are_i_json(cls, arguments: JsonObject) -> JsonObject:
        # Invariant: every call has an idempotency key and a call hash, both over the arguments' RFC 8785 form;
        # arguments without one (NaN, an integer no double holds, a lone surrogate) are refused here, naming where.
        canonical_json(arguments)
        return arguments


class StepRequest(_Frozen):
    """One model step: the calls one model call produced, and the context it saw."""

    tenant: str = "tenant-1"
    """Tenant id."""
    run_id: str
    """Run id."""
    step_number: int = Field(ge=0)
    """Shared by every call of the batch."""
    calls: list[ProposedCall]
    """Calls in proposal order."""
    context: list[ContextItem] = Field(default_factory=list)
    """Context items present in the request that produced the calls."""


class Identity(_Frozen):
    """Who and what an execution is (the context's ``identity``)."""

    tenant: str
    """Tenant id."""
    run_id: str
    """Run id."""
    step_number: int
    """Step of the call."""
    call_id: str
    """The call's id."""
    invocation_id: str
    """The invocation row."""
    tool_name: str
    """Registered name."""
    tool_version: str
    """Registered version."""
    attempt: int
    """1 for the first execution; a retry counts up; never part of the key."""
    idempotency_key: str
    """The key, for tools that hand it to an external service."""


class Budget(_Frozen):
    """What the call may spend (the context's ``budget``)."""

    max_output_bytes: int
    """Output beyond this is excerpted."""
    max_cost: float | None = None
    """Money the call may spend, when priced."""


class InvocationRow(_Frozen):
    """The observable columns of one ``tool_invocations`` row."""

    invocation_id: str
    """Primary key."""
    tenant: str
    """Tenant id."""
    run_id: str
    """Run id."""
    step_number: int
    """Step."""
    call_id: str
    """Call id."""
    tool_name: str
    """Name as resolved (or as proposed, when unknown)."""
    tool_version: str | None
    """Version when resolved."""
    attempt: int
    """Executions so far."""
    idempotency_key: str
    """The key (decision 10); the reference's is ``spec.idempotency_key``."""
    status: InvocationStatus
    """Row status."""
    reason_code: ReasonCode | None
    """Reason of a non-success terminal status."""
    origin_trust: TrustLabel
    """Minimum label over the request's context."""
    argument_trust: TrustLabel
    """Minimum label over the arguments' provenance."""
    effect_sent_at: float | None
    """When the tool marked its effect; NULL when it never did."""
    suspended: bool
    """The nullable suspension marker is set."""
    arguments: JsonObject
    """Payload: the arguments (rows carry payload, events do not)."""


class Event(_Frozen):
    """One event: classification only."""

    seq: int
    """Order of emission within the run."""
    kind: str
    """An EventKind value."""
    run_id: str
    """Run id."""
    invocation_id: str
    """Invocation id."""
    status: InvocationStatus | None = None
    """Status at emission."""
    reason_code: ReasonCode | None = None
    """Reason, when non-success."""
    data: dict[str, Any] = Field(default_factory=dict)
    """Further classification fields; never arguments or results."""


class ScriptRequest(_Frozen):
    """A programmatic orchestration script to run through the bridge (decision 17)."""

    tenant: str = "tenant-1"
    """Tenant id."""
    run_id: str
    """Run id."""
    step_number: int = Field(ge=0)
    """The model step that produced the script; every bridge call shares it."""
    script: str
    """``package.module:function``: a deterministic callable taking the bridge object."""
    context: list[ContextItem] = Field(default_factory=list)
    """Context items present in the request that produced the script."""


class ScriptRun(_Frozen):
    """What running a script produced."""

    status: Literal["completed", "held", "diverged", "failed"]
    """``held``: a call awaits approval and the sandbox was torn down; ``diverged``: a replay called
    something other than what was recorded at an ordinal; ``failed``: the script raised."""
    call_ids: list[str] = Field(default_factory=list)
    """The call_id the bridge synthesized for each call, in ordinal order."""
    dispositions: list[Disposition] = Field(default_factory=list)
    """The disposition of each call the script made, in ordinal order."""
    message: str = ""
    """For diverged or failed runs: what went wrong, naming the ordinal."""
