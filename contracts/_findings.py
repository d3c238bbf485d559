"""What the contract suite reports: the rules it judges, one finding per violated rule, the report.

The catalog (``spec/rules.toml``) owns rule texts, including the tool-side rules of the
``contract`` profile that only this suite judges.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from toolproof.spec import ConfigurationError, JsonObject, load_catalog


@dataclass(frozen=True)
class ContractRule:
    """One rule as the contract suite cites it."""

    rule_id: str
    """A catalog ID (``D4.10``)."""
    title: str
    """Short name of the violation, shown next to the ID."""
    fix: str
    """How a tool author fixes it."""


PROVISIONAL_RULES: dict[str, str] = {}
"""Contract rules not yet in the catalog (none: they live in spec/rules.toml under the contract profile)."""


_RULES: tuple[ContractRule, ...] = (
    ContractRule(
        "D4.10",
        "consequential effect without a watermark",
        "Call `await context.mark_effect_sent()` immediately before the operation that can leave a mark "
        "(the request, the write), on every path that reaches it.",
    ),
    ContractRule(
        "D4.1",
        "effect before the watermark",
        "Move `await context.mark_effect_sent()` before the first operation that can leave a mark: "
        "nothing that writes or sends may precede it.",
    ),
    ContractRule(
        "D4.13",
        "watermark marked more than once",
        "Call mark_effect_sent() once per execution, immediately before the first effect; "
        "it covers every later effect of the same execution.",
    ),
    ContractRule(
        "D2.7",
        "effect outside the workspace and the target",
        "Write only under `context.workspace` (resolve user-supplied paths and refuse any that leave it) "
        "and send only to `context.target`; a process the tool starts must keep to them too.",
    ),
    ContractRule(
        "D6.5",
        "effect outside the declared side effect",
        "Declare the side effect the tool really has (WORKSPACE_WRITE for workspace files, EXTERNAL_WRITE for "
        "requests that change something), or stop leaving the mark.",
    ),
    ContractRule(
        "D3.9",
        "effect after execute ended",
        "Make every effect before `execute` returns: await the thread, task or process that makes it (join the "
        "thread, await the task, wait for the process), or make the effect in `execute` itself; never leave work "
        "running that acts after the call.",
    ),
    ContractRule(
        "D10.6",
        "a repeat under the same key changed the world again",
        "Make the effect idempotent: overwrite or upsert keyed by the arguments (IDEMPOTENT), or hand the "
        "service `context.identity.idempotency_key` where it deduplicates (CONDITIONALLY_IDEMPOTENT: the "
        "`Idempotency-Key` header, or declare your service's place with key_in / --key-in); otherwise declare "
        "NON_IDEMPOTENT and mark the watermark.",
    ),
    ContractRule(
        "D10.2",
        "idempotency key changes between attempts",
        "Hand the service `context.identity.idempotency_key` exactly as given; never mix in the attempt "
        "number or anything else that varies between retries.",
    ),
    ContractRule(
        "D2.4",
        "cancellation or deadline not honoured",
        "Let cancellation propagate: never catch it without re-raising, never shield the effect, run blocking "
        "I/O with `anyio.to_thread.run_sync(..., abandon_on_cancel=True)`, and leave no effect once "
        "`context.cancellation.is_set()`.",
    ),
    ContractRule(
        "D1.1",
        "result claims a status or fields ToolResult lacks",
        "Return a plain ToolResult: report failure with ok=False and a ToolFailure, and leave the status to "
        "the pipeline.",
    ),
    ContractRule(
        "D1.2",
        "result is not a consistent ToolResult",
        "Return `ToolResult(ok=True, ...)` or `ToolResult(ok=False, failure=ToolFailure(kind=...))`: never "
        "None, never a bare mapping of the wrong shape, never `model_construct` with ok and failure disagreeing.",
    ),
    ContractRule(
        "D1.3",
        "trust raised above the registered output trust",
        "Set `trust` (on the result or on a content part) only to a label at or below `spec.output_trust`, "
        "e.g. EXTERNAL_UNTRUSTED for quoted remote text; otherwise leave it None.",
    ),
    ContractRule(
        "D1.4",
        "structured output not valid for the output schema",
        "Declare `output_schema` in the ToolSpec and return structure that validates against it, or return "
        "no structure.",
    ),
    ContractRule(
        "D13.7",
        "failure raised instead of reported",
        "Catch the failures you can foresee and return `ToolResult(ok=False, failure=ToolFailure(kind=..., "
        "detail=remote_text))`: REMOTE_REJECTED for a refusal (4xx), REMOTE_UNAVAILABLE or TRANSIENT for 5xx "
        "and connection errors, ERROR for the rest.",
    ),
    ContractRule(
        "D13.4",
        "remote text outside the failure detail",
        "Put the remote system's own text only in `ToolFailure(detail=...)`; keep content to your own words.",
    ),
)

CONTRACT_RULES: dict[str, ContractRule] = {rule.rule_id: rule for rule in _RULES}
"""Every rule the contract suite judges, in report order (watermark first)."""


def rule_text(rule_id: str) -> str:
    """The full text of ``rule_id``: from the catalog, or from ``PROVISIONAL_RULES``."""
    if rule_id in PROVISIONAL_RULES:
        return PROVISIONAL_RULES[rule_id]
    try:
        return load_catalog().rule(rule_id).text
    except ConfigurationError:
        raise ConfigurationError(f"rule_id={rule_id!r} is neither in the catalog nor provisional") from None


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Finding(_Frozen):
    """One violated rule, with the smallest arguments that show it and what the world saw."""

    rule_id: str
    """The rule broken: a catalog ID or a provisional contract ID (see ``CONTRACT_RULES``)."""
    title: str
    """Short name of the violation."""
    seen: str
    """What the harness observed, in one or two sentences."""
    fix: str
    """How to fix it."""
    arguments: JsonObject
    """The (minimal) arguments of the execution that showed it."""
    trace: list[str]
    """The effect trace of that execution: numbered events, in the order the world saw them."""


class ContractReport(_Frozen):
    """The verdict of ``check_tool`` on one tool."""

    tool: str
    """The tool's registered name."""
    side_effect: str
    """Its declared side effect."""
    idempotency: str
    """Its declared idempotency class."""
    findings: list[Finding]
    """One finding per violated rule, in ``CONTRACT_RULES`` order."""
    notes: list[str]
    """What limited the check without being a violation (unsupported schema keywords, deadlines reached)."""
    observation: str
    """Where effects were observed: ``os`` (the operating-system boundary) or ``python`` (partial)."""
    partial: str | None = None
    """Why the observation was partial and what it could not see; None under confinement."""
    warnings: list[str] = []
    """What keeps a check without findings from being a plain "conforms" (no observable effect)."""
    strict: bool = False
    """Whether warnings and a partial observation fail the check."""
    passed: bool
    """No findings, and under ``strict`` no warnings and a full observation."""

    def headline(self) -> str:
        """The verdict in one line: never a plain "conforms" unless the whole world was observed and no warning."""
        head = f"{self.tool} ({self.side_effect}, {self.idempotency})"
        if self.findings:
            count = len(self.findings)
            extra = f"; partial observation: {self.partial}" if self.partial else ""
            return f"{head}: {count} finding{'s' if count != 1 else ''}{extra}"
        cautions = [f"partial observation: {self.partial}"] if self.partial else []
        cautions += [f"warning: {warning}" for warning in self.warnings]
        if not cautions:
            return f"{head}: conforms to the tool-author contract"
        verdict = "fails the strict check" if self.strict else "no violation found"
        return f"{head}: {verdict}; {'; '.join(cautions)}"

    def render(self) -> str:
        """The report as readable text: the headline, then one block per finding."""
        lines = [self.headline()]
        for finding in self.findings:
            lines += ["", f"{finding.rule_id} {finding.title}", f"  seen: {finding.seen}", f"  fix:  {finding.fix}"]
            lines.append(f"  arguments: {_json(finding.arguments)}")
            lines.append("  trace:")
            lines += [f"    {line}" for line in finding.trace]
        for note in self.notes:
            lines += ["", f"note: {note}"]
        return "\n".join(lines)


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Findings in ``CONTRACT_RULES`` order, at most one per rule (the first given wins)."""
    order = {rule_id: index for index, rule_id in enumerate(CONTRACT_RULES)}
    first: dict[str, Finding] = {}
    for finding in findings:
        first.setdefault(finding.rule_id, finding)
    return sorted(first.values(), key=lambda f: order[f.rule_id])


def finding(rule_id: str, seen: str, arguments: JsonObject, trace: list[str]) -> Finding:
    """A finding of ``rule_id`` with its table title and fix."""
    rule = CONTRACT_RULES[rule_id]
    return Finding(rule_id=rule_id, title=rule.title, seen=seen, fix=rule.fix, arguments=arguments, trace=trace)
