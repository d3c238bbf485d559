"""The mutation gate: cosmic-ray's mutants of every module of the reference, judged by the conformance scenarios.

``python mutation/run.py [--sample N | --per-module N] [--seed S] [--modules _keys,_store] [--jobs J]
[--database-url URL]`` (or ``nox -s mutation --``). The modules are every ``reference/*.py`` (``CORE``; the
witnesses aside); ``--per-module N`` draws N compiling mutants of each, so a small module is judged as surely as a
large one. The judges are every cell of ``scenarios/``, the model's generated workloads (``test_model.py``) among
them. With ``--database-url`` (default ``$TOOLPROOF_DATABASE_URL``) every run, the baseline and
each mutant's, gets the PostgreSQL URL, so the cells that need it (the sigkill-postgres crash cells, the PostgreSQL
lease races) run and judge the mutants too; without it they do not run.

How one mutant is judged, without a ``toolproof run`` (and its start-up) per mutant:

1. This process imports pytest, the harness, every scenario module and the third-party packages the reference
   imports, but never ``toolproof.reference`` itself (its sqlmodel tables may be defined once per process).
2. The baseline: a forked child runs every scenario under coverage, one coverage context per scenario cell.
   It must pass; it gives each cell's duration and the reference lines each cell executes. It is kept in
   ``mutation/.cache/`` while the sources it was measured on are unchanged.
3. Per mutant: cosmic-ray's operator rewrites the module's source; a forked child (its own process group)
   installs ``toolproof.driver.install_mutant`` for that module, sets ``TOOLPROOF_MUTANT`` so the processes the
   scenarios start (the SIGKILL cells' worker zygote, a served driver) import the same mutant, and runs
   ``pytest.main`` on the cells that executed the mutated lines in the baseline, cheapest first, stopping at
   the first failure. A SIGKILL cell's reference runs in the zygote, out of coverage's sight, so it is chosen
   when any cell of its scenario function executed the lines. Lines run only at import select every cell that
   executed the module, or every cell when none ran any of its lines after the import (``_steps``).
4. Outcomes: ``killed`` (a cell failed, errored or was skipped), ``timeout`` (past ``--timeout-factor`` times
   the baseline duration of its cells, plus start-up), ``crashed`` (the child died), all three counting as
   killed; ``survived`` (every chosen cell passed), ``uncovered`` (no scenario executes the lines; counted as
   survived); ``incompetent`` (the mutant does not compile; left out of the score).

Each outcome is appended to ``mutation/results.jsonl`` as it is known; ``mutation/score.md`` is written at the
end (``--score-only`` writes it again from the results). Equivalent mutants are read from
``mutation/survivors.toml`` and left out of the score's denominator.
"""

from __future__ import annotations

import argparse
import ast
import atexit
import contextlib
import difflib
import hashlib
import importlib
import json
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
import tomllib
import traceback
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import cosmic_ray.plugins  # type: ignore[import-untyped]
import pytest
from cosmic_ray.ast import ast_nodes, get_ast  # type: ignore[import-untyped]
from cosmic_ray.mutating import mutate_code  # type: ignore[import-untyped]

from toolproof.driver import MUTANT_VARIABLE, install_mutant_from_environment

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "mutation"
REFERENCE = ROOT / "reference"
SCENARIOS = ROOT / "scenarios"
PACKAGE = "toolproof.reference"
PLUGIN = "toolproof.scenarios._plugin"
CORE = tuple(sorted(path.stem for path in REFERENCE.glob("*.py") if path.stem != "__init__"))
"""Every module of the reference (``reference/*.py``; the witnesses, in ``reference/witnesses/``, and the package's
``__init__`` aside): the pipeline and its step table, the steps' modules, the store and its tables, keys, policy,
registry, context, excerpt, bridge, faults, instance, and the MCP adapter's four layers."""
HASHED = ("reference", "scenarios", "fakes", "spec", "toolproof/driver")
"""The folders whose sources the cached baseline depends on."""
STARTUP_S = 45.0
"""Allowance for a child's start-up (pytest, the reference's import, collection) in its timeout."""
DATABASE_URL: str | None = None
"""The PostgreSQL URL every run of this process (baseline and mutants, forked children) passes to the scenarios;
set once by ``main`` from ``--database-url``."""
KILLED = ("killed", "timeout", "crashed")
SURVIVED = ("survived", "uncovered")


@dataclass(frozen=True)
class Mutant:
    """One application of one cosmic-ray operator to one module of the reference."""

    module: str
    """The module's name in ``reference/`` (``_keys``)."""
    operator: str
    """cosmic-ray's operator name (``core/ReplaceComparisonOperator_Eq_NotEq``)."""
    occurrence: int
    """Which of the operator's positions in the module (cosmic-ray's occurrence)."""
    line: int
    column: int
    end_line: int

    @property
    def id(self) -> str:
        return f"{self.module}:{self.operator}:{self.occurrence}"

    @property
    def qualified(self) -> str:
        return f"{PACKAGE}.{self.module}"

    @property
    def path(self) -> Path:
        return REFERENCE / f"{self.module}.py"

    def source(self) -> str | None:
        """The mutated source; None when the operator found nothing to mutate there."""
        operator = cosmic_ray.plugins.get_operator(self.operator)()
        mutated: str | None = mutate_code(self.path.read_text(encoding="utf-8"), operator, self.occurrence)
        return mutated

    def diff(self, mutated: str) -> str:
        original = self.path.read_text(encoding="utf-8").splitlines()
        lines = difflib.unified_diff(original, mutated.splitlines(), lineterm="", n=0)
        return "\n".join(line for line in lines if line[:1] in "+-" and line[:3] not in ("+++", "---"))


def operators() -> list[str]:
    """Every cosmic-ray operator that takes no arguments."""
    return [
        name for name in cosmic_ray.plugins.operator_names() if not cosmic_ray.plugins.get_operator(name).arguments()
    ]


def annotation_spans(tree: Any) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where a function's annotations are (its parameters', its return's, its local variables'): never evaluated
    under ``from __future__ import annotations``, so a mutant there is equivalent by construction. Annotations of
    classes and modules stay in: pydantic and sqlmodel evaluate them."""
    spans = []
    for node in ast_nodes(tree):
        if node.type in ("param", "funcdef") and node.annotation is not None:
            spans.append((node.annotation.start_pos, node.annotation.end_pos))
        elif node.type == "annassign" and node.search_ancestor("funcdef") is not None:
            annotation = node.children[1]
            spans.append((annotation.start_pos, annotation.end_pos))
    return spans


def enumerate_mutants(modules: Sequence[str]) -> list[Mutant]:
    """Every mutant of ``modules`` as cosmic-ray's ``init`` enumerates them, less those in function annotations."""
    found: list[Mutant] = []
    names = operators()
    for module in modules:
        tree = get_ast((REFERENCE / f"{module}.py").read_text(encoding="utf-8"))
        nodes = list(ast_nodes(tree))
        spans = annotation_spans(tree)
        for name in names:
            operator = cosmic_ray.plugins.get_operator(name)()
            positions = ((start, end) for node in nodes for start, end in operator.mutation_positions(node))
            for occurrence, (start, end) in enumerate(positions):
                if not any(low <= start < high for low, high in spans):
                    found.append(Mutant(module, name, occurrence, start[0], start[1], end[0]))
    return found


def competent(mutant: Mutant) -> bool:
    """Whether cosmic-ray's rewrite of ``mutant`` is Python (a ``*`` marker of keyword-only parameters is not)."""
    source = mutant.source()
    if source is None:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(source, str(mutant.path), "exec")
        except SyntaxError:
            return False
    return True


def draw(population: Sequence[Mutant], size: int, seed: int) -> list[Mutant]:
    """``size`` competent mutants: the population shuffled with ``seed``, the incompetent ones passed over."""
    order = list(population)
    random.Random(seed).shuffle(order)
    chosen: list[Mutant] = []
    for mutant in order:
        if len(chosen) == size:
            break
        if competent(mutant):
            chosen.append(mutant)
    return chosen


# --- the parent: everything imported once ---------------------------------------------------------------------


def warm_imports() -> None:
    """Import what a child needs, except the reference itself: the scenarios and the reference's third parties."""
    importlib.import_module("toolproof.scenarios")
    importlib.import_module(PLUGIN)
    for path in sorted(SCENARIOS.glob("test_*.py")):
        importlib.import_module(f"toolproof.scenarios.{path.stem}")
    third_party: set[str] = set()
    for path in sorted(REFERENCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                third_party.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                third_party.add(node.module)
    for name in sorted(third_party):
        if not name.startswith("toolproof"):
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
    imported = [name for name in sys.modules if name == PACKAGE or name.startswith(PACKAGE + ".")]
    if imported:
        raise SystemExit(f"mutation: {imported[0]} was imported by the harness; a mutant could not replace it")


def pytest_args(nodeids: Sequence[str], basetemp: Path, *, first_failure: bool) -> list[str]:
    """The in-process pytest command line over ``nodeids`` (relative to the scenarios folder)."""
    args = [str(SCENARIOS / nodeid) for nodeid in nodeids]
    args += ["-p", PLUGIN, "-p", "no:cacheprovider", "-p", "no:terminal", "-c", os.devnull]
    args += ["--rootdir", str(SCENARIOS), "-W", "ignore::DeprecationWarning", "--basetemp", str(basetemp)]
    args += ["--toolproof-impl", "reference"]
    if DATABASE_URL:
        args += ["--toolproof-database-url", DATABASE_URL]
    return [*args, "-x"] if first_failure else args


class Recorder:
    """A pytest plugin: runs the chosen cells in the given order and records what did not pass."""

    def __init__(self, order: Sequence[str] = (), *, stop_on_skip: bool = False) -> None:
        self.rank = {nodeid: i for i, nodeid in enumerate(order)}
        self.stop_on_skip = stop_on_skip
        self.durations: dict[str, float] = {}
        self.outcomes: dict[str, str] = {}
        self.failures: list[tuple[str, str]] = []
        self.session: pytest.Session | None = None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, items: list[pytest.Item]) -> None:
        self.session = session
        if self.rank:
            items.sort(key=lambda item: self.rank.get(item.nodeid, len(self.rank)))

    @pytest.hookimpl(wrapper=True, tryfirst=True)  # Outermost: the plugin has stashed what it saw by then.
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
        # A check the harness makes on everything a scenario observes (a rule's `everywhere`) fails a rule's verdict
        # without failing the cell; here it fails the cell, so it kills the mutant as any failed check does.
        report = yield
        seen = item.stash.get(importlib.import_module(PLUGIN).EVERYWHERE, {}) if report.when == "call" else {}
        if seen and report.passed:
            report.outcome = "failed"
            report.longrepr = "; ".join(f"{rule} (everywhere): {text}" for rule, text in sorted(seen.items()))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.durations[report.nodeid] = self.durations.get(report.nodeid, 0.0) + report.duration
        if report.failed or report.skipped:
            self.outcomes[report.nodeid] = report.outcome
            text = report.longreprtext.strip().splitlines()
            self.failures.append((report.nodeid, f"{report.when} {report.outcome}: {text[-1] if text else ''}"))
            if report.skipped and self.stop_on_skip and self.session is not None:
                self.session.shouldstop = f"{report.nodeid} skipped"
        elif report.when == "call":
            self.outcomes.setdefault(report.nodeid, "passed")


def _in_child(work: Path, run: Any) -> int:
    """Fork; the child runs ``run(work)`` in its own process group and exits 0, or 3 with its traceback written."""
    pid = os.fork()
    if pid:
        return pid
    try:
        atexit._clear()  # The parent's exit hooks (its temporary folders' finalizers) are not the child's.
        os.setpgid(0, 0)
        os.chdir(work)  # hypothesis's example database and any stray file land here.
        run(work)
        atexit._run_exitfuncs()  # The worker zygotes the scenarios started are ended by their atexit hook.
    except BaseException:
        with contextlib.suppress(BaseException):
            (work / "error.txt").write_text(traceback.format_exc(), encoding="utf-8")
        os._exit(3)
    os._exit(0)


def _end_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _wait(pid: int, deadline: float) -> int | None:
    """The child's wait status, or None when the deadline passed first (the group is then killed)."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            _end_group(pid)  # Whatever it started and left behind.
            return status
        if time.monotonic() > deadline:
            _end_group(pid)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.1)


# --- the baseline ---------------------------------------------------------------------------------------------


@dataclass
class Baseline:
    """The unmutated run: every cell's outcome and duration, and which cells executed which reference lines."""

    key: str
    wall_s: float
    durations: dict[str, float]
    outcomes: dict[str, str]
    lines: dict[str, dict[int, list[str]]]
    """Module (``_keys``) → line → the cells that executed it; ``""`` stands for the import."""
    failures: list[tuple[str, str]] = field(default_factory=list)

    def cells_for(self, mutant: Mutant, *, every: bool, per_function: int = 3) -> tuple[list[str], str]:
        """The cells to run against ``mutant``, cheapest first, and how they were chosen.

        ``every``: every cell that executed the lines; else, per scenario function, the cheapest cells that
        show a parameter value not shown yet, ``per_function`` at most (each-choice, capped).
        """
        executed = self.lines.get(mutant.module, {})
        span = range(mutant.line, mutant.end_line + 1)
        found = {cell for line in span for cell in executed.get(line, ())}
        how = "lines"
        if found == {""}:
            found = {cell for cells in executed.values() for cell in cells}
            how = "import"
            if found == {""}:
                # A module no cell runs a line of after its import (the step table, checked as it is built): the
                # import is every cell's, since the reference is imported once per process, before any cell.
                found = set(self.durations)
                how = "import only"
        found.discard("")
        functions = {cell.partition("[")[0] for cell in found}
        found |= {c for c in self.durations if "sigkill" in c and c.partition("[")[0] in functions}
        passing = [cell for cell in found if self.outcomes.get(cell) == "passed"]
        ordered = sorted(passing, key=lambda cell: (self.durations.get(cell, 0.0), cell))
        return (ordered, how) if every else (each_choice(ordered, per_function), f"{how}, each-choice")


def each_choice(cells: Sequence[str], per_function: int) -> list[str]:
    """Of ``cells`` (cheapest first), per scenario function the first cells that show a parameter value not shown
    yet, at most ``per_function`` of them."""
    seen: dict[str, set[str]] = {}
    kept: list[str] = []
    for cell in cells:
        function, _, params = cell.partition("[")
        values = {f"{i}={v}" for i, v in enumerate(params.rstrip("]").split("-"))}
        shown = seen.get(function)
        taken = sum(1 for k in kept if k.partition("[")[0] == function)
        if (shown is None or not values <= shown) and taken < per_function:
            seen[function] = (shown or set()) | values
            kept.append(cell)
    return kept


def source_key(profile: str) -> str:
    # The database URL decides which cells run, so a baseline measured without it is not one measured with it; so
    # does a subset of the cells.
    subset = os.environ.get("TOOLPROOF_MUTATION_BASELINE_CELLS", "")
    digest = hashlib.sha256(f"{profile}\0{DATABASE_URL or ''}\0{subset}".encode())
    for folder in HASHED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            digest.update(str(path.relative_to(ROOT)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _baseline_child(work: Path) -> None:
    import coverage

    cov = coverage.Coverage(data_file=None, include=[str(REFERENCE / "*.py")], config_file=False)
    recorder = Recorder()

    class Contexts:
        @pytest.hookimpl(wrapper=True)
        def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
            cov.switch_context(item.nodeid)
            try:
                return (yield)
            finally:
                cov.switch_context("")

    cov.start()
    chosen = os.environ.get("TOOLPROOF_MUTATION_BASELINE_CELLS", ".").split()  # A subset, to try the runner.
    code = pytest.main(pytest_args(chosen, work / "t", first_failure=False), plugins=[recorder, Contexts()])
    cov.stop()
    data = cov.get_data()
    lines: dict[str, dict[int, list[str]]] = {}
    for measured in data.measured_files():
        module = Path(measured).stem
        lines[module] = {n: sorted(set(cells)) for n, cells in data.contexts_by_lineno(measured).items()}
    found = {
        "code": int(code),
        "durations": recorder.durations,
        "outcomes": recorder.outcomes,
        "failures": recorder.failures,
        "lines": lines,
    }
    (work / "baseline.json").write_text(json.dumps(found), encoding="utf-8")


def run_baseline(profile: str, cache: Path) -> Baseline:
    """The cached baseline when its sources are unchanged, else a fresh one; exits with one line if it fails."""
    key = source_key(profile)
    if cache.exists():
        stored = json.loads(cache.read_text(encoding="utf-8"))
        if stored["key"] == key:
            stored["lines"] = {m: {int(n): c for n, c in ls.items()} for m, ls in stored["lines"].items()}
            return Baseline(**stored)
    print("mutation: baseline (every scenario, under coverage) ...", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="toolproof-mutation-") as tmp:
        work = Path(tmp)
        started = time.monotonic()
        pid = _in_child(work, _baseline_child)
        status = _wait(pid, time.monotonic() + 3600)
        wall = time.monotonic() - started
        result = work / "baseline.json"
        if status is None or not result.exists():
            error = (work / "error.txt").read_text() if (work / "error.txt").exists() else f"wait status {status}"
            raise SystemExit(f"mutation: the baseline run did not finish: {error.strip().splitlines()[-1]}")
        found = json.loads(result.read_text(encoding="utf-8"))
    not_passed = [cell for cell, outcome in found["outcomes"].items() if outcome != "passed"]
    if found["code"] != 0 or not_passed or not found["outcomes"]:
        first = found["failures"][0] if found["failures"] else ("", f"pytest exit code {found['code']}")
        raise SystemExit(f"mutation: the baseline (no mutant) does not pass: {first[0]} {first[1]}")
    baseline = Baseline(key, wall, found["durations"], found["outcomes"], found["lines"], found["failures"])
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(asdict(baseline)), encoding="utf-8")
    baseline.lines = {m: {int(n): c for n, c in ls.items()} for m, ls in baseline.lines.items()}
    return baseline


# --- one mutant -----------------------------------------------------------------------------------------------


def _mutant_child(mutant: Mutant, cells: Sequence[str]) -> Any:
    def run(work: Path) -> None:
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]
        os.environ[MUTANT_VARIABLE] = f"{mutant.qualified}={work / 'mutant.py'}"
        install_mutant_from_environment()
        recorder = Recorder(cells, stop_on_skip=True)
        code = pytest.main(pytest_args(cells, work / "t", first_failure=True), plugins=[recorder])
        ran = sum(1 for outcome in recorder.outcomes.values() if outcome == "passed")
        found = {"code": int(code), "failures": recorder.failures, "passed": ran}
        (work / "result.json").write_text(json.dumps(found), encoding="utf-8")

    return run


@dataclass
class Pending:
    """A mutant whose child runs."""

    record: dict[str, Any]
    pid: int
    work: Path
    started: float
    deadline: float


def start(
    mutant: Mutant, baseline: Baseline, factor: float, every: bool, per_function: int
) -> Pending | dict[str, Any]:
    """Fork the child that judges ``mutant``; the result record at once when there is nothing to run."""
    record: dict[str, Any] = {"id": mutant.id, **asdict(mutant)}
    mutated = mutant.source()
    if mutated is None:
        return record | {"outcome": "incompetent", "detail": "cosmic-ray applied no mutation", "diff": ""}
    record["diff"] = mutant.diff(mutated)
    try:
        compile(mutated, str(mutant.path), "exec")
    except SyntaxError as exc:
        return record | {"outcome": "incompetent", "detail": f"does not compile: {exc.msg}"}
    cells, how = baseline.cells_for(mutant, every=every, per_function=per_function)
    record |= {"chosen_by": how, "cells": len(cells)}
    if not cells:
        return record | {"outcome": "uncovered", "detail": "no scenario executes the mutated lines", "seconds": 0.0}
    budget = sum(baseline.durations.get(cell, 0.0) for cell in cells)
    timeout = factor * budget + STARTUP_S
    record |= {"baseline_s": round(budget, 2), "timeout_s": round(timeout, 1)}
    work = Path(tempfile.mkdtemp(prefix="toolproof-mutant-"))
    (work / "mutant.py").write_text(mutated, encoding="utf-8")
    started = time.monotonic()
    pid = _in_child(work, _mutant_child(mutant, cells))
    return Pending(record, pid, work, started, started + timeout)


def finish(pending: Pending, status: int | None) -> dict[str, Any]:
    """The record of a child that ended (``status``) or ran past its deadline (None)."""
    record, work = pending.record, pending.work
    record["seconds"] = round(time.monotonic() - pending.started, 2)
    try:
        result = work / "result.json"
        if status is None:
            return record | {"outcome": "timeout", "detail": f"no verdict within {record['timeout_s']:.0f} s"}
        if not result.exists():
            error = work / "error.txt"
            why = error.read_text().strip().splitlines()[-1] if error.exists() else f"wait status {status}"
            return record | {"outcome": "crashed", "detail": why}
        found = json.loads(result.read_text(encoding="utf-8"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    record["passed"] = found["passed"]
    if found["failures"]:
        cell, why = found["failures"][0]
        return record | {"outcome": "killed", "detail": f"{cell}: {why}"[:400]}
    if found["code"] != 0:
        return record | {"outcome": "killed", "detail": f"pytest exit code {found['code']} (the run could not start)"}
    return record | {"outcome": "survived", "detail": f"{found['passed']} cells passed"}


def judge_all(
    todo: Sequence[Mutant],
    baseline: Baseline,
    factor: float,
    jobs: int,
    results_path: Path,
    *,
    every: bool,
    per_function: int = 3,
) -> None:
    """Judge ``todo``, up to ``jobs`` children at once, forked from this one thread; append each record."""
    queue = list(reversed(todo))
    running: list[Pending] = []
    n = 0

    def record(result: dict[str, Any]) -> None:
        nonlocal n
        n += 1
        with results_path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(result) + "\n")
        print(
            f"[{n}/{len(todo)}] {result['id']} line {result['line']}: {result['outcome']}"
            f" ({result.get('seconds', 0):.1f} s, {result.get('cells', 0)} cells) {result.get('detail', '')[:120]}",
            file=sys.stderr,
            flush=True,
        )

    while queue or running:
        while queue and len(running) < max(jobs, 1):
            started = start(queue.pop(), baseline, factor, every, per_function)
            if isinstance(started, Pending):
                running.append(started)
            else:
                record(started)
        for pending in list(running):
            done, waited = os.waitpid(pending.pid, os.WNOHANG)
            status: int | None = waited
            if done:
                _end_group(pending.pid)  # Whatever it started and left behind.
            elif time.monotonic() > pending.deadline:
                _end_group(pending.pid)
                os.waitpid(pending.pid, 0)
                status = None
            else:
                continue
            running.remove(pending)
            record(finish(pending, status))
        time.sleep(0.1)


# --- the score ------------------------------------------------------------------------------------------------


def load_results(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return list({row["id"]: row for row in rows}.values())  # A confirmation replaces the first record.


def load_survivors(path: Path) -> dict[str, dict[str, Any]]:
    if not path.exists():
        return {}
    entries: list[dict[str, Any]] = tomllib.loads(path.read_text(encoding="utf-8")).get("survivor", [])
    return {entry["id"]: entry for entry in entries}


def _score(killed: int, survived: int) -> str:
    return f"{100 * killed / (killed + survived):.1f}%" if killed + survived else "—"


def write_score(results: Sequence[dict[str, Any]], survivors: dict[str, dict[str, Any]], out: Path, meta: str) -> str:
    """``score.md`` from the results; returns its one-line summary."""
    equivalent = {i for i, s in survivors.items() if s.get("classification") == "equivalent"}
    free = {i for i, s in survivors.items() if s.get("classification") == "not-constrained"}

    def counts(rows: Iterable[dict[str, Any]]) -> dict[str, int]:
        rows = list(rows)
        found = {name: sum(1 for r in rows if r["outcome"] == name) for name in (*KILLED, *SURVIVED, "incompetent")}
        found["equivalent"] = sum(1 for r in rows if r["outcome"] in SURVIVED and r["id"] in equivalent)
        found["uncovered_open"] = sum(1 for r in rows if r["outcome"] == "uncovered" and r["id"] not in equivalent)
        found["killed_all"] = sum(found[name] for name in KILLED)
        found["survived_all"] = sum(found[name] for name in SURVIVED) - found["equivalent"]
        found["not_constrained"] = sum(1 for r in rows if r["outcome"] in SURVIVED and r["id"] in free)
        return found

    total = counts(results)
    summary = (
        f"mutation score {_score(total['killed_all'], total['survived_all'])}: "
        f"{total['killed_all']} killed ({total['killed']} by a failing cell, {total['timeout']} timeout, "
        f"{total['crashed']} crashed), {total['survived_all']} survived ({total['uncovered_open']} of them uncovered), "
        f"{total['equivalent']} equivalent, {total['incompetent']} incompetent; {len(results)} mutants; "
        f"{_score(total['killed_all'], total['survived_all'] - total['not_constrained'])} with the "
        f"{total['not_constrained']} not-constrained survivors set apart"
    )
    timed = [r["seconds"] for r in results if r.get("seconds")]
    lines = ["# Mutation score of the reference", "", meta, "", f"**{summary}**", ""]
    lines += [
        "Score = killed ÷ (killed + survived); killed counts timeouts and crashed children, survived counts",
        "uncovered mutants (no scenario executes their lines); equivalent mutants (`survivors.toml`) and",
        "incompetent ones (cosmic-ray's rewrite does not compile) are left out. In the table below the survived",
        "and uncovered columns still count the equivalent ones. The last column sets the not-constrained",
        "survivors apart too (the ADR leaves their behaviour open; `survivors.toml` names the clause): killed ÷",
        "(killed + survived − equivalent − not-constrained).",
        "",
    ]
    if timed:
        lines += [
            f"Seconds per judged mutant (fork to verdict): median {statistics.median(timed):.1f}, "
            f"min {min(timed):.1f}, max {max(timed):.1f}, total {sum(timed) / 60:.1f} min over {len(timed)}.",
            "",
        ]
    lines += [
        "| module | mutants | killed | timeout | crashed | survived | uncovered | equivalent | not-constrained | score "
        "| score, not-constrained apart |"
    ]
    lines += ["|---|---|---|---|---|---|---|---|---|---|---|"]
    modules = sorted({r["module"] for r in results}, key=lambda m: CORE.index(m) if m in CORE else len(CORE))
    for module in modules:
        c = counts(r for r in results if r["module"] == module)
        rows = sum(1 for r in results if r["module"] == module)
        cells = [module, rows, c["killed"], c["timeout"], c["crashed"], c["survived"], c["uncovered"]]
        cells += [c["equivalent"], c["not_constrained"], _score(c["killed_all"], c["survived_all"])]
        cells += [_score(c["killed_all"], c["survived_all"] - c["not_constrained"])]
        lines.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    lines += ["", "## Survivors", ""]
    lines += ["Cells: how many passed against the mutant, chosen from the cells that executed its lines: every one,"]
    lines += ["or each-choice (each parameter value of a scenario function once, three cells at most).", ""]
    lines += ["| mutant | line | mutation | outcome | cells | classification | reason |"]
    lines += ["|---|---|---|---|---|---|---|"]
    for r in results:
        if r["outcome"] not in SURVIVED:
            continue
        entry = survivors.get(r["id"], {})
        kind = entry.get("classification", "unclassified")
        detail = entry.get("rule") or entry.get("clause") or ""
        mutation = " / ".join(f"`{d.strip()}`" for d in r.get("diff", "").splitlines()).replace("|", "\\|")
        reason = str(entry.get("reason", "")).replace("|", "\\|")
        chosen = "each-choice" if "each" in r.get("chosen_by", "") else "every"
        passed = f"{r.get('cells', 0)} ({chosen})" if r["outcome"] == "survived" else "0"
        lines.append(
            f"| `{r['id']}` | {r['line']} | {mutation} | {r['outcome']} | {passed} | {kind}"
            f"{f' ({detail})' if detail else ''} | {reason} |"
        )
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return summary


# --- the command ----------------------------------------------------------------------------------------------


def _redacted(url: str) -> str:
    """``url`` without its password, for the score's header."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _modules(text: str) -> list[str]:
    if not text:
        return list(CORE)
    chosen = [name.strip() if name.strip().startswith("_") else f"_{name.strip()}" for name in text.split(",")]
    unknown = [name for name in chosen if not (REFERENCE / f"{name}.py").exists()]
    if unknown:
        raise SystemExit(f"mutation: --modules names no module of reference/: {', '.join(unknown)}")
    return chosen


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python mutation/run.py", description=__doc__.split("\n")[0])
    parser.add_argument("--sample", type=int, default=0, help="judge N mutants drawn with --seed (0: every one)")
    parser.add_argument(
        "--per-module", type=int, default=0, metavar="N", help="judge N mutants of each module, drawn with --seed"
    )
    parser.add_argument("--seed", type=int, default=20261203, help="the sample's seed")
    parser.add_argument("--modules", default="", help="comma-separated modules of reference/ (default: every one)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants judged at once (default 1)")
    parser.add_argument("--timeout-factor", type=float, default=3.0, help="timeout: this × the cells' baseline")
    parser.add_argument("--profile", default="dev", help="TOOLPROOF_HYPOTHESIS_PROFILE of the runs (default dev)")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("TOOLPROOF_DATABASE_URL") or None,
        metavar="URL",
        help="PostgreSQL for the cells that need it (sigkill-postgres crash cells, PostgreSQL lease races), passed to "
        "the baseline and every mutant's run (default $TOOLPROOF_DATABASE_URL; none: those cells do not run)",
    )
    parser.add_argument(
        "--cells",
        choices=("each-choice", "every"),
        default="each-choice",
        help="the cells a mutant meets: each parameter value of each scenario once (then --confirm), or every one",
    )
    parser.add_argument("--per-function", type=int, default=3, help="each-choice: cells per scenario function at most")
    parser.add_argument(
        "--no-confirm", dest="confirm", action="store_false", help="do not judge each-choice survivors again"
    )
    parser.add_argument("--resume", action="store_true", help="keep results.jsonl and skip the mutants it holds")
    parser.add_argument(
        "--ids",
        default="",
        help="judge only these mutants of the sample (comma-separated ids), appending to the results",
    )
    parser.add_argument("--score-only", action="store_true", help="write score.md from results.jsonl and stop")
    parser.add_argument("--out", type=Path, default=HERE, help="folder of results.jsonl and score.md")
    options = parser.parse_args(argv)
    results_path, score_path = options.out / "results.jsonl", options.out / "score.md"
    survivors = load_survivors(HERE / "survivors.toml")
    meta_path = options.out / ".run.json"
    if options.score_only:
        meta = json.loads(meta_path.read_text())["meta"] if meta_path.exists() else ""
        print(write_score(load_results(results_path), survivors, score_path, meta))
        return 0

    global DATABASE_URL
    DATABASE_URL = options.database_url
    modules = _modules(options.modules)
    population = enumerate_mutants(modules)
    chosen = population
    if options.per_module:
        # Dealt round-robin (each module's first draw, then each one's second ...), so a run cut short has judged
        # every module about as far.
        drawn = [
            draw([m for m in population if m.module == name], options.per_module, options.seed) for name in modules
        ]
        chosen = [
            m for rank in range(options.per_module) for mutants in drawn if rank < len(mutants) for m in [mutants[rank]]
        ]
    elif options.sample and options.sample < len(population):
        chosen = draw(population, options.sample, options.seed)
        chosen.sort(key=lambda m: (modules.index(m.module), m.line, m.operator, m.occurrence))
    os.environ["TOOLPROOF_HYPOTHESIS_PROFILE"] = options.profile
    warm_imports()
    baseline = run_baseline(options.profile, HERE / ".cache" / "baseline.json")
    cells = sum(1 for outcome in baseline.outcomes.values() if outcome == "passed")
    sampled = (
        f"a sample of {len(chosen)} compiling mutants ({options.per_module} per module, seed {options.seed})"
        if options.per_module
        else f"a sample of {len(chosen)} compiling mutants (seed {options.seed})"
        if chosen is not population
        else "every mutant"
    )
    meta = (
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {sampled} of the {len(population)} cosmic-ray mutants (function annotations left out) of "
        f"{', '.join(modules)}; hypothesis profile `{options.profile}`, timeout {options.timeout_factor:g} × the "
        f"cells' baseline + {STARTUP_S:g} s, {options.jobs} job(s); "
        f"{'PostgreSQL at ' + _redacted(DATABASE_URL) if DATABASE_URL else 'no database URL (the cells needing PostgreSQL do not run)'}. "
        f"Baseline: {cells} cells pass, "
        f"{baseline.wall_s:.0f} s under coverage."
    )
    subset = os.environ.get("TOOLPROOF_MUTATION_BASELINE_CELLS", "").split()
    if subset:
        meta += f" The baseline, so every mutant's judges, restricted to {', '.join(subset)} (a subset of the suite)."
    options.out.mkdir(parents=True, exist_ok=True)
    meta_path.write_text(json.dumps({"meta": meta}), encoding="utf-8")
    done = {r["id"] for r in load_results(results_path)} if options.resume else set()
    if not options.resume and not options.ids:
        results_path.write_text("", encoding="utf-8")
    todo = [m for m in chosen if m.id not in done]
    if options.ids:
        wanted_ids = set(options.ids.split(","))
        todo = [m for m in todo if m.id in wanted_ids]
    print(f"mutation: {len(todo)} mutants to judge; baseline {baseline.wall_s:.0f} s", file=sys.stderr, flush=True)
    judge_all(
        todo,
        baseline,
        options.timeout_factor,
        options.jobs,
        results_path,
        every=options.cells == "every",
        per_function=options.per_function,
    )
    if options.cells == "each-choice" and options.confirm:
        # A survivor of the each-choice cells is judged again by every cell that executed its lines.
        first = {r["id"] for r in load_results(results_path) if r["outcome"] == "survived" and "each" in r["chosen_by"]}
        again = [m for m in todo if m.id in first]  # This run's survivors, not those of earlier records.
        print(f"mutation: {len(again)} survivors judged again by every cell", file=sys.stderr, flush=True)
        judge_all(again, baseline, options.timeout_factor, options.jobs, results_path, every=True)
    results = load_results(results_path)
    wanted = {m.id for m in chosen}
    print(write_score([r for r in results if r["id"] in wanted], survivors, score_path, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
