"""Round 2, decision 7: tenant servers over HTTP only, through the egress allowlist."""

from __future__ import annotations

from urllib.parse import urlsplit

from toolproof.reference.hooks import McpAdapter, Pipeline, ReferenceImplementation
from toolproof.spec import ConfigurationError, InstanceConfig, McpOrigin, McpTransport

from ._common import impl


class _NetlocHost(McpAdapter):
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
            # The mistake: the host is the netloc with its port cut off at the first colon, so userinfo
            # ("allowed.example:80@evil.example") is read as the host.
            host = urlsplit(server.url or "").netloc.split(":")[0].lower()
            if host not in config.egress_allowlist:
                raise ConfigurationError(f"tenant MCP server {server.server_id!r} host {host!r} not allowed (D7.2)")


class _NetlocPipeline(Pipeline):
    mcp_class = _NetlocHost


def allowlist_reads_userinfo_as_host() -> ReferenceImplementation:
    """D7 "Tenant-configured servers are HTTP-only through the egress allowlist": the host checked against the
    allowlist is ``netloc.split(":")[0]``, so a tenant URL such as ``http://127.0.0.1:80@evil.example/mcp`` (userinfo
    naming an allowed host, the real host elsewhere) passes an allowlist of ["127.0.0.1"]."""
    return impl("r2-d07-allowlist-userinfo-as-host", _NetlocPipeline)


class _StdioBlacklist(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        seen: set[str] = set()
        for server in config.mcp_servers:
            if server.server_id in seen:
                raise ConfigurationError(f"MCP server_id {server.server_id!r} is configured twice (D5.5)")
            seen.add(server.server_id)
            if server.origin is not McpOrigin.TENANT:
                continue
            # The mistake: the rule is written as "no stdio" instead of "only HTTP".
            if server.transport is McpTransport.STDIO:
                raise ConfigurationError(f"tenant MCP server {server.server_id!r} may not use stdio (D7.1)")
            if server.transport is McpTransport.HTTP:
                host = urlsplit(server.url or "").hostname
                if host not in config.egress_allowlist:
                    raise ConfigurationError(f"tenant MCP server {server.server_id!r} host {host!r} not allowed (D7.2)")


class _StdioBlacklistPipeline(Pipeline):
    mcp_class = _StdioBlacklist


def tenant_transport_blacklist() -> ReferenceImplementation:
    """D7 "Tenant-configured servers are HTTP-only": the check refuses a tenant stdio server but lets every other
    non-HTTP transport through (and checks the allowlist only for HTTP), so a tenant server over the in-process
    memory transport is accepted instead of being a configuration error."""
    return impl("r2-d07-tenant-transport-blacklist", _StdioBlacklistPipeline)
