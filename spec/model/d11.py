"""Decision 11: origin_trust, argument_trust from carried provenance, and the minimal policy matrix (D11.5)."""

from __future__ import annotations

from enum import Enum

from toolproof.spec import ContextItem, ProposedCall, ToolSpec, TrustLabel, lowest_trust

EXTERNAL = TrustLabel.EXTERNAL_UNTRUSTED


def origin_trust(context: tuple[ContextItem, ...]) -> TrustLabel:
    """D11.1: the minimum over the request's items; none fails closed."""
    return lowest_trust(*(item.trust for item in context))


def contributor(context: tuple[ContextItem, ...], item_id: str) -> TrustLabel:
    """D11.3: an id names every item bearing it (their lowest label); an id not in the request is EXTERNAL."""
    labels = [item.trust for item in context if item.id == item_id]
    return lowest_trust(*labels) if labels else EXTERNAL


def argument_label(context: tuple[ContextItem, ...], call: ProposedCall, name: str) -> TrustLabel:
    """D11.2 and D11.3: unknown or empty provenance is EXTERNAL; else the minimum over the contributors.

    D11.4: the argument's text is never compared with the context; only carried provenance counts.
    """
    ids = call.provenance.get(name)
    if not ids:
        return EXTERNAL
    return lowest_trust(*(contributor(context, i) for i in ids))


def argument_rules(call: ProposedCall) -> tuple[str, ...]:
    """The rules that label ``call``'s arguments: D11.3, and D11.2 when an argument's provenance is unknown (no
    contributor list, or an empty one)."""
    unknown = any(not call.provenance.get(name) for name in call.arguments)
    return ("D11.2", "D11.3") if unknown else ("D11.3",)


def argument_trust(context: tuple[ContextItem, ...], call: ProposedCall) -> TrustLabel:
    """D11.3: the minimum over the call's arguments; a call without arguments takes origin_trust."""
    if not call.arguments:
        return origin_trust(context)
    return lowest_trust(*(argument_label(context, call, name) for name in call.arguments))


class Decision(Enum):
    """Step 5's answer."""

    ALLOW = "allow"
    DENY = "deny"
    APPROVAL = "approval"
    CONTROL = "control"


def decide(
    spec: ToolSpec, origin: TrustLabel, argument: TrustLabel, denied: tuple[str, ...], credentials: tuple[str, ...]
) -> tuple[Decision, tuple[str, ...]]:
    """D11.5's matrix, in order: denied list, control suspends, untrusted or unscoped consequential holds, allow."""
    if spec.name in denied:
        return Decision.DENY, ("D11.5",)
    if spec.kind.value == "CONTROL":
        return Decision.CONTROL, ("D16.2",)
    unscoped = any(scope not in credentials for scope in spec.required_scopes)
    if spec.consequential and (EXTERNAL in (origin, argument) or unscoped):
        return Decision.APPROVAL, ("D11.5",)
    return Decision.ALLOW, ("D11.5",)
