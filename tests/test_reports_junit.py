"""toolproof.reports: junit.xml, parsed back with xml.etree."""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from toolproof.reports import RunInfo, render_junit, write_run
from toolproof.spec import ResultRow, Verdict

FAILURE = "D13.4: the remote error text reached message: '\x1b[31m<boom> & co'\nreproduction:\n  submit step=1"


def info() -> RunInfo:
    return RunInfo(
        run_id="run-1",
        implementations=["ref", "witness"],
        selected_rules=["D13.1", "D13.4", "D13.5", "D7.1", "D1.1"],
        started_at="2025-03-01T11:00:00+01:00",
        toolproof_version="0.1.0",
        profiles={"ref": ["core", "mcp"], "witness": ["core"]},
    )


def row(name: str, rule: str, scenario: str, verdict: Verdict, evidence: str = "", seconds: float = 0.5) -> ResultRow:
    return ResultRow(
        run_id="run-1",
        implementation=name,
        rule_id=rule,
        scenario=scenario,
        verdict=verdict,
        duration_s=seconds,
        evidence=evidence,
    )


SHARED = "test_d13.py::test_shared"
ROWS = [
    row("ref", "D13.1", SHARED, Verdict.PASS, seconds=1.25),
    row("ref", "D13.4", SHARED, Verdict.PASS, seconds=1.25),
    row("ref", "D13.5", "test_d13.py::test_row", Verdict.XFAIL, "known: see issue 4"),
    row("ref", "D7.1", "test_d07.py::test_stdio", Verdict.PASS),
    row("witness", "D13.1", SHARED, Verdict.ERROR, "not judged: the scenario stopped when D13.4 failed", 2.0),
    row("witness", "D13.4", SHARED, Verdict.FAIL, FAILURE, 2.0),
    row("witness", "D13.5", "test_d13.py::test_row", Verdict.ERROR, "Traceback (most recent call last):\n  boom"),
    row("witness", "D7.1", "test_d07.py::test_stdio", Verdict.NOT_CLAIMED),
]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> ET.Element:
    out = tmp_path_factory.mktemp("junit")
    write_run(out, info(), ROWS)
    return ET.parse(out / "junit.xml").getroot()


def case(root: ET.Element, suite: str, name: str) -> ET.Element:
    found = root.find(f"testsuite[@name='{suite}']/testcase[@name='{name}']")
    assert found is not None
    return found


def test_one_suite_per_implementation_and_one_case_per_scenario(root: ET.Element) -> None:
    assert root.tag == "testsuites"
    assert root.attrib == {
        "name": "toolproof run run-1",
        "tests": "6",
        "failures": "1",
        "errors": "1",
        "skipped": "2",
        "time": "5.250",
    }
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["ref", "witness"]
    assert [(c.get("classname"), c.get("name"), c.get("time")) for c in suites[0].iter("testcase")] == [
        ("ref", "test_d07.py::test_stdio", "0.500"),
        ("ref", SHARED, "1.250"),
        ("ref", "test_d13.py::test_row", "0.500"),
    ]
    assert suites[1].attrib == {
        "name": "witness",
        "tests": "3",
        "failures": "1",
        "errors": "1",
        "skipped": "1",
        "time": "3.000",
        "timestamp": "2025-03-01T10:00:00",
    }


def test_a_case_lists_the_rules_it_judged_as_properties(root: ET.Element) -> None:
    shared = case(root, "ref", SHARED)
    assert [(p.get("name"), p.get("value")) for p in shared.iter("property")] == [("rule", "D13.1"), ("rule", "D13.4")]
    assert list(shared) == [shared.find("properties")]  # A pass has no outcome element.


def test_a_failing_scenario_carries_only_the_failing_rules_evidence(root: ET.Element) -> None:
    shared = case(root, "witness", SHARED)
    assert [child.tag for child in shared] == ["properties", "failure"]
    failure = shared.find("failure")
    assert failure is not None
    assert failure.attrib == {
        "message": "D13.4: the remote error text reached message: '\\x1b[31m<boom> & co'",
        "type": "fail",
    }
    assert failure.text == FAILURE.replace("\x1b", "\\x1b")


def test_an_erroring_scenario_carries_an_error_with_its_evidence(root: ET.Element) -> None:
    error = case(root, "witness", "test_d13.py::test_row").find("error")
    assert error is not None
    assert error.attrib == {"message": "Traceback (most recent call last):", "type": "error"}
    assert error.text == "Traceback (most recent call last):\n  boom"


def test_xfail_and_not_claimed_are_skipped_with_a_message(root: ET.Element) -> None:
    xfail = case(root, "ref", "test_d13.py::test_row").find("skipped")
    assert xfail is not None
    assert xfail.attrib == {"message": "xfail: expected failure: known: see issue 4", "type": "xfail"}
    unclaimed = case(root, "witness", "test_d07.py::test_stdio").find("skipped")
    assert unclaimed is not None
    assert unclaimed.attrib == {"message": "not-claimed: witness does not claim the mcp profile", "type": "not-claimed"}


def test_rules_no_scenario_judged_are_suite_properties_not_cases(root: ET.Element) -> None:
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    properties = {
        name: {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
        for name, suite in suites.items()
    }
    assert properties["ref"] == {
        "run_id": "run-1",
        "toolproof_version": "0.1.0",
        "profiles": "core mcp",
        "not-covered": "D1.1",
        "not-claimed": "",
        "review-only": "",
    }
    assert properties["witness"]["not-covered"] == "D1.1"
    names = {c.get("name") for c in root.iter("testcase")}
    assert "" not in names


def test_unclaimed_rules_without_scenarios_are_listed_as_not_claimed() -> None:
    rows = [row("witness", "D13.1", "t.py::t", Verdict.PASS)]
    suite = ET.fromstring(render_junit(info(), rows)).find("testsuite[@name='witness']")
    assert suite is not None
    properties = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    assert (properties["not-covered"], properties["not-claimed"]) == ("D1.1 D13.4 D13.5", "D7.1")


def test_junit_is_independent_of_row_order(tmp_path: Path) -> None:
    shuffled = list(ROWS)
    random.Random(9).shuffle(shuffled)
    assert render_junit(info(), ROWS) == render_junit(info(), shuffled)


def test_a_run_without_scenarios_is_an_empty_valid_document() -> None:
    text = render_junit(info(), [])
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites ')
    root = ET.fromstring(text)
    assert root.get("tests") == "0"
    assert [s.get("tests") for s in root.findall("testsuite")] == ["0", "0"]
