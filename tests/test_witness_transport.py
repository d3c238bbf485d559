"""Every witness over HTTP too: served behind the driver, each is rejected by the rules it breaks.

``tests/test_witnesses.py`` proves each witness is rejected in-process on the rules it
breaks. Here the same witnesses are served behind the driver protocol, and each of those
rules must reject it over HTTP as well — or read ``not-covered`` over HTTP with the reason
the catalog gives (``Rule.over_http``), never ``pass``.

Each witness gets a run of its own rules only, which stops as soon as every one of them has
rejected it. Witnesses of decisions with a crash matrix are served by a supervised driver
process, which their SIGKILL cells kill; every other driver runs in a thread of this
process, on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn
from helpers import free_port, wait_for_driver
from helpers.witness_matrix import SOLO_DECISIONS

from toolproof.driver import Driver, DriverOptions
from toolproof.reference.witnesses import WITNESSES
from toolproof.reports import rule_verdicts
from toolproof.scenarios import PLUGIN, ResultCollector
from toolproof.spec import Verdict, load_catalog, load_implementation

pytestmark = [pytest.mark.slow, pytest.mark.transport_matrix]


@contextmanager
def _in_thread(ref: str, root: Path) -> Iterator[str]:
    """``ref`` behind a driver in a thread of this process (no crash plan may kill it: it is not supervised).

    It starts the fakes' stdio servers, as ``serve-reference`` does (their command is this Python): without that,
    every stdio-only scenario (D7.4's env and cwd) errors over HTTP instead of judging the witness.
    """
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    options = DriverOptions(root=root, stdio_commands=frozenset({sys.executable}))
    driver = Driver(load_implementation(ref), options, url)
    server = uvicorn.Server(uvicorn.Config(driver.app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for_driver(url)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=60)


@contextmanager
def _supervised(ref: str, root: Path) -> Iterator[str]:
    """``ref`` behind a supervised driver process, restarted after each SIGKILL its crash plans deal it."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "toolproof", "serve-reference", "--impl", ref, "--port", str(port)]
    process = subprocess.Popen([*command, "--root", str(root)], stderr=subprocess.DEVNULL)
    try:
        wait_for_driver(url)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


class _StopWhenRejected:
    """Ends the run as soon as every rule the witness breaks has a failing scenario (its verdict is then fail)."""

    def __init__(self, collector: ResultCollector, rules: frozenset[str]) -> None:
        self.collector = collector
        self.rules = rules
        self.session: pytest.Session | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Cheap scenarios first, so the run usually stops before a crash matrix's SIGKILL cells or a state machine."""
        items.sort(key=_cost)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        failed = {row.rule_id for row in self.collector.results if row.verdict is Verdict.FAIL}
        if self.session is not None and self.rules <= failed:
            self.session.shouldstop = "every rule the witness breaks rejected it"


def _cost(item: pytest.Item) -> int:
    if "random" in item.name or "stateful" in item.nodeid:
        return 3
    if "sigkill" in item.name or "race" in item.name:
        return 2
    return 1 if "crash" in item.name else 0


def _judge(name: str, out: Path) -> dict[str, tuple[Verdict, str]]:
    """Serve the witness and run the scenarios of the rules it breaks over HTTP: rule -> (verdict, evidence)."""
    rules = WITNESSES[name].breaks
    root = Path(tempfile.gettempdir()).resolve()  # The nested run's stores lie under pytest's base temp.
    serve = _supervised if _solo(name) else _in_thread
    collector = ResultCollector()
    with serve(f"toolproof.reference.witnesses:{name}", root) as url:
        args = ["--pyargs", "toolproof.scenarios", "-p", PLUGIN, "-p", "no:terminal", "-p", "no:cacheprovider"]
        args += ["-c", os.devnull, "--rootdir", str(out), "-W", "ignore::DeprecationWarning"]
        args += ["--toolproof-impl", url, "--toolproof-rules", WITNESSES[name].selection]
        code = pytest.main(args, plugins=[collector, _StopWhenRejected(collector, frozenset(rules))])
    assert code in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.INTERRUPTED), code
    assert not collector.collection_errors, collector.collection_errors
    verdicts = rule_verdicts(collector.results, rules)
    reasons = {r.rule_id: r.evidence for r in collector.results if r.verdict is Verdict.NOT_COVERED}
    print(f"  {name}: {', '.join(f'{rule} {verdicts[rule].value}' for rule in rules)}", flush=True)
    return {rule: (verdicts[rule], reasons.get(rule, "")) for rule in rules}


def _solo(name: str) -> bool:
    """A witness of a decision with a crash matrix: its SIGKILL cells need a driver a supervisor restarts."""
    witness = WITNESSES[name]
    return any(rule.split(".")[0] in SOLO_DECISIONS for rule in (*witness.breaks, *witness.through))


@pytest.fixture(scope="module")
def over_http(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, tuple[Verdict, str]]]:
    """Witness -> rule it breaks -> its verdict over HTTP and, when not covered, the stated reason."""
    started = time.monotonic()
    # A verdict is all this needs: the tests' exploration profile (dev, tests/conftest.py) reports a failing
    # state-machine sequence as found, without minutes of shrinking it over HTTP.
    verdicts = {name: _judge(name, tmp_path_factory.mktemp(f"http-{name}")) for name in WITNESSES}
    only_in_process = sorted(rule.id for rule in load_catalog().rules if rule.over_http)
    not_covered = {r for judged in verdicts.values() for r, (v, _) in judged.items() if v is Verdict.NOT_COVERED}
    summary = {
        "seconds": round(time.monotonic() - started, 1),
        "witnesses": len(verdicts),
        "rules_judged_only_in_process": len(only_in_process),
        "only_in_process": only_in_process,
        "not_covered_over_http": sorted(not_covered),
    }
    print(f"witness transport meta-test: {json.dumps(summary)}")
    (tmp_path_factory.getbasetemp() / "witness-transport.json").write_text(json.dumps(summary, indent=2))
    return verdicts


KNOWN_HTTP_GAPS: dict[str, str] = {
    "context_keeps_run_call": "the driver describes a context's public members, and a callable by its kind and type "
    "name only: a private slot holding the pipeline's bound run_call never crosses the wire, so only the in-process "
    "walk (through bound methods and closures) sees it",
}
"""Witnesses the suite still lets through over HTTP, with why: strict, so closing a gap fails here until removed."""


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=KNOWN_HTTP_GAPS[name]))
        if name in KNOWN_HTTP_GAPS
        else name
        for name in WITNESSES
    ],
)
def test_witness_is_rejected_over_http_by_the_rules_it_breaks_in_process(
    name: str, over_http: dict[str, dict[str, tuple[Verdict, str]]]
) -> None:
    catalog = load_catalog()
    wrong = {}
    for rule, (verdict, evidence) in over_http[name].items():
        if verdict is Verdict.FAIL:
            continue
        reason = catalog.rule(rule).over_http
        if verdict is Verdict.NOT_COVERED and reason and reason in evidence:
            continue
        wrong[rule] = (verdict.value, evidence[:200])
    assert wrong == {}
