"""The rule catalog, loaded once from ``rules.toml`` beside this module."""

from __future__ import annotations

import hashlib
import re
import tomllib
from functools import cache
from importlib.resources import files

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ._enums import Profile
from ._errors import ConfigurationError

RULE_ID = re.compile(r"^D(?P<decision>[1-9][0-9]*)\.(?P<n>[1-9][0-9]*)$")
"""Well-formed rule IDs: ``D<decision>.<n>``."""


class Rule(BaseModel):
    """One atomic, testable statement of the ADR."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    """``D<decision>.<n>``."""
    profile: Profile
    """The profile an implementation must claim for the rule to apply."""
    text: str
    """The rule, in our words, with MUST / MUST NOT."""
    interpretation: str | None = None
    """Our reading where the ADR leans on plan sections we do not have."""
    review_only: str | None = None
    """Why no run can judge this rule, only a reviewer reading the implementation, when none can: no scenario may
    cite it, and every run reports it ``review-only`` with this reason, never ``pass``."""
    over_http: str | None = None
    """Why no scenario can judge this rule against an implementation behind the driver protocol, when none
    can: there it reads ``not-covered`` with this reason, never ``pass`` (it is judged in-process only)."""
    everywhere: str | None = None
    """What the harness checks of this rule on everything any scenario observes (every outcome, every event read),
    whatever rule the scenario itself judges; a violation seen there fails this rule in that scenario's cell."""

    @field_validator("id")
    @classmethod
    def _well_formed(cls, value: str) -> str:
        if not RULE_ID.match(value):
            raise ValueError(f"rule id {value!r} is not D<decision>.<n>")
        return value

    @property
    def decision(self) -> int:
        """The ADR decision number."""
        return rule_decision(self.id)

    @property
    def number(self) -> int:
        """Position within the decision."""
        match = RULE_ID.match(self.id)
        assert match is not None  # Invariant: validated at construction.
        return int(match["n"])


class Decision(BaseModel):
    """One of the ADR's numbered decisions."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    number: int = Field(ge=1)
    """1 to 18."""
    title: str
    """Short title."""


class Catalog(BaseModel):
    """All decisions and rules, in ADR order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    decisions: tuple[Decision, ...] = Field(alias="decision")
    """Decisions in order."""
    rules: tuple[Rule, ...] = Field(alias="rule")
    """Rules in decision order, then number."""

    @model_validator(mode="after")
    def _consistent(self) -> Catalog:
        ids = [r.id for r in self.rules]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate rule ids: {dupes}")
        numbers = {d.number for d in self.decisions}
        orphans = sorted({r.id for r in self.rules if r.decision not in numbers})
        if orphans:
            raise ValueError(f"rules of undeclared decisions: {orphans}")
        return self

    def rule(self, rule_id: str) -> Rule:
        """The rule with ``rule_id``; ConfigurationError when there is none."""
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        raise ConfigurationError(f"unknown rule id {rule_id!r}: see `toolproof rules`")

    def select(self, selectors: str | list[str] | None) -> tuple[Rule, ...]:
        """Rules matching comma-separated selectors: ``D5`` (a decision) or ``D5.3`` (a rule).

        Raises:
            ConfigurationError: a selector is malformed or names nothing in the catalog.
        """
        if selectors is None:
            return self.rules
        items = selectors.split(",") if isinstance(selectors, str) else selectors
        wanted: list[str] = [s.strip() for s in items if s.strip()]
        if not wanted:
            raise ConfigurationError("--rules is empty: give decisions like D5 or rules like D5.3, comma-separated")
        chosen: set[str] = set()
        known = {r.id for r in self.rules}
        problems: list[str] = []  # Every bad selector is reported, not only the first.
        for sel in wanted:
            if re.fullmatch(r"D[1-9][0-9]*", sel):
                hits = {r.id for r in self.rules if f"D{r.decision}" == sel}
                if not hits:
                    problems.append(f"rule selector {sel!r} matches no rule in the catalog")
            elif RULE_ID.match(sel):
                hits = {sel} & known
                if not hits:
                    problems.append(f"unknown rule id {sel!r}")
            else:
                hits = set()
                problems.append(f"rule selector {sel!r} is neither a decision (D5) nor a rule id (D5.3)")
            chosen |= hits
        if problems:
            raise ConfigurationError("; ".join(problems) + ": see `toolproof rules`")
        return tuple(r for r in self.rules if r.id in chosen)


def rule_decision(rule_id: str) -> int:
    """The decision number of ``rule_id``."""
    match = RULE_ID.match(rule_id)
    if match is None:
        raise ConfigurationError(f"rule id {rule_id!r} is not D<decision>.<n>")
    return int(match["decision"])


@cache
def catalog_digest() -> str:
    """SHA-256 of the rule catalog's text: two runs judged the same rules when their digests agree."""
    return hashlib.sha256(files(__package__).joinpath("rules.toml").read_bytes()).hexdigest()


@cache
def load_catalog() -> Catalog:
    """The catalog, parsed and validated once per process."""
    raw = tomllib.loads(files(__package__).joinpath("rules.toml").read_text(encoding="utf-8"))
    return Catalog.model_validate(raw)
