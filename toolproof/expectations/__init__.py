"""toolproof.expectations: expectations files, the failures an implementation declares, read ``xfail`` after a run.

A file applies to one implementation (its ``Implementation.name``) and lists ``[[expect]]`` entries,
each naming a rule or a scenario, the verdict it yields instead of ``pass``, and why. After the run,
a scenario row an entry names that yields the entry's verdict becomes ``xfail``; an entry the run
contradicts (a row it names passed, or nothing it names ran although it was selected) is stale
(``spec.StaleExpectation``) and fails the run, so the file cannot silently outlive the failures it describes.
``draft_expectations`` drafts a file from a run's failures (``toolproof run --write-expectations``).
"""

from toolproof.spec import publish_exports as _publish_exports

from ._apply import apply_expectations
from ._draft import draft_expectations
from ._expectations import Expectations
from ._file import Expectation, ExpectationsError, LoadedExpectations, load_expectations
from ._index import ScenarioIndex

__all__ = [
    "Expectation",
    "Expectations",
    "ExpectationsError",
    "LoadedExpectations",
    "ScenarioIndex",
    "apply_expectations",
    "draft_expectations",
    "load_expectations",
]

_publish_exports(globals())
