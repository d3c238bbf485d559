"""toolproof.expectations: expectations files, the failures an implementation declares, read ``xfail`` after a run.

A file applies to one implementation (its ``Implementation.name``) and lists ``[[expect]]`` entries,
each naming a rule or a scenario, the verdict it yields instead of ``pass``, and why. After the run,
a scenario row an entry names that yields the entry's verdict becomes ``xfail``; an entry the run
contradicts (a row it names passed, or nothing it names ran although it was selected) is stale
(``spec.StaleExpectation``) and fails the run, so the file cannot silently outlive the failures it describes.
``draft_expectations`` drafts a file from a run's failures (``toolproof run --write-expectations``).
"""

import importlib
from typing import TYPE_CHECKING

from toolproof.spec import publish_exports as _publish_exports

from ._apply import apply_expectations
from ._draft import draft_expectations
from ._file import Expectation, ExpectationsError, LoadedExpectations, check_expectations, load_expectations

if TYPE_CHECKING:
    from ._expectations import Expectations
    from ._index import ScenarioIndex

__all__ = [
    "Expectation",
    "Expectations",
    "ExpectationsError",
    "LoadedExpectations",
    "ScenarioIndex",
    "apply_expectations",
    "check_expectations",
    "draft_expectations",
    "load_expectations",
]

# Imported when first asked for: they load pytest and the scenarios, and `toolproof run` reads an expectations file
# (check_expectations) before it loads those.
_LATER = {"Expectations": "._expectations", "ScenarioIndex": "._index"}


def __getattr__(name: str) -> object:
    if name not in _LATER:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    found = getattr(importlib.import_module(_LATER[name], __name__), name)
    _publish_exports({"__name__": __name__, "__all__": [name], name: found})
    globals()[name] = found
    return found


_publish_exports({**globals(), "__all__": [name for name in __all__ if name not in _LATER]})
