"""What ``toolproof check-server`` counts as a finding: something ADR-0021's adapter will act on (exit 1).

Findings, per connected era:

- a remote tool dropped because its name normalizes like another's (decision 5);
- a prompt dropped for the same reason (D5.9);
- two consecutive listings of one connection that disagree (decision 9: sessions keep their pin);
- a ``tools/list_changed`` sent (decision 9: recorded, never applied mid-session);
- a sampling, roots or elicitation request, or an input-required answer (decision 8: declined);
- a called tool's result over the output cap (D8.8) or with no answer within the call timeout;
- the connection lost while checked (its tools answer unavailable until reconnected);
- anything the server wrote that is not a JSON-RPC message;
- a success answered to the ``tools/call`` of a name the server never listed: its catalog, which naming,
  classification, pinning and drift (decisions 5, 6 and 9) all rest on, does not describe what it executes;
- the check stopped before its end (an error, or no answer within the era's bound).

And per server: the era the operator's file configures does not connect while another does.
Not findings (shown only): names that normalize to something else, annotations (ignored, decision 6),
an unclassified server (decision 6's default), error shapes, a call that answered with an error.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from toolproof.reports import EraCheck, Finding, FindingKind
from toolproof.spec import McpServerConfig


def _era_findings(era: EraCheck) -> list[Finding]:
    found: list[Finding] = []

    def add(kind: FindingKind, decision: int, message: str) -> None:
        found.append(Finding(kind=kind, decision=decision, era=era.era, message=message))

    groups: dict[str, list[str]] = defaultdict(list)
    unhashable: list[str] = []
    for tool in era.tools:
        if tool.registered_name is None and not tool.definition_sha256:
            unhashable.append(tool.remote_name)
        elif tool.registered_name is None:
            groups[tool.normalizes_to].append(tool.remote_name)
    if unhashable:
        listed = ", ".join(repr(r) for r in unhashable)
        add(
            FindingKind.DROPPED_TOOL,
            9,
            f"remote tools {listed} have definitions without an RFC 8785 form (NaN, an integer no double holds): "
            "no definition hash, dropped, not registered",
        )
    for name, remotes in groups.items():
        listed = ", ".join(repr(r) for r in remotes)
        add(FindingKind.DROPPED_TOOL, 5, f"remote tools {listed} normalize to {name}: dropped, not registered")
    dropped_prompts = [p.name for p in era.prompts if p.skill_name is None]
    if dropped_prompts:
        listed = ", ".join(repr(p) for p in dropped_prompts)
        add(FindingKind.DROPPED_PROMPT, 5, f"prompts {listed} normalize like another prompt: no skill for them")
    if era.listings_agree is False:
        add(
            FindingKind.DRIFT,
            9,
            f"the second listing disagrees with the first ({'; '.join(era.drift)}): a session keeps its pin and a "
            "changed or withdrawn tool answers unavailable",
        )
    notices = era.notifications.get("notifications/tools/list_changed", 0)
    if notices:
        add(FindingKind.LIST_CHANGED, 9, f"{notices} tools/list_changed: recorded in the catalog history, not applied")
    asked = Counter((r.method, r.input_required, r.during) for r in era.requests)
    for (method, input_required, during), count in asked.items():
        how = "asked as input-required" if input_required else "requested"
        times = f" {count} times" if count > 1 else ""
        add(FindingKind.REQUEST_DECLINED, 8, f"{method} {how}{times} during {during}: declined")
    for call in era.calls:
        if call.outcome == "over_cap":
            add(FindingKind.OVER_CAP, 8, f"call {call.remote_name!r}: result over the {call.cap_bytes}-byte cap fails")
        elif call.outcome == "malformed_result":
            add(FindingKind.MALFORMED_RESULT, 7, f"call {call.remote_name!r}: {call.detail}")
        elif call.outcome == "invalid_structure":
            add(FindingKind.INVALID_STRUCTURE, 8, f"call {call.remote_name!r}: {call.detail}")
        elif call.outcome == "timeout":
            add(FindingKind.CALL_TIMEOUT, 2, f"call {call.remote_name!r}: {call.detail}")
    lost = [entry for entry in era.drift if entry.startswith(("disconnected", "reconnect_failed"))]
    if lost or any(c.outcome == "remote_unavailable" for c in era.calls):
        add(
            FindingKind.CONNECTION_LOST,
            7,
            "the connection was lost while checked: the server's tools answer remote_unavailable until it is "
            "reconnected (stdio: restarted)",
        )
    if era.failure:
        add(FindingKind.UNFINISHED, 7, f"the check stopped early: {era.failure}")
    for shape in era.error_shapes:
        if shape.shape == "success":
            add(
                FindingKind.UNLISTED_CALL_SUCCEEDS,
                5,
                f"{shape.probe} answered success ({shape.text!r}): the server executes names it never listed, so "
                "its listing does not describe what it does; the pipeline still refuses such a name (unknown_tool)",
            )
    if era.malformed:
        add(FindingKind.MALFORMED_MESSAGE, 8, f"{era.malformed} messages on the wire were not JSON-RPC")
    return found


def era_findings(era: EraCheck) -> list[Finding]:
    """What ADR-0021 would act on were ``era`` configured; none for an era that did not connect."""
    return _era_findings(era) if era.connected else []


def findings_for(server: McpServerConfig, eras: Sequence[EraCheck], *, configured: bool) -> list[Finding]:
    """The findings that count for ``server`` (exit 1), from its eras' own.

    From an operator file: the configured era's, and a finding when it does not connect while another does.
    From a command or a URL: every completed era's (an era the operator would not configure is not judged);
    when none completed, every connected era's.
    """
    if configured:
        mine = next((e for e in eras if e.era == server.protocol), None)
        found = list(mine.findings) if mine is not None else []
        others = [e.era for e in eras if e.completed and e.era != server.protocol]
        if mine is not None and not mine.completed and others:
            found.append(
                Finding(
                    kind=FindingKind.CONFIGURED_ERA_FAILS,
                    decision=7,
                    era=server.protocol,
                    message=f"protocol = {server.protocol!r} does not work ({mine.failure}); "
                    f"{', '.join(others)} does: set protocol = {others[0]!r}",
                )
            )
        return found
    completed = [e for e in eras if e.completed]
    return [finding for era in (completed or eras) for finding in era.findings]
