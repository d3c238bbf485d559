"""toolproof.fakes: the fake world and fake tools, good and deliberately bad."""

from ._tools import (
    ArtifactTool,
    ClaimsStatusTool,
    EchoTool,
    FailsTool,
    FakeTool,
    HangsTool,
    MarkThenProbeTool,
    Probe,
    ProbeTool,
    RaisesTool,
    ReturnsTool,
    WriteTool,
    control_tool,
    device_tool,
)
from ._world import Effect, Execution, World

__all__ = [
    "ArtifactTool",
    "ClaimsStatusTool",
    "EchoTool",
    "Effect",
    "Execution",
    "FailsTool",
    "FakeTool",
    "HangsTool",
    "MarkThenProbeTool",
    "Probe",
    "ProbeTool",
    "RaisesTool",
    "ReturnsTool",
    "World",
    "WriteTool",
    "control_tool",
    "device_tool",
]
