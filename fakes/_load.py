"""How busy the machine is: real-time margins (a fake holding its answer, a scenario's bound on waiting) scale by it."""

from __future__ import annotations

import os


def load_factor() -> float:
    """The machine's 1-minute load average per core, at least 1: how much longer than on an idle machine anything
    real (a process start, a message through a pipe, a task's turn on the event loop) may take now."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
