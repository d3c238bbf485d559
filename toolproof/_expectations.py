"""Expectations files: the failures an implementation declares, turned into ``xfail`` after a run.

A file applies to one implementation (its ``Implementation.name``) and lists ``[[expect]]`` entries,
each naming a rule or a scenario, the verdict it yields instead of ``pass``, and why. After the run,
a scenario row an entry names that yields the entry's verdict becomes ``xfail``; an entry the run
contradicts (a row it names passed, or nothing it names ran although it was selected) is stale and
fails the run, so the file cannot silently outlive the failures it describes.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from toolproof.spec import ConfigurationError, ResultRow, StaleExpectation, Verdict, load_catalog

SCENARIO = re.compile(r"^[^\s:\[\]]+\.py::[A-Za-z_][A-Za-z0-9_]*(\[.+\])?$")
"""A scenario as reports name it: ``module.py::test_name``, or one cell ``module.py::test_name[param]``."""

# Verdicts of a scenario that ran and judged; ``not-claimed`` rows never ran, so nothing there can fail.
_JUDGED = frozenset({Verdict.PASS, Verdict.FAIL, Verdict.ERROR})
_FILE_KEYS = "the file's keys are implementation and [[expect]] entries"
_ENTRY_KEYS = "an entry's keys are rule or scenario, verdict, reason and link"


class ExpectationsError(ConfigurationError):
    """An expectations file cannot be used: unreadable, not TOML, or an entry is wrong (exit status 2)."""

    def __init__(self, path: str, problem: str, entry: str = "") -> None:
        self.path = path
        """The file, as given to ``--expectations``."""
        self.entry = entry
        """The entry at fault, e.g. ``entry 2 (rule 'D4.1')``; ``""`` for the file as a whole."""
        where = f"expectations file {path!r}" + (f", {entry}" if entry else "")
        super().__init__(f"{where}: {problem}")


class Expectation(BaseModel):
    """One ``[[expect]]`` entry: a rule or scenario, the verdict it yields instead of ``pass``, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rule: str | None = None
    """A catalog rule ID: the entry names every scenario row of that rule."""
    scenario: str | None = None
    """``module.py::test_name`` (every cell of that scenario) or ``module.py::test_name[param]`` (one cell)."""
    verdict: Literal["fail", "error"]
    """What the named rows yield instead of ``pass``."""
    reason: str
    """Why, in one line; appended to the evidence of every row the entry turns into ``xfail``."""
    link: str | None = None
    """Where the failure is tracked, e.g. an issue URL."""

    @field_validator("rule")
    @classmethod
    def _known_rule(cls, value: str | None) -> str | None:
        if value is not None:
            load_catalog().rule(value)  # ConfigurationError is a ValueError: pydantic reports its message.
        return value

    @field_validator("scenario")
    @classmethod
    def _well_formed_scenario(cls, value: str | None) -> str | None:
        if value is not None and not SCENARIO.match(value):
            raise ValueError(
                f"scenario={value!r} is not module.py::test_name or module.py::test_name[param],"
                " as the report names scenarios"
            )
        return value

    @field_validator("reason", "link")
    @classmethod
    def _one_line(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and (not value.strip() or "\n" in value.strip()):
            raise ValueError(f"{info.field_name}={value!r} must be one non-empty line")
        return value.strip() if value is not None else None

    @model_validator(mode="after")
    def _names_one_thing(self) -> Expectation:
        if (self.rule is None) == (self.scenario is None):
            raise ValueError("give exactly one of rule (a rule ID) or scenario (module.py::test_name)")
        return self

    @property
    def target(self) -> str:
        """``rule D4.1`` or ``scenario module.py::test_name``."""
        return f"rule {self.rule}" if self.rule is not None else f"scenario {self.scenario}"

    @property
    def function(self) -> str | None:
        """The scenario function a scenario entry names, without any cell."""
        return self.scenario.split("[", 1)[0] if self.scenario is not None else None

    def matches(self, row: ResultRow) -> bool:
        """Whether the entry names ``row`` (a scenario row; the implementation is the file's business)."""
        if not row.scenario:
            return False
        if self.rule is not None:
            return row.rule_id == self.rule
        if self.scenario is not None and "[" in self.scenario:
            return row.scenario == self.scenario
        return row.scenario.split("[", 1)[0] == self.function


class ExpectationsFile(BaseModel):
    """An expectations file: the implementation it applies to and its entries."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    implementation: str = Field(min_length=1)
    """The ``Implementation.name`` the file applies to."""
    expect: tuple[Expectation, ...] = ()
    """The entries, in file order."""


@dataclass(frozen=True)
class LoadedExpectations:
    """One expectations file, read and checked."""

    path: str
    """The file as given to ``--expectations``; reports name it so."""
    implementation: str
    """The ``Implementation.name`` it applies to."""
    entries: tuple[Expectation, ...]
    """Its entries; ``entries[0]`` is entry 1."""


@dataclass
class ScenarioIndex:
    """Which scenario functions the suite holds, the rules each judges, and which the run kept.

    A pytest plugin: it reads every collected scenario before the scenarios plugin deselects what the
    run does not need, so an entry for a scenario outside the selection is told from one for no scenario.
    """

    rules: dict[str, frozenset[str]] = field(default_factory=dict)
    """Scenario function (``module.py::test_name``) to the rules it judges, for every scenario collected."""
    cells: set[str] = field(default_factory=set)
    """Every scenario cell collected (``module.py::test_name[param]``; a function without cells is its own)."""
    kept: set[str] = field(default_factory=set)
    """Scenario functions and cells the run went on to execute."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            marker = item.get_closest_marker("rules")
            judged = frozenset(str(rule) for rule in marker.args) if marker else frozenset()
            function, cell = _names(item)
            self.rules[function] = self.rules.get(function, frozenset()) | judged
            self.cells.add(cell)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.kept = {name for item in session.items for name in _names(item)}


def load_expectations(paths: Sequence[Path], implementations: Sequence[str]) -> list[LoadedExpectations]:
    """Read and check every expectations file.

    Raises:
        ExpectationsError: a file is unreadable or not TOML, has an unknown or missing key, names a rule
            the catalog does not have, a verdict other than fail or error, or an implementation that is
            not among ``implementations``.
    """
    return [_load(path, implementations) for path in paths]


def apply_expectations(
    run_id: str,
    files: Sequence[LoadedExpectations],
    rows: Sequence[ResultRow],
    selected: frozenset[str],
    index: ScenarioIndex,
) -> tuple[list[ResultRow], list[StaleExpectation]]:
    """Turn the rows the entries expect into ``xfail`` and find the stale entries.

    A scenario row of the file's implementation that an entry names and whose verdict is the entry's
    becomes ``xfail``, its evidence kept and the entry's reason appended. An entry is stale when a row
    it names passed (an unexpected pass: the row stays ``pass``), or when it names no row that ran
    although it was selected: its rule is selected, or its scenario is one the run executed or one the
    suite does not have. A row whose verdict is neither (expected ``fail``, got ``error``) stays as it is.

    Returns:
        The rows, in the order given, and the stale entries, in file and entry order.
    """
    result = list(rows)
    stale: list[StaleExpectation] = []
    for loaded in files:
        for number, entry in enumerate(loaded.entries, 1):
            named = [
                i for i, row in enumerate(rows) if row.implementation == loaded.implementation and entry.matches(row)
            ]
            judged = [i for i in named if rows[i].verdict in _JUDGED]
            problem = ""
            if not judged:
                problem = _unmatched(entry, loaded.implementation, [rows[i] for i in named], selected, index)
            passed = [rows[i] for i in judged if rows[i].verdict is Verdict.PASS]
            if passed:
                more = f" (and {len(passed) - 1} more)" if len(passed) > 1 else ""
                problem = f"unexpected pass: {passed[0].scenario} passed {passed[0].rule_id}{more}"
            if problem:
                stale.append(
                    StaleExpectation(
                        run_id=run_id,
                        implementation=loaded.implementation,
                        file=loaded.path,
                        entry=number,
                        target=entry.target,
                        problem=problem,
                    )
                )
            for i in judged:
                # Invariant: the actual verdict is the one the scenario gave, whatever an earlier entry made of it.
                if rows[i].verdict.value == entry.verdict and result[i].verdict is not Verdict.XFAIL:
                    result[i] = rows[i].model_copy(
                        update={"verdict": Verdict.XFAIL, "evidence": _with_reason(rows[i].evidence, loaded, number)}
                    )
    return result, stale


def _unmatched(
    entry: Expectation, implementation: str, named: Sequence[ResultRow], selected: frozenset[str], index: ScenarioIndex
) -> str:
    """Why an entry that named no judged row is stale; ``""`` when the run had no reason to reach it."""
    if named:  # Rows exist, but none ran: the implementation does not claim the profile.
        return f"{implementation} does not claim the profile: every scenario it names is not-claimed"
    if entry.rule is not None:
        judging = {name for name, rules in index.rules.items() if entry.rule in rules}
        if entry.rule not in selected or (judging and not judging & index.kept):
            return ""  # Not selected, or its scenarios did not run (they need a database the run lacks).
        if not judging:
            return f"no scenario of the suite judges {entry.rule}, so nothing can fail"
        return f"{entry.rule} is selected but no scenario of it ran for {implementation}"
    function, scenario = entry.function or "", entry.scenario or ""
    if function not in index.rules:
        return f"the suite has no scenario {function}"
    if scenario not in index.cells | index.rules.keys():
        return f"the suite has no cell {scenario}"
    if scenario not in index.kept:
        return ""  # Its rules are not selected, or it needs a database the run lacks.
    return f"{scenario} ran, but no row of it judged a selected rule for {implementation}"


def _with_reason(evidence: str, loaded: LoadedExpectations, number: int) -> str:
    entry = loaded.entries[number - 1]
    link = f" {entry.link}" if entry.link else ""
    note = f"expected {entry.verdict} ({loaded.path} entry {number}): {entry.reason}{link}"
    return f"{evidence.rstrip()}\n\n{note}" if evidence.strip() else note


def _names(item: pytest.Item) -> tuple[str, str]:
    """The scenario function and the cell of ``item``, named as the scenarios plugin names a row's scenario."""
    # Invariant: the same rule as scenarios/_plugin.py's pytest_runtest_setup (module file :: function, then
    # the parameters but the implementation and the anyio backend); test_expectations pins it with real cells.
    function = f"{Path(str(item.path)).name}::{getattr(item, 'originalname', item.name)}"
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    shown = [str(getattr(v, "value", v)) for k, v in params.items() if k not in ("implementation", "anyio_backend")]
    return function, f"{function}[{'-'.join(shown)}]" if shown else function


def _load(path: Path, implementations: Sequence[str]) -> LoadedExpectations:
    shown = str(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ExpectationsError(shown, f"cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ExpectationsError(shown, "not TOML: it is not UTF-8 text") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ExpectationsError(shown, f"not TOML: {exc}") from None
    try:
        parsed = ExpectationsFile.model_validate(raw)
    except ValidationError as exc:
        entry, problem = _explain(exc, raw)
        raise ExpectationsError(shown, problem, entry) from None
    if parsed.implementation not in implementations:
        names = ", ".join(repr(name) for name in implementations)
        raise ExpectationsError(
            shown,
            f"implementation={parsed.implementation!r} is none of the implementations under test ({names}):"
            " give the Implementation.name of an --impl",
        )
    return LoadedExpectations(path=shown, implementation=parsed.implementation, entries=parsed.expect)


def _explain(exc: ValidationError, raw: dict[str, Any]) -> tuple[str, str]:
    """The entry at fault and the problem, in one line, from the first validation error."""
    # A misspelt key is also a missing one: name the misspelling, which is what to fix.
    errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    error = errors[0]
    loc = error["loc"]
    entry = ""
    if len(loc) >= 2 and loc[0] == "expect" and isinstance(loc[1], int):
        entry = _entry_label(loc[1], raw)
        loc = loc[2:]
    key = str(loc[0]) if loc else ""
    kind = error["type"]
    if kind == "extra_forbidden":
        return entry, f"unknown key {key!r}: {_ENTRY_KEYS if entry else _FILE_KEYS}"
    if kind == "missing":
        wanted = {
            "reason": "say in one line why the failure is expected",
            "verdict": 'say what it yields instead of pass: "fail" or "error"',
            "implementation": "give the Implementation.name the file applies to",
        }.get(key, "add it")
        return entry, f"missing key {key!r}: {wanted}"
    if kind == "literal_error":
        return entry, f'{key}={error["input"]!r} is not allowed: use "fail" or "error"'
    if kind == "value_error":
        message = str(error.get("ctx", {}).get("error", error["msg"]))
        return entry, message
    if key == "expect" and not entry:
        return entry, "expect must be an array of tables: write each entry under [[expect]]"
    if not key and entry:
        return entry, "an entry must be a table under [[expect]]"
    return entry, f"{key}: {error['msg']}" if key else error["msg"]


def _entry_label(position: int, raw: dict[str, Any]) -> str:
    label = f"entry {position + 1}"
    entries = raw.get("expect")
    item = entries[position] if isinstance(entries, list) and position < len(entries) else None
    if isinstance(item, dict):
        for key in ("rule", "scenario"):
            if isinstance(item.get(key), str):
                return f"{label} ({key} {item[key]!r})"
    return label
