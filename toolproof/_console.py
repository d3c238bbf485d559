"""What every command shares: the two consoles, the one-line error with its exit status, and how help reads."""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console
from typer.core import TyperArgument, TyperCommand, TyperOption

# Lines are never wrapped: a terminal folds them itself, and a pipe gets them whole.
err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)

EXIT_USAGE = 2
EXIT_HARNESS = 3


class GitStyleCommand(TyperCommand):
    """Help as git or pytest write it: a flag shows no value, arguments in capitals (NAME, [NAME])."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        for param in params:
            if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
                param.metavar = ""  # Typer would show <bool>, as if the flag took a value.
        return params

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = (param.metavar or param.name or "ARG").upper()
                pieces.append(name if param.required else f"[{name}]")
        return pieces


def die(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    """Say ``message`` as the one error line on stderr; the exit, with status ``code``, for the caller to raise."""
    err.print(f"toolproof: error: {message}", markup=False, soft_wrap=True)
    return typer.Exit(code)
