"""toolproof.fakes: the fake world and fake tools, good and deliberately bad.

The names below load on first use (PEP 562): a bridge sandbox that imports only ``toolproof.fakes._scripts`` to run a
script does not pay for the spec and pydantic, which every other name needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._authors import (
        BAD_AUTHOR_TOOLS,
        GOOD_AUTHOR_TOOLS,
        AppendsLineTool,
        FailsWithoutFailureTool,
        IgnoresCancellationTool,
        KeysByAttemptTool,
        MarksAfterPostTool,
        MarksTwiceTool,
        NarratesRemoteErrorTool,
        PostsAfterReturningTool,
        PostsOrderTool,
        PostsUnmarkedTool,
        PostsWithoutKeyTool,
        PutsFileTool,
        RaisesOnRemoteErrorTool,
        RaisesTrustTool,
        ReadsFileTool,
        ReturnsStatusTool,
        ReturnsUndeclaredStructureTool,
        SendsMessageTool,
        WritesOutsideWorkspaceTool,
        WritesWhileReadOnlyTool,
    )
    from ._clock import FakeClock
    from ._load import load_factor
    from ._scripted import ScriptedTool, ScriptedToolError
    from ._scripts import MODEL_TOUR_CALLS
    from ._tools import (
        ArtifactTool,
        AskUserTool,
        ClaimsStatusTool,
        CrashingTool,
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
    "BAD_AUTHOR_TOOLS",
    "GOOD_AUTHOR_TOOLS",
    "MODEL_TOUR_CALLS",
    "AppendsLineTool",
    "ArtifactTool",
    "AskUserTool",
    "ClaimsStatusTool",
    "CrashingTool",
    "EchoTool",
    "Effect",
    "Execution",
    "FailsTool",
    "FailsWithoutFailureTool",
    "FakeClock",
    "FakeTool",
    "ForgetsWatermarkTool",
    "HangsTool",
    "IgnoresCancellationTool",
    "KeysByAttemptTool",
    "MarkThenProbeTool",
    "MarksAfterPostTool",
    "MarksTwiceTool",
    "NarratesRemoteErrorTool",
    "PartsTool",
    "PostsAfterReturningTool",
    "PostsOrderTool",
    "PostsUnmarkedTool",
    "PostsWithoutKeyTool",
    "Probe",
    "ProbeTool",
    "PutsFileTool",
    "RaisesOnRemoteErrorTool",
    "RaisesTool",
    "RaisesTrustTool",
    "ReadsFileTool",
    "ReturnsStatusTool",
    "ReturnsTool",
    "ReturnsUndeclaredStructureTool",
    "ScriptedTool",
    "ScriptedToolError",
    "SendsMessageTool",
    "SlowTool",
    "TransientOnceTool",
    "World",
    "WriteTool",
    "WritesOutsideWorkspaceTool",
    "WritesWhileReadOnlyTool",
    "device_tool",
    "load_factor",
]

_MODULES = ("_authors", "_clock", "_load", "_scripted", "_scripts", "_tools", "_world")
"""The private modules the names of ``__all__`` come from."""


def __getattr__(name: str) -> object:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from toolproof.spec import publish_exports

    namespace = globals()
    for module_name in _MODULES:
        module = importlib.import_module(f"{__name__}.{module_name}")
        namespace.update({n: getattr(module, n) for n in __all__ if n not in namespace and hasattr(module, n)})
    publish_exports(namespace)
    return namespace[name]
