"""``toolproof check-server``'s record of one check, and its text, JSON and HTML renderings.

The record says what ADR-0021's MCP adapter will do to a server: the names it registers or drops
(decision 5), where classification comes from (decision 6), what resources and prompts become and
which requests it declines (decision 8), and whether the catalog held still between two listings
(decision 9). The checker (``toolproof/_check_server.py``) fills it; this module only renders it.
"""

from __future__ import annotations

import html
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, computed_field

from ._html_assets import STYLE

CHECK_SCHEMA = 1
"""Version of the JSON form; raised when a key changes meaning or goes away (new keys may appear)."""


class FindingKind(StrEnum):
    """What ADR-0021 will act on: each kind makes ``check-server`` exit 1."""

    DROPPED_TOOL = "dropped_tool"
    """Decision 5: remote tool names that normalize alike are all dropped."""
    DROPPED_PROMPT = "dropped_prompt"
    """Decision 5 (D5.9): prompt names that normalize alike are all dropped."""
    DRIFT = "drift"
    """Decision 9: two listings of one connection disagree; sessions keep their pin, a changed tool is unavailable."""
    LIST_CHANGED = "list_changed"
    """Decision 9: the server sent tools/list_changed; it is recorded and not applied mid-session."""
    REQUEST_DECLINED = "request_declined"
    """Decision 8: the server asked for sampling, roots or elicitation (or input-required); the adapter declines."""
    OVER_CAP = "over_cap"
    """D8.8: a result over the server's output cap fails instead of being delivered."""
    MALFORMED_RESULT = "malformed_result"
    """D7.9: a call's answer is no result of the era the server speaks (a required field missing)."""
    INVALID_STRUCTURE = "invalid_structure"
    """D8.11, D8.12: a call's structured result breaks the tool's own outputSchema (or is missing under one)."""
    CALL_TIMEOUT = "call_timeout"
    """A call got no answer within the server's call timeout: the pipeline fails it at its deadline."""
    CONNECTION_LOST = "connection_lost"
    """The server's connection dropped while checked: its tools answer unavailable until it is reconnected."""
    CONFIGURED_ERA_FAILS = "configured_era_fails"
    """The era the operator configured does not connect, and another does."""
    UNFINISHED = "unfinished"
    """The era connected but its check stopped early (an error, or no answer within the era's bound)."""
    MALFORMED_MESSAGE = "malformed_message"
    """The server wrote something that is not a JSON-RPC message."""
    UNLISTED_CALL_SUCCEEDS = "unlisted_call_succeeds"
    """Decision 5: the server answered a tools/call of a name it never listed with success: its listing does not
    describe everything it executes (the pipeline still refuses such a name: unknown_tool at step 1)."""
    NOT_ADMITTED = "not_admitted"
    """Decision 7: as configured, the server is refused (a tenant's stdio server, or a host off the egress
    allowlist); ``serve-reference`` and the reference refuse it in the same words."""


class Finding(BaseModel):
    """One thing ADR-0021 will act on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: FindingKind
    decision: int
    """The ADR-0021 decision that acts on it."""
    era: str | None
    """The protocol era it was seen in; None: not era-specific."""
    message: str


class ListedTool(BaseModel):
    """One remote tool of a listing and what decision 5 makes of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    remote_name: str
    registered_name: str | None
    """``mcp.{server_id}.{normalized}``; None: dropped."""
    normalizes_to: str
    """The name it normalizes to, registered or not."""
    definition_sha256: str
    """Decision 9's hash of its definition as first listed; empty when the definition has no RFC 8785 form."""
    annotations: dict[str, Any] | None
    """What the server annotated: shown, and ignored (decision 6)."""


class ListedPrompt(BaseModel):
    """One remote prompt and the skill decision 8 makes of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    skill_name: str | None
    """``mcp.{server_id}.prompt.{normalized}``; None: dropped (normalizes like another prompt)."""


class ServerRequest(BaseModel):
    """A request the server made of the client (or asked for as input-required); the adapter declines it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: str
    during: str
    """What the checker was doing: ``connect``, ``listing 1``, ``call NAME``…"""
    input_required: bool
    """2026-07-28: asked inside an InputRequiredResult rather than as a request."""


class ErrorShape(BaseModel):
    """How the server answered a request that must fail."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    probe: str
    """What was sent, e.g. ``tools/call of an unlisted name``."""
    shape: str
    """``jsonrpc_error``, ``is_error_result``, ``success`` or ``no_answer``."""
    code: int | None
    text: str
    """The start of the server's text, control characters escaped (external text: data, never narration)."""


class CallObservation(BaseModel):
    """One tool the user asked to call (``--call``), called as the adapter calls it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    remote_name: str
    registered_name: str | None
    outcome: str
    """``ok``, ``malformed_result``, ``invalid_structure``, ``tool_error``, ``remote_rejected``, ``remote_unavailable``, ``over_cap``, ``timeout``,
    ``not_registered``."""
    content_bytes: int | None
    """Bytes of the text parts delivered (or, over the cap, seen on the wire); None: not observed."""
    cap_bytes: int
    detail: str
    """The start of the remote text (escaped), or the reason."""


class EraCheck(BaseModel):
    """One protocol era: whether it connected, and everything seen on that connection."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    era: str
    connected: bool
    failure: str | None
    """Why it did not connect, or (connected) why the check stopped before its end; one line. None: neither."""
    protocol_version: str | None = None
    server_name: str | None = None
    """``serverInfo.name``: shown, never used for identity (the operator's id is)."""
    server_version: str | None = None
    capabilities: list[str] = []
    tools: list[ListedTool] = []
    read_resource_tool: str | None = None
    """The synthetic resource tool registered (decision 8), or None (no resource listed, D8.9)."""
    resources: int = 0
    resource_templates: int = 0
    prompts: list[ListedPrompt] = []
    listings_agree: bool | None = None
    """Whether the second listing recorded nothing new after the first; None: no second listing."""
    drift: list[str] = []
    """Catalog-history entries recorded after the first listing, ``kind name``."""
    notifications: dict[str, int] = {}
    """Notification method -> how many arrived while connected."""
    requests: list[ServerRequest] = []
    error_shapes: list[ErrorShape] = []
    calls: list[CallObservation] = []
    malformed: int = 0
    """Messages read that were not JSON-RPC."""
    findings: list[Finding] = []
    """What ADR-0021 would act on were this era configured (the server's ``findings`` counts only some eras)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def completed(self) -> bool:
        """Whether it connected and the check ran to its end."""
        return self.connected and self.failure is None


class ServerCheck(BaseModel):
    """One server checked in every era."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    server_id: str
    transport: str
    target: str
    """The command line or the URL."""
    configured_era: str | None
    """The era the operator's file gives; None: checked from the command line."""
    classification: dict[str, Any] | None
    """The operator's classification; None: unclassified (decision 6's most restrictive default)."""
    classification_source: str
    max_output_bytes: int
    call_timeout_s: float
    eras: list[EraCheck]
    findings: list[Finding]
    """What counts (exit 1): from an operator file, the configured era's findings (and whether it connects at all);
    from a command or a URL, the findings of every era that completed (of every era that connected, if none did)."""
    stderr_tail: list[str]
    """The server's last lines of stderr (stdio)."""
    exit_code: int


class ServerCheckReport(BaseModel):
    """What ``toolproof check-server --json`` prints."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = CHECK_SCHEMA
    toolproof_version: str
    servers: list[ServerCheck]
    exit_code: int
    """0: admit as configured; 1: findings ADR-0021 will act on; 2: a server could not be reached."""


def _annotations(values: dict[str, Any] | None) -> str:
    if not values:
        return ""
    shown = ", ".join(f"{k}={v!r}" for k, v in sorted(values.items()) if k != "title")
    return f"  annotations (ignored, decision 6): {shown}" if shown else ""


def _era_lines(era: EraCheck, server: ServerCheck) -> list[str]:
    if not era.connected:
        return [f"  era {era.era}: failed: {era.failure}"]
    stopped = [f"    check stopped early: {era.failure}"] if era.failure else []
    lines = [
        f"  era {era.era}: connected (protocol {era.protocol_version}; {_info(era)}, shown only: identity is the "
        f"id {server.server_id!r})",
        f"    capabilities: {', '.join(era.capabilities) or 'none'}",
        f"    tools ({len(era.tools)}):",
    ]
    for tool in era.tools:
        target = tool.registered_name or (
            f"DROPPED (normalizes to {tool.normalizes_to} like another; decision 5)"
            if tool.definition_sha256
            else "DROPPED (its definition has no RFC 8785 form to hash; decision 9)"
        )
        lines.append(
            f"      {tool.remote_name!r} -> {target}  sha256 {tool.definition_sha256[:12]}{_annotations(tool.annotations)}"
        )
    resources = f"{era.resources} resources, {era.resource_templates} templates"
    lines.append(f"    resources: {resources} -> {era.read_resource_tool or 'no read tool (nothing listed, D8.9)'}")
    if era.prompts:
        lines.append(f"    prompts ({len(era.prompts)}) -> read-only EXTERNAL_UNTRUSTED skills, never cacheable:")
    else:
        lines.append("    prompts: none")
    lines += [
        f"      {p.name!r} -> {p.skill_name or 'DROPPED (normalizes like another prompt; D5.9)'}" for p in era.prompts
    ]
    if era.listings_agree is None:
        lines.append("    listings: no second listing")
    elif era.listings_agree:
        lines.append("    listings: two consecutive listings agree")
    else:
        lines.append(f"    listings: the second disagrees: {'; '.join(era.drift)}")
    shown = ", ".join(f"{method} x{count}" for method, count in sorted(era.notifications.items()))
    lines.append(f"    notifications: {shown or 'none'}")
    for request in era.requests:
        how = " (input-required)" if request.input_required else ""
        lines.append(f"    request declined (decision 8): {request.method}{how} during {request.during}")
    for shape in era.error_shapes:
        code = f" {shape.code}" if shape.code is not None else ""
        lines.append(f"    error shape, {shape.probe}: {shape.shape}{code}: {shape.text}")
    for call in era.calls:
        size = "" if call.content_bytes is None else f", {call.content_bytes} bytes of a {call.cap_bytes}-byte cap"
        detail = f": {call.detail}" if call.detail else ""
        lines.append(f"    call {call.remote_name!r}: {call.outcome}{size}{detail}")
    if era.malformed:
        lines.append(f"    malformed messages: {era.malformed}")
    kinds = ", ".join(dict.fromkeys(f.kind.value for f in era.findings))
    return [*lines, *stopped, f"    findings in this era: {kinds or 'none'}"]


def render_server_check_text(report: ServerCheckReport) -> str:
    """The text summary ``toolproof check-server`` prints by default."""
    lines: list[str] = []
    for server in report.servers:
        era = f", era {server.configured_era} configured" if server.configured_era else ""
        lines.append(f"server {server.server_id} ({server.transport}: {server.target}{era})")
        lines.append(f"  classification: {server.classification_source}")
        lines.append(f"  output cap {server.max_output_bytes} bytes; call timeout {server.call_timeout_s:g} s")
        for checked in server.eras:
            lines += _era_lines(checked, server)
        if server.stderr_tail:
            lines.append(f"  server stderr (last {len(server.stderr_tail)} lines):")
            lines += [f"    | {line}" for line in server.stderr_tail]
        lines.append(f"  findings: {len(server.findings) or 'none'}")
        lines += [f"    - [{f.kind.value}, decision {f.decision}{_in(f.era)}] {f.message}" for f in server.findings]
        lines.append(f"  verdict: {_verdict(server.exit_code)} (exit {server.exit_code})")
    return "\n".join(lines) + "\n"


def _info(era: EraCheck) -> str:
    if era.server_name is None:
        return "no serverInfo"
    return f"serverInfo {era.server_name!r} {era.server_version or ''}".rstrip()


def _in(era: str | None) -> str:
    return f", era {era}" if era else ""


def _verdict(code: int) -> str:
    return {
        0: "can be admitted as configured",
        1: "findings ADR-0021 will act on",
        2: "could not connect in any era",
    }.get(code, "unknown")


def render_server_check_html(report: ServerCheckReport) -> str:
    """A self-contained page with one ``<section class="server-check">`` per server (no script)."""
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>toolproof check-server</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>MCP servers checked against ADR-0021</h1>",
        f'<p class="meta">toolproof {_e(report.toolproof_version)}; exit {report.exit_code}: '
        f"{_e(_verdict(report.exit_code))}</p>",
    ]
    for server in report.servers:
        parts.append(server_check_section(server))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def server_check_section(server: ServerCheck) -> str:
    """One server's section of the HTML report."""
    parts = [
        f'<section class="server-check" id="server-{_e(server.server_id)}">',
        f"<h2>Server {_e(server.server_id)}</h2>",
        f'<p class="verdict">{_e(_verdict(server.exit_code))} (exit {server.exit_code})</p>',
        f"<p>{_e(server.transport)}: <code>{_e(server.target)}</code>; classification: "
        f"{_e(server.classification_source)}</p>",
        f"<h3>Findings ({len(server.findings)})</h3>",
    ]
    if server.findings:
        parts.append("<ul>")
        parts += [
            f"<li><b>{_e(f.kind.value)}</b> (decision {f.decision}{_e(_in(f.era))}): {_e(f.message)}</li>"
            for f in server.findings
        ]
        parts.append("</ul>")
    else:
        parts.append("<p>none</p>")
    for era in server.eras:
        parts.append(f"<h3>Era {_e(era.era)}</h3>")
        parts.append(
            f'<pre style="white-space: pre-wrap">{_e(chr(10).join(line.strip() for line in _era_lines(era, server)))}</pre>'
        )
    if server.stderr_tail:
        parts.append(
            f'<h3>Server stderr</h3><pre style="white-space: pre-wrap">{_e(chr(10).join(server.stderr_tail))}</pre>'
        )
    parts.append("</section>")
    return "\n".join(parts)


def _e(text: str) -> str:
    return html.escape(text, quote=True)
