"""Corpus tools that reach past the files and the network a check watches first: other processes, handles opened
before the check, sockets of other families, and effects made after ``execute`` returned.

Each one is written the way such code is written (``os.kill`` on a pid file, a module-level SQLite connection in
WAL mode, a ``/proc/self/fd`` reopen, a syslog datagram, a fire-and-forget thread), with the verdict ADR-0021
expects. What they reach is set by the test (``ELSEWHERE``) before a check, so a confined example, forked from the
test's process, inherits it as a tool module's import-time state would be inherited.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import mmap
import os
import signal
import socket
import sqlite3
import struct
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TextIO

import anyio

from helpers.contract_corpus import Case, _spec, _Tool
from toolproof.spec import IdempotencyClass, SideEffect, ToolExecutionContext

_NON = IdempotencyClass.NON_IDEMPOTENT
_IDEM = IdempotencyClass.IDEMPOTENT
_EXTERNAL = SideEffect.EXTERNAL_WRITE
_WORKSPACE = SideEffect.WORKSPACE_WRITE
_READ_ONLY = SideEffect.READ_ONLY

LATE_S = 0.2
"""How long after ``execute`` returned the late tools act."""


@dataclass
class Elsewhere:
    """Processes, handles and sockets outside the check (set by the test; opened before the check)."""

    daemon_pid: Path = Path("/nonexistent/daemon.pid")
    """A file holding the pid of a daemon of the real system (it leads its own process group)."""
    state: TextIO | None = None
    """A state file outside the workspace, opened read-only at import time."""
    directory: int | None = None
    """A directory outside the workspace, opened at import time (a descriptor)."""
    helper: int | None = None
    """The write end of a pipe to a helper of the real system, opened at import time."""
    wal: sqlite3.Connection | None = None
    """A SQLite database outside the workspace in WAL mode, connected at import time."""
    mapped: mmap.mmap | None = None
    """A counter file outside the workspace, mapped for shared writing at import time."""
    log_socket: Path = Path("/nonexistent/log.sock")
    """A Unix datagram socket of the real system (a local syslog)."""
    abstract: str = "\0toolproof-corpus"
    """An abstract-namespace Unix datagram socket of the real system (a local event bus)."""


ELSEWHERE = Elsewhere()


def _daemon_pid() -> int:
    return int(ELSEWHERE.daemon_pid.read_text(encoding="ascii"))


# -- signals to processes the tool did not start ----------------------------------------------------


class ReloadsDaemonWithSighup(_Tool):
    """READ_ONLY: asks a daemon of the real system to reopen its logs with SIGHUP (its pid from a pid file)."""

    spec = _spec("reloads_daemon", _READ_ONLY, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        os.kill(_daemon_pid(), signal.SIGHUP)


class SignalsDaemonGroup(_Tool):
    """READ_ONLY: signals the process group a daemon of the real system leads (``os.killpg``)."""

    spec = _spec("signals_daemon_group", _READ_ONLY, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        os.killpg(_daemon_pid(), signal.SIGUSR1)


class SignalsDaemonThroughPidfd(_Tool):
    """READ_ONLY: signals a daemon of the real system through a pidfd (``pidfd_open``, ``pidfd_send_signal``)."""

    spec = _spec("signals_daemon_pidfd", _READ_ONLY, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        handle = os.pidfd_open(_daemon_pid())
        try:
            signal.pidfd_send_signal(handle, signal.SIGUSR2)
        finally:
            os.close(handle)


class KillsDaemonWithShell(_Tool):
    """READ_ONLY: runs ``kill -HUP $(cat daemon.pid)`` in a shell."""

    spec = _spec("kills_daemon_shell", _READ_ONLY, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await anyio.run_process(["sh", "-c", f"kill -HUP $(cat {ELSEWHERE.daemon_pid})"], check=False)


# -- handles opened before the check ------------------------------------------------------------------------


class RewritesStateThroughProcFd(_Tool):
    """IDEMPOTENT workspace write: rewrites the state file its module opened read-only, through /proc/self/fd."""

    spec = _spec("state_through_proc_fd", _WORKSPACE, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        if ELSEWHERE.state is None:
            raise OSError("no state file")
        with open(f"/proc/self/fd/{ELSEWHERE.state.fileno()}", "w", encoding="utf-8") as again:  # noqa: ASYNC230
            again.write(json.dumps({"last": text}))


class WritesThroughDirectoryOpenedBefore(_Tool):
    """IDEMPOTENT workspace write: creates a file relative to a directory descriptor its module opened."""

    spec = _spec("directory_opened_before", _WORKSPACE, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        fd = os.open("note.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=ELSEWHERE.directory)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)


class FeedsHelperPipe(_Tool):
    """NON_IDEMPOTENT: marks, then writes a job to a helper through a pipe its module opened."""

    spec = _spec("feeds_helper_pipe", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        if ELSEWHERE.helper is None:
            raise OSError("no helper")
        os.write(ELSEWHERE.helper, f"job {text!r}\n".encode())


class WritesWalDatabaseOpenedBefore(_Tool):
    """READ_ONLY: records a visit in a WAL-mode SQLite database its module connected to at import time."""

    spec = _spec("wal_opened_before", _READ_ONLY, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        if ELSEWHERE.wal is None:
            raise OSError("no database")
        ELSEWHERE.wal.execute("insert into visits values (?)", (text,))
        ELSEWHERE.wal.commit()


class BumpsMappedCounter(_Tool):
    """IDEMPOTENT workspace write: puts a file, and bumps a counter in a file its module mapped for shared writing."""

    spec = _spec("mapped_before", _WORKSPACE, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        (context.workspace / "note.txt").write_text(text, encoding="utf-8")
        if ELSEWHERE.mapped is None:
            raise OSError("no mapping")
        ELSEWHERE.mapped[:8] = struct.pack("<q", 7)


# -- sockets of other families ---------------------------------------------------------------------------


class LogsToUnixSocketPath(_Tool):
    """NON_IDEMPOTENT: marks, then sends an event as a datagram to a local syslog socket (``sendto`` a path)."""

    spec = _spec("unix_datagram_path", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(f"<14>corpus: {text!r}".encode(), str(ELSEWHERE.log_socket))


class SendsToAbstractSocket(_Tool):
    """NON_IDEMPOTENT: marks, then sends an event to an abstract-namespace Unix socket (``sendmsg``)."""

    spec = _spec("unix_abstract", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendmsg([f"event {text!r}".encode()], [], 0, ELSEWHERE.abstract)


class ListsInterfaces(_Tool):
    """READ_ONLY: lists the network interfaces (glibc asks the kernel over NETLINK_ROUTE, in the check's namespace)."""

    spec = _spec("lists_interfaces", _READ_ONLY, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        if not socket.if_nameindex():
            raise OSError("no interface")


class QueriesAuditStatus(_Tool):
    """READ_ONLY: asks the kernel's audit subsystem for its status over NETLINK_AUDIT (not namespaced)."""

    spec = _spec("queries_audit", _READ_ONLY, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        netlink_audit, audit_get = 9, 1000  # linux/netlink.h, linux/audit.h (the socket module names neither)
        header = struct.pack("=LHHLL", 16, audit_get, 0x1, 1, 0)  # length, type, NLM_F_REQUEST, sequence, port
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, netlink_audit) as sock:
            sock.settimeout(1)
            sock.sendto(header, (0, 0))
            with contextlib.suppress(OSError):
                sock.recv(4096)


class PingsOutsideHost(_Tool):
    """READ_ONLY: pings a host that is not the target with a raw ICMP socket."""

    spec = _spec("pings_outside", _READ_ONLY, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        echo = struct.pack("!BBHHH", 8, 0, 0xF7FF, 0, 0)
        with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP) as sock:
            sock.sendto(echo, ("198.51.100.7", 0))


# -- effects after execute returned ------------------------------------------------------------------------


def _post(url: str) -> None:
    request = urllib.request.Request(url, data=b"{}", method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=5) as answer:
        answer.read()


class PostsAfterReturningUnmarked(_Tool):
    """NON_IDEMPOTENT: returns at once and leaves a thread that POSTs to the target a moment later, unmarked."""

    spec = _spec("posts_after_returning", _EXTERNAL, _NON)
    delay: ClassVar[float] = LATE_S

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        url, delay = f"{context.target}/later", self.delay

        def later() -> None:
            time.sleep(delay)
            with contextlib.suppress(OSError):
                _post(url)

        threading.Thread(target=later, name="corpus-later").start()


class PostsLongAfterReturning(PostsAfterReturningUnmarked):
    """As ``PostsAfterReturningUnmarked``, 1.5 s later: past every deadline and grace of the check, within its wait."""

    delay: ClassVar[float] = 1.5


class LeavesIdleThreadRunning(_Tool):
    """READ_ONLY: leaves a worker thread that waits for work it is never given (it never ends, never acts)."""

    spec = _spec("leaves_idle_thread", _READ_ONLY, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        threading.Thread(target=threading.Event().wait, name="corpus-idle-worker", daemon=True).start()


class PostsFromTaskAfterReturning(_Tool):
    """NON_IDEMPOTENT: marks, then leaves a fire-and-forget asyncio task that POSTs a moment after it returned."""

    spec = _spec("task_after_returning", _EXTERNAL, _NON)
    tasks: ClassVar[set[Any]] = set()

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        url = f"{context.target}/later"

        async def later() -> None:
            await anyio.sleep(LATE_S)
            with contextlib.suppress(OSError):
                await anyio.to_thread.run_sync(_post, url)

        task = asyncio.get_running_loop().create_task(later())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


class WritesFromDetachedChildLater(_Tool):
    """IDEMPOTENT workspace write: starts a detached shell that writes a file in the workspace a moment later."""

    spec = _spec("detached_child_later", _WORKSPACE, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        script = f"sleep {LATE_S}; echo done > {context.workspace / 'late.txt'}"
        subprocess.Popen(["sh", "-c", script], start_new_session=True)  # noqa: ASYNC220 - left running, as such tools do


ESCAPE_CASES: tuple[Case, ...] = (
    Case("sighup-daemon-outside", ReloadsDaemonWithSighup, ("D2.7",)),
    Case("killpg-daemon-outside", SignalsDaemonGroup, ("D2.7",)),
    Case("pidfd-signal-daemon-outside", SignalsDaemonThroughPidfd, ("D2.7",), blind="signal"),
    Case("shell-kill-daemon-outside", KillsDaemonWithShell, ("D2.7",), blind="process"),
    Case("proc-self-fd-rewrite-opened-before", RewritesStateThroughProcFd, ("D2.7",)),
    Case("directory-fd-opened-before", WritesThroughDirectoryOpenedBefore, ("D2.7",)),
    Case("pipe-opened-before", FeedsHelperPipe, ("D2.7",), blind="handle"),
    Case("sqlite-wal-opened-before", WritesWalDatabaseOpenedBefore, ("D2.7",), blind="handle"),
    Case("mmap-opened-before", BumpsMappedCounter, ("D2.7",), blind="native"),
    Case("unix-datagram-to-path", LogsToUnixSocketPath, ("D2.7",)),
    Case("unix-abstract-sendmsg", SendsToAbstractSocket, ("D2.7",)),
    Case("netlink-route-query", ListsInterfaces, ()),
    Case("netlink-audit-query", QueriesAuditStatus, ("D2.7",)),
    Case("raw-icmp-outside", PingsOutsideHost, ("D2.7",)),
    Case("thread-posts-after-returning", PostsAfterReturningUnmarked, ("D4.10", "D3.9")),
    Case("task-posts-after-returning", PostsFromTaskAfterReturning, ("D3.9",)),
    Case("detached-child-writes-later", WritesFromDetachedChildLater, ("D3.9",), blind="process"),
)
"""The escape tools with their expected verdicts."""
