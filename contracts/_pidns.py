"""The confined example's PID namespace and its first process.

The supervisor unshares a PID namespace and forks its first process, ``init`` here, which:

- takes a mount namespace of its own, makes the view its root (``pivot_root``, the rest of the system detached),
  and mounts a ``/proc`` of the new PID namespace, read-only, over the system's: the example then sees, signals
  and reaches through ``/proc/PID/...`` only its own processes;
- waits until the tracer has attached to it, so the example it forks is traced from its first instruction;
- forks the example, then closes every descriptor it inherited from the check (its ``/proc/1/fd`` would reach
  them), which the example waits for before it runs the tool;
- reaps what the example orphans, and when the example ends, ends too: the kernel then ends every process left in
  the namespace.

A process outside the namespace has no pid inside it, so no signal, pidfd or ``/proc`` path of the example can
name one.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Callable
from typing import NoReturn

from ._view import (
    CLONE_NEWNS,
    MNT_DETACH,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    libc_call,
    mount,
)

_SYS_PIVOT_ROOT = 155
"""pivot_root(2) on x86-64 (glibc has no wrapper)."""
_SYS_PIVOT_ROOT_AARCH64 = 41


def die_with_parent() -> None:
    """PR_SET_PDEATHSIG: if the parent dies, this process does not live on unobserved."""
    libc_call("prctl", 1, signal.SIGKILL, 0, 0, 0)


def _pivot_root(root: str) -> None:
    """Make ``root`` (a mount point) this mount namespace's root and detach the old one (pivot_root(".", "."))."""
    os.chdir(root)
    libc = ctypes.CDLL(None, use_errno=True)
    number = _SYS_PIVOT_ROOT_AARCH64 if os.uname().machine in ("aarch64", "arm64") else _SYS_PIVOT_ROOT
    if libc.syscall(number, b".", b".") != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"pivot_root: {os.strerror(code)}")
    libc_call("umount2", b".", MNT_DETACH)
    os.chdir("/")


def run_init(root: str, cwd: str, go: int, example: Callable[[int], NoReturn]) -> NoReturn:
    """Be the namespace's first process (see the module doc); ``go`` is readable once the tracer is attached.

    ``example`` runs in the forked example with the reading end of a pipe that ends (EOF) once this process holds
    nothing of the check's.
    """
    status = 1
    try:
        die_with_parent()
        libc_call("unshare", CLONE_NEWNS)
        mount(None, "/", None, MS_REC | MS_PRIVATE)
        _pivot_root(root)
        libc_call("umount2", b"/proc", MNT_DETACH)
        mount("proc", "/proc", "proc", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
        try:
            os.chdir(cwd)
        except OSError:
            os.chdir("/")
        if os.read(go, 1) != b"g":
            raise OSError("the tracer did not attach")
        released, release = os.pipe()
        child = os.fork()
        if child == 0:  # pragma: no cover - runs in the example
            os.close(release)
            os.close(go)
            example(released)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # the pipe's writing end last among them: the example goes on
        status = 0
        while True:  # reap every orphan until the example itself ends
            try:
                pid, _ = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            if pid == child:
                break
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.write(2, f"toolproof: the confined example's namespace failed: {type(exc).__name__}: {exc}\n".encode())
    os._exit(status)
