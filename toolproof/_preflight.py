"""Checks of a command's arguments that need no heavy import, run before anything is loaded.

Optional dependencies are imported where they are used; an option that needs one
(``--database-url`` needs psycopg) is refused here, in one line naming the extra to install,
so a regular install of the base package runs every command.
"""

from __future__ import annotations

import errno
import importlib.util
import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

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


def too_long(path: str, option: str = "") -> str:
    """The one line for a path the file system cannot hold (ENAMETOOLONG), shortened to stay one line."""
    shown = repr(path) if len(path) <= 60 else f"{path[:40]!r}... ({len(path)} characters)"
    return f"{option + ' ' if option else ''}{shown} is too long for the file system: give a shorter path"


def _exists(path: Path, option: str) -> bool:
    try:
        path.stat()
    except FileNotFoundError:
        return False
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise ConfigurationError(too_long(str(path), option)) from None
        if exc.errno == errno.ENOTDIR:
            return False
        raise ConfigurationError(f"{option} {str(path)!r} cannot be read ({exc.strerror or exc})") from None
    return True


def check_out_dir(out_dir: Path, option: str = "--out") -> None:
    """Refuse an output folder that cannot be written, creating nothing.

    Raises:
        ConfigurationError: ``out_dir`` is a file, lies under a file, is (or would be created in)
            a folder this process may not write, or its name is too long for the file system.
    """
    shown = f"{option} {str(out_dir)!r}"
    if _exists(out_dir, option) and not out_dir.is_dir():
        raise ConfigurationError(f"{shown} is a file, not a folder")
    existing = out_dir.absolute()
    while not _exists(existing, option):
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigurationError(f"{shown} is not a writable directory: {str(existing)!r} is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigurationError(f"{shown} is not a writable directory: {str(existing)!r} is not writable")


OWN_FILES = frozenset(
    {"results.duckdb", "results.duckdb.wal", "summary.json", "report.md", "report.html", "junit.xml", ".toolproof.lock"}
)
"""What toolproof writes into an --out folder (and its write probe, ``.toolproof-write-check-*``)."""
_DUCKDB_MAGIC = b"DUCK"
"""The bytes 8 to 12 of a DuckDB database file."""


def check_out_is_ours(out_dir: Path, option: str = "--out") -> None:
    """Refuse an existing output folder holding files toolproof did not write: a file it does not write, or its
    report files without the results database they were rendered from (another tool's ``report.md``).

    Raises:
        ConfigurationError: naming the files, and ``--force``.
    """
    if not out_dir.is_dir():
        return
    names = sorted(entry.name for entry in out_dir.iterdir())
    if not names:
        return
    foreign = [name for name in names if name not in OWN_FILES and not name.startswith(".toolproof-write-check-")]
    if not foreign and not _is_duckdb(out_dir / "results.duckdb"):
        foreign = [name for name in names if name != ".toolproof.lock"]
    if foreign:
        listed = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise ConfigurationError(
            f"{option} {str(out_dir)!r} holds files toolproof did not write ({listed}): give a new or empty folder,"
            " or --force to write over them"
        )


def _is_duckdb(path: Path) -> bool:
    try:
        with path.open("rb") as stream:
            return stream.read(12)[8:12] == _DUCKDB_MAGIC
    except OSError:
        return False


def shown_database_url(url: str) -> str:
    """A database URL as reports and errors show it: without its password (libpq reads ``PGPASSWORD`` instead)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", "@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def probe_database(url: str) -> None:
    """Refuse a ``--database-url`` that does not answer, or where the crash cells cannot make their schemas, once
    and up front (a driver URL is probed so too), rather than as a failure of every PostgreSQL cell.

    Raises:
        ConfigurationError: in one line, with the database's own first line of why.
    """
    require("psycopg", "--database-url")
    import psycopg  # Optional (the postgres extra), checked just above.

    shown = f"--database-url {shown_database_url(url)!r}"
    try:
        with psycopg.connect(url, connect_timeout=5) as connection:
            row = connection.execute("SELECT has_database_privilege(current_database(), 'CREATE')").fetchone()
    except (psycopg.Error, ValueError) as exc:
        why = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise ConfigurationError(f"{shown}: PostgreSQL does not answer ({why})") from None
    if not row or not row[0]:
        raise ConfigurationError(
            f"{shown}: its role may not create schemas in that database (each PostgreSQL cell makes its own):"
            " grant CREATE on it, or give another database"
        )
