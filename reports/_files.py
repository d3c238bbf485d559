"""A results folder: ``results.duckdb``, ``summary.json``, ``report.md``, ``report.html`` and ``junit.xml``,
written so a crash leaves no half."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from toolproof.spec import ConfigurationError, CrashCell, FaultCell, ResultRow, StaleExpectation

from ._crash import check_crash_cells, crash_order
from ._fault import check_fault_cells, fault_order
from ._html import render_html
from ._junit import render_junit
from ._markdown import render_markdown
from ._results import RunInfo, complete_rows
from ._stale import check_stale, stale_order
from ._store import RESULTS_FILE, insert_run, load_everything, load_fault_cells
from ._summary import render_summary

SUMMARY_FILE = "summary.json"
"""Rule verdicts for machines."""
REPORT_FILE = "report.md"
"""The report for people, as text."""
HTML_FILE = "report.html"
"""The report for people, as one self-contained page."""
JUNIT_FILE = "junit.xml"
"""The run for CI systems."""


def write_run(
    out_dir: Path,
    info: RunInfo,
    rows: Sequence[ResultRow],
    crash_cells: Sequence[CrashCell] = (),
    stale: Sequence[StaleExpectation] = (),
    *,
    fault_cells: Sequence[FaultCell] = (),
) -> None:
    """Record a run in ``out_dir``: append it to ``results.duckdb``, rewrite ``summary.json``, ``report.md``,
    ``report.html`` and ``junit.xml``.

    Every selected rule without a scenario row for an implementation gets a rule-level row
    (``not-covered``, or ``not-claimed``), so the database holds every selected rule. ``crash_cells``
    go to the ``crash_matrix`` table and the crash matrix of both reports; ``stale`` expectations to the
    ``stale_expectations`` table, ``summary.json`` and both reports; ``fault_cells`` to the ``fault_matrix`` table and
    the fault matrix of both reports.

    Raises:
        ConfigurationError: ``out_dir`` cannot be created or written, holds a file that is not a
            toolproof results database, or already holds ``info.run_id``; or a selected rule is unknown.
        HarnessError: a row belongs to another run, implementation or to an unselected rule; or a crash
            cell belongs to another run or implementation, names an unknown crash point or class, or repeats;
            or a stale expectation belongs to another run or implementation.
    """
    completed = complete_rows(info, rows)
    check_crash_cells(info, crash_cells)
    check_stale(info, stale)
    check_fault_cells(info, fault_cells)
    cells = sorted(crash_cells, key=crash_order(info))
    faults = sorted(fault_cells, key=fault_order(info))
    stale_entries = sorted(stale, key=stale_order(info))
    # Render before touching the disk: a rendering error must not leave a recorded run without its report.
    rendered = _render(info, completed, cells, stale_entries, faults)
    _make_folder(out_dir)
    insert_run(out_dir / RESULTS_FILE, info, completed, cells, stale_entries, fault_cells=faults)
    for name, text in rendered.items():
        _write_text(out_dir, name, text)


def rerender(out_dir: Path, run_id: str | None = None) -> None:
    """Rewrite ``summary.json``, ``report.md``, ``report.html`` and ``junit.xml`` in ``out_dir`` from a stored run
    (the latest when None).

    Raises:
        ConfigurationError: as ``load_run``, or the files cannot be written.
    """
    info, rows, cells, stale = load_everything(out_dir, run_id)
    faults = load_fault_cells(out_dir, info.run_id)
    for name, text in _render(info, rows, cells, stale, faults).items():
        _write_text(out_dir, name, text)


def _render(
    info: RunInfo,
    rows: Sequence[ResultRow],
    cells: Sequence[CrashCell],
    stale: Sequence[StaleExpectation],
    faults: Sequence[FaultCell] = (),
) -> dict[str, str]:
    return {
        SUMMARY_FILE: render_summary(info, rows, stale),
        REPORT_FILE: render_markdown(info, rows, cells, stale, fault_cells=faults),
        HTML_FILE: render_html(info, rows, cells, stale, fault_cells=faults),
        JUNIT_FILE: render_junit(info, rows),
    }


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
        f"cannot write results into {str(out_dir)!r}: {reason}; choose a folder you can create and write"
    )


def _reason(exc: OSError) -> str:
    reason = exc.strerror or str(exc) or type(exc).__name__
    return " ".join(reason.split())
