"""One example as the judges read it (``ExampleRun``), and the deadlines every runner keeps.

Shared by the runner of examples in a thread (``_execute``) and the runner of confined ones (``_confined``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolproof.fakes import load_factor
from toolproof.spec import JsonObject

from ._attempts import AttemptRun
from ._trace import Trace

NORMAL_DEADLINE_S = 1.0
"""Cap on the deadline of an ordinary example (the spec's ``deadline_s`` when shorter)."""
PROBE_DEADLINE_S = 0.2
"""The deadline of the deadline probe on an idle machine (``probe_deadline_s`` scales it by the load)."""
GRACE_S = 0.5
"""How long a tool may take to stop once cancelled before it is abandoned."""


def probe_deadline_s() -> float:
    """The deadline probe's deadline now: ``PROBE_DEADLINE_S`` times the machine's load factor.

    The probe cancels a tool once it is inside a call it made (the context and the transport stall); on a loaded
    machine a right tool takes longer to get there (a thread started, a client built), and a fixed 0.2 s would cancel
    it before its request, which its abandoned thread then sends after cancellation: a verdict of the machine's load,
    not of the tool.
    """
    return PROBE_DEADLINE_S * load_factor()


@dataclass
class ExampleRun:
    """One example: its arguments, its trace, and its attempts."""

    arguments: JsonObject
    trace: Trace
    attempts: list[AttemptRun] = field(default_factory=list)
    abandoned: bool = False
    """The tool was still running ``GRACE_S`` after a deadline."""
    confined: bool = False
    """Observed at the operating-system boundary."""
    changes: list[dict[str, Any]] = field(default_factory=list)
    """What the overlay kept from the real system outside the workspace (confined only)."""
    stray_keys: list[str] = field(default_factory=list)
    """Where unsafe requests carried the contract's key outside the declared carrier (``body:request.key``)."""
