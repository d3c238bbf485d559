"""What the model says an observable may be: a set of allowed values (or a test), and the rules that decide it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Problems = list[tuple[str, str]]
"""(rule id, what is wrong) pairs; empty when an observation is allowed."""


@dataclass(frozen=True)
class Expect:
    """One observable: what it is, which values the ADR allows, and the rules that say so.

    ``allowed`` is a set of values; when it is None, ``test`` decides (it returns the problems it sees).
    """

    what: str
    rules: tuple[str, ...]
    allowed: frozenset[Any] | None = None
    test: Callable[[Any], Problems] | None = None

    def problems(self, observed: Any) -> Problems:
        """Why ``observed`` is not allowed, rule by rule; empty when it is."""
        if self.allowed is not None:
            if observed in self.allowed:
                return []
            shown = " or ".join(sorted(repr(v) for v in self.allowed))
            return [
                (rule, f"{self.what}: model allowed {shown}, implementation gave {observed!r}") for rule in self.rules
            ]
        assert self.test is not None
        return [(rule, f"{self.what}: {text}") for rule, text in self.test(observed)]


def exactly(what: str, rules: tuple[str, ...], *values: Any) -> Expect:
    """An observable with a fixed set of allowed values."""
    return Expect(what, rules, frozenset(values))
