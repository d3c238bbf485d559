"""Confinement at the operating-system boundary: namespaces, an overlay view of the system, a tracer.

A confined example runs in three processes forked from the check:

- the *supervisor* enters a private mount namespace, lays an overlay over every writable
  file system (their upper layers on a private tmpfs) and read-only binds over the
  pseudo file systems, binds the example's workspace in read-write, and joins the check's
  private network namespace, whose only addresses are loopback and ``NetNamespace.TARGET``;
- the *example* chroots into that view, waits until it is traced, and runs the tool;
- the *tracer* chroots into the same view and runs ``strace -f`` on the example, so every
  system call that can leave a mark, by the tool, by native code, or by any process it
  starts, is logged in order with the paths and sockets it touched.

Nothing the tool writes outside the workspace reaches the real system: it lands in an
upper layer, which the supervisor lists (data, metadata, new and removed files) once the
example has ended. Nothing it sends leaves the namespace.
"""

from __future__ import annotations

import ctypes
import errno
import filecmp
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from toolproof.spec import HarnessError

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_PSEUDO = frozenset({"proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "debugfs", "tracefs", "securityfs"})
_PSEUDO |= frozenset({"pstore", "bpf", "configfs", "fusectl", "hugetlbfs", "binfmt_misc", "autofs", "efivarfs"})
_TRACED_WAIT_S = 10.0

TRACED_CALLS = (
    "?open,openat,?openat2,?creat,write,pwrite64,writev,pwritev,?pwritev2,sendfile,copy_file_range,"
    "?truncate,ftruncate,fallocate,?rename,renameat,?renameat2,?unlink,unlinkat,?mkdir,mkdirat,?rmdir,"
    "?link,linkat,?symlink,symlinkat,?mknod,mknodat,?chmod,fchmod,fchmodat,?chown,fchown,?lchown,fchownat,"
    "?utime,?utimes,utimensat,?futimesat,setxattr,lsetxattr,fsetxattr,removexattr,lremovexattr,"
    "fremovexattr,mmap,connect,sendto,sendmsg,sendmmsg,execve,execveat,chdir,fchdir,clone,?clone3,?fork,?vfork"
)
"""The system calls the tracer logs: every one that can leave a mark, connect, send, or start a program."""

_libc: Any = None


def _call(name: str, *args: Any) -> None:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    if getattr(_libc, name)(*args) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{name}: {os.strerror(code)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    encode = lambda text: None if text is None else os.fsencode(text)  # noqa: E731 - four arguments alike
    _call("mount", encode(source), encode(target), encode(fstype), flags, encode(data))


# -- availability --------------------------------------------------------------------------------

_probed: list[str | None] = []


def unavailable() -> str | None:
    """Why confinement cannot be used here (one line), or None when it can. Probed once per process."""
    if not _probed:
        _probed.append(_probe())
    return _probed[0]


def _probe() -> str | None:
    if not sys.platform.startswith("linux"):
        return f"confinement needs Linux namespaces, and this is {sys.platform}"
    for program, package in (("strace", "strace"), ("ip", "iproute2")):
        if shutil.which(program) is None:
            return f"{program} is not installed (Debian package {package})"
    scratch = tempfile.mkdtemp(prefix="toolproof-probe-")
    read, write = os.pipe()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through the pipe
            os.close(read)
            try:
                _call("unshare", CLONE_NEWNS | CLONE_NEWNET)
                _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
                layers, lower, merged = (os.path.join(scratch, name) for name in ("layers", "lower", "merged"))
                for folder in (layers, lower, merged):
                    os.mkdir(folder)
                _mount("tmpfs", layers, "tmpfs", 0, "mode=0700")
                os.mkdir(f"{layers}/upper")
                os.mkdir(f"{layers}/work")
                _mount(
                    "overlay", merged, "overlay", 0, f"lowerdir={lower},upperdir={layers}/upper,workdir={layers}/work"
                )
                os.write(write, b"ok")
            except BaseException as exc:
                os.write(write, f"{exc}".encode()[:300])
            os._exit(0)
        os.close(write)
        answer = os.read(read, 400).decode(errors="replace")
        os.waitpid(pid, 0)
    finally:
        os.close(read)
        shutil.rmtree(scratch, ignore_errors=True)
    if answer != "ok":
        return f"namespaces or overlay mounts are not permitted here ({answer or 'the probe died'})"
    return None


# -- the network namespace -------------------------------------------------------------------------


class NetNamespace:
    """A private network namespace: loopback, and ``TARGET``, where the recording service listens."""

    ADDRESS = "192.0.2.10"
    """The target's address (TEST-NET-1, RFC 5737): routed to the recording service, inside the namespace only."""
    PORT = 8080
    """The target's port, TCP and UDP."""

    def __init__(self) -> None:
        made: dict[str, Any] = {}

        def make() -> None:
            # Namespaces belong to a thread: this one enters a new network namespace and ends there.
            try:
                _call("unshare", CLONE_NEWNET)
                for command in (["link", "set", "lo", "up"], ["addr", "add", f"{self.ADDRESS}/32", "dev", "lo"]):
                    subprocess.run(["ip", *command], check=True, capture_output=True, timeout=10)
                made["fd"] = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
                tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                tcp.bind((self.ADDRESS, self.PORT))
                udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                udp.bind((self.ADDRESS, self.PORT))
                made["sockets"] = (tcp, udp)
            except (OSError, subprocess.SubprocessError) as exc:
                made["error"] = exc

        thread = threading.Thread(target=make, name="toolproof-netns")
        thread.start()
        thread.join()
        if "error" in made:
            if "fd" in made:
                os.close(made["fd"])
            raise HarnessError(f"cannot set up the check's network namespace: {made['error']}")
        self.fd: int = made["fd"]
        self._sockets: tuple[socket.socket, socket.socket] = made["sockets"]

    @property
    def target(self) -> str:
        """The base URL handed to tools as ``context.target``."""
        return f"http://{self.ADDRESS}:{self.PORT}"

    def sockets(self) -> tuple[socket.socket, socket.socket]:
        """The TCP listener and the UDP socket of the target, bound inside the namespace."""
        return self._sockets

    def close(self) -> None:
        """Let the namespace go once the service's sockets are closed."""
        os.close(self.fd)


# -- the three processes -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """Where one confined example lives (all inside its example folder)."""

    folder: Path
    workspace: Path
    net_fd: int
    trace_fd: int
    """Where the tracer writes its log (an open file the example never sees)."""
    changes: Path
    """Where the supervisor writes the overlay's changes (JSON)."""

    @property
    def merged(self) -> str:
        """The example's root: the overlay view of the system."""
        return str(self.folder / "view")

    @property
    def layers(self) -> str:
        """The tmpfs holding the upper layers."""
        return str(self.folder / "layers")


def launch(layout: Layout, example: Callable[[], int], close_in_example: list[int]) -> int:
    """Fork the supervisor of one confined example; return its pid (it leads its own process group).

    ``example`` runs in the example process once it is traced and returns its exit status;
    ``close_in_example`` are harness descriptors the example must not hold.
    """
    for name in ("view", "layers"):
        (layout.folder / name).mkdir()
    with warnings.catch_warnings():
        # The check's process has threads (the recording service); the children only use what they set up.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        _supervise(layout, example, close_in_example)
    return pid


def _supervise(layout: Layout, example: Callable[[], int], close_in_example: list[int]) -> NoReturn:
    status = 1
    try:
        os.setpgid(0, 0)
        overlays = _build_view(layout)
        _call("setns", layout.net_fd, CLONE_NEWNET)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            child = os.fork()
        if child == 0:
            _run_example(layout, example, close_in_example)
        tracer = os.fork()
        if tracer == 0:
            _run_tracer(layout, child)
        os.waitpid(child, 0)
        # A process the tool started and left running ends with the example.
        try:
            os.killpg(child, 9)
        except ProcessLookupError:
            pass
        os.waitpid(tracer, 0)
        layout.changes.write_text(json.dumps(_changes(overlays)), encoding="utf-8")
        status = 0
    except BaseException as exc:
        try:
            layout.changes.write_text(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), encoding="utf-8")
        finally:
            os._exit(status)
    os._exit(status)


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


def _build_view(layout: Layout) -> list[tuple[str, str]]:
    """Mount the example's view of the system; return (mount point, upper layer) per overlay."""
    _call("unshare", CLONE_NEWNS)
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    table = _mount_table()
    _mount("tmpfs", layout.layers, "tmpfs", 0, "mode=0700")
    overlays: list[tuple[str, str]] = []
    own = (layout.layers, layout.merged)
    for index, (point, fstype, options) in enumerate(table):
        if any(point == mine or point.startswith(mine + "/") for mine in own):
            continue
        target = layout.merged + ("" if point == "/" else point)
        if not os.path.isdir(target):
            continue  # its parent is a file system whose view hides it
        keep = (_MS_NOSUID if "nosuid" in options else 0) | (_MS_NODEV if "nodev" in options else 0)
        keep |= _MS_NOEXEC if "noexec" in options else 0
        if fstype in _PSEUDO or "ro" in options or any(c in point for c in ",:\\"):
            _mount(point, target, None, _MS_BIND)
            if fstype != "devpts":
                _mount(None, target, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | keep)
            continue
        upper, work = f"{layout.layers}/{index}/upper", f"{layout.layers}/{index}/work"
        os.makedirs(upper)
        os.makedirs(work)
        _mount("overlay", target, "overlay", keep, f"lowerdir={point},upperdir={upper},workdir={work}")
        overlays.append((point, upper))
    _mount(str(layout.workspace), layout.merged + str(layout.workspace), None, _MS_BIND)
    return overlays


def _enter_view(layout: Layout) -> None:
    cwd = os.getcwd()
    os.chroot(layout.merged)
    try:
        os.chdir(cwd)
    except OSError:
        os.chdir("/")


def _run_example(layout: Layout, example: Callable[[], int], close_in_example: list[int]) -> NoReturn:
    status = 70
    try:
        os.setpgid(0, 0)  # the tool's own processes share this group, ended with the example
        for fd in (*close_in_example, layout.trace_fd, layout.net_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        _enter_view(layout)
        sys.dont_write_bytecode = True
        deadline = time.monotonic() + _TRACED_WAIT_S
        while not _traced():
            if time.monotonic() > deadline:
                raise HarnessError(f"the tracer did not attach within {_TRACED_WAIT_S}s")
            time.sleep(0.001)
        status = example()
    except BaseException as exc:
        os.write(2, f"toolproof: the confined example failed: {type(exc).__name__}: {exc}\n".encode())
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(status)


def _traced() -> bool:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("TracerPid:"):
                return line.split()[1] != "0"
    return False


def _run_tracer(layout: Layout, child: int) -> NoReturn:
    try:
        _enter_view(layout)
        out = f"/proc/self/fd/{layout.trace_fd}"
        command = ["strace", "-f", "-q", "-yy", "-s", "96", "-e", f"trace={TRACED_CALLS}", "-e", "signal=none"]
        os.execvp("strace", [*command, "-o", out, "-p", str(child)])
    finally:
        os._exit(71)


# -- what changed under the overlay ---------------------------------------------------------------


def _changes(overlays: list[tuple[str, str]]) -> list[dict[str, Any]]:
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
    its kind. Returns the re-pointed files (descriptor -> path) and the cut sockets
    (the replacement's inode -> what the original was connected to).
    """
    files: dict[int, str] = {}
    cut: dict[str, str] = {}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd in keep or fd <= 2:
            continue
        try:
            info = os.fstat(fd)
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
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


def kill_group(pid: int) -> None:
    """End a process group (an example that will not stop)."""
    try:
        os.killpg(pid, 9)
    except (ProcessLookupError, PermissionError):
        pass


def errno_name(code: int) -> str:
    """``EROFS`` for 30."""
    return errno.errorcode.get(code, str(code))
