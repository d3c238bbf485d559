"""How far the exploring scenarios of decision 4 go: named profiles chosen by one environment variable.

``TOOLPROOF_HYPOTHESIS_PROFILE`` names the profile (default ``ci``):

- ``dev``: a quick look, e.g. the harness's own tests running nested suites: a failing sequence is reported
  as found, not shrunk (the examples are derandomized, so the verdict is the one shrinking would give; only
  the evidence is longer);
- ``ci``: the figures a conformance run has always used: 200 state-machine examples, 200 lease
  races per store (a lease mutant needed 200 races to be caught: never lower this), and 20 generated
  workloads per cell of the model judge;
- ``thorough``: the long exploration (``nox -s stateful``).

Each profile is also registered with hypothesis (``toolproof-<name>``), carrying the state
machine's example count; a scenario takes it as the parent of its own settings. It is not
loaded as hypothesis's default: a run may happen inside another pytest session (the harness's
own tests), whose hypothesis defaults it must leave alone. The lease races are not hypothesis
examples, so their count lives beside it in ``Exploration``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import hypothesis

from toolproof.spec import ConfigurationError

PROFILE_VARIABLE = "TOOLPROOF_HYPOTHESIS_PROFILE"
"""The one environment variable that chooses the profile."""
DEFAULT_PROFILE = "ci"


@dataclass(frozen=True)
class Exploration:
    """One profile: how many state-machine examples and lease races the scenarios run."""

    name: str
    """``dev``, ``ci`` or ``thorough``."""
    stateful_examples: int
    """Random crash/recover/approve/replay sequences (D4.6, D4.7)."""
    races: int
    """Races of two workers for one expired lease, per store (D4.9)."""
    model_examples: int = 12
    """Generated workloads each cell of the model judge (scenarios/test_model.py) runs."""
    shrink: bool = True
    """Whether a failing state-machine sequence is shrunk to a smallest one before it is reported."""

    @property
    def hypothesis_profile(self) -> str:
        """The name this profile is registered under with hypothesis."""
        return f"toolproof-{self.name}"

    def hypothesis_settings(self) -> hypothesis.settings:
        """The registered hypothesis profile, for a scenario to take as its settings' parent."""
        return hypothesis.settings.get_profile(self.hypothesis_profile)


PROFILES = {
    profile.name: profile
    for profile in (
        Exploration("dev", stateful_examples=10, races=10, model_examples=5, shrink=False),
        Exploration("ci", stateful_examples=200, races=200, model_examples=12),
        Exploration("thorough", stateful_examples=5000, races=1000, model_examples=2000),
    )
}

# No example database: a conformance run leaves nothing but its report in the folder it runs from (hypothesis
# would keep a .hypothesis/ there); a failing example is in the failure's evidence and its rerun command.
# Without shrinking, hypothesis still replays the failing sequence it found, and reports it.
_FOUND_AS_IS = (hypothesis.Phase.explicit, hypothesis.Phase.reuse, hypothesis.Phase.generate)
for _profile in PROFILES.values():
    hypothesis.settings.register_profile(
        _profile.hypothesis_profile,
        max_examples=_profile.stateful_examples,
        database=None,
        phases=tuple(hypothesis.Phase) if _profile.shrink else _FOUND_AS_IS,
    )


class ExplorationError(ConfigurationError):
    """``TOOLPROOF_HYPOTHESIS_PROFILE`` names no profile; the message names the valid ones."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.valid = tuple(sorted(PROFILES))
        super().__init__(f"{PROFILE_VARIABLE}={name!r} names no profile; choose one of {', '.join(self.valid)}")


def selected_exploration() -> Exploration:
    """The profile ``TOOLPROOF_HYPOTHESIS_PROFILE`` names (``ci`` when unset or empty).

    Raises:
        ExplorationError: the variable names no profile.
    """
    name = os.environ.get(PROFILE_VARIABLE, "").strip() or DEFAULT_PROFILE
    if name not in PROFILES:
        raise ExplorationError(name)
    return PROFILES[name]
