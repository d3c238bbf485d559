"""MCP in the port (decisions 5-9 and 18): server configuration, naming, pinning, catalog history."""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any, Literal
from urllib.parse import urlsplit

import idna
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from ._canonical import canonical_sha256
from ._enums import IdempotencyClass, Risk, SideEffect, ToolSource, TrustLabel

SERVER_ID_GRAMMAR = re.compile(r"^[a-z][a-z0-9_]*$")
"""A server_id is one segment of the name grammar."""
MAX_REMOTE_SEGMENT = 64
"""Decision 5, our reading: a normalized remote name is cut to this many characters."""
READ_RESOURCE = "read_resource"
"""Decision 8: the last segment of each server's one synthetic resource tool."""
SKILL_SEGMENT = "prompt"
"""D5.9: the segment between a server's prefix and a prompt's name, so no skill shares a name with a tool."""
ENV_NAME_GRAMMAR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""D7.4: a stdio server's environment variable names (POSIX portable names)."""
UNSATISFIABLE_SCOPE = "mcp:unclassified"
"""Decision 6: the scope an unclassified server requires; no credential of any configuration grants it."""
MCP_PROTOCOLS = ("legacy", "2026-07-28")
"""The protocol eras a server may be configured for: the initialize handshake, and 2026-07-28."""
LISTING_MAX_AGE_S = 30.0
"""Default of ``McpServerConfig.listing_max_age_s``: how long an idempotent read may reuse a server's listing (D9.4)."""

DEFINITION_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
"""Decision 9: what a tool's definition hash covers, by wire (camelCase) name."""


def egress_host(host: str) -> str | None:
    """D7.2: the form in which two hosts are compared, or None when ``host`` names no host a client can reach.

    Lower case, one trailing dot aside, and each non-ASCII label as its IDNA 2008 A-label: the name the SDK's HTTP
    client resolves. A label IDNA 2008 refuses (full-width letters, zero-width characters) names nothing, so it never
    matches; a transitional mapping (ß to ss, as IDNA 2003 does) is never applied, since it would match a host other
    than the one the client reaches. An IP address compares in its canonical form.
    """
    text = host.removesuffix(".").lower()
    if not text:
        return None
    try:
        return str(ipaddress.ip_address(text.removeprefix("[").removesuffix("]")))
    except ValueError:
        pass
    try:
        return ".".join(label if label.isascii() else idna.encode(label).decode() for label in text.split("."))
    except idna.IDNAError:
        return None


def on_egress_allowlist(url: str, allowlist: Iterable[str]) -> bool:
    """D7.2: whether the host component of ``url`` (RFC 3986: after any userinfo, without the port) is on
    ``allowlist``, each entry compared as a whole in ``egress_host`` form."""
    try:
        host = egress_host(urlsplit(url).hostname or "")
    except ValueError:  # A URL urlsplit cannot read (a bad IPv6 literal, say) names no host.
        return False
    return host is not None and host in {egress_host(entry) for entry in allowlist}


class McpOrigin(StrEnum):
    """Who configured a server (decision 7)."""

    OPERATOR = "operator"
    """The platform operator: stdio and HTTP allowed."""
    TENANT = "tenant"
    """A tenant: HTTP only, host on the egress allowlist."""


class McpTransport(StrEnum):
    """How the adapter reaches a server."""

    MEMORY = "memory"
    """An in-process SDK server object (the harness's fakes; Python implementations only)."""
    STDIO = "stdio"
    """A subprocess spoken to over stdin/stdout."""
    HTTP = "http"
    """Streamable HTTP at a URL."""


class McpClassification(BaseModel):
    """Decision 6: what the operator says a server's tools do; never what the server says."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    side_effect: SideEffect
    risk: Risk
    idempotency: IdempotencyClass
    required_scopes: frozenset[str] = frozenset()


UNCLASSIFIED = McpClassification(
    side_effect=list(SideEffect)[-1],
    risk=list(Risk)[-1],
    idempotency=list(IdempotencyClass)[-1],
    required_scopes=frozenset({UNSATISFIABLE_SCOPE}),
)
"""Decision 6: the last member of each ordered enum plus a scope no credential grants."""


class McpServerConfig(BaseModel):
    """One MCP server as an operator or a tenant configured it."""

    # Errors never echo the input: an env value may be a key.
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True, hide_input_in_errors=True)

    server_id: str
    """The server's identity and name prefix (``mcp.{server_id}.``); never taken from the server."""
    origin: McpOrigin = McpOrigin.OPERATOR
    transport: McpTransport
    url: str | None = None
    """HTTP: the streamable-HTTP endpoint."""
    command: list[str] | None = None
    """stdio: the command line of the server process."""
    # Left out of the wire form when unset, so a driver of an earlier revision still accepts the configuration.
    env: dict[str, str] | None = Field(default=None, repr=False, exclude_if=lambda value: value is None)
    """stdio: environment variables of the server process, over the SDK's safe default environment (D7.4)."""
    cwd: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """stdio: the server process's working directory, an absolute path (D7.4); None: the worker's."""
    server: SkipJsonSchema[Any] = Field(default=None, exclude=True, repr=False)
    """memory: an ``mcp.server.lowlevel.Server`` in this process (never serialized: it cannot cross a process)."""
    classification: McpClassification | None = None
    """Per-server classification; None: the most restrictive (``UNCLASSIFIED``)."""
    protocol: Literal["legacy", "2026-07-28"] = "legacy"
    """Which protocol era the adapter speaks to this server."""
    call_timeout_s: float = Field(default=30.0, gt=0)
    """Deadline of every call to this server (the deadline_s of its tools)."""
    max_output_bytes: int = Field(default=16 * 1024 * 1024, gt=0)
    """A result larger than this fails instead of being delivered (excerpting happens below it)."""
    # Left out of the wire form at its default, so a driver of an earlier revision still accepts the configuration.
    listing_max_age_s: float = Field(
        default=LISTING_MAX_AGE_S, ge=0, allow_inf_nan=False, exclude_if=lambda value: value == LISTING_MAX_AGE_S
    )
    """D9.4: seconds an IDEMPOTENT READ_ONLY call may reuse the server's last listing instead of listing again
    (0: list before every call); a server's ``ttlMs`` hint may shorten it, never lengthen it. Any other call, and
    any call after a tools/list_changed, lists first."""

    @field_validator("server_id")
    @classmethod
    def _grammar(cls, value: str) -> str:
        if not SERVER_ID_GRAMMAR.fullmatch(value):
            raise ValueError(f"server_id {value!r} is not one segment [a-z][a-z0-9_]* (D5.5)")
        return value

    @model_validator(mode="after")
    def _endpoint(self) -> McpServerConfig:
        # A memory server's object is checked when connecting: a config read from the wire never has one.
        if self.transport is McpTransport.HTTP and not self.url:
            raise ValueError(f"server {self.server_id!r}: transport http needs url")
        if self.transport is McpTransport.STDIO and not self.command:
            raise ValueError(f"server {self.server_id!r}: transport stdio needs command")
        given = [name for name in ("env", "cwd") if getattr(self, name) is not None]
        if given and self.transport is not McpTransport.STDIO:
            raise ValueError(
                f"server {self.server_id!r}: {' and '.join(given)} {'apply' if len(given) > 1 else 'applies'} only "
                f"to a stdio server, not transport={self.transport.value!r}; "
                f"remove {'them' if len(given) > 1 else 'it'} (D7.4)"
            )
        for key, value in (self.env or {}).items():
            if not ENV_NAME_GRAMMAR.fullmatch(key):
                raise ValueError(
                    f"server {self.server_id!r}: env name {key!r} is not [A-Za-z_][A-Za-z0-9_]*; rename it (D7.4)"
                )
            if "\0" in value:
                raise ValueError(f"server {self.server_id!r}: env {key!r} contains NUL; remove it (D7.4)")
        if self.cwd is not None and (not self.cwd.startswith("/") or "\0" in self.cwd):
            raise ValueError(
                f"server {self.server_id!r}: cwd={self.cwd!r} is not an absolute path; give one starting with / (D7.4)"
            )
        return self

    @property
    def effective_classification(self) -> McpClassification:
        """The operator's classification, or the most restrictive one."""
        return self.classification or UNCLASSIFIED


def admission_refusal(server: McpServerConfig, egress_allowlist: Iterable[str]) -> str | None:
    """Decision 7: why ``server`` may not be connected, naming the rule, or None when it may.

    A tenant's server must use HTTP (D7.1) to a host on ``egress_allowlist`` (D7.2); an operator's may use any
    transport. The one decision ``check-server``, ``serve-reference`` and the reference's adapter all make.
    """
    if server.origin is not McpOrigin.TENANT:
        return None
    if server.transport is not McpTransport.HTTP:
        return (
            f"tenant MCP server {server.server_id!r} uses {server.transport.value}: tenant servers must use HTTP (D7.1)"
        )
    if not on_egress_allowlist(server.url or "", egress_allowlist):
        try:
            host = urlsplit(server.url or "").hostname
        except ValueError:
            host = None
        return (
            f"tenant MCP server {server.server_id!r} is on host {host!r}, which is not on the egress allowlist (D7.2)"
        )
    return None


_OUTSIDE_SEGMENT = re.compile(r"[^a-z0-9_]+")


def normalize_remote_name(remote: str) -> str:
    """Decision 5's pinned normalization of a remote tool or prompt name to one grammar segment.

    NFKC, lower case, every run of characters outside ``[a-z0-9_]`` replaced by one ``_``,
    ``t_`` prefixed when the result does not start with a letter, cut to 64 characters.
    """
    folded = unicodedata.normalize("NFKC", remote).lower()
    segment = _OUTSIDE_SEGMENT.sub("_", folded)
    if not segment[:1].isalpha():
        segment = "t_" + segment
    return segment[:MAX_REMOTE_SEGMENT]


def mcp_tool_name(server_id: str, remote: str) -> str:
    """``mcp.{server_id}.{normalized_remote_name}``."""
    return f"mcp.{server_id}.{normalize_remote_name(remote)}"


def mcp_skill_name(server_id: str, prompt: str) -> str:
    """D5.9: ``mcp.{server_id}.prompt.{normalized_prompt_name}``, a name no tool can have."""
    return f"mcp.{server_id}.{SKILL_SEGMENT}.{normalize_remote_name(prompt)}"


def definition_sha256(definition: Mapping[str, Any]) -> str:
    """Decision 9: sha256 of a tool's full definition (``DEFINITION_FIELDS`` of its wire form, an absent field
    as null), over its RFC 8785 canonical JSON.

    Raises:
        CanonicalJsonError: the definition holds a value I-JSON has no form for (NaN, an integer beyond 2**53).
    """
    return canonical_sha256({k: definition.get(k) for k in DEFINITION_FIELDS})


class CatalogChangeKind(StrEnum):
    """What one catalog-history entry records."""

    ADDED = "added"
    """A tool appeared (or was seen for the first time) at a listing."""
    CHANGED = "changed"
    """A tool's definition hash differs from the last one recorded."""
    WITHDRAWN = "withdrawn"
    """A tool recorded before is absent from a listing."""
    DROPPED = "dropped"
    """A remote name was not registered: it normalizes like another (decision 5), or its definition has no RFC 8785
    form to hash (decision 9)."""
    NOTIFIED = "notified"
    """The server sent tools/list_changed (advertised or not)."""
    DISCONNECTED = "disconnected"
    """The connection to the server was found lost; its tools answer remote_unavailable until it is back."""
    RECONNECTED = "reconnected"
    """An attempt to reconnect (stdio: to restart the server) succeeded."""
    RECONNECT_FAILED = "reconnect_failed"
    """An attempt to reconnect (stdio: to restart the server) failed; another follows after a backoff."""


class CatalogChange(BaseModel):
    """One entry of the catalog history (decision 9): what the adapter saw, in order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int
    """Order of recording, increasing."""
    server_id: str
    kind: CatalogChangeKind
    observed_at: float
    """The instance clock's time of recording."""
    remote_name: str | None = None
    registered_name: str | None = None
    definition_sha256: str | None = None
    """``definition_sha256`` of the definition seen (added and changed entries): RFC 8785, lower-case hex."""


class AdvertisedTool(BaseModel):
    """One tool of a session's pinned advertisement."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    server_id: str
    remote_name: str | None
    """None for the synthetic read_resource tool."""
    definition_sha256: str
    """``definition_sha256`` of the pinned definition: sha256 of its RFC 8785 canonical JSON, lower-case hex."""
    source: ToolSource
    side_effect: SideEffect
    risk: Risk
    idempotency: IdempotencyClass
    required_scopes: frozenset[str]
    output_trust: TrustLabel


class Skill(BaseModel):
    """A server prompt as the session sees it (decision 8)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """``mcp.{server_id}.prompt.{normalized prompt name}`` (``mcp_skill_name``, D5.9)."""
    server_id: str
    prompt_name: str
    description: str
    trust: TrustLabel
    read_only: bool
    cacheable: bool
    """Whether it may enter the cacheable prefix (never, for MCP prompts)."""


class Advertisement(BaseModel):
    """What a session advertises: pinned when it starts and never changed after (decision 9)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    as_of_seq: int
    """The last catalog-history seq recorded when the session pinned (0: none)."""
    tools: list[AdvertisedTool]
    skills: list[Skill]

    def names(self) -> list[str]:
        """The advertised tool names."""
        return [t.name for t in self.tools]


def replay_history(history: list[CatalogChange], up_to_seq: int) -> dict[str, str]:
    """Decision 18: the catalog (registered name -> definition hash) the history answers at ``up_to_seq``."""
    catalog: dict[str, str] = {}
    for change in history:
        if change.seq > up_to_seq or change.registered_name is None:
            continue
        if change.kind in (CatalogChangeKind.ADDED, CatalogChangeKind.CHANGED) and change.definition_sha256:
            catalog[change.registered_name] = change.definition_sha256
        elif change.kind is CatalogChangeKind.WITHDRAWN:
            catalog.pop(change.registered_name, None)
    return catalog
