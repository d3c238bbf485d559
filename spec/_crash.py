"""Crash on demand (decision 4): where a worker dies, and how."""

from __future__ import annotations

import os
import signal
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ._enums import CrashPoint, Step

BOUNDARY_CRASH_POINTS: dict[Step, CrashPoint] = {
    step: CrashPoint(f"after_{step.value}") for step in Step if f"after_{step.value}" in CrashPoint._value2member_map_
}
"""The crash point after each step: the implementation dies there when its plan says so."""

TOOL_CRASH_POINTS = (CrashPoint.BEFORE_WATERMARK, CrashPoint.AFTER_WATERMARK, CrashPoint.AFTER_EFFECT)
"""The crash points inside step 10: the harness's tool dies there, not the implementation."""

CrashMode = Literal["raise", "sigkill"]
"""``raise``: SimulatedCrash propagates out of the instance. ``sigkill``: the worker process is killed."""


class SimulatedCrash(BaseException):
    """An in-process crash: nothing in a pipeline may catch it; the instance is dead after it."""


class CrashPlan(BaseModel):
    """Where an instance must die."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    point: CrashPoint
    """Where: a boundary point for the implementation (tool points are the harness's)."""
    call_id: str | None = None
    """Only when this call reaches the point; None: the first call that does."""
    mode: CrashMode = "raise"
    """How."""


def crash_now(mode: CrashMode) -> None:
    """Die as ``mode`` says: raise SimulatedCrash, or SIGKILL this very process."""
    if mode == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise SimulatedCrash("simulated crash")
