"""The exploration profiles: one environment variable names dev, ci or thorough; anything else is refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import hypothesis
import pytest

from toolproof.scenarios import PROFILE_VARIABLE, PROFILES, ExplorationError, selected_exploration

LEASE_RACES_THAT_CAUGHT_A_MUTANT = 200


def test_ci_is_the_default_and_keeps_todays_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PROFILE_VARIABLE, raising=False)
    chosen = selected_exploration()
    assert chosen.name == "ci"
    assert chosen.stateful_examples == 200
    assert chosen.races >= LEASE_RACES_THAT_CAUGHT_A_MUTANT
    monkeypatch.setenv(PROFILE_VARIABLE, "")
    assert selected_exploration() is chosen


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_a_named_profile_is_chosen_and_registered_with_hypothesis(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROFILE_VARIABLE, name)
    chosen = selected_exploration()
    assert chosen.name == name
    assert chosen.hypothesis_settings().max_examples == chosen.stateful_examples
    assert hypothesis.settings.get_profile(chosen.hypothesis_profile) == chosen.hypothesis_settings()


def test_profiles_grow_from_dev_through_ci_to_thorough() -> None:
    dev, ci, thorough = PROFILES["dev"], PROFILES["ci"], PROFILES["thorough"]
    assert dev.stateful_examples < ci.stateful_examples < thorough.stateful_examples
    assert dev.races < ci.races < thorough.races


def test_only_dev_reports_a_failing_sequence_unshrunk() -> None:
    """dev (the harness's nested runs) skips shrinking; every profile a conformance run uses keeps it."""
    phases = {name: profile.hypothesis_settings().phases for name, profile in PROFILES.items()}
    assert hypothesis.Phase.shrink not in phases["dev"]
    assert hypothesis.Phase.generate in phases["dev"]
    assert all(hypothesis.Phase.shrink in phases[name] for name in ("ci", "thorough"))


def test_choosing_a_profile_leaves_hypothesis_default_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    before = hypothesis.settings.default
    monkeypatch.setenv(PROFILE_VARIABLE, "thorough")
    selected_exploration().hypothesis_settings()
    assert hypothesis.settings.default is before


def test_an_unknown_profile_is_a_typed_error_naming_the_valid_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROFILE_VARIABLE, "quick")
    with pytest.raises(ExplorationError) as caught:
        selected_exploration()
    assert caught.value.valid == ("ci", "dev", "thorough")
    assert str(caught.value) == "TOOLPROOF_HYPOTHESIS_PROFILE='quick' names no profile; choose one of ci, dev, thorough"


def test_toolproof_run_refuses_an_unknown_profile_in_one_line_before_anything_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "toolproof", "run", "--impl", "reference", "--rules", "D4", "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, PROFILE_VARIABLE: "quick"},
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "toolproof: error: TOOLPROOF_HYPOTHESIS_PROFILE='quick' names no profile; choose one of ci, dev, thorough"
    )
    assert not out.exists()
