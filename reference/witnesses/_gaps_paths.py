"""Witnesses of the red team's path gaps: the allowlist, replay of a failed call, the context's object graph,
the script hash, the sweep over suspended calls, and the two alerting metrics of decision 4."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from urllib.parse import urlsplit

from sqlmodel import Session, col, select

from toolproof.reference.hooks import (
    STEP_TABLE,
    Bridge,
    CallState,
    ContextParts,
    InvocationTable,
    McpAdapter,
    Pipeline,
    Resolved,
    ScopedCredentials,
    bridge_call_id,
    resolved_step,
)
from toolproof.spec import (
    ConfigurationError,
    InstanceConfig,
    InvocationStatus,
    McpOrigin,
    McpTransport,
    Metric,
    ScriptRequest,
    SideEffect,
    Step,
)

from ._registry import witness

_claim = STEP_TABLE[Step.CLAIM]


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


@resolved_step
async def _claim_reruns_failures(p: Pipeline, s: CallState, r: Resolved) -> None:
    row = p.store.get(s.invocation_id)
    status = InvocationStatus(row.status)
    if status.is_terminal and status is not InvocationStatus.SUCCEEDED and row.effect_sent_at is None:
        # The defect: only a success is final; a call that failed without its mark "can simply run again".
        now = p.clock.now()
        changes = {
            "status": InvocationStatus.RUNNING.value,
            "attempt": row.attempt + 1,
            "lease_owner": p.worker_id,
            "lease_expires_at": now + p.config.lease_s,
            "started_at": now,
            "reason_code": None,
            "finished_at": None,
            "disposition_json": None,
        }
        if p.store.claim(s.invocation_id, expect_status=status, expect_owner=row.lease_owner, changes=changes):
            s.attempt = row.attempt + 1
            return
    await _claim(p, s)


@witness("replay_reruns_failed", ("D3.4",), "re-executes a replayed call whose terminal row is not SUCCEEDED")
class _ReplayRerunsFailed(Pipeline):
    steps = STEP_TABLE | {Step.CLAIM: _claim_reruns_failures}


class _AuditedCredentials(ScopedCredentials):
    def __init__(self, allowed: frozenset[str], credentials: Mapping[str, str], audit: Pipeline) -> None:
        super().__init__(allowed, credentials)
        self.audit = audit  # The defect: the pipeline, "to log credential use", three hops from its store.


@witness("resolver_reaches_pipeline", ("D2.2",), "the credential resolver keeps the pipeline as a public attribute")
class _ResolverReachesPipeline(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        resolver = _AuditedCredentials(r.spec.required_scopes, self.config.credentials, self)
        return dataclasses.replace(parts, credential_resolver=resolver)


class _NameHashBridge(Bridge):
    def call_id(self, request: ScriptRequest, digest: str, ordinal: int) -> str:
        # The defect: the "script hash" is of the module:function reference only, not of its source.
        return bridge_call_id(hashlib.sha256(request.script.encode()).hexdigest(), ordinal)


@witness("script_hash_of_reference_only", ("D17.2",), "hashes the script's module:function name, not its source")
class _ScriptHashOfReferenceOnly(Pipeline):
    bridge_class = _NameHashBridge


@witness("sweep_picks_suspended", ("D16.3",), "the lease-expiry sweep has no predicate on suspended_at")
class _SweepPicksSuspended(Pipeline):
    def orphans(self, now: float) -> list[InvocationTable]:
        running = (col(InvocationTable.status) == InvocationStatus.RUNNING.value) & (
            col(InvocationTable.lease_expires_at) < now
        )
        stranded = (col(InvocationTable.status) == InvocationStatus.RECORDED.value) & (
            col(InvocationTable.created_at) < now - self.config.lease_s
        )
        with Session(self.store.engine, expire_on_commit=False) as session:
            # The defect: every stale row is an orphan, suspended or not.
            stmt = select(InvocationTable).where(running | stranded).order_by(col(InvocationTable.seq))
            return list(session.exec(stmt).all())


@witness("unmarked_flag_external_only", ("D4.10",), "flags an unmarked effect of EXTERNAL_WRITE tools only")
class _UnmarkedFlagExternalOnly(Pipeline):
    def unmarked(self, s: CallState) -> bool:
        # The defect: a workspace write "stays inside", so it is not held to the watermark.
        external = s.resolved is not None and s.resolved.spec.side_effect is SideEffect.EXTERNAL_WRITE
        return external and super().unmarked(s)


@witness("uncertain_metric_in_process_only", ("D4.11",), "counts UNCERTAIN only where the tool's failure is seen")
class _UncertainMetricInProcessOnly(Pipeline):
    def metrics_for(self, s: CallState, status: InvocationStatus) -> list[str]:
        metrics = super().metrics_for(s, status)
        if status is InvocationStatus.UNCERTAIN and s.error is None and not s.timed_out:
            metrics.remove(Metric.UNCERTAIN.value)  # The defect: recovery's UNCERTAIN is not counted.
        return metrics
