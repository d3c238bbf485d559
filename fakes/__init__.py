"""toolproof.fakes: the fake world and fake tools, good and deliberately bad."""

from ._clock import FakeClock
from ._tools import (
    ArtifactTool,
    AskUserTool,
    ClaimsStatusTool,
    EchoTool,
    FailsTool,
    FakeTool,
    ForgetsWatermarkTool,
    HangsTool,
    MarkThenProbeTool,
    PartsTool,
    Probe,
    ProbeTool,
    RaisesTool,
    ReturnsTool,
    SlowTool,
    TransientOnceTool,
    WriteTool,
    device_tool,
)
from ._world import Effect, Execution, World

__all__ = [
    "ArtifactTool",
    "AskUserTool",
    "ClaimsStatusTool",
    "EchoTool",
    "Effect",
    "Execution",
    "FailsTool",
    "FakeClock",
    "FakeTool",
    "ForgetsWatermarkTool",
    "HangsTool",
    "MarkThenProbeTool",
    "PartsTool",
    "Probe",
    "ProbeTool",
    "RaisesTool",
    "ReturnsTool",
    "SlowTool",
    "TransientOnceTool",
    "World",
    "WriteTool",
    "device_tool",
]
