"""Ctrl-C or SIGTERM, whatever it interrupts: one line on stderr, cleanup, and exit status 130 or 143.

Only the standard library is imported here, so the console script (``toolproof._main``) installs the handler
before it imports the command line (typer, rich, pydantic), and an interrupt while those load is handled like any
other. SIGTERM (a CI job cancelled, ``kill``) unwinds like Ctrl-C, so what the run started (fake MCP servers, worker
processes) is stopped, not orphaned.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
import warnings
from collections.abc import Callable
from types import FrameType

STOPPING_SIGNALS = (signal.SIGINT, signal.SIGTERM)
INTERRUPTED_MESSAGE = "toolproof: interrupted; results.duckdb keeps only complete runs"


class _State:
    interrupted = False
    signum = signal.SIGINT
    written: str | None = None
    """The summary.json of a run whose files are all written, once they are."""


def mark_written(summary: str | os.PathLike[str]) -> None:
    """Say the run's files are written: from here an interrupt changes nothing in them but the exit status, which it
    records in ``summary`` (summary.json) before it says its line and ends the process, so the file and the exit
    status agree however late the interrupt lands (interpreter shutdown included)."""
    _State.written = os.fspath(summary)


def _after_written(status: int) -> None:
    """Record ``status`` in the written summary.json, say so in one line, and end the process with it."""
    path = _State.written
    assert path is not None  # Invariant: called only once the run's files are written.
    try:
        with open(path, encoding="utf-8") as stream:
            summary = json.load(stream)
        summary["exit_code"] = status
        summary["interrupted"] = "after the run was written"
        with open(path, "w", encoding="utf-8") as stream:
            json.dump(summary, stream, indent=2)
            stream.write("\n")
        said = f"toolproof: interrupted after the run was written: summary.json records exit status {status}"
    except (OSError, ValueError) as exc:
        said = f"toolproof: interrupted after the run was written; summary.json could not record it ({exc})"
    quiet_debris()
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    sys.stderr.write(said + "\n")
    sys.stderr.flush()
    os._exit(status)  # Nothing is left to clean up: the run's servers and workers ended before its files were written.


def was_interrupted() -> bool:
    """Whether Ctrl-C or SIGTERM has reached this process."""
    return _State.interrupted


def interrupted_status() -> int:
    """The exit status for the signal that interrupted: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + int(_State.signum)


def interrupted(signum: int, frame: FrameType | None) -> None:
    """The SIGINT and SIGTERM handler. The first stops the process where it is; another while it unwinds is ignored,
    so cleanup finishes."""
    _State.interrupted = True
    _State.signum = signal.Signals(signum)
    for stopping in STOPPING_SIGNALS:
        signal.signal(stopping, signal.SIG_IGN)
    if _State.written is not None:
        _after_written(interrupted_status())
    quiet_debris()
    raise KeyboardInterrupt


def _drop(_unraisable: object) -> None:
    return None


def quiet_debris() -> None:
    """After an interrupt, leave its debris unsaid: the one line says what happened.

    The debris: asyncio's "exception was never retrieved", with a traceback, for a task the interrupt ended; an
    object the interrupt left half-built whose ``__del__`` fails when it is collected (seen: an event loop
    interrupted inside its constructor, which pytest reports as an unraisable-exception warning with a traceback);
    any warning. Called by the handler, again where a framework may have put its own hooks back (pytest's
    unconfigure, see ``toolproof._run``), and before the one line is written.
    """
    logging.getLogger("asyncio").disabled = True
    sys.unraisablehook = _drop
    warnings.simplefilter("ignore")


def say_interrupted() -> None:
    """Write the one line to stderr, with the debris quieted first."""
    quiet_debris()
    sys.stderr.write(INTERRUPTED_MESSAGE + "\n")
    sys.stderr.flush()


def forget_handled_interrupt() -> None:
    """Keep the exit status the program chose after it handled Ctrl-C.

    Under ``python -m``, CPython notes a KeyboardInterrupt that leaves code run by ``exec`` or ``eval`` of a string
    (``typing`` evaluates string annotations that way while pytest collects) as unhandled, even when an outer frame
    handles it, and at exit it then kills the process with SIGINT instead of exiting 130. Every string ``eval`` clears that note first, so one
    that succeeds, made once the interrupt is handled, leaves the process to exit with its own status.
    """
    eval("None")


def exit_interrupted() -> None:
    """Print the one line and exit 130 (143 after SIGTERM)."""
    say_interrupted()
    forget_handled_interrupt()
    sys.exit(interrupted_status())


def handle_interrupts(command: Callable[[], object]) -> None:
    """Install the SIGINT and SIGTERM handler, then run ``command``: an interrupt it leaves unhandled is the one line
    and exit status 130 (143 after SIGTERM)."""
    for stopping in STOPPING_SIGNALS:
        signal.signal(stopping, interrupted)
    try:
        try:
            command()
        finally:
            if _State.written is not None and not _State.interrupted:
                # The run's files are written and say how it ended: from here to the process's end (interpreter
                # shutdown puts the default SIGINT action back, which would kill it with that summary.json left
                # saying 0), an interrupt is ignored, so the exit status is the one the files record.
                for stopping in STOPPING_SIGNALS:
                    signal.signal(stopping, signal.SIG_IGN)
    except KeyboardInterrupt:  # Interrupted before a command could handle it, e.g. while the command line loads.
        exit_interrupted()
    except SystemExit as exit_:
        if _State.interrupted:
            if exit_.code != interrupted_status():  # Interrupted outside `run`'s own handling.
                exit_interrupted()
            forget_handled_interrupt()
        raise
