"""What a confined example inherits from the check's process, pointed at its view before the tool runs.

A tool module is imported before the check, so its import-time handles (a log file, a state file opened
read-only, a directory, a SQLite connection and its shared memory map, a pipe to a helper, a socket) are open in
the process a confined example is forked from. Each still reaches the real system whatever the view shows: a
write through it, through its ``/proc/self/fd`` link, or relative to an inherited directory lands on the real file.
So, in the example and before the tool runs:

- a descriptor naming a path (a file, a directory, a device) is opened again by that path, now the view's, in its
  mode and at its offset;
- a file with no name any more (a deleted file, a memfd) becomes a private copy, in memory;
- a socket or a pipe is cut: replaced by one of its kind connected to nothing, its inode kept, so a send or a
  write on it is reported as reaching something opened before the check;
- anything else (a pidfd, an eventfd, an epoll instance) becomes ``/dev/null``;
- a shared memory map of a file is mapped again, at the same address, from the view's copy of the file, and a
  shared map with no file becomes private memory with the same bytes.

A file opened for writing or mapped for shared writing is copied into the overlay by its reopening, whether or
not the tool writes it; its state then is the baseline its change is judged against (``file_state``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._view import file_state

_KEPT_FLAGS = os.O_ACCMODE | os.O_APPEND | os.O_SYNC | os.O_DSYNC | os.O_NONBLOCK | os.O_DIRECTORY | os.O_PATH
_COPY_LIMIT = 64 << 20
"""A nameless file up to this size is copied; a larger one becomes /dev/null."""
_PROT_READ, _PROT_WRITE, _PROT_EXEC = 1, 2, 4
_MAP_SHARED, _MAP_FIXED, _MAP_ANONYMOUS = 0x01, 0x10, 0x20


@dataclass
class Inherited:
    """What the example's inherited descriptors and maps were pointed at."""

    files: dict[int, str] = field(default_factory=dict)
    """Descriptors of files outside opened again in the view, by number (any mode)."""
    baselines: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Files copied into the overlay by their reopening (opened for writing, or mapped for shared writing): their
    ``file_state`` at that moment, by path."""
    cut: dict[str, str] = field(default_factory=dict)
    """Sockets and pipes cut: the replacement's inode -> what the original was."""


def repoint_inherited(keep: set[int], skip: Callable[[str], bool]) -> Inherited:
    """Point every inherited descriptor and shared map at the view (see the module doc).

    ``keep`` are descriptors of the harness; the standard input, output and error, under whatever number, are left
    alone; ``skip`` says which paths are the check's own (left alone too).
    """
    found = Inherited()
    streams = set()
    for fd in (1, 2):
        with contextlib.suppress(OSError):
            info = os.fstat(fd)
            streams.add((info.st_dev, info.st_ino))
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd in keep or fd <= 2:
            continue
        try:
            info = os.fstat(fd)
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the listing's own descriptor, closed since
        if (info.st_dev, info.st_ino) in streams:
            continue  # the process's own output, held open again (by a test runner capturing it)
        _repoint(fd, target, info, found, skip)
    _remap_shared(found, skip)
    return found


def _repoint(fd: int, target: str, info: os.stat_result, found: Inherited, skip: Callable[[str], bool]) -> None:
    flags = _fd_flags(fd)
    if stat.S_ISSOCK(info.st_mode):
        found.cut.update(_cut_socket(fd))
    elif stat.S_ISFIFO(info.st_mode):
        found.cut.update(_cut_pipe(fd, flags))
    elif target.startswith("/") and not target.endswith(" (deleted)") and not target.startswith("/memfd:"):
        if skip(target):
            return
        if not _reopen(fd, target, flags):
            _blank(fd)
            return
        found.files[fd] = target
        if stat.S_ISREG(info.st_mode) and flags & os.O_ACCMODE != os.O_RDONLY:
            found.baselines[target] = file_state(fd)
    elif stat.S_ISREG(info.st_mode) and info.st_size <= _COPY_LIMIT:
        _private_copy(fd)
    else:
        _blank(fd)


def _fd_flags(fd: int) -> int:
    with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as info:
        for line in info:
            if line.startswith("flags:"):
                return int(line.split()[1], 8)
    return 0


def _replace(fd: int, fresh: int) -> None:
    os.dup2(fresh, fd, inheritable=os.get_inheritable(fd))
    os.close(fresh)


def _reopen(fd: int, path: str, flags: int) -> bool:
    """Open ``path`` again (in the view) in ``fd``'s mode and at its offset; False when the view has no such file."""
    try:
        fresh = os.open(path, flags & _KEPT_FLAGS | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return False
    with contextlib.suppress(OSError):  # a directory or a device has no offset to keep
        os.lseek(fresh, os.lseek(fd, 0, os.SEEK_CUR), os.SEEK_SET)
    _replace(fd, fresh)
    return True


def _blank(fd: int) -> None:
    _replace(fd, os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC))


def _private_copy(fd: int) -> None:
    """A nameless file (deleted, or a memfd another process may share) becomes a copy in memory."""
    copy = os.memfd_create("toolproof-inherited", os.MFD_CLOEXEC)
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        os.write(copy, chunk)
        offset += len(chunk)
    with contextlib.suppress(OSError):
        os.lseek(copy, os.lseek(fd, 0, os.SEEK_CUR), os.SEEK_SET)
    _replace(fd, copy)


def _cut_socket(fd: int) -> dict[str, str]:
    original = socket.socket(fileno=os.dup(fd))
    try:
        family, kind, proto = original.family, original.type, original.proto
        try:
            peer = original.getpeername()
            was = f"a connection to {peer[0]}:{peer[1]}" if isinstance(peer, tuple) else f"a socket at {peer!r}"
        except OSError:
            was = "a socket"
    finally:
        original.close()
    try:
        fresh = socket.socket(family, kind, proto)
    except OSError:  # a family the example's namespace does not offer: then nothing at all
        _blank(fd)
        return {}
    os.dup2(fresh.fileno(), fd, inheritable=os.get_inheritable(fd))
    fresh.close()
    return {str(os.fstat(fd).st_ino): was}


def _cut_pipe(fd: int, flags: int) -> dict[str, str]:
    """A pipe or FIFO becomes an end of a new pipe: a reading end at its end, a writing end that holds its bytes."""
    read, write = os.pipe()
    writes = flags & os.O_ACCMODE != os.O_RDONLY
    if writes:
        # The reading end stays open in the example, so a write succeeds (up to a pipe's buffer) and is seen.
        os.set_inheritable(read, False)
        _replace(fd, write)
    else:
        os.close(write)
        _replace(fd, read)
    return {str(os.fstat(fd).st_ino): "a pipe"} if writes else {}


# -- shared memory maps ----------------------------------------------------------------------------


def _libc() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return libc


def _shared_maps() -> list[tuple[int, int, int, int, str]]:
    """(start, length, protection, file offset, path or "") of every shared map of this process."""
    found = []
    with open("/proc/self/maps", encoding="utf-8", errors="surrogateescape") as table:
        for line in table:
            fields = line.rstrip("\n").split(maxsplit=5)
            perms = fields[1]
            if perms[3] != "s":
                continue
            start, end = (int(part, 16) for part in fields[0].split("-"))
            prot = (_PROT_READ if perms[0] == "r" else 0) | (_PROT_WRITE if perms[1] == "w" else 0)
            prot |= _PROT_EXEC if perms[2] == "x" else 0
            found.append((start, end - start, prot, int(fields[2], 16), fields[5] if len(fields) > 5 else ""))
    return found


def _remap_shared(found: Inherited, skip: Callable[[str], bool]) -> None:
    libc = None
    for start, length, prot, offset, path in _shared_maps():
        libc = libc or _libc()
        named = path.startswith("/") and not path.endswith(" (deleted)") and not path.startswith("/memfd:")
        if named and skip(path):
            continue
        if not (named and _map_again(libc, start, length, prot, offset, path, found)):
            _map_privately(libc, start, length, prot)


def _map_again(libc: Any, start: int, length: int, prot: int, offset: int, path: str, found: Inherited) -> bool:
    try:
        fd = os.open(path, (os.O_RDWR if prot & _PROT_WRITE else os.O_RDONLY) | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if prot & _PROT_WRITE and path not in found.baselines:
            found.baselines[path] = file_state(fd)
        placed = libc.mmap(start, length, prot, _MAP_SHARED | _MAP_FIXED, fd, offset)
    finally:
        os.close(fd)
    return bool(placed == start)


def _map_privately(libc: Any, start: int, length: int, prot: int) -> None:
    """A shared map with no file of its own (another process may share it) becomes memory of this process alone."""
    data = ctypes.string_at(start, length) if prot & _PROT_READ else b""
    placed = libc.mmap(start, length, _PROT_READ | _PROT_WRITE, _MAP_SHARED | _MAP_ANONYMOUS | _MAP_FIXED, -1, 0)
    if placed != start:
        raise OSError(ctypes.get_errno(), f"cannot map {length} bytes at {start:#x} privately")
    ctypes.memmove(start, data, len(data))
    libc.mprotect(start, length, prot)
