"""Every enumeration the suite shares: labels, classes, statuses, reasons, steps.

Each member carries a docstring (the string literal under it) because these names
are the vocabulary of the report; nothing else in the project may redefine them.
"""

from __future__ import annotations

from enum import StrEnum


class TrustLabel(StrEnum):
    """Trust labels, compared by trust: ``SYSTEM > OPERATOR > USER > INTERNAL > EXTERNAL_UNTRUSTED``."""

    SYSTEM = "SYSTEM"
    """Text the platform itself wrote."""
    OPERATOR = "OPERATOR"
    """Text from the operator's configuration."""
    USER = "USER"
    """Text the end user typed."""
    INTERNAL = "INTERNAL"
    """Output of a builtin tool inside the platform's trust zone."""
    EXTERNAL_UNTRUSTED = "EXTERNAL_UNTRUSTED"
    """Anything from outside: web pages, MCP servers, devices, sandboxes, remote errors."""

    @property
    def rank(self) -> int:
        """Higher is more trusted."""
        return _TRUST_RANK[self]

    # str's own comparisons would order labels alphabetically; compare by trust instead. A label is never ordered
    # against anything else: returning NotImplemented would let str's reflected comparison answer alphabetically
    # (TrustLabel.USER < "SYSTEM" would be False), so a mixed comparison raises instead.
    def _rank_of(self, other: object, operator: str) -> int:
        if not isinstance(other, TrustLabel):
            raise TypeError(
                f"a TrustLabel is ordered only against another TrustLabel: {self!r} {operator} {other!r}; "
                f"convert with TrustLabel(value) first"
            )
        return other.rank

    def __lt__(self, other: object) -> bool:
        return self.rank < self._rank_of(other, "<")

    def __le__(self, other: object) -> bool:
        return self.rank <= self._rank_of(other, "<=")

    def __gt__(self, other: object) -> bool:
        return self.rank > self._rank_of(other, ">")

    def __ge__(self, other: object) -> bool:
        return self.rank >= self._rank_of(other, ">=")

    def __hash__(self) -> int:
        return str.__hash__(self)


_TRUST_RANK = {
    TrustLabel.EXTERNAL_UNTRUSTED: 0,
    TrustLabel.INTERNAL: 1,
    TrustLabel.USER: 2,
    TrustLabel.OPERATOR: 3,
    TrustLabel.SYSTEM: 4,
}


def lowest_trust(*labels: TrustLabel) -> TrustLabel:
    """The least trusted of ``labels``; ``EXTERNAL_UNTRUSTED`` when there are none (fail closed)."""
    return min(labels, default=TrustLabel.EXTERNAL_UNTRUSTED)


class IdempotencyClass(StrEnum):
    """What repeating a tool's effect does to the world."""

    IDEMPOTENT = "IDEMPOTENT"
    """Running it twice leaves the world as running it once."""
    CONDITIONALLY_IDEMPOTENT = "CONDITIONALLY_IDEMPOTENT"
    """Idempotent only because the external service deduplicates on the idempotency key."""
    NON_IDEMPOTENT = "NON_IDEMPOTENT"
    """Every run may leave another mark."""


class SideEffect(StrEnum):
    """Where a tool may leave a mark; ordered from harmless to consequential."""

    READ_ONLY = "READ_ONLY"
    """Reads only."""
    WORKSPACE_WRITE = "WORKSPACE_WRITE"
    """Writes inside the run's workspace."""
    EXTERNAL_WRITE = "EXTERNAL_WRITE"
    """Writes to the world outside the platform."""


class Risk(StrEnum):
    """Operator-assigned risk of a tool."""

    LOW = "LOW"
    """Nothing of value can be lost."""
    MEDIUM = "MEDIUM"
    """Recoverable harm."""
    HIGH = "HIGH"
    """Harm that needs a person to repair."""
    CRITICAL = "CRITICAL"
    """Irreversible harm."""


class ToolKind(StrEnum):
    """Whether a tool acts on the world or on the run."""

    ACTION = "ACTION"
    """An ordinary tool whose effect is on the world."""
    CONTROL = "CONTROL"
    """A control tool (e.g. ``conversation.ask_user``) whose effect is on the run."""


class ToolSource(StrEnum):
    """Where a tool's implementation lives; decides the output-trust floor."""

    BUILTIN = "BUILTIN"
    """Shipped with the platform."""
    MCP = "MCP"
    """Discovered on an MCP server."""
    DEVICE = "DEVICE"
    """Reached over the device channel."""
    SANDBOX = "SANDBOX"
    """Runs inside a sandbox."""


class InvocationStatus(StrEnum):
    """Values of ``tool_invocations.status``; suspension is a marker, never a status."""

    RECORDED = "RECORDED"
    """Step 6 wrote the row; not yet claimed."""
    AWAITING_APPROVAL = "AWAITING_APPROVAL"
    """Step 7 holds it for an approval."""
    RUNNING = "RUNNING"
    """Step 8 claimed it with a lease."""
    SUCCEEDED = "SUCCEEDED"
    """Terminal: the tool reported success and the pipeline accepted it."""
    DENIED = "DENIED"
    """Terminal: the platform refused the call."""
    FAILED = "FAILED"
    """Terminal: the call ran, or was attempted, and failed."""
    UNAVAILABLE = "UNAVAILABLE"
    """Terminal: the tool or its remote side could not be reached."""
    UNCERTAIN = "UNCERTAIN"
    """Terminal: the effect may have happened; a person must look."""

    @property
    def is_terminal(self) -> bool:
        """Whether step 13 has written this status."""
        return self in TERMINAL_STATUSES


TERMINAL_STATUSES = frozenset(
    {
        InvocationStatus.SUCCEEDED,
        InvocationStatus.DENIED,
        InvocationStatus.FAILED,
        InvocationStatus.UNAVAILABLE,
        InvocationStatus.UNCERTAIN,
    }
)
NON_SUCCESS_STATUSES = TERMINAL_STATUSES - {InvocationStatus.SUCCEEDED}


class ReasonCode(StrEnum):
    """Stable reason codes of non-success outcomes; messages live in ``OUTCOME_TABLE``."""

    UNKNOWN_TOOL = "unknown_tool"
    """The name is not registered or does not match the grammar."""
    INVALID_ARGUMENTS = "invalid_arguments"
    """The arguments do not validate against the pinned input schema."""
    POLICY_DENIED = "policy_denied"
    """Policy refused the call."""
    APPROVAL_DENIED = "approval_denied"
    """A person refused the approval."""
    APPROVAL_EXPIRED = "approval_expired"
    """The approval hold ran past its bound."""
    REPEATED_DENIAL = "repeated_denial"
    """The breaker refused an identical call that was already denied twice."""
    LOOP_DETECTED = "loop_detected"
    """The breaker saw the fifth identical call in the run."""
    PRIOR_UNCERTAIN = "prior_uncertain"
    """An identical call already resolved UNCERTAIN in this run."""
    BUDGET_EXHAUSTED = "budget_exhausted"
    """The run's budget or deadline does not admit the call."""
    TOOL_WITHDRAWN = "tool_withdrawn"
    """The pinned tool was withdrawn by its server."""
    TOOL_DEFINITION_CHANGED = "tool_definition_changed"
    """The server changed the pinned tool's definition."""
    REMOTE_UNAVAILABLE = "remote_unavailable"
    """The tool's remote side could not be reached."""
    TOOL_ERROR = "tool_error"
    """The tool reported a permanent failure."""
    TOOL_ERROR_TRANSIENT = "tool_error_transient"
    """The tool reported a failure that may pass."""
    REMOTE_REJECTED = "remote_rejected"
    """The remote system refused the request."""
    INVALID_TOOL_RESULT = "invalid_tool_result"
    """The tool returned something that is not a valid ToolResult for its spec."""
    TOOL_CRASHED = "tool_crashed"
    """The tool raised before marking its effect; nothing left the process."""
    DEADLINE_EXCEEDED = "deadline_exceeded"
    """The tool was cancelled at its deadline before marking its effect."""
    EFFECT_UNKNOWN = "effect_unknown"
    """The tool marked its effect and then did not report; the effect may have happened."""
    IN_PROGRESS = "in_progress"
    """Another worker holds a live lease on this invocation."""


class FailureKind(StrEnum):
    """What a tool may say about its own failure; the pipeline maps it to a reason code."""

    ERROR = "ERROR"
    """Permanent failure inside the tool."""
    TRANSIENT = "TRANSIENT"
    """Failure that may pass on retry."""
    REMOTE_REJECTED = "REMOTE_REJECTED"
    """The remote system answered and refused."""
    REMOTE_UNAVAILABLE = "REMOTE_UNAVAILABLE"
    """The remote system could not be reached."""


class Step(StrEnum):
    """The fourteen pipeline steps, in order (the enum order *is* the pipeline order)."""

    RESOLVE = "resolve"
    """1. Name to registered spec; unknown names are denied."""
    VALIDATE = "validate"
    """2. Arguments against the pinned input schema."""
    LABEL = "label"
    """3. origin_trust and argument_trust."""
    GUARD = "guard"
    """4. The one breaker; budget and deadline admission."""
    DECIDE = "decide"
    """5. Policy: allow, deny or require approval."""
    RECORD = "record"
    """6. Persist: insert the invocation row."""
    HOLD = "hold"
    """7. Persist: approval hold; control tools suspend here."""
    CLAIM = "claim"
    """8. Persist: idempotency lookup, then RUNNING with a lease."""
    PREPARE = "prepare"
    """9. Build the ToolExecutionContext."""
    EXECUTE = "execute"
    """10. The only step that touches the world."""
    NORMALIZE = "normalize"
    """11. Validate the result; trust only lowered; exceptions become failures."""
    EXCERPT = "excerpt"
    """12. Head-and-tail excerpt; full output to an artifact."""
    COMPLETE = "complete"
    """13. Persist: terminal status, outcome and events in one transaction."""
    PUBLISH = "publish"
    """14. Metrics, breaker update, return to the caller."""

    @property
    def number(self) -> int:
        """1-based position in the pipeline."""
        return list(Step).index(self) + 1

    @property
    def persists(self) -> bool:
        """Whether this step is its own committed transaction."""
        return self in PERSIST_STEPS


STEPS: tuple[Step, ...] = tuple(Step)
PERSIST_STEPS = frozenset({Step.RECORD, Step.HOLD, Step.CLAIM, Step.COMPLETE})


class CrashPoint(StrEnum):
    """Where a worker can be killed: after each step, and three places inside step 10."""

    AFTER_RESOLVE = "after_resolve"
    """Between steps 1 and 2."""
    AFTER_VALIDATE = "after_validate"
    """Between steps 2 and 3."""
    AFTER_LABEL = "after_label"
    """Between steps 3 and 4."""
    AFTER_GUARD = "after_guard"
    """Between steps 4 and 5."""
    AFTER_DECIDE = "after_decide"
    """Between steps 5 and 6."""
    AFTER_RECORD = "after_record"
    """Between steps 6 and 7."""
    AFTER_HOLD = "after_hold"
    """Between steps 7 and 8."""
    AFTER_CLAIM = "after_claim"
    """Between steps 8 and 9."""
    AFTER_PREPARE = "after_prepare"
    """Between steps 9 and 10."""
    BEFORE_WATERMARK = "before_watermark"
    """Inside step 10, before the tool calls mark_effect_sent."""
    AFTER_WATERMARK = "after_watermark"
    """Inside step 10, between the committed watermark and the effect."""
    AFTER_EFFECT = "after_effect"
    """Inside step 10, after the effect and before the tool returns."""
    AFTER_NORMALIZE = "after_normalize"
    """Between steps 11 and 12."""
    AFTER_EXCERPT = "after_excerpt"
    """Between steps 12 and 13."""
    AFTER_COMPLETE = "after_complete"
    """Between steps 13 and 14."""


class Profile(StrEnum):
    """Groups of rules an implementation may claim."""

    CORE = "core"
    """The pipeline, its types, trust, policy and outcomes."""
    RECOVERY = "recovery"
    """Crash at a named point and recovery by another worker from the store."""
    MCP = "mcp"
    """The MCP adapter."""
    BRIDGE = "bridge"
    """Programmatic orchestration through the bridge."""
    CONTRACT = "contract"
    """Tool-side rules a tool author's tool must follow; judged by ``toolproof check-tool``, never by
    pipeline scenarios, so no pipeline claims it."""


class Verdict(StrEnum):
    """The verdict of one rule for one implementation."""

    PASS = "pass"
    """Every scenario of the rule passed."""
    FAIL = "fail"
    """A scenario observed the implementation breaking the rule."""
    ERROR = "error"
    """A scenario could not reach a judgement (the implementation or the harness raised)."""
    XFAIL = "xfail"
    """A failure the implementation's expectations file declares."""
    NOT_CLAIMED = "not-claimed"
    """The implementation does not claim the rule's profile."""
    NOT_COVERED = "not-covered"
    """No scenario exercises the rule yet, or none can against this implementation (e.g. over the driver
    protocol; the evidence says why); never a pass."""
    REVIEW_ONLY = "review-only"
    """No run can judge the rule, only a reviewer reading the implementation (``Rule.review_only`` says why);
    never a pass."""


class EventKind(StrEnum):
    """The seven tool events; each carries classification only, never payload."""

    REQUESTED = "tool_call.requested"
    """Step 6 recorded the call."""
    APPROVAL_REQUESTED = "tool_call.approval_requested"
    """Step 7 opened an approval hold."""
    APPROVAL_RESOLVED = "tool_call.approval_resolved"
    """An approval hold was approved, denied or expired."""
    SUSPENDED = "tool_call.suspended"
    """A control tool suspended the run at step 7."""
    STARTED = "tool_call.started"
    """Step 8 claimed the call and execution begins."""
    COMPLETED = "tool_call.completed"
    """Step 13 wrote the terminal status."""
    RECOVERED = "tool_call.recovered"
    """A recovering worker decided the fate of a RUNNING row."""


class Metric(StrEnum):
    """Counters every implementation exposes."""

    INVOCATIONS = "tool_invocations_total"
    """Calls that reached a terminal status."""
    UNCERTAIN = "tool_uncertain_total"
    """Invocations that resolved UNCERTAIN (alerting metric)."""
    EFFECT_UNMARKED = "tool_effect_unmarked_total"
    """A consequential tool finished without calling mark_effect_sent (alerting metric, the production flag)."""
