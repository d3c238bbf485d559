"""Checks of a command's arguments that need no heavy import, run before anything is loaded.

Optional dependencies are imported where they are used; an option that needs one
(``--database-url`` needs psycopg) is refused here, in one line naming the extra to install,
so a regular install of the base package runs every command.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from toolproof.spec import ConfigurationError

EXTRAS = {"psycopg": "postgres", "dbos": "bench"}
"""Optional module -> the extra of the toolproof distribution that installs it."""


def require(module: str, asked_by: str) -> None:
    """Raise ConfigurationError naming the extra when ``module`` is not installed.

    Args:
        module: A key of ``EXTRAS``.
        asked_by: What needs it, as the user wrote it (``--database-url``).
    """
    if importlib.util.find_spec(module) is None:
        raise ConfigurationError(
            f"{asked_by} needs {module}, which is not installed: pip install 'toolproof[{EXTRAS[module]}]'"
        )


def check_out_dir(out_dir: Path, option: str = "--out") -> None:
    """Refuse an output folder that cannot be written, creating nothing.

    Raises:
        ConfigurationError: ``out_dir`` is a file, lies under a file, or is (or would be created in)
            a folder this process may not write.
    """
    shown = f"{option} {str(out_dir)!r}"
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigurationError(f"{shown} is a file, not a folder")
    existing = out_dir.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigurationError(f"{shown} is not a writable directory: {str(existing)!r} is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigurationError(f"{shown} is not a writable directory: {str(existing)!r} is not writable")
