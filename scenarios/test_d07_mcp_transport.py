"""Decision 7: tenant servers over HTTP to allowlisted hosts only; stdio from the operator.

D7.4 is judged by value and by name. By value: the worker's own key is planted in the harness's process (seen only
by a driver in that process), and the server has to see the configured key or none. By name, wherever the driver
runs: the server reports the names of its environment variables, and any beyond the SDK's safe list (HOME, LOGNAME,
PATH, SHELL, TERM, USER), LC_CTYPE (Python's own locale coercion) and the configured ones is the worker's. A
configured name the default list also has takes the configured value, and every start of the server, a restart after
a lost connection included, gets the same env and cwd (``test_d07_mcp_reconnect``). No scenario judges what
spec.McpServerConfig refuses before any implementation sees it (env or cwd on a server that is not stdio, a cwd that
is not absolute, an env name outside POSIX's ``[A-Za-z_][A-Za-z0-9_]*``, a NUL in a value; its errors never echo the
input, since a value may be a key), nor that it leaves unset env and cwd out of the wire form, so a driver of an
earlier revision still accepts the configuration.
"""

from __future__ import annotations

import pytest

from toolproof.fakes.mcp import ENV_KEY, SAFE_ENV_NAMES, http_server, stdio_command
from toolproof.spec import ConfigurationError, McpOrigin, McpServerConfig, McpTransport, Success

from ._harness import Harness, describe
from ._mcp import DEFAULT_NAMES, ERAS, READ, configured_defaults, memory


async def _refusal(harness: Harness, *servers: McpServerConfig, **config: object) -> ConfigurationError | None:
    harness.log.append(f"open with {[s.model_dump(mode='json') for s in servers]} {config}")
    try:
        async with harness.implementation.open(harness.config(mcp_servers=list(servers), **config), [], harness.clock):
            return None
    except ConfigurationError as exc:
        harness.log.append(f"open refused: {exc}")
        return exc


async def _refusal_or_failure(harness: Harness, *servers: McpServerConfig, **config: object) -> Exception | None:
    """Like ``_refusal``, but an accepted configuration that then fails to connect is returned, not raised."""
    try:
        return await _refusal(harness, *servers, **config)
    except Exception as exc:  # Accepted, then the connection failed: that is the finding.
        harness.log.append(f"open accepted, then failed: {type(exc).__name__}")
        return exc


@pytest.mark.rules("D7.1")
async def test_tenant_server_not_over_http_is_a_configuration_error(harness: Harness) -> None:
    stdio = McpServerConfig(
        server_id="tenant_stdio",
        origin=McpOrigin.TENANT,
        transport=McpTransport.STDIO,
        command=stdio_command("PlainServer"),
    )
    in_process, _ = memory(harness, "tenant_mem", "PlainServer")
    for server in (stdio, in_process.model_copy(update={"origin": McpOrigin.TENANT})):
        error = await _refusal(harness, server)
        harness.expect("D7.1", error is not None, f"a tenant server over {server.transport.value} was accepted")
        harness.expect("D7.1", "D7.1" in str(error), f"the configuration error does not name D7.1: {error}")


_NEAR_MISSES = (
    "evilexample.com",  # ends with an allowed host, no dot boundary
    "EVILEXAMPLE.COM",
    "attacker-example.com",
    "sub.example.com",  # a subdomain is another host
    "www.example.com",
    "example.com.evil.test",  # an allowed host as a prefix
    "example.community",
    "example.co",
    "xample.com",
    "example.com..",  # one trailing dot is the absolute form of the same host; two are no host
    "ex\u0430mple.com",  # Cyrillic a, a confusable
    "xn--exmple-4nf.com",  # punycode of the confusable
    "127.0.0.10",
    "127.0.0.1.evil.test",
    "1127.0.0.1",
    "attacker-127.0.0.1",
)
"""Hosts near an allowlist of example.com and 127.0.0.1, none of them on it."""

_BORROWED_HOSTS = (
    "http://127.0.0.1:80@evil.example:9/mcp",  # userinfo "127.0.0.1:80" reads like host and port
    "http://127.0.0.1@evil.example:9/mcp",
    "http://example.com@evil.test:9/mcp",
    "http://example.com:443@evil.test:9/mcp",
    "http://user:example.com@evil.test:9/mcp",  # the allowed host as a password
    "http://EXAMPLE.COM@EVIL.TEST:9/mcp",
    "http://a@example.com@evil.test:9/mcp",  # two @: the host follows the last
    "http://127.0.0.1:9@127.0.0.2:9/mcp",
    "http://example.com%40evil.test:9/mcp",  # an escaped @ is part of the host, which is not on the list
    "http://evil.test:9/mcp#@example.com",  # the allowed host after the authority: fragment, query, path
    "http://evil.test:9/mcp?@example.com",
    "http://evil.test:9/@example.com/mcp",
)
"""Tenant URLs that name an allowed host (example.com, 127.0.0.1) outside their host: in the userinfo, or after the
authority. The host of each is off the allowlist."""


@pytest.mark.rules("D7.2")
async def test_tenant_http_server_must_be_on_the_egress_allowlist(harness: Harness) -> None:
    async with http_server("PlainServer") as url:
        tenant = McpServerConfig(
            server_id="tenant", origin=McpOrigin.TENANT, transport=McpTransport.HTTP, url=url, classification=READ
        )
        error = await _refusal(harness, tenant, egress_allowlist=["api.example.com"])
        harness.expect("D7.2", error is not None, f"a tenant server at {url}, off the allowlist, was accepted")
        harness.expect("D7.2", "D7.2" in str(error), f"the configuration error does not name D7.2: {error}")
        for host in _NEAR_MISSES:
            near = tenant.model_copy(update={"url": f"http://{host}:9/mcp"})
            found = await _refusal_or_failure(harness, near, egress_allowlist=["example.com", "127.0.0.1"])
            harness.expect(
                "D7.2",
                isinstance(found, ConfigurationError) and "D7.2" in str(found),
                f"a tenant server at {host!r} (allowlist example.com, 127.0.0.1) was not refused naming D7.2: {found}",
            )
        for borrowed in _BORROWED_HOSTS:
            found = await _refusal_or_failure(
                harness,
                tenant.model_copy(update={"url": borrowed}),
                egress_allowlist=["example.com", "127.0.0.1"],
            )
            harness.expect(
                "D7.2",
                isinstance(found, ConfigurationError) and "D7.2" in str(found),
                f"a tenant server at {borrowed!r}, whose host is not on the allowlist (example.com, 127.0.0.1) though "
                f"its URL names an allowed host, was not refused naming D7.2: {found}",
            )
        async with harness.open(mcp_servers=[tenant], egress_allowlist=["127.0.0.1"]) as session:
            harness.success("D7.2", await session.call("mcp.tenant.echo", {"text": "hi"}), "an allowlisted tenant call")


# (host in the URL, allowlist entry): the same host, written another way: case, the absolute form's trailing dot,
# U-label against A-label (IDNA 2008, the name the client resolves).
_SAME_HOST = (
    ("api.example.com", "API.Example.com"),
    ("API.EXAMPLE.COM", "api.example.com"),
    ("api.example.com.", "api.example.com"),
    ("api.example.com", "api.example.com."),
    ("Api.Example.Com.", "API.EXAMPLE.COM."),
    ("b\u00fccher.example", "xn--bcher-kva.example"),
    ("xn--bcher-kva.example", "b\u00fccher.example"),
    ("B\u00dcCHER.example", "b\u00fccher.example"),
    ("xn--bcher-kva.example", "XN--BCHER-KVA.EXAMPLE"),
    ("fa\u00df.example", "xn--fa-hia.example"),
    ("[0:0::1]", "::1"),  # an IP address compares in its canonical form
    ("[::1]", "0:0:0:0:0:0:0:1"),
    ("[0000:0000:0000:0000:0000:0000:0000:0001]", "[::1]"),
    ("[::FFFF:7F00:1]", "::ffff:127.0.0.1"),
)

# (host in the URL, allowlist entry): another host that looks like the entry, in both directions.
_LOOK_ALIKES = (
    ("fa\u00df.example", "fass.example"),  # IDNA 2003 maps ß to ss; the client resolves xn--fa-hia
    ("fass.example", "fa\u00df.example"),
    ("ex\u0430mple.com", "example.com"),  # Cyrillic a
    ("example.com", "ex\u0430mple.com"),
    ("\uff45xample.com", "example.com"),  # full-width e: no IDNA 2008 host
    ("example.com", "\uff45xample.com"),
    ("exa\u200bmple.com", "example.com"),  # zero-width space
    ("example.com", "exa\u200bmple.com"),
    ("bucher.example", "b\u00fccher.example"),  # the accent dropped
    ("b\u00fccher.example", "bucher.example"),
    ("xn--bcher-kva.example.evil.test", "b\u00fccher.example"),
    ("example.com..", "example.com"),
    ("example.com", "example.com.."),
    ("[::2]", "::1"),
    ("[::1]", "::2"),
    ("[::1:0]", "::1"),
)


def _admitted(found: Exception | None) -> bool:
    """Whether the implementation admitted the server: no refusal naming D7.2 (one that then could not reach the
    host, which resolves nowhere, was admitted)."""
    return not (isinstance(found, ConfigurationError) and "D7.2" in str(found))


@pytest.mark.rules("D7.2")
async def test_allowlist_compares_hosts_case_folded_idna_encoded_trailing_dot_aside(harness: Harness) -> None:
    tenant = McpServerConfig(
        server_id="tenant", origin=McpOrigin.TENANT, transport=McpTransport.HTTP, url="http://x:9/", classification=READ
    )
    for host, entry in _SAME_HOST:
        found = await _refusal_or_failure(
            harness, tenant.model_copy(update={"url": f"http://{host}:9/mcp"}), egress_allowlist=[entry]
        )
        harness.expect(
            "D7.2",
            _admitted(found),
            f"a tenant server at {host!r} was refused with the allowlist [{entry!r}], the same host written another "
            f"way (hosts compare case-folded, IDNA-encoded, one trailing dot aside): {found}",
        )
    for host, entry in _LOOK_ALIKES:
        found = await _refusal_or_failure(
            harness, tenant.model_copy(update={"url": f"http://{host}:9/mcp"}), egress_allowlist=[entry]
        )
        harness.expect(
            "D7.2",
            not _admitted(found),
            f"a tenant server at {host!r} was not refused naming D7.2 with the allowlist [{entry!r}], a host that "
            f"only looks like it: {found}",
        )
    async with http_server("PlainServer") as url:
        port = url.split(":")[2].split("/")[0]
        for host, entry in (("localhost", "LOCALHOST"), ("LocalHost", "localhost."), ("127.0.0.1", "127.0.0.1.")):
            served = tenant.model_copy(update={"url": f"http://{host}:{port}/mcp"})
            async with harness.open(mcp_servers=[served], egress_allowlist=[entry]) as session:
                harness.success(
                    "D7.2",
                    await session.call("mcp.tenant.echo", {"text": "hi"}),
                    f"a call to a tenant server at {host!r} with the allowlist [{entry!r}]",
                )


@pytest.mark.rules("D7.3")
async def test_operator_stdio_server_is_accepted(harness: Harness) -> None:
    operator = McpServerConfig(
        server_id="local", transport=McpTransport.STDIO, command=stdio_command("PlainServer"), classification=READ
    )
    error = await _refusal(harness, operator)
    harness.expect("D7.3", error is None, f"an operator stdio server was refused: {error}")
    async with harness.open(mcp_servers=[operator]) as session:
        ok = harness.success("D7.3", await session.call("mcp.local.echo", {"text": "over stdio"}), "mcp.local.echo")
        harness.expect("D7.3", [e.text for e in ok.content] == ["over stdio"], f"echo answered {ok.content}")


KEY = "k-7f3a"
"""The API key an operator gives EnvironmentServer."""

_ENVIRONMENTS = {
    "env+cwd": (True, True),
    "env": (True, False),
    "cwd": (False, True),
}
"""Which of env and cwd the operator gives."""


@pytest.mark.rules("D7.4")
@pytest.mark.parametrize("given", list(_ENVIRONMENTS))
@pytest.mark.parametrize("protocol", ERAS)
async def test_stdio_server_gets_the_configured_env_and_cwd(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, protocol: str, given: str
) -> None:
    with_env, with_cwd = _ENVIRONMENTS[given]
    # The worker's own value: the server has to see the configured one, or none at all.
    monkeypatch.setenv(ENV_KEY, "the-workers-own-key")
    cwd = harness.directory / "server-cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    # With env, the operator also names every variable of the SDK's default list: the configured value wins.
    defaults = configured_defaults(harness.directory)
    config = McpServerConfig(
        server_id="keyed",
        transport=McpTransport.STDIO,
        command=stdio_command("EnvironmentServer"),
        classification=READ,
        protocol=protocol,
        env={ENV_KEY: KEY} | defaults if with_env else None,
        cwd=str(cwd.resolve()) if with_cwd else None,
    )
    harness.log.append(f"mcp server keyed: EnvironmentServer over stdio, {protocol}, given {given}")
    async with harness.open(mcp_servers=[config]) as session:
        d = await session.call("mcp.keyed.environment", {"names": list(DEFAULT_NAMES)})
    seen = "".join(e.text for e in d.content) if isinstance(d, Success) else describe(d)
    lines = seen.splitlines()
    expected_key = f"{ENV_KEY}={KEY if with_env else '<unset>'}"
    harness.expect(
        "D7.4",
        expected_key in lines,
        f"the server, given {given}, saw {seen!r}; expected {expected_key!r} (the configured key, or none: never the "
        "worker's own)",
    )
    if with_cwd:
        harness.expect("D7.4", f"cwd={cwd.resolve()}" in lines, f"the server, given cwd={cwd.resolve()}, saw {seen!r}")
    # The worker's own key is planted in this process; behind a driver in another process the worker is that
    # process, so what the server must not see is judged by name: nothing beyond the safe list and the configured.
    names = next((line.removeprefix("names=") for line in lines if line.startswith("names=")), None)
    extra = sorted(set((names or "").split(",")) - {""} - SAFE_ENV_NAMES - ({ENV_KEY} if with_env else set()))
    harness.expect(
        "D7.4",
        names is not None and not extra,
        f"the server, given {given}, saw environment variables beyond the SDK's safe list and its configured env: "
        f"{f'{len(extra)}, first {extra[:8]}' if names is not None else 'no names reported'} (the worker's "
        "environment leaked)",
    )
    if with_env:
        for name in DEFAULT_NAMES:
            harness.expect(
                "D7.4",
                f"{name}={defaults[name]}" in lines,
                f"the server, given env {name}={defaults[name]!r} (a name of the SDK's default list), saw {seen!r}: "
                "env goes over the default environment",
            )
