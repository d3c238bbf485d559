"""Round 3, decision 2: the ToolExecutionContext (identity on a retry, scopes, deadline, workspace)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import anyio

from toolproof.reference.hooks import (
    CallState,
    ContextParts,
    Pipeline,
    ReferenceImplementation,
    Resolved,
    resolved_step,
)
from toolproof.spec import CONTROL_ANSWER_ARGUMENT, FailureKind, IdempotencyClass, Step

from ._common import impl, replace_parts, table

GRACE_S = 1.0
"""The grace period the deadline pipeline grants past the deadline."""


def _wall() -> float:
    from toolproof.reference._execute import wall_clock

    return wall_clock()


async def _run_tool(s: CallState, r: Resolved, grace: float = 0.0) -> None:
    prepared = s.prepared
    assert prepared is not None
    signal, deadline = prepared.parts.cancellation, prepared.parts.deadline
    arguments = dict(s.call.arguments)
    if s.answer is not None:
        arguments[CONTROL_ANSWER_ARGUMENT] = s.answer
    async with anyio.create_task_group() as group:

        async def watchdog() -> None:
            await anyio.sleep(max(0.0, deadline + grace - _wall()))
            s.timed_out = True
            signal.set()
            group.cancel_scope.cancel()

        group.start_soon(watchdog)
        try:
            s.raw_result = await r.tool.execute(arguments, prepared.context)
        except Exception as exc:
            s.error = exc
        group.cancel_scope.cancel()


def _may_retry(p: Pipeline, s: CallState, r: Resolved) -> bool:
    result = p.parse_result(s.raw_result)
    transient = result is not None and result.failure is not None and result.failure.kind == FailureKind.TRANSIENT
    escaped = s.marked and r.spec.idempotency is IdempotencyClass.NON_IDEMPOTENT
    return transient and not escaped and s.attempt < p.config.max_attempts


@resolved_step
async def _execute_same_context(p: Pipeline, s: CallState, r: Resolved) -> None:
    await _run_tool(s, r)
    while _may_retry(p, s, r):
        s.attempt += 1
        p.store.update(s.invocation_id, {"attempt": s.attempt})
        s.raw_result, s.error, s.timed_out = None, None, False
        # The mistake: the retry reuses the first attempt's context instead of building its own at step 9.
        await _run_tool(s, r)


@resolved_step
async def _execute_with_grace(p: Pipeline, s: CallState, r: Resolved) -> None:
    await _run_tool(s, r, grace=GRACE_S)
    while _may_retry(p, s, r):
        s.attempt += 1
        p.store.update(s.invocation_id, {"attempt": s.attempt})
        s.raw_result, s.error, s.timed_out = None, None, False
        await p.steps[Step.PREPARE](p, s)
        await _run_tool(s, r, grace=GRACE_S)


class _SameContextOnRetry(Pipeline):
    steps = table(EXECUTE=_execute_same_context)


def retry_keeps_first_context() -> ReferenceImplementation:
    """D2 (identity names the invocation being executed, attempt included; D2.3): a TRANSIENT retry reuses the
    first attempt's context, so the retry's identity still says attempt 1 while its row says 2 (and its deadline and
    cancellation signal are the first attempt's)."""
    return impl("r3-retry-keeps-first-context", _SameContextOnRetry)


class _FoldingCredentials:
    """Resolves a scope the spec requires, compared without case."""

    def __init__(self, allowed: frozenset[str], credentials: Mapping[str, str]) -> None:
        self._allowed = {scope.casefold() for scope in allowed}
        self._credentials = dict(credentials)

    async def resolve(self, scope: str) -> str | None:
        return self._credentials.get(scope) if scope.casefold() in self._allowed else None


class _ScopeFoldsCase(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        return replace_parts(
            parts, credential_resolver=_FoldingCredentials(r.spec.required_scopes, self.config.credentials)
        )


def scope_match_folds_case() -> ReferenceImplementation:
    """D2 (credential resolver hands only required scopes, matched as a whole string; D2.5): scopes are compared
    case-insensitively "as OAuth scopes often are", so a tool requiring files:read obtains the credential
    configured for FILES:READ, a scope it does not require."""
    return impl("r3-scope-match-folds-case", _ScopeFoldsCase)


class _DeadlineGrace(Pipeline):
    steps = table(EXECUTE=_execute_with_grace)


def deadline_grace_second() -> ReferenceImplementation:
    """D2 (the pipeline enforces the context's deadline; D2.4): the watchdog grants a one-second grace past the
    deadline "so a tool can finish cleanly", so a tool that returns 0.5 s late completes SUCCEEDED instead of
    FAILED deadline_exceeded."""
    return impl("r3-deadline-grace-second", _DeadlineGrace)


class _WorkspacePerRun(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        own: Path = parts.workspace / s.request.run_id
        own.mkdir(parents=True, exist_ok=True)
        return replace_parts(parts, workspace=own)


def workspace_per_run() -> ReferenceImplementation:
    """D2 (the context's workspace is the configured workspace; D2.6): each run is handed its own subdirectory
    {workspace}/{run_id} "for isolation", so context.workspace is not the configured workspace."""
    return impl("r3-workspace-per-run", _WorkspacePerRun)
