"""What every command shares: the two consoles, the one-line error with its exit status, and how help reads."""

from __future__ import annotations

import inspect
from typing import Any

import typer
from rich.console import Console
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

# Lines are never wrapped: a terminal folds them itself, and a pipe gets them whole.
err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)

EXIT_USAGE = 2
EXIT_HARNESS = 3
EXIT_NOTHING_JUDGED = 5
"""As pytest's exit status when it collects nothing: the run judged no rule (``toolproof.reports.run_exit_code``)."""
HELP_OPTIONS = ["-h", "--help"]
"""The help options of every command, as pytest and ruff take them."""


def sentences(text: str | None) -> str | None:
    """A docstring as help shows it: each paragraph one line, so the terminal wraps it and no sentence breaks where
    the source did; a paragraph that starts with ``\\b`` (click's mark) keeps its lines, for examples."""
    if text is None:
        return None
    kept = []
    for paragraph in inspect.cleandoc(text).split("\n\n"):
        if paragraph.startswith("\b"):
            kept.append(paragraph.removeprefix("\b").strip("\n"))
        else:
            kept.append(" ".join(line.strip() for line in paragraph.splitlines()))
    return "\n\n".join(kept)


def _flags_show_no_value(params: list[Any]) -> list[Any]:
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""  # Typer would show <bool>, as if the flag took a value.
    return params


class GitStyleGroup(TyperGroup):
    """The top-level command's help as git writes it: its flags show no value."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_show_no_value(super().get_params(ctx))


class GitStyleCommand(TyperCommand):
    """Help as git or pytest write it: a flag shows no value, arguments in capitals (NAME, [NAME]), sentences whole."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = sentences(self.help)

    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_show_no_value(super().get_params(ctx))

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
