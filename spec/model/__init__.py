"""toolproof.spec.model: an executable statement of ADR-0021's observable behaviour, a page per decision."""

from toolproof.spec import publish_exports as _publish_exports

from ._catalog import (
    EXTRA_STRUCTURE,
    INVALID_STRUCTURE,
    OUTPUT_SCHEMA,
    RAISED_TEXT,
    STRUCTURES,
    VALID_STRUCTURE,
    Action,
    Advance,
    Answer,
    Behaviour,
    ChangeCatalog,
    Crash,
    Ending,
    McpRemoteTool,
    McpServer,
    ModelTool,
    Overlap,
    Reopen,
    Resume,
    Script,
    Submit,
    Sweep,
    Workload,
)
from ._expect import Expect, Problems
from ._model import Expected, Model
from ._record import CallRef, Record

__all__ = [
    "EXTRA_STRUCTURE",
    "INVALID_STRUCTURE",
    "OUTPUT_SCHEMA",
    "RAISED_TEXT",
    "STRUCTURES",
    "VALID_STRUCTURE",
    "Action",
    "Advance",
    "Answer",
    "Behaviour",
    "CallRef",
    "ChangeCatalog",
    "Crash",
    "Ending",
    "Expect",
    "Expected",
    "McpRemoteTool",
    "McpServer",
    "Model",
    "ModelTool",
    "Overlap",
    "Problems",
    "Record",
    "Reopen",
    "Resume",
    "Script",
    "Submit",
    "Sweep",
    "Workload",
]

_publish_exports(globals())
