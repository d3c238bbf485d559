"""The console script (``toolproof``, ``python -m toolproof``): the interrupt handler first, then the command line."""

from __future__ import annotations

from ._interrupt import handle_interrupts


def _command_line() -> None:
    # Imported once the handler is in place: typer, rich and pydantic take a moment to load, and Ctrl-C meanwhile
    # is handled like any other.
    from ._cli import app

    app()


def main() -> None:
    """Console-script entry point (``toolproof`` and ``python -m toolproof``)."""
    handle_interrupts(_command_line)
