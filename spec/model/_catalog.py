"""What the model is given: a tool catalog with a declared behaviour per tool, and a sequence of actions.

A behaviour is data, so the model can read what a tool will do and the harness's scripted fake
(``toolproof.fakes.ScriptedTool``) can do it; neither looks at the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from toolproof.spec import (
    ContextItem,
    CrashPoint,
    FaultPlan,
    JsonObject,
    McpClassification,
    ProposedCall,
    ToolSpec,
    TrustLabel,
)

Ending = Literal["ok", "ERROR", "TRANSIENT", "REMOTE_REJECTED", "REMOTE_UNAVAILABLE", "raise", "overrun"]
"""How an execution ends: a success, a ToolFailure of that kind, an exception, or running past the deadline."""
Structure = Literal["none", "valid", "invalid", "extra"]
"""The structured output a result carries, judged against the spec's output schema."""

OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "number"}},
    "required": ["n"],
    "additionalProperties": False,
}
"""The one output schema a generated tool may declare."""
VALID_STRUCTURE: JsonObject = {"n": 1}
"""Structure that validates against OUTPUT_SCHEMA."""
INVALID_STRUCTURE: JsonObject = {"n": "one"}
"""Structure that does not: a member of the wrong type."""
EXTRA_STRUCTURE: JsonObject = {"n": 1, "extra": True}
"""Structure that does not either: a member the schema does not allow (additionalProperties is false)."""
STRUCTURES: dict[str, JsonObject | None] = {
    "none": None,
    "valid": VALID_STRUCTURE,
    "invalid": INVALID_STRUCTURE,
    "extra": EXTRA_STRUCTURE,
}
"""What each Structure carries."""
RAISED_TEXT = "raised: the connection dropped, secret-exception-text"
"""What a raising scripted tool's exception says (it must reach no message and no event)."""


@dataclass(frozen=True)
class Behaviour:
    """What a scripted tool does on every execution."""

    parts: tuple[tuple[str, TrustLabel | None], ...] = (("ok", None),)
    """Content parts: text and the part's own (lowering) label."""
    result_trust: TrustLabel | None = None
    """The label the result claims for the whole output."""
    structure: Structure = "none"
    """Structured output carried on success."""
    artifacts: tuple[tuple[str, str], ...] = ()
    """(name, text) written through the artifact writer before returning, in order."""
    artifacts_at_once: bool = False
    """The artifacts' writes are all started at once rather than one after another (D2.8: each is its own file all
    the same); the result lists them in ``artifacts``' order either way."""
    mark: bool = False
    """Calls mark_effect_sent() before its effect."""
    effect: bool = False
    """Leaves one effect in the fake world (after the mark, when it marks)."""
    ending: Ending = "ok"
    """How the execution ends."""
    detail: str | None = None
    """Remote text carried by a failure (decision 13: only ever in external_detail)."""
    succeeds_from_attempt: int | None = None
    """From this attempt on, the execution ends ``ok`` whatever ``ending`` says (a passing TRANSIENT failure)."""

    def ending_at(self, attempt: int) -> Ending:
        """How the execution numbered ``attempt`` ends."""
        if self.succeeds_from_attempt is not None and attempt >= self.succeeds_from_attempt:
            return "ok"
        return self.ending


@dataclass(frozen=True)
class ModelTool:
    """One registered tool: its spec and its behaviour."""

    spec: ToolSpec
    behaviour: Behaviour = field(default_factory=Behaviour)


@dataclass(frozen=True)
class Submit:
    """Submit one model step."""

    run_id: str
    step_number: int
    calls: tuple[ProposedCall, ...]
    context: tuple[ContextItem, ...]
    tenant: str = "tenant-1"


@dataclass(frozen=True)
class Answer:
    """Answer the approval hold of a call (named by run, step and call_id)."""

    call: tuple[str, int, str]
    approved: bool


@dataclass(frozen=True)
class Resume:
    """Resume a suspended control call with the run's answer."""

    call: tuple[str, int, str]
    answer: str


@dataclass(frozen=True)
class Advance:
    """Move the injected clock."""

    seconds: float


@dataclass(frozen=True)
class Sweep:
    """Run the maintenance sweep."""


@dataclass(frozen=True)
class Crash:
    """Do ``action`` in a worker that dies at ``point`` (the model's page ``d04_crash``): a step of one call (its
    first run, or a replay that recovers it), an approval granted, a resume, or a sweep that recovers ``call``. The
    worker's instance is gone; the next actions are another worker's (a fresh instance over the same store, on the
    same clock)."""

    action: Submit | Answer | Resume | Sweep
    point: CrashPoint
    call: tuple[str, int, str] | None = None
    """The call whose run dies, for a sweep (the others' are named by their action)."""


@dataclass(frozen=True)
class Reopen:
    """The worker's instance is closed and another is opened over the same store, on the same clock: a restart, or a
    second worker taking over (nothing but the store carries over: a breaker's counts, a hold's bound, D14, D11.7).
    ``versions`` registers those tools at another version in the new instance (D10.5: a call of such a tool is
    another call, under another key)."""

    versions: tuple[tuple[str, str], ...] = ()
    """(tool name, its new version)."""


@dataclass(frozen=True)
class Script:
    """Run ``script`` (``package.module:function``) through the bridge (D17): it makes ``calls`` one after another,
    each under the call_id the bridge synthesizes (the ``call_id`` given here is not used), and stops at the first call
    that comes back suspended."""

    run_id: str
    step_number: int
    script: str
    calls: tuple[ProposedCall, ...]
    context: tuple[ContextItem, ...]
    tenant: str = "tenant-1"


@dataclass(frozen=True)
class Overlap:
    """Submit ``step`` (one call); while its tool runs, submit the same step again to the same instance, as a
    concurrent request (two requests to one served driver are): the second meets the first's own live lease."""

    step: Submit


@dataclass(frozen=True)
class McpRemoteTool:
    """One tool an MCP server lists, and what it answers to every call (the model's page ``mcp``)."""

    remote_name: str
    """Its name on the server (decision 5 normalizes it into ``mcp.{server_id}.{segment}``)."""
    description: str = "A remote tool."
    """Part of its definition, so of the definition hash a session pins (decision 9)."""
    read_only_hint: bool | None = None
    """Its annotations' readOnlyHint: the server's claim, which never classifies it (D6.1)."""
    title: str | None = None
    """Its display title: part of its definition too (decision 9 hashes the whole definition)."""
    parts: tuple[str, ...] = ("ok",)
    """The text content blocks of its result."""
    is_error: bool = False
    """The result carries isError."""


@dataclass(frozen=True)
class McpServer:
    """One operator-configured MCP server the harness serves in-process (``toolproof.fakes.mcp.ModelledServer``)."""

    server_id: str
    tools: tuple[McpRemoteTool, ...]
    """The catalog it lists until a ``ChangeCatalog`` replaces it."""
    classification: McpClassification | None = None
    """The operator's per-server classification; None: unclassified (D6.2)."""
    max_output_bytes: int = 16 * 1024 * 1024
    """Its output cap (D8.8)."""
    call_timeout_s: float = 30.0
    resource: str | None = None
    """The text its one resource reads as, through the synthetic read_resource tool (decision 8); None: it lists no
    resource (D8.9: no such tool)."""


@dataclass(frozen=True)
class ChangeCatalog:
    """The server ``server_id`` lists ``tools`` from now on, silently (no tools/list_changed): tools withdrawn, added,
    or with another definition (decision 9: a session keeps what it pinned)."""

    server_id: str
    tools: tuple[McpRemoteTool, ...]


Action = Submit | Answer | Resume | Advance | Sweep | Crash | Reopen | Script | Overlap | ChangeCatalog
"""One thing the harness does to the implementation."""


@dataclass(frozen=True)
class Workload:
    """An instance configuration's model-relevant part, a catalog and the actions, in order."""

    tools: tuple[ModelTool, ...]
    actions: tuple[Action, ...]
    max_output_bytes: int = 64 * 1024
    max_attempts: int = 2
    approval_timeout_s: float = 300.0
    denied_tools: tuple[str, ...] = ()
    credentials: tuple[str, ...] = ()
    """Scopes the instance has a credential for."""
    lease_s: float = 60.0
    """How long a claim is leased (``InstanceConfig.lease_s``): a sweep takes an orphan only past it."""
    fault: FaultPlan | None = None
    """The store fault the instance is opened with (``InstanceConfig.fault``; the model's page ``d04_faults``)."""
    mcp_servers: tuple[McpServer, ...] = ()
    """The MCP servers the instance is configured with (``InstanceConfig.mcp_servers``; the model's page ``mcp``)."""
