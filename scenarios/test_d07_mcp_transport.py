"""Decision 7: tenant servers over HTTP to allowlisted hosts only; stdio from the operator.

D7.2 is judged by the refusal and by the connection. A tenant server is refused naming D7.2 for every allowlist that
does not list its host: absent, empty, entries naming no host (empty, a dot, a star), another host or address, a name
resolving to the same address, and the host written with a port (its own and another), a scheme or as the whole URL;
and for each, a loopback listener the harness owns in front of the server sees no connection from the pipeline. On
the other side, an allowlist listing the host (as written, absolute, among others, a name) admits it, the call
succeeds and the listener sees the connection; an operator's HTTP server needs no allowlist. Near-miss hosts, hosts
borrowed from the userinfo or after the authority, and the same host written another way (case, trailing dot, IDNA,
IP forms) are judged by the refusal, since no listener can sit at a host that resolves nowhere.

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

import contextlib
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import anyio
import anyio.abc
import pytest

from toolproof.fakes.mcp import ENV_KEY, LOOPBACK, SAFE_ENV_NAMES, http_server, stdio_command
from toolproof.spec import ConfigurationError, McpOrigin, McpServerConfig, McpTransport, Success

from ._bounds import bound
from ._harness import Harness, describe
from ._mcp import BOUND_S, DEFAULT_NAMES, ERAS, READ, configured_defaults, memory


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


class _Watch:
    """A loopback listener the harness owns, in front of a fake's HTTP server: it forwards every connection made to
    it and records each one's peer port, so whether a pipeline connected is a fact the harness saw."""

    def __init__(self, harness: Harness, port: int) -> None:
        self.harness = harness
        self.port = port
        self.peers: list[int] = []
        self.sentinels: set[int] = set()
        self.arrived = anyio.Event()

    async def connections(self) -> int:
        """How many connections the pipeline has made so far (the harness's own sentinels aside).

        The harness connects a sentinel and waits until it is accepted: connections are accepted in the order they
        arrived, so any the pipeline made before this call has been counted by then (no real-time window).
        """
        async with await anyio.connect_tcp(LOOPBACK, self.port) as sentinel:
            own = sentinel.extra(anyio.abc.SocketAttribute.local_port)
            self.sentinels.add(own)
            with anyio.fail_after(bound(self.harness, BOUND_S, "the harness's own connection to be accepted")):
                while own not in self.peers:
                    await self.arrived.wait()
        return len([p for p in self.peers if p not in self.sentinels])


async def _pump(source: anyio.abc.SocketStream, sink: anyio.abc.SocketStream) -> None:
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        async for chunk in source:
            await sink.send(chunk)
        await sink.send_eof()


@contextlib.asynccontextmanager
async def _watched(harness: Harness, upstream: str) -> AsyncIterator[_Watch]:
    """A ``_Watch`` forwarding to the HTTP server at ``upstream``, for the block."""
    target = urlsplit(upstream)
    listener = await anyio.create_tcp_listener(local_host=LOOPBACK, local_port=0)
    watch = _Watch(harness, listener.extra(anyio.abc.SocketAttribute.local_port))

    async def forward(client: anyio.abc.SocketStream) -> None:
        async with client:
            watch.peers.append(client.extra(anyio.abc.SocketAttribute.remote_port))
            watch.arrived.set()
            watch.arrived = anyio.Event()
            with contextlib.suppress(OSError):
                server = await anyio.connect_tcp(target.hostname or LOOPBACK, target.port or 80)
                async with server, anyio.create_task_group() as pumps:
                    pumps.start_soon(_pump, client, server)
                    await _pump(server, client)

    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, forward)
        try:
            yield watch
        finally:
            group.cancel_scope.cancel()


def _no_allowlist() -> list[tuple[str, list[str] | None]]:
    """(case, allowlist; None: the field not given) under which a tenant server at 127.0.0.1:PORT is refused: none
    given, an empty one, entries that name no host or another host, and the host written with a port or a scheme
    (an entry is a host, compared whole)."""
    return [
        ("absent", None),
        ("empty", []),
        ("an empty entry", [""]),
        ("a lone dot", ["."]),
        ("a star", ["*"]),
        ("another host", ["example.com"]),
        ("another address", ["127.0.0.2"]),
        ("IPv6 loopback", ["::1"]),
        ("a name resolving to it", ["localhost"]),
        ("the host with its port", ["127.0.0.1:{port}"]),
        ("the host with another port", ["127.0.0.1:1"]),
        ("the host with a scheme", ["http://127.0.0.1"]),
        ("the server's whole URL", ["http://127.0.0.1:{port}/mcp"]),
        ("several others", ["example.com", "localhost", "127.0.0.1:{port}"]),
    ]


_ALLOWLISTED = (
    ("the host", "127.0.0.1", ["127.0.0.1"]),
    ("the host, absolute", "127.0.0.1", ["127.0.0.1."]),
    ("the host among others", "127.0.0.1", ["example.com", "localhost", "127.0.0.1"]),
    ("a name", "localhost", ["localhost"]),
)
"""(case, host in the URL, allowlist) under which a tenant server is admitted."""


@pytest.mark.rules("D7.2")
async def test_no_allowlist_admits_no_tenant_server_and_no_connection_is_made(harness: Harness) -> None:
    # An egress allowlist that is absent or empty lists no host, so a tenant server is refused, and the harness's own
    # listener in front of the server sees no connection; an allowlisted one is connected (the other side), and an
    # operator's server needs no allowlist at all.
    async with http_server("PlainServer") as upstream, _watched(harness, upstream) as watch:
        url = f"http://{LOOPBACK}:{watch.port}/mcp"
        tenant = McpServerConfig(
            server_id="tenant", origin=McpOrigin.TENANT, transport=McpTransport.HTTP, url=url, classification=READ
        )
        for case, entries in _no_allowlist():
            given = {} if entries is None else {"egress_allowlist": [e.format(port=watch.port) for e in entries]}
            found = await _refusal_or_failure(harness, tenant, **given)
            seen = await watch.connections()
            harness.expect(
                "D7.2",
                isinstance(found, ConfigurationError) and "D7.2" in str(found) and seen == 0,
                f"a tenant server at {url} with the egress allowlist {case} ({given or 'not given'}) was answered "
                f"{found!r}, and the harness's listener saw {seen} connection(s) from the pipeline; expected a "
                "refusal naming D7.2 and none",
            )
        for case, host, entries in _ALLOWLISTED:
            served = tenant.model_copy(update={"url": f"http://{host}:{watch.port}/mcp"})
            before = await watch.connections()
            async with harness.open(mcp_servers=[served], egress_allowlist=entries) as session:
                d = await session.call("mcp.tenant.echo", {"text": "hi"})
            seen = await watch.connections() - before
            harness.success("D7.2", d, f"a call to a tenant server at {host!r} with the allowlist {entries} ({case})")
            harness.expect(
                "D7.2",
                seen > 0,
                f"a tenant server at {host!r}, allowlisted ({case}), answered though no connection "
                "reached the harness's listener in front of it",
            )
        before = await watch.connections()
        operator = tenant.model_copy(update={"origin": McpOrigin.OPERATOR})
        async with harness.open(mcp_servers=[operator]) as session:
            harness.success(
                "D7.2", await session.call("mcp.tenant.echo", {"text": "hi"}), "an operator's HTTP server, no allowlist"
            )
        harness.expect(
            "D7.2",
            await watch.connections() > before,
            "an operator's HTTP server answered though no connection reached the harness's listener in front of it",
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
