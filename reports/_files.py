"""A results folder: ``results.duckdb``, ``summary.json`` and ``report.md``, written so a crash leaves no half."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from toolproof.spec import ConfigurationError

from ._markdown import render_markdown
from ._results import ResultRow, RunInfo, complete_rows
from ._store import RESULTS_FILE, insert_run, load_run
from ._summary import render_summary

SUMMARY_FILE = "summary.json"
"""Rule verdicts for machines."""
REPORT_FILE = "report.md"
"""The report for people."""


def write_run(out_dir: Path, info: RunInfo, rows: Sequence[ResultRow]) -> None:
    """Record a run in ``out_dir``: append it to ``results.duckdb``, rewrite ``summary.json`` and ``report.md``.

    Every selected rule without a scenario row for an implementation gets a rule-level row
    (``not-covered``, or ``not-claimed``), so the database holds every selected rule.

    Raises:
        ConfigurationError: ``out_dir`` cannot be created or written, holds a file that is not a
            toolproof results database, or already holds ``info.run_id``; or a selected rule is unknown.
        HarnessError: a row belongs to another run, implementation or to an unselected rule.
    """
    completed = complete_rows(info, rows)
    # Render before touching the disk: a rendering error must not leave a recorded run without its report.
    summary = render_summary(info, completed)
    report = render_markdown(info, completed)
    _make_folder(out_dir)
    insert_run(out_dir / RESULTS_FILE, info, completed)
    _write_text(out_dir, SUMMARY_FILE, summary)
    _write_text(out_dir, REPORT_FILE, report)


def rerender(out_dir: Path, run_id: str | None = None) -> None:
    """Rewrite ``summary.json`` and ``report.md`` in ``out_dir`` from a stored run (the latest when None).

    Raises:
        ConfigurationError: as ``load_run``, or the files cannot be written.
    """
    info, rows = load_run(out_dir, run_id)
    summary = render_summary(info, rows)
    report = render_markdown(info, rows)
    _write_text(out_dir, SUMMARY_FILE, summary)
    _write_text(out_dir, REPORT_FILE, report)


def _make_folder(out_dir: Path) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise _unwritable(out_dir, "it is a file, not a folder")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(out_dir, _reason(exc)) from None


def _write_text(out_dir: Path, name: str, text: str) -> None:
    # Write beside the target and rename over it: os.replace is atomic within one file system,
    # so a reader sees the old file or the new one, never half of either.
    temporary = out_dir / f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        # os.open with 0o666 lets the umask decide the mode, as for any ordinary new file.
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(handle, "wb") as stream:
            stream.write(text.encode("utf-8"))
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, out_dir / name)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        raise _unwritable(out_dir, f"{name}: {_reason(exc)}") from None


def _unwritable(out_dir: Path, reason: str) -> ConfigurationError:
    return ConfigurationError(
        f"cannot write results into out_dir={str(out_dir)!r}: {reason}; choose a folder you can create and write"
    )


def _reason(exc: OSError) -> str:
    reason = exc.strerror or str(exc) or type(exc).__name__
    return " ".join(reason.split())
