"""Ctrl-C, whatever it interrupts: one line on stderr and exit status 130.

Only the standard library is imported here, so the console script installs the handler before it imports the
command line (typer, rich, pydantic), and a Ctrl-C while those load is handled like any other.
"""

from __future__ import annotations

import logging
import signal
import sys
from types import FrameType

EXIT_INTERRUPTED = 130
INTERRUPTED_MESSAGE = "toolproof: interrupted; results.duckdb keeps only complete runs"


class _State:
    interrupted = False


def was_interrupted() -> bool:
    """Whether Ctrl-C has been pressed in this process."""
    return _State.interrupted


def interrupted(signum: int, frame: FrameType | None) -> None:
    """The SIGINT handler. The first Ctrl-C stops the process where it is; a second while it unwinds is ignored, so
    cleanup finishes. asyncio logs a task the interrupt ended as "exception was never retrieved", with a traceback,
    when the task is collected: after Ctrl-C that is the interruption again, and the one line says it."""
    _State.interrupted = True
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.getLogger("asyncio").disabled = True
    raise KeyboardInterrupt


def forget_handled_interrupt() -> None:
    """Keep the exit status the program chose after it handled Ctrl-C.

    CPython notes a KeyboardInterrupt that leaves code run by ``eval`` of a string (``typing`` evaluates string
    annotations that way while pytest collects) as unhandled, even when an outer frame handles it, and at exit it
    then kills the process with SIGINT instead of exiting 130. Every string ``eval`` clears that note first, so one
    that succeeds, made once the interrupt is handled, leaves the process to exit with its own status.
    """
    eval("None")


def exit_interrupted() -> None:
    """Print the one line and exit 130."""
    sys.stderr.write(INTERRUPTED_MESSAGE + "\n")
    sys.stderr.flush()
    forget_handled_interrupt()
    sys.exit(EXIT_INTERRUPTED)


def main() -> None:
    """Console-script entry point (``toolproof`` and ``python -m toolproof``)."""
    signal.signal(signal.SIGINT, interrupted)
    try:
        from toolproof._cli import app

        app()
    except KeyboardInterrupt:  # Interrupted before a command could handle it, e.g. while the command line loads.
        exit_interrupted()
    except SystemExit as exit_:
        if _State.interrupted:
            if exit_.code != EXIT_INTERRUPTED:  # Interrupted outside `run`'s own handling.
                exit_interrupted()
            forget_handled_interrupt()
        raise
