"""Decision 7: tenant servers are HTTP-only through the egress allowlist."""

from __future__ import annotations

from urllib.parse import urlsplit

from toolproof.reference.hooks import McpAdapter, Pipeline, ReferenceImplementation
from toolproof.spec import ConfigurationError, InstanceConfig, McpOrigin, McpTransport

from ._common import impl


class _HttpOnlyChecked(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        seen: set[str] = set()
        for server in config.mcp_servers:
            if server.server_id in seen:
                raise ConfigurationError(f"MCP server_id {server.server_id!r} is configured twice (D5.5)")
            seen.add(server.server_id)
            # The mistake: the allowlist is enforced for tenant HTTP servers; other transports "have no host".
            if server.origin is McpOrigin.TENANT and server.transport is McpTransport.HTTP:
                host = urlsplit(server.url or "").hostname
                if host not in config.egress_allowlist:
                    raise ConfigurationError(f"tenant MCP server {server.server_id!r} host {host!r} not allowed (D7.2)")


class _TenantStdio(Pipeline):
    mcp_class = _HttpOnlyChecked


def tenant_stdio_accepted() -> ReferenceImplementation:
    """D7 "stdio servers are operator-configured only": the check only validates tenant HTTP servers against the
    allowlist, so a tenant-configured stdio server is accepted (remote code execution in the worker)."""
    return impl("d07-tenant-stdio-accepted", _TenantStdio)


class _SuffixAllowlist(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        seen: set[str] = set()
        for server in config.mcp_servers:
            if server.server_id in seen:
                raise ConfigurationError(f"MCP server_id {server.server_id!r} is configured twice (D5.5)")
            seen.add(server.server_id)
            if server.origin is not McpOrigin.TENANT:
                continue
            if server.transport is not McpTransport.HTTP:
                raise ConfigurationError(f"tenant MCP server {server.server_id!r} must use HTTP (D7.1)")
            host = urlsplit(server.url or "").hostname or ""
            # The mistake: subdomains of an allowed host are allowed by suffix, without a dot boundary.
            if not any(host == allowed or host.endswith(allowed) for allowed in config.egress_allowlist):
                raise ConfigurationError(f"tenant MCP server {server.server_id!r} host {host!r} not allowed (D7.2)")


class _Suffix(Pipeline):
    mcp_class = _SuffixAllowlist


def allowlist_suffix_match() -> ReferenceImplementation:
    """D7 "HTTP-only through the egress allowlist": the host is matched by suffix without a dot boundary, so
    "evilexample.com" (or "attacker-127.0.0.1") passes an allowlist entry "example.com" ("127.0.0.1")."""
    return impl("d07-allowlist-suffix-match", _Suffix)
