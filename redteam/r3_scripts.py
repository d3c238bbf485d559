"""Scripts the round-3 bridge probes run in the sandbox (the child imports them by reference)."""

from __future__ import annotations

import os
from typing import Any


def write_chosen(bridge: Any) -> None:
    """One write whose argument the environment chooses (R3_ARG), so a second run can diverge from the first."""
    bridge.call("t.w", {"p": os.environ.get("R3_ARG", "one")}, {"p": ["u"]})


def write_unnamed(bridge: Any) -> None:
    """One consequential write whose argument the script names no contributor for."""
    bridge.call("t.w", {"p": "x"})
