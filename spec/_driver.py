"""The driver protocol: the implementation port over JSON/HTTP, for pipelines in any language.

Two servers talk. The *driver* wraps the implementation under test and serves ``/v1``:
instances, steps, approvals, reads, and the callbacks a tool makes while it runs. The
*tool host* is served by the harness: fake tools run there (so the world ledger stays in
the harness) and the driver calls them through ``/v1/tools/execute``.

The pydantic models below are the one source of the wire format; ``openapi_document()``
renders them with the paths as OpenAPI 3.1 (checked in as ``driver-openapi.json``).

Conventions a driver in any language relies on (revision 3 states them; none is new behaviour):

- Every field is sent. The harness and its tool host send every field of what they send, defaulted ones
  included; a driver may leave out a defaulted field in what it sends, and the harness applies the default.
- One filesystem. The driver runs on the harness's machine and shares its filesystem: ``store_dir``, the
  workspace and ``file:`` artifact URIs are local paths both sides open; nothing transfers files.
- Two clocks. ``Toolproof-Now`` (a request header on an instance's operations: seconds since the epoch, a
  decimal number with an optional fraction) is the harness's clock, by which a driver judges holds, leases,
  the watermark's timestamp and suspensions; a tool's ``deadline`` is on the machine's wall clock (seconds since
  the epoch), which both sides share.
- Supervision. A driver started under ``toolproof supervise`` (which starts it again after each SIGKILL) finds
  the environment variable ``TOOLPROOF_SUPERVISED`` set to ``1``; without it a driver refuses a SIGKILL crash
  plan with 422 ``not-supported``, since nobody would start it again.
- Cancellation. When a tool's deadline passes the driver sends ``POST {tool_host}/v1/contexts/{id}/cancel``:
  one message with ``signal_set`` and ``stopped`` is enough; a driver may also send the signal first and the
  stop later. After a stop, the tool host answers the pending ``execute`` (if the driver still waits) with
  ``cancelled`` true; that answer is not the tool's outcome, and a driver may abort the request instead.
- Opaque text. ``ToolOutcome.raised``, a problem's ``detail`` and ``title`` are readable text for people; no
  side parses them. ``raised`` non-null means the tool raised.
- Commands are opaque. A stdio MCP server's ``command`` and ``args`` are started as given (for the harness's
  fake servers, the full path of the harness's Python); the driver's language does not matter.
- The context's description. ``ToolContext.members`` describes the context the implementation built, member by
  member, in JSON's terms (``ContextMember.kind``): decision 2's records ``identity`` and ``budget`` are kind
  ``data`` whose ``value`` is the record (``components.schemas.Identity``, ``Budget``); ``deadline`` a ``number``;
  ``target`` a ``string`` or ``null``; ``workspace`` a ``path``; ``artifact_writer``, ``credential_resolver`` and
  ``cancellation`` kind ``object`` with their callable members (``write``, ``resolve``; ``is_set`` and ``wait``);
  ``mark_effect_sent`` kind ``callable``. Anything else the implementation handed the tool is described too, so
  decision 2 is judged on it. A description the tool host cannot read is refused (422 ``invalid-request``, the
  member in ``field``) and reported as the driver's error.
- Crash points inside the tool. ``before_watermark``, ``after_watermark`` and ``after_effect``
  (``x-toolproof.tool_crash_points``) are the harness's: the instance's ``config.crash`` is null, and the harness's
  tool dies there. Its tool host then answers ``ToolOutcome.crash`` (``raise``: answer the step 409
  ``simulated-crash``, the instance dead) or, under SIGKILL, vanishes mid-execute (the connection fails with no
  answer): the driver process must then die at once, writing nothing more, as a SIGKILL crash plan would kill it.
  A driver that lives on and completes the row (FAILED ``tool_crashed``, say) fails the crash cell, and the
  evidence says so.
- Python-only parts. A bridge script (``ScriptRequest.script``, ``POST /v1/scripts``) is a Python module and
  function: only a driver that runs Python claims ``bridge``. ``?probe=memory`` asks for the peak bytes the
  driver's runtime allocated while the step handled its tools' results, by the runtime's own accounting; a
  runtime without a per-allocation peak (a garbage-collected one without one) answers null, and D12.6 then
  reads not-covered for it, never passes.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, StrictBool
from pydantic.json_schema import models_json_schema

from ._crash import TOOL_CRASH_POINTS, CrashMode
from ._enums import STEPS, CrashPoint, EventKind, Metric, Profile, TrustLabel
from ._limits import EXCERPT_MARKER_SOURCE, LOOP_THRESHOLD, REPEATED_DENIAL_THRESHOLD
from ._mcp import Advertisement, CatalogChange
from ._names import MAX_NAME_LENGTH, NAME_GRAMMAR, RESERVED_DOMAINS
from ._outcomes import FAILURE_REASONS, OUTCOME_TABLE
from ._port import CONTEXT_MEMBERS, CONTROL_ANSWER_ARGUMENT, InstanceConfig
from ._protocol_text import OPERATION_DESCRIPTIONS, describe_properties
from ._types import (
    ArtifactRef,
    Budget,
    Disposition,
    Event,
    Identity,
    InvocationRow,
    JsonObject,
    ScriptRequest,
    ScriptRun,
    StepRequest,
    ToolResult,
    ToolSpec,
)

DRIVER_PROTOCOL: Final = "toolproof-driver/2"
"""Protocol name and major version; a driver answers it in ``GET /v1/info``.

Version 2: a tool's context travels as a description of the members the implementation
handed the tool (``ContextMember``), not as the values of decision 2's nine, and a
cancellation says whether the implementation's own signal was set."""
DRIVER_PROTOCOL_REVISION: Final = 4
"""Compatible additions to the major version; the document's version is ``2.<revision>.0``.

Revision 1: ``POST /v1/scripts`` places a bridge script's module (its source: a script is
data) where the implementation imports scripts from, so an edited script reaches a served
implementation; a driver of revision 0 answers it 404, and D17.2's edited-script cell then
reads not-covered (``EDITED_SCRIPT_OVER_HTTP``).

Revision 2: the document carries what a pipeline in another language needs besides the wire shapes: the
``ToolResult`` a harness tool returns (``ToolOutcome.result``, which step 11 judges), with ``Identity`` and
``Budget``, and the ``x-toolproof`` extension: decision 13's outcome table, the failure-kind mapping, decision
14's thresholds, decision 5's name grammar and reserved domains, the step order, the crash points, the control
answer's argument name, the counters, the event kinds, the trust labels from least to most trusted and the
source of decision 12's excerpt marker (``rule_constants()``). Nothing on the wire changed.

Revision 3: what a TypeScript driver found Python-shaped or unsaid is said in the document (its description's
conventions): every field is sent, one filesystem, two clocks, how a driver learns it is supervised
(``SUPERVISED_ENV``), one cancel message is enough, opaque text, opaque commands, and which parts are Python-only.
On the wire: ``ToolOutcome.cancelled`` (the tool host's answer to an ``execute`` the driver stopped), and the tool
host's ``raised`` text no longer starts with a Python exception's name where the harness, not a tool, speaks.

Revision 4: store faults. ``InstanceConfig.fault`` (a ``FaultPlan``) asks the implementation to fail one of its
own store writes; it answers the problem type ``store-fault`` (503), also on the watermark's callback. A driver
of revision 3 ignores the field, and the store-fault rules (D3.10, D3.11, D4.21, D4.22) then fail for it. The
document also describes every operation and says what a driver does at a crash point inside the tool."""
CONTEXT_DESCRIPTION_DEPTH: Final = 24
"""How many levels of members a context's description holds at most (the context's own members are level 1)."""
CONTEXT_DESCRIPTION_OBJECTS: Final = 2000
"""How many objects a context's description expands (describes with their members) at most.

Decision 2's scenarios walk the whole object graph a context reaches, so its description is a walk of that graph,
not a fixed depth: breadth first from the context, each object expanded once, where it is first reached (reached
again, through a cycle or a shared object, it is described by kind and type name only), never entering the
instance under test, within these two bounds. A pipeline, store, registry or policy object reachable from the
context is thus on the wire however many members deep it lies, by its members' names and its type's name."""
EDITED_SCRIPT_OVER_HTTP: Final = (
    "the driver does not offer POST /v1/scripts (driver protocol revision 1), so the harness cannot place the "
    "edited script where the implementation imports scripts from; D17.2's edited-script cell reads not-covered"
)
"""Why D17.2's edited-script cell cannot be judged behind a driver that does not place scripts (its other cells
can)."""
MEMORY_NOT_MEASURED: Final = (
    "the driver answered memory_peak_bytes null to ?probe=memory (it does not measure the memory its steps "
    "allocate), so no run can judge whether excerpting copies the output"
)
"""Why D12.6 reads not-covered behind a driver that does not measure (a null is never read as zero bytes)."""
NOW_HEADER = "Toolproof-Now"
"""Request header carrying the harness clock (seconds since the epoch, a decimal number); the driver judges holds,
leases, the watermark's timestamp and suspensions by it. A tool's ``deadline`` is on the shared wall clock."""
SUPERVISED_ENV: Final = "TOOLPROOF_SUPERVISED"
"""Environment variable ``toolproof supervise`` sets to ``1`` in the driver it starts (and starts again after each
SIGKILL); a driver without it refuses a SIGKILL crash plan (422 ``not-supported``)."""
PROBLEM_TYPES = (
    "invalid-request",
    "configuration-error",
    "not-found",
    "simulated-crash",
    "not-supported",
    "store-fault",
)
"""``Problem.type`` values: a 4xx names what was wrong; ``simulated-crash`` says the instance died; ``store-fault``
(503) says the implementation's store failed a write the request needed (``spec.StoreFault``): no disposition."""


class _Wire(BaseModel):
    # Booleans are StrictBool: JSON's true and false only, never 0 or 1 (the OpenAPI document says boolean).
    model_config = ConfigDict(frozen=True, extra="forbid")


class DriverInfo(_Wire):
    """What ``GET /v1/info`` answers."""

    protocol: Literal["toolproof-driver/2"] = DRIVER_PROTOCOL
    name: str
    """Name shown in reports."""
    profiles: list[Profile]
    """Profiles the implementation claims."""


class Problem(_Wire):
    """An error answer (RFC 9457 problem details), with the offending field when there is one."""

    type: str
    """One of ``x-toolproof.problem_types``, as the bare token (``invalid-request``), not a URI: ``invalid-request``
    (a field is wrong), ``configuration-error`` (a configuration the driver does not accept), ``not-found`` (no
    such instance), ``simulated-crash`` (the instance died at its crash point), ``not-supported`` (e.g. a SIGKILL
    plan to an unsupervised driver)."""
    title: str
    """Readable text for people (the reference: the type with spaces); never parsed."""
    status: int
    """The HTTP status it came with."""
    detail: str
    """One readable line."""
    field: str | None = None
    """Dotted path of the request field that was wrong, if one was."""


class OpenInstance(_Wire):
    """``POST /v1/instances``: start an instance."""

    config: InstanceConfig
    """MCP servers of transport ``memory`` cannot cross a process boundary; the harness serves them over HTTP."""
    tools: list[ToolSpec] = Field(default_factory=list)
    """Builtin tools; each executes in the harness through the tool host."""
    tool_host: str
    """Base URL of the harness's tool host (loopback)."""


class InstanceHandle(_Wire):
    """An open instance."""

    instance_id: str


class Dispositions(_Wire):
    """One disposition per call, in proposal order."""

    dispositions: list[Disposition]
    memory_peak_bytes: int | None = None
    """With ``?probe=memory``: peak bytes the driver allocated between its tools' results arriving and the
    step's end (decision 12's judgement, measured where the implementation runs); else null. A driver that
    cannot measure answers null to the probe too, and D12.6 then reads not-covered (``MEMORY_NOT_MEASURED``),
    never a pass."""


class ApprovalAnswer(_Wire):
    """``POST .../approvals``."""

    invocation_id: str
    approved: StrictBool


class ResumeAnswer(_Wire):
    """``POST .../resumptions``."""

    invocation_id: str
    answer: str


class Invocations(_Wire):
    """Committed rows of a run."""

    invocations: list[InvocationRow]


class Events(_Wire):
    """Committed events of a run."""

    events: list[Event]


class Metrics(_Wire):
    """Counters."""

    metrics: dict[str, int]


class Tables(_Wire):
    """Table names of the store."""

    tables: list[str]


class CatalogHistory(_Wire):
    """The catalog history."""

    changes: list[CatalogChange]


class ArtifactUpload(_Wire):
    """A tool stores a blob (callback)."""

    name: str
    data_base64: str


class ScopeQuery(_Wire):
    """A tool asks for a credential (callback)."""

    scope: str


class ScriptModule(_Wire):
    """``POST /v1/scripts``: a bridge script's module, as source, for the implementation to import scripts from.

    The driver keeps it in a folder of its own on its process's import path (and its children's: the bridge's
    sandbox imports it too), replacing an earlier source of the same module, which is then imported afresh. A
    name another module already has (the standard library's, an installed package's) is refused.
    """

    module: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=100)
    """A top-level module name; a script in it is ``ScriptRequest.script`` ``module:function``."""
    source: str = Field(max_length=1_000_000)
    """The module's Python source."""


class Credential(_Wire):
    """The credential for a scope, or null when the tool may not have it."""

    credential: str | None


MemberKind = Literal["null", "boolean", "number", "string", "path", "data", "object", "callable", "unreadable"]
"""What a context member is, in JSON's terms: a scalar (``value`` carries it), a filesystem path
(``value`` is its text), a record of plain values (``data``: ``value`` is its JSON, ``members`` its
fields), any other object (``members``), something to call, or a member whose read failed."""


class ContextMember(_Wire):
    """One public member of a tool's context, or of one of its members, as the implementation handed it."""

    name: str
    """The member's name as the tool reads it."""
    kind: MemberKind
    """What the member is, in JSON's terms: ``null``, ``boolean``, ``number``, ``string`` (``value`` carries it);
    ``path`` (a filesystem path, ``value`` its text); ``data`` (a record of plain values: ``value`` its JSON object,
    as ``identity`` and ``budget`` are sent); ``object`` (any other object: ``members`` lists its public members);
    ``callable`` (a function or method the tool calls: decision 2's call back to the driver); ``unreadable``
    (reading the member failed: ``type_name`` names the error)."""
    value: JsonValue = None
    """The value of a scalar, ``path`` or ``data`` member; null otherwise."""
    type_name: str = ""
    """The implementation's qualified name of the member's type (module or package, a dot, the type), as its
    language spells it; the harness matches it against known database libraries, and shows it."""
    is_instance: StrictBool = False
    """True when the member is the very instance the harness drives (the pipeline under test, reachable from the
    tool's context: decision 2 forbids it); its members are then not described. False for everything else."""
    members: list[ContextMember] = Field(default_factory=list)
    """The public members of a ``data`` or ``object`` member, where the description's walk first reaches it (empty
    where it reaches it again, at the instance under test, and past ``CONTEXT_DESCRIPTION_DEPTH`` or
    ``CONTEXT_DESCRIPTION_OBJECTS``)."""


class ToolContext(_Wire):
    """What the driver hands the tool host with each execution: the context the implementation built.

    ``members`` describes every public member of the context the implementation handed this
    tool (decision 2 allows nine), so the harness judges that very context: the tool host builds
    its stand-in from the description, with the same members. The callable members call back to
    ``{driver_url}/v1/contexts/{context_id}/...`` (the artifact writer's ``write``, the credential
    resolver's ``resolve``, ``mark_effect_sent``); cancellation arrives at the tool host as
    ``POST /v1/contexts/{context_id}/cancel``.
    """

    context_id: str
    driver_url: str
    members: list[ContextMember]


class ToolCancellation(_Wire):
    """``POST {tool_host}/v1/contexts/{context_id}/cancel``: the driver's news about a running tool.

    One message with both fields true is enough when a deadline passes; a driver may also send ``signal_set``
    first and ``stopped`` later. Answered 204, also for a context that has already ended."""

    signal_set: StrictBool
    """Whether the context's cancellation signal, as the implementation keeps it, is set."""
    stopped: StrictBool
    """Whether the implementation stopped waiting for the tool (the tool host cancels the tool's work)."""


class ExecuteTool(_Wire):
    """``POST {tool_host}/v1/tools/execute``."""

    tool: str
    arguments: JsonObject
    context: ToolContext


class ToolOutcome(_Wire):
    """What the tool did: returned ``result`` (any JSON, judged by the pipeline), raised, or crashed."""

    result: JsonValue = None
    raised: str | None = None
    """Non-null when the tool raised: readable text (the tool's exception as its language names it, or the tool
    host's words), never parsed by either side."""
    cancelled: StrictBool = False
    """The driver stopped waiting for this tool (``ToolCancellation.stopped``) before it ended: the answer is not the
    tool's outcome, and a driver that still waited discards it (revision 3)."""
    crash: CrashMode | None = None
    """The harness's tool died at a crash point inside step 10 (the instance's crash plan was null): the driver
    must die the same way, at once, writing nothing more: ``raise``, answer the step 409 ``simulated-crash`` with
    the instance dead; ``sigkill``, kill its own process (under SIGKILL the tool host usually vanishes before it can
    answer: a failed connection to the tool host mid-execute means the same)."""


_MODELS: tuple[type[BaseModel], ...] = (
    DriverInfo,
    Problem,
    OpenInstance,
    InstanceHandle,
    Dispositions,
    ApprovalAnswer,
    ResumeAnswer,
    Invocations,
    Events,
    Metrics,
    Tables,
    CatalogHistory,
    Advertisement,
    StepRequest,
    ScriptRequest,
    ScriptRun,
    ScriptModule,
    ArtifactUpload,
    ArtifactRef,
    ScopeQuery,
    Credential,
    ExecuteTool,
    ToolCancellation,
    ToolOutcome,
    ToolResult,
    Identity,
    Budget,
)

# (method, path, operationId, summary, request model, success status, response model, served by)
OPERATIONS: tuple[tuple[str, str, str, str, str | None, int, str | None, str], ...] = (
    ("get", "/v1/info", "info", "Protocol, name and claimed profiles", None, 200, "DriverInfo", "driver"),
    ("get", "/v1/openapi.json", "openapi", "This document (the driver's operations)", None, 200, None, "driver"),
    ("post", "/v1/instances", "openInstance", "Start an instance", "OpenInstance", 201, "InstanceHandle", "driver"),
    ("delete", "/v1/instances/{instance_id}", "closeInstance", "Close an instance", None, 204, None, "driver"),
    (
        "post",
        "/v1/scripts",
        "placeScript",
        "Place a bridge script's module where the implementation imports scripts from (revision 1)",
        "ScriptModule",
        204,
        None,
        "driver",
    ),
    (
        "post",
        "/v1/instances/{instance_id}/steps",
        "submit",
        "Run a step (query probe=memory: also measure the memory excerpting takes)",
        "StepRequest",
        200,
        "Dispositions",
        "driver",
    ),
    (
        "post",
        "/v1/instances/{instance_id}/approvals",
        "resolveApproval",
        "Answer an approval hold",
        "ApprovalAnswer",
        200,
        "Disposition",
        "driver",
    ),
    (
        "post",
        "/v1/instances/{instance_id}/resumptions",
        "resume",
        "Resume a suspended control call",
        "ResumeAnswer",
        200,
        "Disposition",
        "driver",
    ),
    ("post", "/v1/instances/{instance_id}/sweeps", "sweep", "Run maintenance now", None, 200, "Dispositions", "driver"),
    (
        "post",
        "/v1/instances/{instance_id}/scripts",
        "runScript",
        "Run a bridge script",
        "ScriptRequest",
        200,
        "ScriptRun",
        "driver",
    ),
    (
        "get",
        "/v1/instances/{instance_id}/runs/{run_id}/invocations",
        "invocations",
        "Rows of a run",
        None,
        200,
        "Invocations",
        "driver",
    ),
    (
        "get",
        "/v1/instances/{instance_id}/runs/{run_id}/events",
        "events",
        "Events of a run",
        None,
        200,
        "Events",
        "driver",
    ),
    (
        "post",
        "/v1/instances/{instance_id}/runs/{run_id}/advertisement",
        "advertise",
        "Start the run's MCP session if needed; its pinned advertisement",
        None,
        200,
        "Advertisement",
        "driver",
    ),
    ("get", "/v1/instances/{instance_id}/metrics", "metrics", "Counters", None, 200, "Metrics", "driver"),
    ("get", "/v1/instances/{instance_id}/tables", "tables", "Store tables", None, 200, "Tables", "driver"),
    (
        "get",
        "/v1/instances/{instance_id}/catalog-history",
        "catalogHistory",
        "The MCP catalog history",
        None,
        200,
        "CatalogHistory",
        "driver",
    ),
    (
        "post",
        "/v1/contexts/{context_id}/effect-sent",
        "markEffectSent",
        "Commit the watermark of the executing call (returns once committed)",
        None,
        204,
        None,
        "driver",
    ),
    (
        "post",
        "/v1/contexts/{context_id}/artifacts",
        "writeArtifact",
        "Store a blob for the executing call",
        "ArtifactUpload",
        200,
        "ArtifactRef",
        "driver",
    ),
    (
        "post",
        "/v1/contexts/{context_id}/credentials",
        "resolveCredential",
        "The credential of a scope for the executing call",
        "ScopeQuery",
        200,
        "Credential",
        "driver",
    ),
    (
        "post",
        "/v1/tools/execute",
        "executeTool",
        "Execute a harness tool",
        "ExecuteTool",
        200,
        "ToolOutcome",
        "tool-host",
    ),
    (
        "post",
        "/v1/contexts/{context_id}/cancel",
        "cancelTool",
        "A running tool's cancellation signal was set, or the driver stopped waiting for it",
        "ToolCancellation",
        204,
        None,
        "tool-host",
    ),
)
"""Every operation of both servers; ``served by`` is ``driver`` or ``tool-host``."""


def rule_constants() -> dict[str, Any]:
    """The ``x-toolproof`` extension of the document: the constants of ``spec`` a pipeline's steps read.

    One source: each value is read from the module that defines it, so another language reads the very table.
    """
    return {
        "outcomes": {
            reason.value: {"status": e.status.value, "message": e.message, "retryable": e.retryable}
            for reason, e in OUTCOME_TABLE.items()
        },
        "failure_reasons": {kind.value: reason.value for kind, reason in FAILURE_REASONS.items()},
        "repeated_denial_threshold": REPEATED_DENIAL_THRESHOLD,
        "loop_threshold": LOOP_THRESHOLD,
        "name_grammar": NAME_GRAMMAR.pattern,
        "max_name_length": MAX_NAME_LENGTH,
        "reserved_domains": sorted(RESERVED_DOMAINS),
        "steps": [step.value for step in STEPS],
        "crash_points": [point.value for point in CrashPoint],
        "tool_crash_points": [point.value for point in TOOL_CRASH_POINTS],
        "context_members": list(CONTEXT_MEMBERS),
        "control_answer_argument": CONTROL_ANSWER_ARGUMENT,
        "metrics": [metric.value for metric in Metric],
        "event_kinds": {kind.name.lower(): kind.value for kind in EventKind},
        "trust_order": [label.value for label in sorted(TrustLabel, key=lambda label: label.rank)],
        "excerpt_marker_source": EXCERPT_MARKER_SOURCE,
        "now_header": NOW_HEADER,
        "supervised_env": SUPERVISED_ENV,
        "context_description_depth": CONTEXT_DESCRIPTION_DEPTH,
        "context_description_objects": CONTEXT_DESCRIPTION_OBJECTS,
        "problem_types": list(PROBLEM_TYPES),
    }


def openapi_document(served_by: str | None = None) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the protocol (of one side, when ``served_by`` is given)."""
    disposition = {"$ref": "#/components/schemas/Disposition"}
    _, defs = models_json_schema([(m, "validation") for m in _MODELS], ref_template="#/components/schemas/{model}")
    schemas: dict[str, Any] = dict(defs.get("$defs", {}))
    schemas["Disposition"] = {
        "anyOf": [{"$ref": f"#/components/schemas/{n}"} for n in ("Success", "Outcome", "Suspended")]
    }
    describe_properties(schemas)
    problem = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    paths: dict[str, Any] = {}
    for method, path, op_id, summary, request, status, response, side in OPERATIONS:
        if served_by is not None and side != served_by:
            continue
        parameters: list[dict[str, Any]] = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}}
            for name in ("instance_id", "run_id", "context_id")
            if "{" + name + "}" in path
        ]
        if side == "driver" and path.startswith("/v1/instances/"):
            parameters.append({"name": NOW_HEADER, "in": "header", "required": False, "schema": {"type": "number"}})
        if op_id == "submit":
            probe = {"type": "string", "enum": ["memory"]}
            parameters.append({"name": "probe", "in": "query", "required": False, "schema": probe})
        operation: dict[str, Any] = {
            "operationId": op_id,
            "summary": summary,
            "description": OPERATION_DESCRIPTIONS[op_id],
            "tags": [side],
            "responses": {
                "4XX": {"description": "Bad input, unknown instance, or a refused configuration", "content": problem},
            },
        }
        if parameters:
            operation["parameters"] = parameters
        if request is not None:
            operation["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{request}"}}},
            }
        ok: dict[str, Any] = {"description": summary}
        if response is not None:
            ref = disposition if response == "Disposition" else {"$ref": f"#/components/schemas/{response}"}
            ok["content"] = {"application/json": {"schema": ref}}
        operation["responses"][str(status)] = ok
        if op_id in ("openInstance", "submit", "resolveApproval", "resume", "sweep", "runScript", "advertise"):
            operation["responses"]["409"] = {
                "description": "simulated-crash: the instance died at its crash point",
                "content": problem,
            }
        if op_id in ("submit", "resolveApproval", "resume", "sweep", "runScript", "markEffectSent"):
            operation["responses"]["503"] = {
                "description": "store-fault: the store failed a write this needed (a fault plan's, or a real one)",
                "content": problem,
            }
        paths.setdefault(path, {})[method] = operation
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "toolproof driver protocol",
            "version": f"{DRIVER_PROTOCOL.rsplit('/', 1)[1]}.{DRIVER_PROTOCOL_REVISION}.0",
            "description": (__doc__ or "").strip(),
        },
        "paths": paths,
        "components": {"schemas": schemas},
        "x-toolproof": rule_constants(),
    }
