"""One run at a time per results folder: a second run into a folder in use is refused in one line."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from toolproof.spec import ConfigurationError

LOCK_FILE = ".toolproof.lock"
"""Held (an exclusive advisory lock) by the run writing the folder; holds that run's process id."""


@contextmanager
def hold_out_dir(out_dir: Path) -> Iterator[None]:
    """Hold ``out_dir`` for one run, from before its scenarios start until its files are written.

    Two runs into one folder at once would each report files the other may have written last: the second is
    refused instead, before it runs anything.

    Raises:
        ConfigurationError: another process holds the folder.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no advisory locks, and no refusal
        yield
        return
    path = out_dir / LOCK_FILE
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    held = False
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held = True
        except BlockingIOError:
            holder = os.read(descriptor, 32).decode(errors="replace").strip() or "unknown"
            raise ConfigurationError(
                f"--out {str(out_dir)!r} is in use by another toolproof run (process {holder}): wait for it to end,"
                " or give another folder"
            ) from None
        os.ftruncate(descriptor, 0)
        os.write(descriptor, str(os.getpid()).encode())
        yield
    finally:
        if held:  # The folder is left as the run wrote it: no lock file once nobody holds it.
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        os.close(descriptor)  # Closing releases the lock.
