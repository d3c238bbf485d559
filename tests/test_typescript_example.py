"""examples/typescript: a pipeline in TypeScript, installed from its lockfile, passes with its expectations file.

The driver protocol's claim that any language can plug in, checked end to end: ``npm ci`` in a copy of the
example, its build, the driver under ``toolproof supervise`` (so the recovery profile's SIGKILL cells restart
it), and ``toolproof run --impl http://... --expectations examples/typescript/expectations.toml``.

The example passes every rule it claims but the store-fault rules of protocol revision 4, which its expectations
file declares (it ignores fault plans). A failure on purpose is shown on a second driver started with the example's one deliberate defect (``--defect duplicate-names``, which
breaks D5.4 and nothing else): with ``expectations-defect.toml`` its run exits 0, D5.4 reading xfail; with that
entry removed it exits 1 naming D5.4; and the same file against the driver without the defect is stale.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import free_port, wait_for_driver

from toolproof.spec import SUPERVISED_ENV

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "typescript"
EXPECTATIONS = EXAMPLE / "expectations.toml"
DEFECT_EXPECTATIONS = EXAMPLE / "expectations-defect.toml"
DEFECT = "duplicate-names"
"""The example's deliberate defect (src/defects.ts), off unless ``--defect`` names it."""
DEFECT_RULE = "D5.4"
"""The one rule the defect breaks; its decision is all the defect's runs select."""
DEFECT_RULES = DEFECT_RULE.split(".")[0]
NPM_PATIENCE_S = 900
"""How long ``npm ci`` and the build may take (a cold npm cache downloads every package)."""

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("node") is None or shutil.which("npm") is None,
        reason="node and npm are not installed: the TypeScript example needs Node 20 and npm to build and serve",
    ),
    pytest.mark.skipif(
        os.environ.get("CI") == "true",
        reason="CI=true: npm ci installs from the network registry, and network installs are not part of CI",
    ),
]


def _npm(folder: Path, *args: str) -> None:
    done = subprocess.run(
        ["npm", *args], cwd=folder, capture_output=True, text=True, timeout=NPM_PATIENCE_S, check=False
    )
    assert done.returncode == 0, f"npm {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the example beside a copy of the protocol document, installed from the lockfile and built."""
    root = tmp_path_factory.mktemp("typescript")
    (root / "spec").mkdir()
    shutil.copy(ROOT / "spec" / "driver-openapi.json", root / "spec" / "driver-openapi.json")
    shutil.copytree(ROOT / "spec" / "vectors", root / "spec" / "vectors")  # The example's unit tests check them.
    copy = root / "examples" / "typescript"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("node_modules", "dist", "generated"))
    _npm(copy, "ci", "--no-audit", "--no-fund")
    _npm(copy, "run", "build")
    return copy


@contextmanager
def _serve(example: Path, *flags: str, supervised: bool = True) -> Iterator[str]:
    """The example's driver on a free loopback port, given ``flags``, under ``toolproof supervise`` unless
    ``supervised`` is false; its URL."""
    port = free_port()
    command = ["node", "dist/src/main.js", "--port", str(port), *flags]
    if supervised:
        command = [sys.executable, "-m", "toolproof", "supervise", "--", *command]
    environment = {k: v for k, v in os.environ.items() if k != SUPERVISED_ENV}
    process = subprocess.Popen(command, cwd=example, env=environment)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_driver(url, process)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)  # Passed on to the driver by the supervisor.
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def driver(example: Path) -> Iterator[str]:
    """The example's driver as it ships: no defect."""
    with _serve(example) as url:
        yield url


@pytest.fixture(scope="module")
def defective(example: Path) -> Iterator[str]:
    """The example's driver started with its deliberate defect: D5.4 fails, every other rule as without it."""
    with _serve(example, "--defect", DEFECT) as url:
        yield url


def _run(url: str, out: Path, expectations: Path, *more: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "toolproof", "run", "--impl", url, "--expectations", str(expectations)]
    return subprocess.run(
        [*command, "--out", str(out), "--quiet", *more],
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_typescript_pipeline_passes_with_its_expectations(driver: str, tmp_path: Path) -> None:
    done = _run(driver, tmp_path / "out", EXPECTATIONS)
    assert done.returncode == 0, done.stderr[-5000:]
    assert f"typescript@{driver.removeprefix('http://')}: rules: " in done.stdout


def _rules(out: Path) -> dict[str, str]:
    """Each selected rule's verdict, from the run's summary.json."""
    rules: dict[str, str] = json.loads((out / "summary.json").read_text(encoding="utf-8"))["rules"]
    return rules


def _others(rules: dict[str, str]) -> set[str]:
    """The verdicts of the claimed rules but the defect's."""
    return {verdict for rule, verdict in rules.items() if rule != DEFECT_RULE and verdict != "not-claimed"}


def _without(source: Path, rule: str, path: Path) -> Path:
    """A copy of the expectations file ``source`` without its entry for ``rule``."""
    loaded = tomllib.loads(source.read_text(encoding="utf-8"))
    entries = loaded.get("expect", [])
    kept = [e for e in entries if e.get("rule") != rule]
    assert len(kept) == len(entries) - 1, f"{source.name} has no single entry for {rule}: {entries}"
    tables = "".join(
        "\n[[expect]]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in entry.items()) for entry in kept
    )
    path.write_text(f"implementation = {json.dumps(loaded['implementation'])}\n{tables}", encoding="utf-8")
    return path


def test_with_its_defect_the_pipeline_passes_with_the_defect_file(defective: str, tmp_path: Path) -> None:
    done = _run(defective, tmp_path / "out", DEFECT_EXPECTATIONS, "--rules", DEFECT_RULES)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rules = _rules(tmp_path / "out")
    assert (rules[DEFECT_RULE], _others(rules)) == ("xfail", {"pass"})


def test_without_the_defect_entry_the_run_exits_1_naming_its_rule(defective: str, tmp_path: Path) -> None:
    fewer = _without(DEFECT_EXPECTATIONS, DEFECT_RULE, tmp_path / "fewer.toml")
    done = _run(defective, tmp_path / "out", fewer, "--rules", DEFECT_RULES)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"\n  fail: {DEFECT_RULE} " in done.stdout
    name = f"typescript@{defective.removeprefix('http://')}"
    assert f"toolproof: {name}: {DEFECT_RULE}: two tools registered as 'files.echo' were accepted" in done.stderr
    rules = _rules(tmp_path / "out")
    assert (rules[DEFECT_RULE], _others(rules)) == ("fail", {"pass"})


def test_the_defect_file_is_stale_against_the_pipeline_without_its_defect(driver: str, tmp_path: Path) -> None:
    """The file cannot claim a failure the example does not have: without the defect its entry is stale."""
    done = _run(driver, tmp_path / "out", DEFECT_EXPECTATIONS, "--rules", DEFECT_RULES)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"entry 1 (rule {DEFECT_RULE}): unexpected pass: " in done.stderr
    assert _rules(tmp_path / "out")[DEFECT_RULE] == "pass"


def test_the_examples_own_unit_tests_pass(example: Path) -> None:
    """``npm test``: keys, excerpts, store, spec loading, bad input, the defect switch, and the cross-language
    vectors of spec/vectors/canonical-hashes.json with npm canonicalize."""
    _npm(example, "test")


@pytest.mark.parametrize("supervised", [True, False])
def test_a_sigkill_plan_is_accepted_only_under_the_supervisor(example: Path, supervised: bool) -> None:
    """Driver protocol revision 3: the driver learns it is supervised from TOOLPROOF_SUPERVISED, which
    ``toolproof supervise`` sets; started alone it refuses a SIGKILL plan (422 not-supported)."""
    import httpx2

    from toolproof.spec import CrashPlan, CrashPoint, InstanceConfig, OpenInstance

    plan = CrashPlan(point=CrashPoint.AFTER_RECORD, mode="sigkill")
    config = InstanceConfig(store_dir=example / "store", workspace=example / "workspace", crash=plan)
    request = OpenInstance(config=config, tool_host="http://127.0.0.1:1")  # As the harness sends it: every field.
    with _serve(example, supervised=supervised) as url:
        answer = httpx2.post(f"{url}/v1/instances", json=request.model_dump(mode="json"))
    if supervised:
        assert answer.status_code == 201, answer.text
    else:
        assert answer.status_code == 422, answer.text
        assert answer.json()["type"] == "not-supported"
