"""Scripts the round-2 probes run through the bridge (they run in the sandbox process: standard library only)."""

from __future__ import annotations

import os
from typing import Any


def swaps_on_replay(bridge: Any) -> None:
    """Reads a then b; with REDTEAM_SWAP=1 in its environment (a changed world on replay) b then a."""
    order = ("t.b", "t.a") if os.environ.get("REDTEAM_SWAP") == "1" else ("t.a", "t.b")
    for name in order:
        bridge.call(name, {}, {})


def writes_without_provenance(bridge: Any) -> None:
    """One consequential call whose arguments carry no provenance."""
    bridge.call("t.w", {"p": "x"})
