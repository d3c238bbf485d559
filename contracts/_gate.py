"""The audit gate: sees, through ``sys.addaudithook``, what a tool does to files, sockets and processes.

An audit hook cannot be removed, so it is installed once per process and does nothing
unless a check has opened the gate (``watching``). While open, every write to a file,
every socket connect, every name lookup, every process start and every signal sent with
``os.kill`` or ``os.killpg`` is handed to the active ``GateWatch``, which records it and may
refuse it by raising (the exception propagates from the operation, so a refused write never
happens).

Only one check can watch at a time: the hook sees the whole process.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, Protocol

from toolproof.spec import HarnessError


class GateWatch(Protocol):
    """What an open gate reports to; each method may raise to refuse the operation."""

    def file_write(self, op: str, path: str) -> None:
        """A file operation that can change ``path`` (absolute, symlinks resolved)."""
        ...

    def connect(self, op: str, host: str, port: int | None) -> None:
        """A connect, datagram or name lookup towards ``host``."""
        ...

    def process(self, op: str, what: str) -> None:
        """A process start."""
        ...

    def signal(self, op: str, pid: int, number: int) -> None:
        """A signal sent to process (or group) ``pid``."""
        ...


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_lock = threading.Lock()
_installed = False
_watch: GateWatch | None = None
_local = threading.local()


def _resolve(path: Any, dir_fd: Any = None) -> str | None:
    if isinstance(path, int):
        return None  # an open descriptor: the write was judged when it was opened
    text = os.fsdecode(path)
    if not os.path.isabs(text) and isinstance(dir_fd, int) and dir_fd >= 0:
        # Relative to a directory descriptor (shutil.rmtree does this); Linux names it under /proc.
        with suppress(OSError):
            text = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), text)
    return os.path.realpath(text)


def _on_open(watch: GateWatch, args: tuple[Any, ...]) -> None:
    path, mode, flags = args
    writes = (flags & _WRITE_FLAGS) if isinstance(flags, int) else any(c in str(mode) for c in "wax+")
    resolved = _resolve(path)
    if writes and resolved is not None:
        watch.file_write("open for writing", resolved)


def _on_path(op: str, index: int = 0, dir_fd_index: int | None = None) -> Callable[[GateWatch, tuple[Any, ...]], None]:
    def handle(watch: GateWatch, args: tuple[Any, ...]) -> None:
        dir_fd = args[dir_fd_index] if dir_fd_index is not None else None
        resolved = _resolve(args[index], dir_fd)
        if resolved is not None:
            watch.file_write(op, resolved)

    return handle


def _on_sqlite(watch: GateWatch, args: tuple[Any, ...]) -> None:
    database = args[0] if args else None
    if isinstance(database, str | bytes | os.PathLike):
        text = os.fsdecode(database)
        if text and text != ":memory:" and not text.startswith("file:"):
            watch.file_write("open the SQLite database", os.path.realpath(text))


def _on_rename(watch: GateWatch, args: tuple[Any, ...]) -> None:
    for path, dir_fd in ((args[0], args[2]), (args[1], args[3])):
        resolved = _resolve(path, dir_fd)
        if resolved is not None:
            watch.file_write("rename", resolved)


def _on_connect(op: str) -> Callable[[GateWatch, tuple[Any, ...]], None]:
    def handle(watch: GateWatch, args: tuple[Any, ...]) -> None:
        address = args[1]
        if address is None:
            return  # sendmsg on a connected socket: its connect was judged
        if isinstance(address, tuple) and len(address) >= 2:
            watch.connect(op, str(address[0]), int(address[1]))
        else:  # a Unix socket path, or something stranger
            watch.connect(op, os.fsdecode(address) if isinstance(address, str | bytes) else repr(address), None)

    return handle


def _on_lookup(watch: GateWatch, args: tuple[Any, ...]) -> None:
    host = args[0]
    if host not in (None, b"", ""):
        port = args[1] if len(args) > 1 and isinstance(args[1], int) else None
        watch.connect("name lookup", os.fsdecode(host) if isinstance(host, bytes) else str(host), port)


def _on_process(op: str) -> Callable[[GateWatch, tuple[Any, ...]], None]:
    def handle(watch: GateWatch, args: tuple[Any, ...]) -> None:
        first = args[0] if args else ""
        watch.process(op, os.fsdecode(first) if isinstance(first, str | bytes) else type(first).__name__)

    return handle


def _on_signal(op: str) -> Callable[[GateWatch, tuple[Any, ...]], None]:
    def handle(watch: GateWatch, args: tuple[Any, ...]) -> None:
        if len(args) >= 2 and isinstance(args[0], int) and isinstance(args[1], int):
            watch.signal(op, args[0], args[1])

    return handle


_HANDLERS: dict[str, Callable[[GateWatch, tuple[Any, ...]], None]] = {
    "open": _on_open,
    "os.remove": _on_path("remove", 0, 1),
    "os.rmdir": _on_path("remove directory", 0, 1),
    "os.mkdir": _on_path("make directory", 0, 2),
    "os.truncate": _on_path("truncate"),
    "os.symlink": _on_path("symlink", 1, 2),
    "os.link": _on_path("link", 1, 3),
    "os.rename": _on_rename,
    "os.chmod": _on_path("change the mode of", 0, 2),
    "os.chown": _on_path("change the owner of", 0, 3),
    "os.utime": _on_path("change the times of", 0, 3),
    "sqlite3.connect": _on_sqlite,
    "socket.connect": _on_connect("connect"),
    "socket.sendto": _on_connect("send datagram"),
    "socket.sendmsg": _on_connect("send datagram"),
    "socket.getaddrinfo": _on_lookup,
    "socket.gethostbyname": _on_lookup,
    "subprocess.Popen": _on_process("start process"),
    "os.system": _on_process("start process"),
    "os.exec": _on_process("exec"),
    "os.posix_spawn": _on_process("start process"),
    "os.spawn": _on_process("start process"),
    "os.kill": _on_signal("process"),
    "os.killpg": _on_signal("process group"),
}


def _hook(event: str, args: tuple[Any, ...]) -> None:
    watch = _watch
    if watch is None:
        return
    handler = _HANDLERS.get(event)
    # Invariant: the hook never re-enters itself (a watch that touches files must not loop).
    if handler is None or getattr(_local, "busy", False):
        return
    _local.busy = True
    try:
        handler(watch, args)
    finally:
        _local.busy = False


def install() -> None:
    """Install the hook once per process (idempotent)."""
    global _installed
    with _lock:
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True


@contextmanager
def watching(watch: GateWatch) -> Iterator[None]:
    """Open the gate for ``watch`` for the duration of the block."""
    global _watch
    install()
    with _lock:
        if _watch is not None:
            raise HarnessError("a tool contract check is already running in this process: run checks one at a time")
        _watch = watch
    try:
        yield
    finally:
        with _lock:
            _watch = None


def close_if(watch: GateWatch) -> None:
    """Close the gate if ``watch`` still holds it (used when a tool is abandoned mid-run)."""
    global _watch
    with _lock:
        if _watch is watch:
            _watch = None
