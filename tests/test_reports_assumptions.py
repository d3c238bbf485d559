"""The page of what toolproof assumes beyond the ADR: generated from spec/, checked in as docs/assumptions.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from toolproof._cli import app
from toolproof.reports import render_assumptions
from toolproof.spec import Assumptions, ConfigurationError, EventKind, Metric, Topic, load_assumptions, load_catalog

PAGE = Path(__file__).resolve().parents[1] / "docs" / "assumptions.md"


def test_the_checked_in_page_is_the_generators_output() -> None:
    # On a failure: `toolproof rules --interpretations > docs/assumptions.md`, then read the diff.
    assert PAGE.read_text(encoding="utf-8") == render_assumptions()


def test_rules_interpretations_prints_the_page() -> None:
    result = CliRunner().invoke(app, ["rules", "--interpretations"])
    assert result.exit_code == 0
    assert result.stdout == render_assumptions()


def test_every_interpretation_in_the_catalog_is_on_the_page() -> None:
    page = render_assumptions()
    for rule in load_catalog().rules:
        if rule.interpretation:
            assert f"- **{rule.id}** ({rule.profile.value}): {rule.text}\n  Our reading: {rule.interpretation}" in page


@pytest.mark.parametrize(
    "heading",
    [
        "## The policy matrix",
        "## Control tools: suspension and the answer argument",
        "## Calls refused before step 6: their row and their events",
        "## Cancellation at the deadline: the signal first, then the task",
        "## Which clock stamps what",
        "## The idempotency key's inputs",
        "## Event and metric names",
        "## How a call with no arguments is labelled",
    ],
)
def test_each_assumption_an_implementer_needs_has_its_topic(heading: str) -> None:
    assert f"\n{heading}\n" in render_assumptions()


def test_names_are_listed_from_the_spec_with_their_meanings() -> None:
    page = render_assumptions()
    for member in (*EventKind, *Metric):
        assert f"| `{member.value}` | " in page
    assert "`spec.CONTROL_ANSWER_ARGUMENT` = `'answer'`" in page


def test_a_topic_naming_what_spec_does_not_export_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    bad = Assumptions.model_validate({"topic": [{"title": "t", "names": ["NoSuchThing"]}]})
    monkeypatch.setattr("toolproof.reports._assumptions.load_assumptions", lambda: bad)
    with pytest.raises(
        ConfigurationError,
        match=r"^spec/assumptions\.toml names 'NoSuchThing', which toolproof\.spec does not export: name an exported value$",
    ):
        render_assumptions()


def test_a_topic_quoting_an_unknown_rule_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"unknown rule id 'D99\.1'"):
        Topic(title="t", rules=("D99.1",))
    assert load_assumptions().topics


def test_the_readme_writes_no_rule_count_by_hand() -> None:
    # The catalog grows; a count in prose goes stale (it once said 100). Generate it or leave it out.
    readme = (PAGE.parents[1] / "README.md").read_text(encoding="utf-8")
    assert not re.findall(r"\b\d+ (?:atomic |pipeline |catalog )?rules\b", readme)
