"""Reading an expectations file: its entries, checked against the catalog, or one line saying what is wrong."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from toolproof.spec import ConfigurationError, ResultRow, load_catalog

from ._draft import DRAFT_KEY

SCENARIO = re.compile(r"^[^\s:\[\]]+\.py::[A-Za-z_][A-Za-z0-9_]*(\[.+\])?$")
"""A scenario as reports name it: ``module.py::test_name``, or one cell ``module.py::test_name[param]``."""

_FILE_KEYS = "the file's keys are implementation and [[expect]] entries"
_ENTRY_KEYS = "an entry's keys are rule and/or scenario, verdict, reason and link"


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
    """One ``[[expect]]`` entry: a rule, a scenario or both, the verdict it yields instead of ``pass``, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rule: str | None = None
    """A catalog rule ID: the entry names every scenario row of that rule (with ``scenario``, that scenario's only)."""
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
        if self.rule is None and self.scenario is None:
            raise ValueError("give a rule (a rule ID), a scenario (module.py::test_name), or both")
        return self

    @property
    def target(self) -> str:
        """``rule D4.1``, ``scenario module.py::test_name``, or ``rule D4.1 in scenario module.py::test_name``."""
        named = [f"rule {self.rule}"] if self.rule is not None else []
        named += [f"scenario {self.scenario}"] if self.scenario is not None else []
        return " in ".join(named)

    @property
    def function(self) -> str | None:
        """The scenario function a scenario entry names, without any cell."""
        return self.scenario.split("[", 1)[0] if self.scenario is not None else None

    def matches(self, row: ResultRow) -> bool:
        """Whether the entry names ``row`` (a scenario row; the implementation is the file's business)."""
        if not row.scenario:
            return False
        if self.rule is not None and row.rule_id != self.rule:
            return False
        if self.scenario is None:
            return True
        if "[" in self.scenario:
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


def load_expectations(paths: Sequence[Path], implementations: Sequence[str]) -> list[LoadedExpectations]:
    """Read and check every expectations file.

    Raises:
        ExpectationsError: a file is unreadable or not TOML, is a draft whose reasons are not written yet, has an unknown or missing key, names a rule
            the catalog does not have, a verdict other than fail or error, or an implementation that is
            not among ``implementations``.
    """
    return [_load(path, implementations) for path in paths]


def check_expectations(paths: Sequence[Path]) -> None:
    """Read and check every expectations file as ``load_expectations`` does, save whom it names: the implementations
    are not loaded yet (``toolproof run`` checks its files before anything heavy is imported).

    Raises:
        ExpectationsError: as ``load_expectations``, but for an implementation not under test.
    """
    for path in paths:
        _load(path, None)


def _load(path: Path, implementations: Sequence[str] | None) -> LoadedExpectations:
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
    if DRAFT_KEY in raw:
        entries = raw.get("expect")
        blank = (
            sum(1 for item in entries if isinstance(item, dict) and not str(item.get("reason", "")).strip())
            if isinstance(entries, list)
            else 0
        )
        raise ExpectationsError(
            shown,
            f"a draft written by --write-expectations ({blank} of its reasons still empty): write every reason,"
            f" then delete the {DRAFT_KEY} line",
        )
    try:
        parsed = ExpectationsFile.model_validate(raw)
    except ValidationError as exc:
        entry, problem = _explain(exc, raw)
        raise ExpectationsError(shown, problem, entry) from None
    implementation = (
        parsed.implementation if implementations is None else _under_test(shown, parsed.implementation, implementations)
    )
    return LoadedExpectations(path=shown, implementation=implementation, entries=parsed.expect)


def _under_test(shown: str, named: str, implementations: Sequence[str]) -> str:
    """The implementation under test the file names: by its name, or a driver's by its name without its address
    (``typescript`` for ``typescript@127.0.0.1:8787``), so a driver's file does not depend on the port it serves."""
    if named in implementations:
        return named
    served = [name for name in implementations if name.rpartition("@")[0] == named]
    if len(served) == 1:
        return served[0]
    names = ", ".join(repr(name) for name in implementations)
    if served:
        raise ExpectationsError(
            shown,
            f"implementation={named!r} names {len(served)} drivers under test ({names}): give one with its address",
        )
    raise ExpectationsError(
        shown,
        f"implementation={named!r} is none of the implementations under test ({names}):"
        " give the Implementation.name of an --impl (a driver's name without its @address will do)",
    )


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
