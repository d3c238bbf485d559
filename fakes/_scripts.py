"""Scripts for the bridge: deterministic callables that call tools through ``bridge.call``.

They run in the implementation's sandbox process, so they import nothing heavy and keep no
state but what they are given; ``drifting`` is deliberately not deterministic.
"""

from __future__ import annotations

import time
from typing import Any


def three_orders(bridge: Any) -> None:
    """Places orders 1, 2 and 3."""
    for item in (1, 2, 3):
        bridge.call("orders.place", {"item": item}, {"item": ["user-1"]})


def order_mail_order(bridge: Any) -> None:
    """Order 1, then an e-mail (the harness makes it need approval), then order 2."""
    bridge.call("orders.place", {"item": 1}, {"item": ["user-1"]})
    bridge.call("mail.send", {"to": "finance@example.com"}, {"to": ["user-1"]})
    bridge.call("orders.place", {"item": 2}, {"item": ["user-1"]})


def drifting(bridge: Any) -> None:
    """Orders an item named after the clock: a replay asks for something else at ordinal 1."""
    bridge.call("orders.place", {"item": f"item-{time.time_ns()}"}, {"item": ["user-1"]})


def drifting_down(bridge: Any) -> None:
    """As ``drifting``, with an item name that sorts before the recorded one on replay (a countdown of the clock):
    a divergence is a difference, in either direction."""
    bridge.call("orders.place", {"item": f"item-{10**20 - time.time_ns():020d}"}, {"item": ["user-1"]})


def follows_its_plan(bridge: Any) -> None:
    """Asks ``plan.where`` (ordinal 1) where its plan is, then calls each tool the plan file names, in that order,
    without arguments: the plan is part of the world, so a replay after the file changed calls other tools at the
    same ordinals."""
    answer = bridge.call("plan.where", {}, {})
    with open(answer["content"][0]["text"], encoding="utf-8") as plan:
        names = plan.read().split()
    for name in names:
        bridge.call(name, {}, {})


def mails_without_provenance(bridge: Any) -> None:
    """One consequential call whose arguments the script gives no provenance for."""
    bridge.call("mail.send", {"to": "finance@example.com"})


def mails_with_partial_provenance(bridge: Any) -> None:
    """One consequential call with provenance for one of its two arguments only."""
    bridge.call("mail.send", {"to": "finance@example.com", "subject": "report"}, {"subject": ["user-1"]})


def mails_with_empty_provenance(bridge: Any) -> None:
    """One consequential call whose argument's provenance names no context item."""
    bridge.call("mail.send", {"to": "finance@example.com"}, {"to": []})


def mails_with_user_provenance(bridge: Any) -> None:
    """One consequential call whose every argument the script credits to the USER item ``user-1``."""
    bridge.call(
        "mail.send", {"to": "finance@example.com", "subject": "report"}, {"to": ["user-1"], "subject": ["user-1"]}
    )


def reads_without_provenance(bridge: Any) -> None:
    """One read-only call whose argument the script gives no provenance for."""
    bridge.call("files.echo", {"text": "report"})


def unrepresentable(bridge: Any) -> None:
    """Proposes an argument no call can carry: an integer no IEEE 754 double equals (no RFC 8785 form)."""
    bridge.call("orders.place", {"item": 2**63 + 1}, {"item": ["user-1"]})


def orders_after_its_hold(bridge: Any) -> None:
    """Asks ``ledger.where`` (ordinal 1) where the world's ledger file is, sends a mail (the harness makes it need
    approval), then places one order named after how many effects the ledger holds at that moment. Alone, a
    re-execution after the hold counts what the run did before it; a held run that goes on beside it makes one of
    the two count the other's order, so an extra or a different order appears."""
    answer = bridge.call("ledger.where", {}, {})
    path = answer["content"][0]["text"]
    bridge.call("mail.send", {"to": "finance@example.com"}, {"to": ["user-1"]})
    with open(path, encoding="utf-8") as ledger:
        effects = sum(1 for line in ledger if '"kind": "effect"' in line)
    bridge.call("orders.place", {"item": f"after-{effects}"}, {"item": ["user-1"]})


def raises_before_any_call(bridge: Any) -> None:
    """Raises before its first call: it reached ordinal 1."""
    raise RuntimeError("the catalogue is out of stock")


def raises_after_one_order(bridge: Any) -> None:
    """Places order 1, then raises: it reached ordinal 2."""
    bridge.call("orders.place", {"item": 1}, {"item": ["user-1"]})
    raise RuntimeError("the catalogue is out of stock")


def raises_after_three_orders(bridge: Any) -> None:
    """Places orders 1, 2 and 3, then raises: it reached ordinal 4."""
    for item in (1, 2, 3):
        bridge.call("orders.place", {"item": item}, {"item": ["user-1"]})
    raise RuntimeError("the catalogue is out of stock")


def orders_with_unsorted_keys(bridge: Any) -> None:
    """Places two orders whose argument members, nested ones too, are written out of sorted order: a replay writes
    them in the same order, and the same arguments are no divergence whatever order a script writes them in."""
    bridge.call(
        "orders.place",
        {"item": 1, "gift": True, "amount": 2, "colour": "red"},
        {"item": ["user-1"], "gift": ["user-1"], "amount": ["user-1"], "colour": ["user-1"]},
    )
    bridge.call(
        "orders.place",
        {"item": 2, "ship": {"zip": "1000", "city": "Brussels", "attention": None}},
        {"item": ["user-1"], "ship": ["user-1"]},
    )


def orders_in_floats(bridge: Any) -> None:
    """Places orders whose numbers are floats with integral values and values whose JSON text differs from their
    RFC 8785 form (``1.0``, ``-0.0``, ``1e21``): the same numbers on a replay are no divergence."""
    bridge.call("orders.place", {"item": 1.0, "qty": 2.0}, {"item": ["user-1"], "qty": ["user-1"]})
    bridge.call(
        "orders.place",
        {"item": 3, "credit": -0.0, "cap": 1e21},
        {"item": ["user-1"], "credit": ["user-1"], "cap": ["user-1"]},
    )


MODEL_TOUR_CALLS: tuple[tuple[str, dict[str, Any], dict[str, list[str]]], ...] = (
    ("t6.op", {"n": 11}, {"n": ["u"]}),
    ("nosuch.tool", {"n": 12}, {"n": ["u"]}),
    ("t6.op", {"n": 13}, {}),
)
"""The calls ``model_tour`` makes, as (tool, arguments, provenance): the model judge's tour reads them too."""


def model_tour(bridge: Any) -> None:
    """The model judge's script (``_model_workloads.tour``): a read, a name no tool has (refused), a read whose
    argument the script names no contributor for."""
    for name, arguments, provenance in MODEL_TOUR_CALLS:
        bridge.call(name, arguments, provenance)


def reads_a_large_output(bridge: Any) -> None:
    """Reads ``logs.dump`` once: the harness makes its output larger than the output limit."""
    bridge.call("logs.dump", {}, {})


def echoes_the_same_text_six_times(bridge: Any) -> None:
    """Six identical calls of ``files.echo``, one more than the loop breaker's threshold (5) lets run and refuses."""
    for _ in range(6):
        bridge.call("files.echo", {"text": "again"}, {"text": ["user-1"]})


def waits_on_a_slow_tool(bridge: Any) -> None:
    """Calls ``slow.tool`` once: the harness makes it pause far past its deadline."""
    bridge.call("slow.tool", {}, {})


def looks_up_the_weather(bridge: Any) -> None:
    """Calls ``weather.lookup`` once: the harness makes it fail TRANSIENT on its first attempt."""
    bridge.call("weather.lookup", {}, {})
