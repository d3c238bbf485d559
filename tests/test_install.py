"""A regular install of the base package, without extras, runs the suite from any folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    # pip's own cache and configured index; the environment is the user's but for a stray PYTHONPATH.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd, env=env, check=False)


@pytest.mark.slow
def test_the_wheel_without_extras_runs_the_suite_from_an_empty_folder(tmp_path: Path) -> None:
    wheels, venv, empty = tmp_path / "wheels", tmp_path / "venv", tmp_path / "empty"
    empty.mkdir()
    built = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, ROOT)
    assert built.returncode == 0, built.stderr
    [wheel] = wheels.glob("toolproof-*.whl")
    assert _run(sys.executable, "-m", "venv", venv).returncode == 0
    python = venv / "bin" / "python"
    installed = _run(python, "-m", "pip", "install", "-q", wheel)
    assert installed.returncode == 0, installed.stderr
    # No extra crept in: the optional modules are absent, so the run below proves it needs none.
    absent = _run(python, "-c", "import importlib.util as u; print(u.find_spec('psycopg'), u.find_spec('dbos'))")
    assert absent.stdout.strip() == "None None"

    toolproof = venv / "bin" / "toolproof"
    result = _run(toolproof, "run", "--impl", "reference", "--rules", "D1,D4", "-q", cwd=empty)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (empty / "toolproof-report" / "report.html").is_file()
    # Nothing but the report is left where the run ran (no .hypothesis/ example database, no stray store).
    assert sorted(p.name for p in empty.iterdir()) == ["toolproof-report"]

    asked = _run(
        toolproof, "run", "--rules", "D1", "--database-url", "postgresql://127.0.0.1/x", "--out", "o", cwd=empty
    )
    assert asked.returncode == 2
    assert asked.stderr == (
        "toolproof: error: --database-url needs psycopg, which is not installed: pip install 'toolproof[postgres]'\n"
    )
    assert not (empty / "o").exists()
