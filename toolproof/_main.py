"""The console script (``toolproof``, ``python -m toolproof``): the interrupt handler first, then the command line."""

from __future__ import annotations

import errno
import sys

from ._interrupt import handle_interrupts


def _command_line() -> None:
    # Imported once the handler is in place: typer, rich and pydantic take a moment to load, and Ctrl-C meanwhile
    # is handled like any other.
    from ._cli import app

    try:
        app(complete_var="_TOOLPROOF_COMPLETE")  # Whatever the program is called (python -m toolproof too).
    except OSError as exc:
        # A path the file system cannot hold, wherever a command met it: the user's input, said in one line.
        if exc.errno != errno.ENAMETOOLONG:
            raise
        from ._preflight import too_long

        sys.stderr.write(f"toolproof: error: {too_long(str(exc.filename or ''))}\n")
        sys.exit(2)


def main() -> None:
    """Console-script entry point (``toolproof`` and ``python -m toolproof``)."""
    handle_interrupts(_command_line)
