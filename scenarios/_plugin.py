"""The pytest plugin that turns scenario modules into per-rule verdicts.

Loaded with ``-p toolproof.scenarios._plugin``. It parametrizes every scenario over the
selected implementations, skips scenarios of unclaimed profiles as ``not-claimed``,
deselects scenarios outside ``--toolproof-rules``, and records one ``spec.ResultRow`` per rule a
scenario judges, and the ``spec.CrashCell`` records crash scenarios build. What the collector needs
travels typed: the item's rules, implementation and name, what each phase raised (``NotClaimed``
for an unclaimed profile) and the crash cells ride in ``item.stash``.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import re
import threading
import types
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

import pytest

# pytest.skip.Exception under the name it is defined with: a type checker needs a class to derive from.
from _pytest.outcomes import Skipped

from toolproof.driver import HttpImplementation, load
from toolproof.spec import (
    ConfigurationError,
    ConformanceFailure,
    CrashCell,
    FaultCell,
    Implementation,
    ImplementationError,
    NotCovered,
    PortViolation,
    Profile,
    ResultRow,
    Verdict,
    load_catalog,
    new_run_id,
)

from ._exploration import selected_exploration
from ._harness import Harness
from ._worker import Zygote

PLUGIN = __name__
"""The plugin's module name, for ``pytest -p``: what turns scenario modules into per-rule verdicts."""
_SCENARIOS_DIR = Path(__file__).resolve().parent
IMPLEMENTATIONS = pytest.StashKey[list[Implementation]]()
REFS = pytest.StashKey[dict[str, str]]()
DATABASE_URL = pytest.StashKey[str | None]()
SELECTED = pytest.StashKey[frozenset[str]]()
FAILED_SCENARIOS = pytest.StashKey[set[tuple[str, str]]]()
"""With --toolproof-first-failure: (implementation, scenario function) pairs that have a failed cell."""
FAILED_ANYWHERE = pytest.StashKey[set[str]]()
"""With --toolproof-first-failure-of-any: the scenario functions that have a failed cell, for any implementation."""
FAILED_RULES = pytest.StashKey[dict[str, set[str]]]()
"""With --toolproof-first-rule-failure: implementation name to the rules a cell has failed for it."""
IMPL_SELECTED = pytest.StashKey[dict[str, frozenset[str]]]()
"""Implementation name to the rules it alone is judged on, for implementations given a narrower selection."""
RUN_ID = pytest.StashKey[str]()
CELLS = pytest.StashKey[tuple[str, ...]]()
CELL_PROBLEMS = pytest.StashKey[list[str]]()
"""Why a ``--toolproof-cell`` selected nothing, one line each; empty when every one selected a scenario."""
CELL_RULES = pytest.StashKey[frozenset[str]]()
"""The rules the scenarios ``--toolproof-cell`` kept judge (every selected rule without the option)."""


@dataclass(frozen=True)
class ScenarioCase:
    """What one collected scenario item judges: its rules, for which implementation, under which name."""

    rules: tuple[str, ...]
    """The rule IDs it is tagged with."""
    implementation: str
    """The name of the implementation it runs against."""
    scenario: str
    """``module.py::test_name``, or ``module.py::test_name[param]`` for one cell."""


_E = TypeVar("_E", bound=BaseException)
CASE = pytest.StashKey[ScenarioCase]()
CRASH_CELLS = pytest.StashKey[tuple[CrashCell, ...]]()
FAULT_CELLS = pytest.StashKey[tuple[FaultCell, ...]]()
RAISED = pytest.StashKey[BaseException | None]()
EVERYWHERE = pytest.StashKey[dict[str, str]]()
NOTES = pytest.StashKey[Callable[[str], None]]()
"""Where a long scenario says how far it has gone (``Harness.progress``): the collector's ``note``."""
"""The harness's checks on everything the scenario observed that failed (``Harness.everywhere``)."""


class NotClaimed(Skipped):
    """Skips a scenario whose profiles the implementation does not claim: its rows read ``not-claimed``."""

    def __init__(self, implementation: str, missing: Sequence[Profile]) -> None:
        self.implementation = implementation
        """The implementation's name."""
        self.missing = tuple(missing)
        """The profiles the scenario needs that the implementation does not claim."""
        super().__init__(
            f"not-claimed: {implementation} does not claim profile {', '.join(p.value for p in self.missing)}"
        )


class Spared(Skipped):
    """With --toolproof-first-failure, skips a cell of a scenario that already failed for its implementation (with
    --toolproof-first-failure-of-any, for any implementation; with --toolproof-first-rule-failure, also a cell whose
    every rule the implementation is judged on has failed for it already): it leaves no row (one failed cell rejects
    the implementation on the rule that failed)."""


def scenario_names(item: pytest.Item) -> tuple[str, str]:
    """The scenario function (``module.py::test_name``) and the cell (``…[param]``, or the function when it has no
    parameters) an item runs, as result rows and expectations files name them."""
    function = f"{Path(str(item.path)).name}::{getattr(item, 'originalname', item.name)}"
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    shown = [_readable(v) for k, v in params.items() if k not in ("implementation", "anyio_backend")]
    return function, f"{function}[{'-'.join(shown)}]" if shown else function


def _readable(value: object) -> str:
    """A parameter as a cell id shows it: an enum by its value, a mapping as ``key=value,...``, never a repr."""
    if isinstance(value, Mapping):
        return ",".join(f"{key}={_readable(item)}" for key, item in value.items())
    if isinstance(value, list | tuple):
        return "+".join(_readable(item) for item in value)
    return str(getattr(value, "value", value))


def cell_selector(text: str) -> str:
    """A ``--cell`` argument as cells are named: a leading folder (``scenarios/``) is dropped."""
    module, sep, rest = text.strip().partition("::")
    return f"{Path(module).name}{sep}{rest}"


class ResultCollector:
    """Collects result rows and crash cells as scenarios finish; ``on_result`` reports progress."""

    def __init__(
        self,
        on_result: Callable[[ResultRow, int, int], None] | None = None,
        on_note: Callable[[str], None] | None = None,
    ) -> None:
        self.results: list[ResultRow] = []
        self.crash_cells: list[CrashCell] = []
        self.fault_cells: list[FaultCell] = []
        self.collection_errors: list[str] = []
        self.selection_problems: list[str] = []
        """Why a ``--toolproof-cell`` selected nothing; the run then executed nothing."""
        self.cell_rules: frozenset[str] | None = None
        """The rules the ``--toolproof-cell`` scenarios judge; None when the run selected no cells."""
        self.port_violation: str | None = None
        """The first PortViolation a scenario met (the run stops there)."""
        self.total = 0
        self.done = 0
        self._on_result = on_result
        self._on_note = on_note
        self._running = ""
        """The implementation and scenario of the cell running now, as progress names them."""
        self._config: pytest.Config | None = None
        self._noting = threading.Lock()
        self._durations: dict[str, float] = {}
        self._items: dict[str, pytest.Item] = {}
        self._run_id = ""

    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[NOTES] = self.note
        self._config = config

    @pytest.hookimpl(trylast=True)  # After the plugin's own setup has named the cell's case.
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        case = item.stash.get(CASE, None)
        self._running = f"{case.implementation}  {case.scenario}" if case is not None else item.nodeid

    def note(self, text: str) -> None:
        """A long scenario's word on how far it has gone, said beside the cell's name (any thread may call it)."""
        if self._on_note is None:
            return
        capture = self._config.pluginmanager.getplugin("capturemanager") if self._config is not None else None
        # Said while the cell runs, so past pytest's capture of the cell's output (as its own reports are).
        with self._noting, capture.global_and_fixture_disabled() if capture is not None else nullcontext():
            self._on_note(f"{self._running}: {text}")

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collection_errors.append(f"{report.nodeid}: {report.longreprtext.strip().splitlines()[-1]}")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)
        self._items = {item.nodeid: item for item in session.items}
        self._run_id = session.config.stash[RUN_ID]
        self.selection_problems = session.config.stash.get(CELL_PROBLEMS, [])
        if session.config.stash.get(CELLS, ()):
            self.cell_rules = session.config.stash.get(CELL_RULES, frozenset())

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        item = self._items.get(report.nodeid)
        case = item.stash.get(CASE, None) if item is not None else None
        if item is None or case is None:
            return
        if report.when == "call":
            cells: tuple[CrashCell, ...] = item.stash.get(CRASH_CELLS, ())
            self.crash_cells.extend(cells)
            faults: tuple[FaultCell, ...] = item.stash.get(FAULT_CELLS, ())
            self.fault_cells.extend(faults)
        self._durations[report.nodeid] = self._durations.get(report.nodeid, 0.0) + report.duration
        raised = item.stash.get(RAISED, None)
        if isinstance(raised, Spared):
            self.done += report.when == "setup"  # Counted as done for progress; it judges nothing.
            return
        violation = _port_violation(raised)
        if violation is not None and self.port_violation is None:
            # The implementation broke the port's types: no verdict means anything; stop and say so.
            self.port_violation = f"implementation {case.implementation!r}: {violation}"
            item.session.shouldstop = self.port_violation
        verdict, evidence, failed_rule = _judge(report, raised)
        if verdict is None:
            return  # A passing setup phase: the call phase decides.
        self.done += 1
        # What the harness saw fail on everything this scenario observed (Rule.everywhere), for the rules selected.
        everywhere = item.stash.get(EVERYWHERE, {}) if report.when == "call" else {}
        selected = item.config.stash[SELECTED]
        everywhere = {rule: text for rule, text in everywhere.items() if rule in selected}
        for rule_id in case.rules:
            rule_verdict, rule_evidence = verdict, evidence
            if failed_rule is not None and rule_id != failed_rule:
                rule_verdict = Verdict.ERROR
                rule_evidence = f"not judged: the scenario stopped when {failed_rule} failed"
            if rule_verdict is Verdict.PASS and rule_id in everywhere:
                rule_verdict, rule_evidence = Verdict.FAIL, everywhere[rule_id]
            self._row(case, rule_id, rule_verdict, self._durations[report.nodeid], rule_evidence)
        own = self.results[-1]
        for rule_id, text in everywhere.items():
            if rule_id not in case.rules:
                self._row(case, rule_id, Verdict.FAIL, self._durations[report.nodeid], text)
        if self._on_result is not None:
            self._on_result(own, self.done, self.total)

    def _row(self, case: ScenarioCase, rule_id: str, verdict: Verdict, duration_s: float, evidence: str) -> None:
        self.results.append(
            ResultRow(
                run_id=self._run_id,
                implementation=case.implementation,
                rule_id=rule_id,
                scenario=case.scenario,
                verdict=verdict,
                duration_s=duration_s,
                evidence=evidence,
            )
        )


def _port_violation(exc: object) -> PortViolation | None:
    """The PortViolation ``exc`` is or carries (task groups may wrap it)."""
    return _carried(exc, PortViolation)


def _conformance_failure(exc: object) -> ConformanceFailure | None:
    """The ConformanceFailure ``exc`` is or carries (an implementation's task groups may wrap it)."""
    return _carried(exc, ConformanceFailure)


def _carried(exc: object, kind: type[_E]) -> _E | None:
    """The exception of type ``kind`` that ``exc`` is or carries in its groups."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _carried(inner, kind)
            if found is not None:
                return found
    return None


def _judge(report: pytest.TestReport, raised: BaseException | None) -> tuple[Verdict | None, str, str | None]:
    """Map one report phase, and what it raised, to a verdict; None while the scenario is still running."""
    if report.skipped:
        if isinstance(raised, NotClaimed):
            return Verdict.NOT_CLAIMED, "", None
        # A skip is never a pass: a scenario that could not run is an error.
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        return Verdict.ERROR, f"scenario skipped: {reason}", None
    if report.when == "setup" and report.passed:
        return None, "", None
    if report.when == "teardown":
        if report.failed:
            return Verdict.ERROR, _raised_first(report, raised), None
        return None, "", None
    if report.passed:
        return Verdict.PASS, "", None
    not_covered = _carried(raised, NotCovered)
    if not_covered is not None:
        return Verdict.NOT_COVERED, f"not covered here: {not_covered.reason}", None
    failure = _conformance_failure(raised)
    if failure is not None:
        notes = "\n".join(getattr(failure, "__notes__", []))
        return Verdict.FAIL, str(failure) + (f"\n{notes}" if notes else ""), failure.rule_id
    misbehaved = _carried(raised, ImplementationError)
    if misbehaved is not None:
        # The implementation's driver refused, failed, or answered off the protocol: said in the protocol's terms,
        # one line, not a traceback of the harness's client (which would read as Python to a driver in any language).
        return Verdict.ERROR, f"implementation error: {misbehaved}", None
    return Verdict.ERROR, _raised_first(report, raised), None


def _raised_first(report: pytest.TestReport, raised: BaseException | None) -> str:
    """An error's evidence: what was raised, in one line, then where (the traceback, without frames' arguments)."""
    if raised is None:
        return report.longreprtext
    said = str(raised).strip().splitlines()
    return (
        f"{type(raised).__name__}: {said[0]}\n{report.longreprtext}"
        if said
        else (f"{type(raised).__name__}\n{report.longreprtext}")
    )


class _ScenarioModule(pytest.Module):
    """A scenario module imported under its package name, whatever the install layout.

    pytest would otherwise derive a top-level name (``scenarios.test_x``) from an editable
    checkout and import a second copy of the harness.
    """

    def _getobj(self) -> types.ModuleType:
        return importlib.import_module(f"{__package__}.{self.path.stem}")


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    if module_path.parent == _SCENARIOS_DIR and module_path.name.startswith("test_"):
        module: pytest.Module = _ScenarioModule.from_parent(parent, path=module_path)
        return module
    return None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("toolproof")
    group.addoption(
        "--toolproof-impl",
        action="append",
        default=[],
        metavar="NAME",
        help="implementation to test: an entry-point name or package.module:factory (repeatable; default reference)",
    )
    group.addoption(
        "--toolproof-database-url",
        default=os.environ.get("TOOLPROOF_DATABASE_URL"),
        metavar="URL",
        help="PostgreSQL for the multi-worker crash scenarios (default $TOOLPROOF_DATABASE_URL; none: they do not run)",
    )
    group.addoption(
        "--toolproof-rules",
        default=None,
        metavar="SELECTORS",
        help="comma-separated decisions (D5) or rule ids (D5.3) to judge; default all",
    )
    group.addoption(
        "--toolproof-impl-rules",
        action="append",
        default=[],
        metavar="NAME=SELECTORS",
        help="judge this --toolproof-impl only on these decisions or rule ids, within --toolproof-rules (repeatable)",
    )
    group.addoption(
        "--toolproof-first-failure",
        action="store_true",
        default=False,
        help="run no more cells of a scenario for an implementation once one of them failed for it",
    )
    group.addoption(
        "--toolproof-first-failure-of-any",
        action="store_true",
        default=False,
        help="run no more cells of a scenario once one of them failed, for any implementation",
    )
    group.addoption(
        "--toolproof-first-rule-failure",
        action="store_true",
        default=False,
        help="run no more cells for an implementation whose every rule it is judged on has failed for it already",
    )
    group.addoption(
        "--toolproof-cell",
        action="append",
        default=[],
        metavar="CELL",
        help="run only this scenario (module.py::test_name) or cell (module.py::test_name[param]); repeatable",
    )
    group.addoption(
        "--toolproof-run-id",
        default=None,
        metavar="ID",
        help="the run id the result rows and crash cells carry (default: a new one)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "rules(*ids): the rule ids a scenario judges")
    config.addinivalue_line("markers", "needs_database: runs only with --toolproof-database-url")
    config.addinivalue_line(
        "markers", "profiles(*names): profiles a scenario needs beyond its rules' (a core rule judged through MCP)"
    )
    config.addinivalue_line("markers", "slow: spawns processes; excluded from the quick loop")
    refs: list[str] = config.getoption("--toolproof-impl") or ["reference"]
    try:
        loaded = [load(ref) for ref in refs]
        config.stash[IMPLEMENTATIONS] = loaded
        config.stash[REFS] = {impl.name: ref for impl, ref in zip(loaded, refs, strict=True)}
        config.stash[DATABASE_URL] = config.getoption("--toolproof-database-url") or None
        selection = load_catalog().select(config.getoption("--toolproof-rules"))
        config.stash[IMPL_SELECTED] = _impl_selections(config.getoption("--toolproof-impl-rules"), config.stash[REFS])
        selected_exploration()
    except ConfigurationError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[SELECTED] = frozenset(rule.id for rule in selection)
    config.stash[CELLS] = tuple(cell_selector(cell) for cell in config.getoption("--toolproof-cell"))
    config.stash[RUN_ID] = config.getoption("--toolproof-run-id") or new_run_id()
    if config.getoption("--toolproof-first-failure"):
        config.stash[FAILED_SCENARIOS] = set()
    if config.getoption("--toolproof-first-rule-failure"):
        config.stash[FAILED_RULES] = {}
    if config.getoption("--toolproof-first-failure-of-any"):
        config.stash[FAILED_ANYWHERE] = set()


_RULE_LITERAL = re.compile(r"""["'](D\d+\.\d+)["']""")
_DECISION_MODULE = re.compile(r"test_d(\d+)_")


@functools.cache
def may_judge(module: Path) -> frozenset[str]:
    """The rule ids a scenario module can judge, read from its text without importing it: every rule id written in it
    as a string, and every rule of the decision its name gives (``test_d04_…``: a module may take its rules from a
    helper of the harness, as the crash matrix does). ``tests/test_scenarios_plugin.py`` holds every module to it."""
    found = set(_RULE_LITERAL.findall(module.read_text(encoding="utf-8")))
    named = _DECISION_MODULE.match(module.name)
    if named is not None:
        found |= {rule.id for rule in load_catalog().rules if rule.decision == int(named.group(1))}
    return frozenset(found)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A scenario module that cannot judge a selected rule is not even imported (``--rules D18`` imports D18's), nor
    one no ``--toolproof-cell`` names when some do."""
    if not (collection_path.name.startswith("test_") and collection_path.suffix == ".py"):
        return None
    selected = config.stash.get(SELECTED, None)
    if selected is None:
        return None
    if config.stash[CELLS]:
        return None if collection_path.name in {cell.split("::", 1)[0] for cell in config.stash[CELLS]} else True
    return None if selected.intersection(may_judge(collection_path)) else True


def pytest_unconfigure(config: pytest.Config) -> None:
    """A run's worker zygotes end with it (a process that runs the suite many times would otherwise keep one per
    implementation it ever crashed)."""
    Zygote.stop()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "implementation" in metafunc.fixturenames:
        impls = metafunc.config.stash[IMPLEMENTATIONS]
        metafunc.parametrize("implementation", impls, ids=[impl.name for impl in impls], indirect=True)


def _impl_selections(given: Sequence[str], refs: dict[str, str]) -> dict[str, frozenset[str]]:
    """``NAME=SELECTORS`` options, keyed by implementation name (``NAME`` is the ref given to ``--toolproof-impl``).

    Raises:
        ConfigurationError: an option without ``=``, a ``NAME`` no ``--toolproof-impl`` gave, or an unknown rule.
    """
    names = {ref: name for name, ref in refs.items()}
    narrowed: dict[str, frozenset[str]] = {}
    for option in given:
        ref, equals, selectors = option.partition("=")
        if not equals or ref not in names:
            raise ConfigurationError(
                f"--toolproof-impl-rules {option!r}: expected NAME=SELECTORS for a --toolproof-impl"
            )
        narrowed[names[ref]] = frozenset(rule.id for rule in load_catalog().select(selectors))
    return narrowed


def _rules_of(item: pytest.Item) -> tuple[str, ...]:
    marker = item.get_closest_marker("rules")
    return tuple(marker.args) if marker else ()


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    catalog = load_catalog()
    known = {rule.id for rule in catalog.rules}
    selected = config.stash[SELECTED]
    cells = config.stash[CELLS]
    narrowed = config.stash[IMPL_SELECTED]
    everywhere = {rule.id for rule in catalog.rules if rule.everywhere}
    review_only = {rule.id for rule in catalog.rules if rule.review_only}
    matched: dict[str, list[pytest.Item]] = {cell: [] for cell in cells}
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        rules = _rules_of(item)
        unknown = [r for r in rules if r not in known]
        if not rules or unknown:
            raise pytest.UsageError(
                f"scenario {item.nodeid} must be tagged @pytest.mark.rules with catalog ids (unknown: {unknown or 'no tag'})"
            )
        reviewed = [r for r in rules if r in review_only]
        if reviewed:
            raise pytest.UsageError(
                f"scenario {item.nodeid} cites {reviewed}, which only a reviewer judges (review_only)"
            )
        # A hypothesis test wraps the coroutine function; anyio runs the inner one.
        inner = getattr(getattr(item, "obj", None), "hypothesis", None)
        function = inner.inner_test if inner is not None else getattr(item, "obj", None)
        if isinstance(item, pytest.Function) and inspect.iscoroutinefunction(function):
            item.add_marker(pytest.mark.anyio)
        no_database = item.get_closest_marker("needs_database") is not None and config.stash[DATABASE_URL] is None
        wanted = [cell for cell in cells if cell in scenario_names(item)]
        for cell in wanted:
            matched[cell].append(item)
        # A named cell also judges the rules the harness checks on everything (so a failure seen there reruns).
        judged = set(rules) | (everywhere if wanted else set())
        chosen = bool(selected.intersection(judged)) and not no_database and (bool(wanted) or not cells)
        callspec = getattr(item, "callspec", None)
        impl = callspec.params.get("implementation") if callspec is not None else None
        own = narrowed.get(impl.name) if isinstance(impl, Implementation) else None
        chosen = chosen and (own is None or bool(own.intersection(judged)))
        (keep if chosen else dropped).append(item)
    database = config.stash[DATABASE_URL] is not None
    problems = [_cell_problem(cell, found, keep, database) for cell, found in matched.items()]
    config.stash[CELL_PROBLEMS] = [problem for problem in problems if problem]
    if config.stash[CELL_PROBLEMS]:
        dropped, keep = dropped + keep, []  # Run nothing: the run stops on the selection's problems.
    # A cell kept only for a rule the harness checks everywhere judges that rule (its own are not selected).
    judged_rules = {rule for item in keep for rule in _rules_of(item)}
    if cells and any(not selected.intersection(_rules_of(item)) for item in keep):
        judged_rules |= everywhere
    config.stash[CELL_RULES] = frozenset(judged_rules) & selected
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def _cell_problem(cell: str, found: list[pytest.Item], keep: list[pytest.Item], database: bool) -> str:
    if not found:
        return (
            f"--cell {cell}: the suite has no such scenario or cell; name it as the report does,"
            " module.py::test_name or module.py::test_name[param]"
        )
    if any(item in keep for item in found):
        return ""
    if not database and any(item.get_closest_marker("needs_database") for item in found):
        return f"--cell {cell}: it needs PostgreSQL; give --database-url"
    judged = sorted({rule for item in found for rule in _rules_of(item)})
    return f"--cell {cell}: it judges {', '.join(judged)}, which --rules does not select"


def pytest_runtest_setup(item: pytest.Item) -> None:
    rules = _rules_of(item)
    if not isinstance(item, pytest.Function):
        return
    impl = cast(Implementation, item.callspec.params["implementation"])
    item.stash[CASE] = ScenarioCase(rules=rules, implementation=impl.name, scenario=scenario_names(item)[1])
    failed = item.config.stash.get(FAILED_SCENARIOS, None)
    if failed is not None and _scenario_of(item) in failed:
        raise Spared(f"spared: {impl.name} already failed a cell of this scenario")
    anywhere = item.config.stash.get(FAILED_ANYWHERE, None)
    if anywhere is not None and item.nodeid.split("[", 1)[0] in anywhere:
        raise Spared("spared: a cell of this scenario already failed for an implementation")
    failed_rules = item.config.stash.get(FAILED_RULES, None)
    if failed_rules is not None:
        own = item.config.stash[IMPL_SELECTED].get(impl.name, item.config.stash[SELECTED]).intersection(rules)
        if own and own <= failed_rules.get(impl.name, set()):
            raise Spared(f"spared: {impl.name} already failed {', '.join(sorted(own))} in another cell")
    catalog = load_catalog()
    needed = {catalog.rule(r).profile for r in rules}
    extra = item.get_closest_marker("profiles")
    needed |= {Profile(p) for p in (extra.args if extra else ())}
    missing = sorted(needed - set(impl.profiles), key=lambda profile: profile.value)
    if missing:
        raise NotClaimed(impl.name, missing)
    if isinstance(impl, HttpImplementation):
        # A rule the catalog says no scenario can judge behind the driver protocol reads not-covered there.
        reasons = [(r, catalog.rule(r).over_http) for r in rules]
        if all(reason for _, reason in reasons):
            rule_id, reason = reasons[0]
            raise NotCovered(rule_id, f"over the driver protocol: {reason}")


def _scenario_of(item: pytest.Item) -> tuple[str, str] | None:
    """(implementation name, scenario function's node id) of a scenario cell."""
    callspec = getattr(item, "callspec", None)
    impl = callspec.params.get("implementation") if callspec is not None else None
    return (impl.name, item.nodeid.split("[", 1)[0]) if isinstance(impl, Implementation) else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    failed = item.config.stash.get(FAILED_SCENARIOS, None)
    # Only a conformance failure counts: a cell that errored proves nothing, so the scenario's next cell still runs.
    failure = _conformance_failure(call.excinfo.value) if call.excinfo is not None else None
    if failed is not None and failure is not None:
        scenario = _scenario_of(item)
        if scenario is not None:
            failed.add(scenario)
    anywhere = item.config.stash.get(FAILED_ANYWHERE, None)
    if anywhere is not None and failure is not None:
        anywhere.add(item.nodeid.split("[", 1)[0])
    failed_rules = item.config.stash.get(FAILED_RULES, None)
    case = item.stash.get(CASE, None)
    if failed_rules is not None and failure is not None and case is not None:
        failed_rules.setdefault(case.implementation, set()).add(failure.rule_id)
    # What this phase raised, for the collector to judge by type rather than by the report's text.
    item.stash[RAISED] = call.excinfo.value if call.excinfo is not None else None
    harness = getattr(item, "funcargs", {}).get("harness")
    if call.when == "call" and isinstance(harness, Harness) and harness.crash_cells:
        item.stash[CRASH_CELLS] = tuple(harness.crash_cells)
    if call.when == "call" and isinstance(harness, Harness) and harness.fault_cells:
        item.stash[FAULT_CELLS] = tuple(harness.fault_cells)
    if call.when == "call" and isinstance(harness, Harness) and harness.everywhere:
        item.stash[EVERYWHERE] = dict(harness.everywhere)
    return report


@pytest.fixture
def anyio_backend() -> str:
    """Scenarios run on asyncio."""
    return "asyncio"


@pytest.fixture
def implementation(request: pytest.FixtureRequest) -> Implementation:
    """The implementation under test (parametrized by the plugin)."""
    impl: Implementation = request.param
    return impl


@pytest.fixture
def harness(
    request: pytest.FixtureRequest, implementation: Implementation, tmp_path: Path, anyio_backend: str
) -> Iterator[Harness]:
    """A harness over the implementation under test, with a fresh store directory and world."""
    # Requesting anyio_backend keeps anyio's plugin from re-parametrizing (and dropping) our callspec.
    ref = request.config.stash[REFS].get(implementation.name, "")
    harness = Harness(implementation, tmp_path, ref, run_id=request.config.stash[RUN_ID])
    harness.progress = request.config.stash.get(NOTES, harness.progress)
    yield harness
    for cleanup in reversed(harness.cleanups):
        cleanup()


@pytest.fixture
def database_url(request: pytest.FixtureRequest) -> str | None:
    """The PostgreSQL URL for multi-worker scenarios, if one was given."""
    return request.config.stash[DATABASE_URL]
