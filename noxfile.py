"""Automation: ``nox -s quick`` for the inner loop, ``tests`` for everything, ``lint``, ``conformance``, ``mutation``.

``tests`` and ``conformance`` run on every supported Python: ``nox -s tests`` runs all three,
``nox -s tests-3.12`` one. The interpreters are found on PATH or, as on these machines, under ``pyenv root``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent

nox.options.sessions = ["quick", "lint"]
nox.options.default_venv_backend = "venv"
PYTHON = "3.11"
"""The Python the single-version sessions (quick, lint, stateful, bench) run on: the oldest supported."""
PYTHONS = ["3.11", "3.12", "3.13"]
"""Every Python of ``requires-python``; the suite must be green on each."""


def _pyenv_interpreters() -> None:
    # nox finds pythonX.Y on PATH; pyenv installs them under its root without shims on PATH.
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return
    found = [str(p.parent) for v in PYTHONS for p in sorted(Path(root).glob(f"versions/{v}.*/bin/python{v}"))[-1:]]
    os.environ["PATH"] = os.pathsep.join([*found, os.environ.get("PATH", "")])


_pyenv_interpreters()


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The whole test suite, slow and PostgreSQL tests included (what .ci/run runs)."""
    session.install("-e", ".[test]")
    session.run("pytest", *session.posargs)


@nox.session(python=PYTHON)
def transport(session: nox.Session) -> None:
    """The over-HTTP tier: every witness served over HTTP is rejected by the rule that rejects it in-process, and the
    reference over HTTP gives its in-process verdict on every rule."""
    session.install("-e", ".[test]")
    session.run("pytest", "-m", "transport_matrix", "-n", "0", "-s", *session.posargs)


@nox.session(python=PYTHON)
def model(session: nox.Session) -> None:
    """The executable model's long tier: the model against the reference on 10,000 generated workloads
    (TOOLPROOF_MODEL_WORKLOADS, TOOLPROOF_MODEL_SEED), and the model judge's catch rate over every witness it covers."""
    session.install("-e", ".[test]")
    session.run("pytest", "-m", "thorough", "-n", "0", "-s", *session.posargs)


@nox.session(python=PYTHON)
def quick(session: nox.Session) -> None:
    """The fast loop: no real processes, no PostgreSQL, no browser, no full witness matrix."""
    session.install("-e", ".[test]")
    session.run("pytest", "-m", "not slow and not postgres and not browser", "-q", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff, then mypy --strict on a regular (non-editable) install, which mypy can follow."""
    session.install(".[test]")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    config = str(ROOT / "pyproject.toml")
    # From a scratch folder, so mypy sees the installed package and not the checkout's ./toolproof.
    with session.chdir(session.create_tmp()):
        session.run("mypy", "--strict", "--config-file", config, "-p", "toolproof")


@nox.session(python=PYTHON)
def stateful(session: nox.Session) -> None:
    """The long exploration of decision 4: the thorough profile's 5,000 random crash/recover/approve/replay sequences.

    ``nox -s stateful -- dev`` (or ``ci``) explores with another profile instead.
    """
    session.install(".")
    session.env["TOOLPROOF_HYPOTHESIS_PROFILE"] = session.posargs[0] if session.posargs else "thorough"
    with session.chdir(session.create_tmp()):
        session.run(
            "python",
            "-m",
            "pytest",
            "-p",
            "toolproof.scenarios._plugin",
            "--pyargs",
            "toolproof.scenarios",
            "-c",
            "/dev/null",
            "-p",
            "no:cacheprovider",
            "-q",
            "-k",
            "random_crash_and_recovery",
        )


@nox.session(python=PYTHONS)
def conformance(session: nox.Session) -> None:
    """The main job: the conformance suite against the reference, report in ./toolproof-report."""
    session.install(".[postgres]")  # --database-url below needs psycopg.
    # PostgreSQL runs on every machine of this project; elsewhere set TOOLPROOF_DATABASE_URL or drop the option.
    url = session.env.get("TOOLPROOF_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
    session.run(
        "toolproof", "run", "--impl", "reference", "--out", "toolproof-report", "--database-url", url, *session.posargs
    )


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """`toolproof bench` with the DBOS peer into ./toolproof-bench; `nox -s bench -- --quick` for the short run."""
    session.install(".[bench]")
    session.run("toolproof", "bench", "--out", "toolproof-bench", *session.posargs)


@nox.session(python=PYTHON)
def mutation(session: nox.Session) -> None:
    """The mutation gate over every module of the reference: mutation/results.jsonl and mutation/score.md.

    Options after ``--``: ``--sample N`` or ``--per-module N`` (drawn with ``--seed``), ``--modules _keys,_store``,
    ``--jobs J``,
    ``--database-url URL`` (PostgreSQL for the cells that need it; default ``$TOOLPROOF_DATABASE_URL``); see
    ``python mutation/run.py --help``. ``nox -s mutation -- --sample 150 --database-url
    postgresql://postgres@127.0.0.1:5432/test`` judges the committed sample with the local PostgreSQL.
    """
    session.install("-e", ".[mutation]")
    session.run("python", "mutation/run.py", *session.posargs)
