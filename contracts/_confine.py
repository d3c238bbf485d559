"""Confinement at the operating-system boundary: namespaces, an overlay view of the system, a tracer.

A confined example runs in four processes forked from the check:

- the *supervisor* enters a private mount namespace, lays an overlay over every writable
  file system (their upper layers on a private tmpfs) and read-only binds over the
  pseudo file systems, binds the example's workspace in read-write, and joins the check's
  private network namespace, whose only addresses are loopback and ``NetNamespace.TARGET``;
- the *tracer* chroots into that view and runs ``strace -f`` on the namespace's first
  process, so every system call that can leave a mark, by the tool, by native code, or by
  any process it starts, is logged in order with the paths and sockets it touched;
- the namespace's first process (``_pidns``), in a PID namespace of its own, makes the view
  its root, mounts the namespace's own ``/proc`` and, once traced, forks
- the *example*, which points what it inherited at the view (``_inherited``) and runs the tool.

Nothing the tool writes outside the workspace reaches the real system: it lands in an
upper layer, which the supervisor lists (data, metadata, new and removed files) once the
example has ended. Nothing it sends leaves the namespace, and no process outside the PID
namespace can be signalled from it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import socket
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

from ._pidns import die_with_parent, run_init
from ._view import CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWPID, MS_PRIVATE, MS_REC, build_view, changes, libc_call, mount

_TRACED_WAIT_S = 10.0

TRACED_CALLS = (
    "?open,openat,?openat2,?creat,write,pwrite64,writev,pwritev,?pwritev2,sendfile,copy_file_range,"
    "?truncate,ftruncate,fallocate,?rename,renameat,?renameat2,?unlink,unlinkat,?mkdir,mkdirat,?rmdir,"
    "?link,linkat,?symlink,symlinkat,?mknod,mknodat,?chmod,fchmod,fchmodat,?chown,fchown,?lchown,fchownat,"
    "?utime,?utimes,utimensat,?futimesat,setxattr,lsetxattr,fsetxattr,removexattr,lremovexattr,"
    "fremovexattr,mmap,socket,connect,sendto,sendmsg,sendmmsg,execve,execveat,chdir,fchdir,clone,?clone3,?fork,"
    "?vfork,kill,tkill,tgkill,rt_sigqueueinfo,rt_tgsigqueueinfo,?pidfd_open,?pidfd_send_signal"
)
"""The system calls the tracer logs: every one that can leave a mark, connect, send, signal, or start a program."""

# -- availability --------------------------------------------------------------------------------

_probed: list[str | None] = []


def confinement_unavailable() -> str | None:
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
                libc_call("unshare", CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID)
                mount(None, "/", None, MS_REC | MS_PRIVATE)
                layers, lower, merged = (os.path.join(scratch, name) for name in ("layers", "lower", "merged"))
                for folder in (layers, lower, merged):
                    os.mkdir(folder)
                mount("tmpfs", layers, "tmpfs", 0, "mode=0700")
                os.mkdir(f"{layers}/upper")
                os.mkdir(f"{layers}/work")
                mount(
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
                libc_call("unshare", CLONE_NEWNET)
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


# -- the four processes ------------------------------------------------------------------------------


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

    @property
    def init_pid(self) -> Path:
        """Where the supervisor writes the pid (in the check's namespace) of the namespace's first process."""
        return self.folder / "init.pid"


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
        die_with_parent()
        os.setpgid(0, 0)
        overlays = build_view(layout.layers, layout.merged, str(layout.workspace))
        libc_call("setns", layout.net_fd, CLONE_NEWNET)
        tracer_reads, to_tracer = os.pipe()
        tracer = os.fork()
        if tracer == 0:
            _run_tracer(layout, tracer_reads)
        os.close(tracer_reads)
        go_reads, go = os.pipe()
        libc_call("unshare", CLONE_NEWPID)  # the next child is the namespace's first process
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            init = os.fork()
        if init == 0:
            os.close(go)
            harness = [*close_in_example, layout.trace_fd, layout.net_fd, to_tracer]
            run_init(layout.merged, os.getcwd(), go_reads, lambda released: _run_example(example, released, harness))
        os.close(go_reads)
        layout.init_pid.write_text(str(init), encoding="ascii")
        os.write(to_tracer, str(init).encode())
        os.close(to_tracer)
        _wait_traced(init)
        os.write(go, b"g")
        os.close(go)
        os.waitpid(init, 0)  # the namespace, and whatever the tool left in it, ends with its first process
        os.waitpid(tracer, 0)
        layout.changes.write_text(json.dumps(changes(overlays)), encoding="utf-8")
        status = 0
    except BaseException as exc:
        try:
            layout.changes.write_text(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), encoding="utf-8")
        finally:
            os._exit(status)
    os._exit(status)


def _wait_traced(pid: int) -> None:
    deadline = time.monotonic() + _TRACED_WAIT_S
    while not _traced(pid):
        if time.monotonic() > deadline:
            raise HarnessError(f"the tracer did not attach within {_TRACED_WAIT_S}s")
        time.sleep(0.001)


def _traced(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("TracerPid:"):
                    return line.split()[1] != "0"
    except FileNotFoundError:
        raise HarnessError("the namespace's first process ended before it was traced") from None
    return False


def _run_example(example: Callable[[], int], released: int, harness: list[int]) -> NoReturn:
    status = 70
    try:
        die_with_parent()
        os.setpgid(0, 0)  # the tool's own processes share this group
        for fd in harness:
            with contextlib.suppress(OSError):
                os.close(fd)
        while os.read(released, 1):
            pass  # the namespace's first process closes what it held of the check's; then the tool may run
        os.close(released)
        sys.dont_write_bytecode = True
        status = example()
    except BaseException as exc:
        os.write(2, f"toolproof: the confined example failed: {type(exc).__name__}: {exc}\n".encode())
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(status)


def _run_tracer(layout: Layout, reads_pid: int) -> NoReturn:
    try:
        pid = int(os.read(reads_pid, 32) or b"0")
        os.close(reads_pid)
        cwd = os.getcwd()
        os.chroot(layout.merged)
        try:
            os.chdir(cwd)
        except OSError:
            os.chdir("/")
        out = f"/proc/self/fd/{layout.trace_fd}"
        command = ["strace", "-f", "-q", "-yy", "-s", "96", "-e", f"trace={TRACED_CALLS}", "-e", "signal=none"]
        os.execvp("strace", [*command, "-o", out, "-p", str(pid)])
    finally:
        os._exit(71)


def stop(layout: Layout) -> None:
    """End a confined example that will not stop: its namespace's first process, and with it every process in it."""
    with contextlib.suppress(OSError, ValueError):
        os.kill(int(layout.init_pid.read_text(encoding="ascii")), signal.SIGKILL)


def errno_name(code: int) -> str:
    """``EROFS`` for 30."""
    return errno.errorcode.get(code, str(code))
