"""The example's view of the system: an overlay over every writable file system, and what changed under it.

The supervisor mounts the view in its private mount namespace: each writable file system
gets an overlay whose upper layer lives on a private tmpfs, pseudo and read-only file systems
are bound read-only (``devpts`` stays writable, for terminals), and the example's workspace
is bound in read-write. After the example the upper layers are compared with the real files
below them, so a change outside the workspace (data, mode, owner, times, a new or removed
file) is listed, never made. Descriptors the example inherited are pointed at the view too.
"""

from __future__ import annotations

import contextlib
import ctypes
import filecmp
import os
import socket
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._confine import Layout

CLONE_NEWNS = 0x00020000
"""unshare(2): a new mount namespace."""
CLONE_NEWNET = 0x40000000
"""unshare(2): a new network namespace."""
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18

_PSEUDO = frozenset({"proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "debugfs", "tracefs", "securityfs"})
_PSEUDO |= frozenset({"pstore", "bpf", "configfs", "fusectl", "hugetlbfs", "binfmt_misc", "autofs", "efivarfs"})

_libc: Any = None


def libc_call(name: str, *args: Any) -> None:
    """Call a libc function that returns 0 on success (``unshare``, ``setns``, ``mount``); raise OSError otherwise."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    if getattr(_libc, name)(*args) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{name}: {os.strerror(code)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    """mount(2)."""
    libc_call("mount", _encode(source), _encode(target), _encode(fstype), flags, _encode(data))


def _encode(text: str | None) -> bytes | None:
    return None if text is None else os.fsencode(text)


def _mount_table() -> list[tuple[str, str, set[str]]]:
    """Mount points (topmost at each path), their file system types and options, parents first."""
    found: dict[str, tuple[str, set[str]]] = {}
    with open("/proc/self/mountinfo", encoding="utf-8") as table:
        for line in table:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")
            fstype = fields[fields.index("-") + 1]
            found[point] = (fstype, set(fields[5].split(",")))  # a later line is mounted on top
    ordered = sorted(found, key=lambda point: (0 if point == "/" else point.count("/"), point))
    return [(point, *found[point]) for point in ordered]


def build_view(layout: Layout) -> list[tuple[str, str]]:
    """Mount the example's view of the system; return (mount point, upper layer) per overlay."""
    libc_call("unshare", CLONE_NEWNS)
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    table = _mount_table()
    mount("tmpfs", layout.layers, "tmpfs", 0, "mode=0700")
    overlays: list[tuple[str, str]] = []
    own = (layout.layers, layout.merged)
    for index, (point, fstype, options) in enumerate(table):
        if any(point == mine or point.startswith(mine + "/") for mine in own):
            continue
        target = layout.merged + ("" if point == "/" else point)
        if not os.path.isdir(target):
            continue  # its parent is a file system whose view hides it
        keep = (MS_NOSUID if "nosuid" in options else 0) | (MS_NODEV if "nodev" in options else 0)
        keep |= MS_NOEXEC if "noexec" in options else 0
        if fstype in _PSEUDO or "ro" in options or any(c in point for c in ",:\\"):
            mount(point, target, None, MS_BIND)
            if fstype != "devpts":
                mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | keep)
            continue
        upper, work = f"{layout.layers}/{index}/upper", f"{layout.layers}/{index}/work"
        os.makedirs(upper)
        os.makedirs(work)
        mount("overlay", target, "overlay", keep, f"lowerdir={point},upperdir={upper},workdir={work}")
        overlays.append((point, upper))
    mount(str(layout.workspace), layout.merged + str(layout.workspace), None, MS_BIND)
    return overlays


# -- what changed under the overlay ---------------------------------------------------------------


def changes(overlays: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Every change an upper layer holds, compared with the real file below it, sorted by path."""
    found: list[dict[str, Any]] = []
    for point, upper in overlays:
        for directory, dirs, files in os.walk(upper):
            for name in [*dirs, *files]:
                entry = os.path.join(directory, name)
                relative = os.path.relpath(entry, upper)
                if "__pycache__" in relative.split(os.sep):
                    continue
                path = os.path.normpath(os.path.join(point, relative))
                change = _compare(entry, path)
                if change is not None:
                    found.append({"path": path, **change})
    return sorted(found, key=lambda change: change["path"])


def _compare(upper: str, lower: str) -> dict[str, Any] | None:
    info = os.lstat(upper)
    try:
        below = os.lstat(lower)
    except FileNotFoundError:
        below = None
    if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:
        return {"change": "removed", "aspects": []} if below is not None else None
    if below is None:
        return {"change": "created", "aspects": []}
    aspects: list[str] = []
    if stat.S_IFMT(info.st_mode) != stat.S_IFMT(below.st_mode):
        return {"change": "replaced", "aspects": []}
    if stat.S_ISDIR(info.st_mode):
        try:
            if os.getxattr(upper, "trusted.overlay.opaque", follow_symlinks=False) == b"y":
                return {"change": "replaced", "aspects": []}
        except OSError:
            pass
    elif stat.S_ISLNK(info.st_mode):
        if os.readlink(upper) != os.readlink(lower):
            aspects.append("data")
    elif stat.S_ISREG(info.st_mode) and (info.st_size != below.st_size or not filecmp.cmp(upper, lower, False)):
        aspects.append("data")
    if stat.S_IMODE(info.st_mode) != stat.S_IMODE(below.st_mode):
        aspects.append("mode")
    if (info.st_uid, info.st_gid) != (below.st_uid, below.st_gid):
        aspects.append("owner")
    # A directory's times change whenever an entry in it does: only a file's times are its own change.
    if not stat.S_ISDIR(info.st_mode) and info.st_mtime_ns != below.st_mtime_ns:
        aspects.append("times")
    return {"change": "changed", "aspects": aspects} if aspects else None


def describe_changes(changes: list[dict[str, Any]]) -> str:
    """The overlay's changes as the report shows them: ``changed '~/app.log' (data, times); created '/var/x'``."""
    parts = []
    for change in changes:
        aspects = f" ({', '.join(change['aspects'])})" if change["aspects"] else ""
        parts.append(f"{change['change']} {change['path']!r}{aspects}")
    return "; ".join(parts)


def repoint_inherited(keep: set[int], inside: Callable[[str], bool]) -> tuple[dict[int, str], dict[str, str]]:
    """Point the example's inherited descriptors at its view, so nothing opened earlier writes to the real system.

    A regular file open for writing outside the workspace is opened again by its path (now
    the overlay's) in its mode and at its offset; a socket is replaced by an unconnected one of
    its kind. The standard output and error, under whatever number, are left alone. Returns the re-pointed files (descriptor -> path) and the cut sockets
    (the replacement's inode -> what the original was connected to).
    """
    files: dict[int, str] = {}
    cut: dict[str, str] = {}
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
            continue
        if (info.st_dev, info.st_ino) in streams:
            continue  # the process's own output, held open again (by a test runner capturing it)
        if stat.S_ISSOCK(info.st_mode):
            cut.update(_cut_socket(fd))
        elif stat.S_ISREG(info.st_mode) and target.startswith("/") and not inside(target):
            flags = _fd_flags(fd)
            if flags & (os.O_WRONLY | os.O_RDWR) and not target.endswith(" (deleted)"):
                _reopen(fd, target, flags)
                files[fd] = target
    return files, cut


def _fd_flags(fd: int) -> int:
    with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as info:
        for line in info:
            if line.startswith("flags:"):
                return int(line.split()[1], 8)
    return 0


def _reopen(fd: int, path: str, flags: int) -> None:
    offset = os.lseek(fd, 0, os.SEEK_CUR)
    keep = flags & (os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_SYNC | os.O_DSYNC)
    fresh = os.open(path, keep)
    os.lseek(fresh, offset, os.SEEK_SET)
    os.dup2(fresh, fd, inheritable=os.get_inheritable(fd))
    os.close(fresh)


def _cut_socket(fd: int) -> dict[str, str]:
    original = socket.socket(fileno=os.dup(fd))
    try:
        family, kind = original.family, original.type
        try:
            peer = original.getpeername()
            was = f"a connection to {peer[0]}:{peer[1]}" if isinstance(peer, tuple) else f"a socket at {peer!r}"
        except OSError:
            was = "a socket"
    finally:
        original.close()
    fresh = socket.socket(family, kind)
    os.dup2(fresh.fileno(), fd, inheritable=os.get_inheritable(fd))
    fresh.close()
    return {str(os.fstat(fd).st_ino): was}
