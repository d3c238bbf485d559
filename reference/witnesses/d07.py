"""Witnesses of decision 7: Tenant servers over HTTP only; stdio is operator-only.

Each is the reference with one deliberate defect, named for it; ``breaks`` names the rules it breaks."""

from __future__ import annotations

import contextlib
import os
import re
from typing import Any
from urllib.parse import urlsplit

import anyio.abc
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from toolproof.reference.hooks import (
    Link,
    McpAdapter,
    McpTool,
    Opening,
    Pipeline,
)
from toolproof.spec import (
    CatalogChangeKind,
    ConfigurationError,
    InstanceConfig,
    JsonObject,
    McpOrigin,
    McpServerConfig,
    McpTransport,
    ReasonCode,
    ToolExecutionContext,
    ToolResult,
    ToolSpec,
    egress_host,
)

from ._registry import adapter_pipeline, witness


class _AcceptsTenantStdio(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        allowed = [s for s in config.mcp_servers if s.url is not None]
        super().check(config.model_copy(update={"mcp_servers": allowed}))


witness("tenant_stdio_accepted", ("D7.1",), "accepts a tenant MCP server over stdio or in-process")(
    adapter_pipeline(_AcceptsTenantStdio)
)


class _AnyHost(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        hosts = [urlsplit(s.url).hostname or "" for s in config.mcp_servers if s.url is not None]
        super().check(config.model_copy(update={"egress_allowlist": [*config.egress_allowlist, *hosts]}))


witness("egress_allowlist_ignored", ("D7.2",), "accepts a tenant HTTP server on any host")(adapter_pipeline(_AnyHost))


class _AllowlistVerbatim(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        for server in config.mcp_servers:
            host = urlsplit(server.url or "").hostname
            # The defect: the host as written against the entries as written (case, trailing dot and IDNA kept).
            if server.origin is McpOrigin.TENANT and server.url is not None and host not in config.egress_allowlist:
                raise ConfigurationError(f"tenant MCP server {server.server_id!r} host {host!r} not allowed (D7.2)")
        super().check(
            config.model_copy(
                update={"egress_allowlist": [urlsplit(s.url or "").hostname or "" for s in config.mcp_servers]}
            )
        )


witness("allowlist_compared_verbatim", ("D7.2",), "compares allowlist hosts as written: case, trailing dot, U-labels")(
    adapter_pipeline(_AllowlistVerbatim)
)


class _AllowlistIdna2003(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        def key(host: str) -> str:
            # The defect: IDNA 2003's transitional mapping (ß to ss, full-width to ASCII), not the host the client
            # resolves.
            try:
                return host.rstrip(".").encode("idna").decode().lower()
            except UnicodeError:
                return host.lower()

        allowed = {key(entry) for entry in config.egress_allowlist}
        for server in config.mcp_servers:
            host = urlsplit(server.url or "").hostname or ""
            if server.origin is McpOrigin.TENANT and server.url is not None and key(host) not in allowed:
                raise ConfigurationError(f"tenant MCP server {server.server_id!r} host {host!r} not allowed (D7.2)")
        super().check(
            config.model_copy(
                update={"egress_allowlist": [urlsplit(s.url or "").hostname or "" for s in config.mcp_servers]}
            )
        )


witness("allowlist_idna2003", ("D7.2",), "compares allowlist hosts under IDNA 2003's mapping (ß as ss)")(
    adapter_pipeline(_AllowlistIdna2003)
)


class _AllowlistIpAsText(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        def key(host: str) -> str | None:
            # The defect: an IP literal compared as the text it is written in, not as the address it names.
            bare = host.removesuffix(".").lower().removeprefix("[").removesuffix("]")
            return bare if ":" in bare else egress_host(host)

        allowed = {key(entry) for entry in config.egress_allowlist}
        for server in config.mcp_servers:
            host = urlsplit(server.url or "").hostname or ""
            if server.origin is McpOrigin.TENANT and server.url is not None and key(host) not in allowed:
                raise ConfigurationError(f"tenant MCP server {server.server_id!r} host {host!r} not allowed (D7.2)")
        hosts = [urlsplit(s.url or "").hostname or "" for s in config.mcp_servers]
        super().check(config.model_copy(update={"egress_allowlist": hosts}))


witness("allowlist_ip_as_text", ("D7.2",), "compares IPv6 allowlist hosts as written, not as addresses")(
    adapter_pipeline(_AllowlistIpAsText)
)


class _RefusesStdio(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        for server in config.mcp_servers:
            if server.transport is McpTransport.STDIO:
                raise ConfigurationError(f"MCP server {server.server_id!r}: stdio is not supported")
        super().check(config)


witness("stdio_refused", ("D7.3",), "refuses stdio servers even from the operator")(adapter_pipeline(_RefusesStdio))


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
            # The defect: a host passes when it ends with an allowed host, with no dot boundary.
            if not any(host.endswith(allowed) for allowed in config.egress_allowlist):
                raise ConfigurationError(f"tenant MCP server {server.server_id!r} host {host!r} not allowed (D7.2)")


@witness("allowlist_suffix_match", ("D7.2",), "matches a tenant host against the egress allowlist by suffix")
class _AllowlistSuffixMatch(Pipeline):
    mcp_class = _SuffixAllowlist


class _EmptyAllowlistAllowsAll(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        if not config.egress_allowlist:
            # The defect: an allowlist nobody configured is read as "no restriction" rather than "no host".
            hosts = [urlsplit(s.url).hostname or "" for s in config.mcp_servers if s.url is not None]
            config = config.model_copy(update={"egress_allowlist": hosts})
        super().check(config)


witness(
    "empty_allowlist_allows_all",
    ("D7.2",),
    "reads an absent or empty egress allowlist as no restriction, and connects a tenant's HTTP server on any host",
)(adapter_pipeline(_EmptyAllowlistAllowsAll))


class _UserinfoHost(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        stripped = []
        for server in config.mcp_servers:
            if server.origin is McpOrigin.TENANT and server.url:
                # The defect: the host is read as the authority up to its first ':' or '@', so userinfo that names
                # an allowed host stands in for the real one.
                host = re.split(r"[:@]", urlsplit(server.url).netloc, maxsplit=1)[0].lower()
                if host not in config.egress_allowlist:
                    raise ConfigurationError(f"tenant MCP server {server.server_id!r} host {host!r} not allowed (D7.2)")
                server = server.model_copy(update={"url": f"http://{config.egress_allowlist[0]}/"})
            stripped.append(server)
        super().check(config.model_copy(update={"mcp_servers": stripped}))


@witness("allowlist_userinfo_host", ("D7.2",), "reads a tenant URL's userinfo as its host for the egress allowlist")
class _AllowlistUserinfoHost(Pipeline):
    mcp_class = _UserinfoHost


class _StdioEnvIgnored(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        super().check(config)
        servers = [server.model_copy(update={"env": None, "cwd": None}) for server in config.mcp_servers]
        self.config = config.model_copy(update={"mcp_servers": servers})


witness("stdio_env_ignored", ("D7.4",), "starts a stdio server without its configured env and cwd")(
    adapter_pipeline(_StdioEnvIgnored)
)


class _WorkerEnvInherited(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        super().check(config)
        servers = [
            server.model_copy(update={"env": dict(os.environ) | (server.env or {})})
            if server.transport is McpTransport.STDIO
            else server
            for server in config.mcp_servers
        ]
        self.config = config.model_copy(update={"mcp_servers": servers})


witness("stdio_inherits_worker_env", ("D7.4",), "starts a stdio server with the worker's whole environment")(
    adapter_pipeline(_WorkerEnvInherited)
)


class _OpaqueOpenError(McpAdapter):
    def open_error(self, opening: Opening, exc: BaseException) -> ConfigurationError:
        # The defect: the error says only what the SDK raised (often its task group's wrapper), not the era asked
        # nor what the server answered.
        return ConfigurationError(f"MCP server {opening.server.server_id!r} cannot be reached: {exc}")


witness(
    "opaque_open_error",
    ("D7.7", "D7.8"),
    "refuses a server whose opening failed with the SDK's own text (a task group's wrapper), naming neither the era "
    "asked nor what the server answered",
)(adapter_pipeline(_OpaqueOpenError))


class _UnverifiedEra(McpAdapter):
    async def verify(self, server: McpServerConfig, client: Client, opening: Opening) -> None:
        # The defect: a 2026-07-28 connection is taken as adopted; nothing asks the server whether it speaks the era.
        return


witness(
    "unverified_era",
    ("D7.8", "D7.7"),
    "accepts a server configured for 2026-07-28 without a server/discover probe: a handshake-only, silent or "
    "non-JSON server opens, and fails later",
)(adapter_pipeline(_UnverifiedEra))


class _ClosedReadAsHandshake(McpAdapter):
    async def verify(self, server: McpServerConfig, client: Client, opening: Opening) -> None:
        try:
            await super().verify(server, client, opening)
        except MCPError as exc:
            if exc.error.code != types.CONNECTION_CLOSED:
                raise
            # The defect: -32000 is what a handshake-era streamable-HTTP server answers server/discover with, so
            # every -32000 is read as that answer, the SDK's own "Connection closed" for a server that exited too.
            opening.answer = (
                f"answered server/discover with {exc.error.code} {exc.error.message}: it speaks only the initialize "
                'handshake; configure protocol = "legacy"'
            )
            raise


witness(
    "exit_read_as_handshake_era",
    ("D7.7",),
    "takes the SDK's 'Connection closed' for a 2026-07-28 server that exited at start for a handshake-era answer, "
    "and tells the operator to configure the legacy era",
)(adapter_pipeline(_ClosedReadAsHandshake))


class _ExitReadAsTimeout(McpAdapter):
    def open_error(self, opening: Opening, exc: BaseException) -> ConfigurationError:
        error = super().open_error(opening, exc)
        # The defect: every opening that got no answer is reported as one that waited out its call timeout, a server
        # whose process exited at once too.
        waited = f"gave no answer within {opening.server.call_timeout_s:g} s"
        return ConfigurationError(str(error).replace("exited before answering", waited))


witness(
    "exit_read_as_timeout",
    ("D7.7",),
    "reports a stdio server that exited at start as one that gave no answer within its call timeout",
)(adapter_pipeline(_ExitReadAsTimeout))


class _WholeLogQuoted(McpAdapter):
    def open_error(self, opening: Opening, exc: BaseException) -> ConfigurationError:
        error = super().open_error(opening, exc)
        if opening.log is None or not opening.log.exists():
            return error
        # The defect: the stderr log is appended across starts, and its last lines are quoted whichever start wrote
        # them, so a start that said little is diagnosed with what an earlier start said.
        lines = [line for line in opening.log.read_text(encoding="utf-8").splitlines() if line.strip()][-5:]
        return ConfigurationError(f"{error} (the log ends: {' | '.join(lines)!r})")


witness(
    "stderr_quoted_across_starts",
    ("D7.7",),
    "quotes the last lines of a stdio server's stderr log whichever start wrote them, so an exit at start is "
    "diagnosed with an earlier start's words",
)(adapter_pipeline(_WholeLogQuoted))


class _MalformedCrashes(McpAdapter):
    def malformed(self, link: Link, exc: ValidationError) -> ToolResult:
        # The defect: an answer that is no result of its era escapes the tool as the SDK's validation error, which
        # the pipeline judges a retryable crash "before acting".
        raise exc


witness(
    "malformed_is_a_crash",
    ("D7.9",),
    "lets a result missing its era's required fields out of the MCP tool as an exception: tool_crashed, retryable",
)(adapter_pipeline(_MalformedCrashes))


class _DeadServerStopsEveryRun(McpAdapter):
    async def listed(self, link: Link) -> bool:
        # The defect: the listing a new session (or a call) makes is not contained, so a dead server's
        # "Connection closed" escapes from every submit, builtin calls included.
        await self.refresh(link)
        return True


witness(
    "dead_server_stops_every_run",
    ("D7.5",),
    "lets a lost server's listing error escape, so after it dies every new run's submit raises",
)(adapter_pipeline(_DeadServerStopsEveryRun))


class _NeverReconnects(McpAdapter):
    async def reconnect(self, link: Link) -> bool:
        # The defect: a lost server stays lost for the instance's lifetime; nothing is attempted or recorded.
        return not link.lost


witness(
    "never_reconnects",
    ("D7.6",),
    "never restarts or reconnects a lost server: its tools answer remote_unavailable until the instance closes",
)(adapter_pipeline(_NeverReconnects))


class _CrashOnLostConnection(McpTool):
    def __init__(self, adapter: McpAdapter, inner: McpTool) -> None:
        super().__init__(adapter, inner.link, None, inner.spec)
        self.inner = inner

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        result = await self.inner.execute(arguments, context)
        if result.failure is not None and result.failure.kind == "REMOTE_UNAVAILABLE":
            # The defect: "the watermark decides, as in recovery" applied to every call: a lost connection raises
            # even when nothing was marked, so a READ_ONLY call lost mid-call completes FAILED tool_crashed.
            raise ConnectionError(result.failure.detail or "connection lost")
        return result


class _UnmarkedDropRaises(McpAdapter):
    def pinned(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | None:
        found = super().pinned(run_id, name)
        if found is None:
            return None
        spec, tool = found
        return spec, _CrashOnLostConnection(self, tool)


witness(
    "unmarked_drop_raises",
    ("D7.5",),
    "lets a READ_ONLY MCP call whose connection is lost mid-call raise (tool_crashed) instead of remote_unavailable",
)(adapter_pipeline(_UnmarkedDropRaises))


class _DefaultsOverEnv(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        super().check(config)
        # The defect: the SDK's default environment is laid over the configured env, not under it, so a configured
        # HOME or PATH loses to the worker's.
        servers = [
            server.model_copy(update={"env": server.env | get_default_environment()}) if server.env else server
            for server in config.mcp_servers
        ]
        self.config = config.model_copy(update={"mcp_servers": servers})


witness(
    "stdio_defaults_over_env",
    ("D7.4",),
    "lays the SDK's default environment over a stdio server's configured env, so a configured HOME or PATH loses",
)(adapter_pipeline(_DefaultsOverEnv))


class _RestartForgetsEnv(McpAdapter):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.started: set[str] = set()

    def stdio_parameters(self, server: McpServerConfig) -> StdioServerParameters:
        parameters = super().stdio_parameters(server)
        if server.server_id in self.started:
            # The defect: "a dead process's settings die with it": the restart loses the configured env and cwd,
            # so it gets the SDK's defaults and the worker's directory.
            parameters.env, parameters.cwd = None, None
        self.started.add(server.server_id)
        return parameters


witness(
    "restart_forgets_env",
    ("D7.4",),
    "restarts a lost stdio server without its configured env and cwd (the first start has them)",
)(adapter_pipeline(_RestartForgetsEnv))


class _ListenUnguarded(McpAdapter):
    async def listen(self, link: Link, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        # The defect: no boundary around the 2026-07-28 listen subscription ("it only ends when the connection
        # does"), so a stream the server ends with an error takes the server's connection down with it.
        async with link.client.listen(tools_list_changed=True) as subscription:
            task_status.started()
            async for _ in subscription:
                pass


witness(
    "listen_error_drops_server",
    ("D7.5",),
    "lets a 2026-07-28 listen stream the server ends with an error close the server's connection, so its tools "
    "answer remote_unavailable",
)(adapter_pipeline(_ListenUnguarded))


class _ListenGuardedOnceAcknowledged(McpAdapter):
    async def listen(self, link: Link, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        # The defect: only a stream the server acknowledged is guarded ("a refused listen cannot happen, the era has
        # it"), so a refusal escapes before the start is reported and the server's opening waits for it forever.
        async with link.client.listen(tools_list_changed=True) as subscription:
            task_status.started()
            with contextlib.suppress(Exception):
                async for _ in subscription:
                    pass


witness(
    "listen_refusal_hangs_open",
    ("D7.5",),
    "guards only an acknowledged listen stream: a 2026-07-28 server that answers the listen request with an error "
    "leaves open waiting forever",
)(adapter_pipeline(_ListenGuardedOnceAcknowledged))


class _LongOpenErrorHalved(McpAdapter):
    def open_error(self, opening: Opening, exc: BaseException) -> ConfigurationError:
        error = super().open_error(opening, exc)
        text = str(error)
        if len(text) <= OPEN_ERROR_WIDTH:
            return error
        # The defect: a long error is shortened to its two ends with a half computed by true division (a Python 2
        # habit), a float no slice takes: a server whose last words are long makes open raise TypeError.
        half = OPEN_ERROR_WIDTH / 2
        return ConfigurationError(text[:half] + " … " + text[-half:])  # type: ignore[index]


OPEN_ERROR_WIDTH = 600
"""The longest open error ``_LongOpenErrorHalved`` leaves whole."""

witness(
    "long_open_error_crashes_open",
    ("D7.7",),
    "shortens a long open error with a slice index computed by true division, so a server whose last words are long "
    "makes open raise TypeError instead of the one typed refusal",
)(adapter_pipeline(_LongOpenErrorHalved))


class _ApplicationErrorsLoseServer(McpAdapter):
    async def failed(self, link: Link, exc: Exception) -> None:
        if isinstance(exc, MCPError) and exc.error.code >= types.CONNECTION_CLOSED:
            # The defect: -32000 is the SDK's own "Connection closed", and every code from it up is read as the
            # transport's too, the codes JSON-RPC leaves to the application (-1, 4242) included.
            await self.lose(link)
            return
        await super().failed(link, exc)


witness(
    "application_error_codes_lose_server",
    ("D7.5",),
    "takes a listing error the server answers with a code of -32000 or above (an application's -1 or 4242) for a lost "
    "connection",
)(adapter_pipeline(_ApplicationErrorsLoseServer))


class _ClosureCodeReadAsLoss(McpAdapter):
    def lost(self, exc: BaseException) -> bool:
        # The defect: -32000 is the code of the SDK's own "Connection closed", so every error of that code is read as
        # the transport's, one a live server answered to a call or a listing included.
        if isinstance(exc, MCPError) and exc.error.code == types.CONNECTION_CLOSED:
            return True
        return super().lost(exc)


witness(
    "code_32000_answer_read_as_loss",
    ("D7.5",),
    "takes every JSON-RPC error of code -32000 for a lost connection, one a live server answered to a call or a "
    "listing included (the code the MCP SDK also gives its own closed connection)",
)(adapter_pipeline(_ClosureCodeReadAsLoss))


class _ClosureWordsReadAsLoss(McpAdapter):
    def lost(self, exc: BaseException) -> bool:
        # The defect: the SDK's closed connection is told by its words alone, "Connection closed", so a server's
        # error in those words is read as the transport's whatever its code.
        if isinstance(exc, MCPError) and exc.error.message.startswith("Connection closed"):
            return True
        return super().lost(exc)


witness(
    "closure_words_read_as_loss",
    ("D7.5",),
    "takes a server's error in the MCP SDK's closure words ('Connection closed ...') for a lost connection whatever "
    "its code, -32603 or an application's -1 or 4242 included",
)(adapter_pipeline(_ClosureWordsReadAsLoss))


class _ErrorAnswerLosesServer(McpAdapter):
    async def failed(self, link: Link, exc: Exception) -> None:
        # The defect: any request that did not succeed means the server is gone, a JSON-RPC error it answered to
        # a listing included.
        await self.lose(link)


witness(
    "listing_error_loses_server",
    ("D7.5",),
    "takes a JSON-RPC error a live server answers to a listing (tools, prompts, resources) for a lost connection",
)(adapter_pipeline(_ErrorAnswerLosesServer))


class _LossTakesEveryServer(McpAdapter):
    async def lose(self, link: Link) -> None:
        await super().lose(link)
        for other in self.links.values():
            if other is not link and other.config.transport is not McpTransport.MEMORY:
                # The defect: "one process died, so the worker's MCP children are suspect": every other
                # subprocess or remote server is marked lost too, until its own reconnect is due.
                await super().lose(other)


witness(
    "loss_takes_every_server",
    ("D7.5",),
    "marks every other stdio or HTTP server lost with the one whose connection dropped",
)(adapter_pipeline(_LossTakesEveryServer))


class _LossTakesEveryInProcessServer(McpAdapter):
    async def lose(self, link: Link) -> None:
        await super().lose(link)
        for other in self.links.values():
            if other is not link and other.config.transport is McpTransport.MEMORY:
                # The defect, the other side of the one above: in-process servers are marked lost with it.
                await super().lose(other)


witness(
    "loss_takes_in_process_servers",
    ("D7.5",),
    "marks every in-process server lost with the stdio or HTTP one whose connection dropped",
)(adapter_pipeline(_LossTakesEveryInProcessServer))


class _BackoffWithoutCap(McpAdapter):
    def backoff(self, attempts: int) -> float:
        # The defect: the doubling is never capped, so after enough failures attempts are minutes apart.
        return 1.0 * 2.0**attempts


witness(
    "backoff_without_cap",
    ("D7.6",),
    "doubles the reconnect backoff without a cap, so after a long outage attempts are more than 60 s apart",
)(adapter_pipeline(_BackoffWithoutCap))


class _BackoffCapPlusMargin(McpAdapter):
    def backoff(self, attempts: int) -> float:
        # The defect: a second of margin on top of the cap ("so a clock that is a little fast never retries early").
        return min(super().backoff(attempts) + 1.0, 61.0)


witness(
    "backoff_cap_plus_margin",
    ("D7.6",),
    "caps the reconnect backoff at 61 s, so a need exactly 60 s after a failed attempt makes none",
)(adapter_pipeline(_BackoffCapPlusMargin))


class _ReconnectsAtEveryNeed(McpAdapter):
    def backoff(self, attempts: int) -> float:
        # The defect: no wait after a failed attempt ("the next need may find it back"), so every need attempts.
        return 0.0


witness(
    "reconnects_at_every_need",
    ("D7.6",),
    "waits nothing after a failed reconnect attempt, so every need at one instant makes another attempt",
)(adapter_pipeline(_ReconnectsAtEveryNeed))


class _WaitsAlternate(McpAdapter):
    def backoff(self, attempts: int) -> float:
        # The defect: the wait follows the failed attempts' parity ("odd: 2 s, even: 1 s"), so every other wait is
        # shorter than the one before it; each is positive and within 60 s.
        return 2.0 if attempts % 2 else 1.0


witness(
    "reconnect_waits_alternate",
    ("D7.6",),
    "alternates the wait after a failed reconnect attempt between 2 s and 1 s, so every other wait is shorter than the "
    "one before it",
)(adapter_pipeline(_WaitsAlternate))


class _BackoffStartsOverAtCap(McpAdapter):
    def backoff(self, attempts: int) -> float:
        # The defect: once a wait has reached the cap the doubling starts over from 1 s ("a fresh cycle"), so the
        # wait after a 60 s one is 1 s.
        return super().backoff((attempts - 1) % 7 + 1)


witness(
    "backoff_starts_over_at_cap",
    ("D7.6",),
    "starts the reconnect backoff over from 1 s once a wait has reached the 60 s cap, so a wait is shorter than the one "
    "before it",
)(adapter_pipeline(_BackoffStartsOverAtCap))


class _ReconnectsAtTheLoss(McpAdapter):
    async def lose(self, link: Link) -> None:
        was_lost = link.lost
        await super().lose(link)
        if not was_lost:
            # The defect: the first attempt is due at the loss itself, with no backoff before it.
            link.retry_at = self.clock.now()


witness(
    "reconnects_at_the_loss",
    ("D7.6",),
    "makes the first reconnect attempt due at the instant of the loss, with no backoff before it",
)(adapter_pipeline(_ReconnectsAtTheLoss))


class _DueOnlyAfter(McpAdapter):
    async def reconnect(self, link: Link) -> bool:
        if link.lost and self.clock.now() == link.retry_at:
            # The defect: the due time itself still waits (an exclusive bound).
            return False
        return await super().reconnect(link)


witness(
    "reconnect_due_exclusive",
    ("D7.6",),
    "makes no reconnect attempt at the instant it is due, only after it, so a need exactly 60 s later makes none",
)(adapter_pipeline(_DueOnlyAfter))


class _FailuresRecordedOnce(McpAdapter):
    async def connection_changed(self, link: Link, kind: CatalogChangeKind, detail: str = "") -> None:
        if kind is CatalogChangeKind.RECONNECT_FAILED and link.attempts > 1:
            # The defect: only the first failed attempt of an outage is recorded ("the rest say the same").
            return
        await super().connection_changed(link, kind, detail)


witness(
    "failed_attempts_recorded_once",
    ("D7.6",),
    "records only the first failed reconnect attempt of an outage in the catalog history",
)(adapter_pipeline(_FailuresRecordedOnce))


class _BreakerOpens(McpAdapter):
    async def reconnect(self, link: Link) -> bool:
        if link.lost and link.attempts >= 8:
            # The defect: a circuit breaker: after eight failed attempts the server is given up on for good.
            return False
        return await super().reconnect(link)


witness(
    "reconnect_breaker_opens",
    ("D7.6",),
    "stops reconnecting a server after eight failed attempts, so one back after a long outage is never used again",
)(adapter_pipeline(_BreakerOpens))


class _OnlySessionsReconnect(McpAdapter):
    async def resolve(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | ReasonCode:
        pinned_before = bool(self.store.pins(run_id))
        found = self.pinned(run_id, name) if pinned_before else None
        if found is not None and found[1].link.lost:
            # The defect: a call in a running session never reconnects its server; only a new session's
            # listing does.
            return ReasonCode.REMOTE_UNAVAILABLE
        return await super().resolve(run_id, name)


witness(
    "running_calls_never_reconnect",
    ("D7.6",),
    "reconnects a lost server only for a new session: a call in a running session answers remote_unavailable",
)(adapter_pipeline(_OnlySessionsReconnect))
