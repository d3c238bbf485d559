"""A server's own words as the check-server report shows them: escaped, cut short, one line."""

from __future__ import annotations

TEXT_SHOWN = 160
"""How many characters of a server's text a summary shows (escaped)."""
FAILURE_SHOWN = 480
"""How many characters of a failure a summary shows: the adapter's open error is long (the era asked, the server's
answer, the fix, the cause), and its fix comes last but one."""


def shown(text: str, limit: int = TEXT_SHOWN) -> str:
    """External text as a summary may show it: control characters escaped, cut to ``limit``."""
    escaped = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return escaped if len(escaped) <= limit else escaped[:limit] + "…"


def _leaf(exc: BaseException) -> BaseException:
    # The first exception inside (nested) groups: a task group wraps whatever its tasks raise.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def failure_line(exc: BaseException) -> str:
    """One line: the exception, and what it hid (a group's first member, or a suppressed context)."""
    leaf = _leaf(exc)
    words = str(leaf).strip().splitlines()
    line = f"{type(leaf).__name__}: {shown(words[0], FAILURE_SHOWN) if words else '(no message)'}"
    hidden = leaf.__cause__ or leaf.__context__
    inner = _leaf(hidden) if hidden is not None else leaf
    said = str(inner).strip().splitlines()
    if inner is not leaf and said and said[0] not in line:  # A re-raise can make an exception its own context.
        line += f" (cause: {type(inner).__name__}: {shown(said[0])})"
    return line
