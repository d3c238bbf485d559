"""What toolproof assumes beyond the ADR (``assumptions.toml``): topics that quote rules' interpretations, name
spec values, and state the few facts no rule or docstring holds."""

from __future__ import annotations

import tomllib
from functools import cache
from importlib.resources import files

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._catalog import load_catalog


class Topic(BaseModel):
    """One assumption toolproof makes where the ADR is silent or leans on documents we do not have."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str = Field(min_length=1)
    """The topic, as a heading."""
    rules: tuple[str, ...] = ()
    """Rule ids whose text and interpretation state the assumption."""
    names: tuple[str, ...] = ()
    """Names ``toolproof.spec`` exports whose values the page lists."""
    text: str = ""
    """What no rule's interpretation or spec docstring says yet; ``""`` when the rules and names say it all."""

    @field_validator("rules")
    @classmethod
    def _known_rules(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for rule_id in value:
            load_catalog().rule(rule_id)  # ConfigurationError is a ValueError: pydantic reports its message.
        return value

    @field_validator("text")
    @classmethod
    def _one_paragraph(cls, value: str) -> str:
        return " ".join(value.split())


class Assumptions(BaseModel):
    """Every topic, in page order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    topics: tuple[Topic, ...] = Field(alias="topic")
    """The topics."""


@cache
def load_assumptions() -> Assumptions:
    """``assumptions.toml``, parsed and validated once per process (names are checked where they are resolved)."""
    raw = tomllib.loads(files(__package__).joinpath("assumptions.toml").read_text(encoding="utf-8"))
    return Assumptions.model_validate(raw)
