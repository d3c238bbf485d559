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
    bridge.call("orders.place", {"item": time.time_ns()}, {"item": ["user-1"]})
