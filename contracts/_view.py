"""The example's view of the system: an overlay over every writable file system, and what changed under it.

The supervisor mounts the view in its private mount namespace: each writable file system
gets an overlay whose upper layer lives on a private tmpfs, pseudo and read-only file systems
are bound read-only (``devpts`` stays writable, for terminals), and the example's workspace
is bound in read-write. After the example the upper layers are compared with the real files
below them, so a change outside the workspace (data, mode, owner, times, a new or removed
file) is listed, never made. Descriptors and maps the example inherited are pointed at the
view too (``_inherited``).
"""

from __future__ import annotations

import ctypes
import filecmp
import hashlib
import os
import stat
from typing import Any

CLONE_NEWNS = 0x00020000
"""unshare(2): a new mount namespace."""
CLONE_NEWNET = 0x40000000
"""unshare(2): a new network namespace."""
CLONE_NEWPID = 0x20000000
"""unshare(2): a new PID namespace (for the caller's next children)."""
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
"""umount2(2): detach now, however busy."""
DIGEST_LIMIT = 64 << 20
"""Files up to this size are compared by content digest when a baseline is kept (``file_state``)."""

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


def build_view(layers: str, merged: str, workspace: str) -> list[tuple[str, str]]:
    """Mount the example's view of the system at ``merged``, upper layers on a tmpfs at ``layers``, the real
    ``workspace`` bound in; return (mount point, upper layer) per overlay."""
    libc_call("unshare", CLONE_NEWNS)
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    table = _mount_table()
    mount("tmpfs", layers, "tmpfs", 0, "mode=0700")
    overlays: list[tuple[str, str]] = []
    own = (layers, merged)
    for index, (point, fstype, options) in enumerate(table):
        if any(point == mine or point.startswith(mine + "/") for mine in own):
            continue
        target = merged + ("" if point == "/" else point)
        if not os.path.isdir(target):
            continue  # its parent is a file system whose view hides it
        keep = (MS_NOSUID if "nosuid" in options else 0) | (MS_NODEV if "nodev" in options else 0)
        keep |= MS_NOEXEC if "noexec" in options else 0
        if fstype in _PSEUDO or "ro" in options or any(c in point for c in ",:\\"):
            mount(point, target, None, MS_BIND)
            if fstype != "devpts":
                mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | keep)
            continue
        upper, work = f"{layers}/{index}/upper", f"{layers}/{index}/work"
        os.makedirs(upper)
        os.makedirs(work)
        mount("overlay", target, "overlay", keep, f"lowerdir={point},upperdir={upper},workdir={work}")
        overlays.append((point, upper))
    mount(workspace, merged + workspace, None, MS_BIND)
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
                    if change["change"] == "changed" and os.path.isfile(entry) and not os.path.islink(entry):
                        change["state"] = file_state(entry)
                    found.append({"path": path, **change})
    return sorted(found, key=lambda change: change["path"])


def file_state(where: str | int) -> dict[str, Any]:
    """What a file's change is judged on: size, mode, owner, modification time, and its digest when it is small.

    ``where`` is a path or an open descriptor (of any mode: it is read through its ``/proc/self/fd`` link).
    """
    info = os.stat(where) if isinstance(where, int) else os.lstat(where)
    state: dict[str, Any] = {
        "size": info.st_size,
        "mode": stat.S_IMODE(info.st_mode),
        "owner": [info.st_uid, info.st_gid],
        "mtime_ns": info.st_mtime_ns,
        "sha256": None,
    }
    if info.st_size <= DIGEST_LIMIT:
        path = f"/proc/self/fd/{where}" if isinstance(where, int) else where
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            digest, offset = hashlib.sha256(), 0
            while chunk := os.pread(fd, 1 << 20, offset):
                digest.update(chunk)
                offset += len(chunk)
            state["sha256"] = digest.hexdigest()
        finally:
            os.close(fd)
    return state


def aspects_since(baseline: dict[str, Any], now: dict[str, Any] | None) -> list[str]:
    """What changed in a file between two ``file_state`` readings (no reading now: its data, to be safe).

    A file too large for a digest is taken to have new data when its size or modification time changed.
    """
    if now is None:
        return ["data"]
    aspects = []
    if baseline["sha256"] is None or now["sha256"] is None:
        data = now["size"] != baseline["size"] or now["mtime_ns"] != baseline["mtime_ns"]
    else:
        data = now["size"] != baseline["size"] or now["sha256"] != baseline["sha256"]
    if data:
        aspects.append("data")
    if now["mode"] != baseline["mode"]:
        aspects.append("mode")
    if now["owner"] != baseline["owner"]:
        aspects.append("owner")
    if now["mtime_ns"] != baseline["mtime_ns"]:
        aspects.append("times")
    return aspects


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
