"""The corpus of realistic tools: the ADR's verdict for each under confinement, nothing escapes, the fallback says what it cannot see.

"Nothing escapes" is measured outside the check, after it: the files of a folder outside (data, mode, times), the
TCP, UDP and Unix (path and abstract) endpoints of the real system, the signals a daemon of the real system
received, and the pipe to a helper. A tool module's import-time handles (a log handler, a connection, a state file
opened read-only, a directory descriptor, a SQLite database in WAL mode, a shared memory map, the pipe) are opened
before every check, so every example inherits them.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import mmap
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.contract_corpus import AUDIT, BLIND_SPOTS, CASES, OUTSIDE, Case
from helpers.contract_corpus_escapes import ELSEWHERE, ESCAPE_CASES

from toolproof.contracts import PYTHON_BLIND_SPOTS, ContractReport, check_tool

pytestmark = pytest.mark.slow


ALL_CASES = CASES + ESCAPE_CASES

_DAEMON = """
import signal, sys
received = []
for number in (signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGINT, signal.SIGTERM, signal.SIGALRM):
    signal.signal(number, lambda number, frame: received.append(number))
print("ready", flush=True)
sys.stdin.read()
print(len(received), flush=True)
"""
"""A daemon of the real system: it counts the signals it receives until its standard input closes."""


class _Listeners:
    """TCP, UDP and Unix datagram endpoints of the real system; they note every byte that reaches them."""

    def __init__(self, unix_path: Path) -> None:
        self.received: list[str] = []
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.unix.bind(str(unix_path))
        self.abstract = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.abstract.bind(f"\0toolproof-corpus-{os.getpid()}-{id(self)}")
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._accept, daemon=True),
            *(
                threading.Thread(target=self._read, args=(s,), daemon=True)
                for s in (self.udp, self.unix, self.abstract)
            ),
        ]
        for thread in self._threads:
            thread.start()

    def _accept(self) -> None:
        self.tcp.settimeout(0.05)
        while not self._stop.is_set():
            try:
                conn, _ = self.tcp.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(1)
                with contextlib.suppress(OSError):
                    if data := conn.recv(1024):
                        self.received.append(f"tcp: {data!r}")

    def _read(self, sock: socket.socket) -> None:
        sock.settimeout(0.05)
        while not self._stop.is_set():
            try:
                data = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            self.received.append(f"{sock.family.name} {sock.type.name}: {data!r}")

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=2)
        for sock in (self.tcp, self.udp, self.unix, self.abstract):
            sock.close()


class _Daemon:
    """A process of the real system that counts the signals it receives; its pid is in a pid file outside."""

    def __init__(self, pid_file: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _DAEMON],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,  # it leads its own process group, as a daemon does
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline() == "ready\n"
        pid_file.write_text(str(self.process.pid), encoding="ascii")

    def signals_received(self) -> int:
        """Stop the daemon; the number of signals it received."""
        out, _ = self.process.communicate(timeout=10)
        return int(out)


class _Handles:
    """What a tool module opens at import time outside the workspace, so every example inherits it."""

    def __init__(self, folder: Path) -> None:
        (folder / "state.json").write_text("{}", encoding="utf-8")
        (folder / "mapped.bin").write_bytes(bytes(64))
        wal = sqlite3.connect(folder / "wal.db", check_same_thread=False)
        wal.execute("pragma journal_mode=wal")
        wal.execute("create table visits (text text)")
        wal.execute("insert into visits values ('first')")
        wal.commit()
        self.helper_read, helper_write = os.pipe()
        os.set_blocking(self.helper_read, False)
        mapped_fd = os.open(folder / "mapped.bin", os.O_RDWR)
        ELSEWHERE.mapped = mmap.mmap(mapped_fd, 0, access=mmap.ACCESS_WRITE)
        os.close(mapped_fd)
        ELSEWHERE.wal = wal
        ELSEWHERE.helper = helper_write
        ELSEWHERE.state = open(folder / "state.json", encoding="utf-8")  # noqa: SIM115 - held open, as a module does
        ELSEWHERE.directory = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)

    def helper_received(self) -> bytes:
        """What reached the helper's end of the pipe."""
        try:
            return os.read(self.helper_read, 65536)
        except BlockingIOError:
            return b""

    def close(self) -> None:
        for fd in (self.helper_read, ELSEWHERE.helper, ELSEWHERE.directory):
            if fd is not None:
                os.close(fd)
        for held in (ELSEWHERE.state, ELSEWHERE.wal, ELSEWHERE.mapped):
            if held is not None:
                held.close()
        ELSEWHERE.state = ELSEWHERE.wal = ELSEWHERE.mapped = None
        ELSEWHERE.helper = ELSEWHERE.directory = None


def _lay_out(folder: Path) -> logging.Handler:
    """The real system outside the workspace: files, a database, a log a handler holds open."""
    with sqlite3.connect(folder / "app.db") as db:
        db.execute("create table events (text text)")
        db.executemany("insert into events values (?)", [("first",), ("second",)])
    db.close()
    for name, data in (("stamp", b""), ("ledger.txt", b"before\n"), ("native.log", b"before\n")):
        (folder / name).write_bytes(data)
    (folder / "deploy.sh").write_text("#!/bin/sh\n", encoding="utf-8")
    os.chmod(folder / "deploy.sh", 0o644)
    (folder / "counters.bin").write_bytes(bytes(16))
    for name in os.listdir(folder):
        os.utime(folder / name, (1_600_000_000, 1_600_000_000))
    handler = logging.FileHandler(folder / "audit.log")  # opened now: before the check, outside the workspace
    AUDIT.addHandler(handler)
    AUDIT.propagate = False
    return handler


def _state(folder: Path) -> dict[str, tuple[str, int, int]]:
    """Every file outside: content digest, mode, modification time."""
    found = {}
    for path in sorted(folder.iterdir()):
        info = path.stat()
        found[path.name] = (hashlib.sha256(path.read_bytes()).hexdigest(), info.st_mode, info.st_mtime_ns)
    return found


class _World:
    """The outside world of one check: its folder, endpoints, daemon and import-time handles."""

    def __init__(self, root: Path) -> None:
        self.folder = root / "outside"
        self.folder.mkdir()
        (root / "run").mkdir()
        self.handler = _lay_out(self.folder)
        self.listeners = _Listeners(root / "run" / "log.sock")
        self.daemon = _Daemon(self.folder / "daemon.pid")
        self.handles = _Handles(self.folder)
        OUTSIDE.folder = self.folder
        OUTSIDE.tcp = self.listeners.tcp.getsockname()
        OUTSIDE.udp = self.listeners.udp.getsockname()
        OUTSIDE.connection = socket.create_connection(OUTSIDE.tcp)  # a client a module keeps, opened before the check
        ELSEWHERE.daemon_pid = self.folder / "daemon.pid"
        ELSEWHERE.log_socket = root / "run" / "log.sock"
        ELSEWHERE.abstract = self.listeners.abstract.getsockname()

    def close(self) -> None:
        if OUTSIDE.connection is not None:
            OUTSIDE.connection.close()
        OUTSIDE.connection = None
        AUDIT.removeHandler(self.handler)
        self.handler.close()
        self.listeners.close()
        self.handles.close()
        if self.daemon.process.poll() is None:
            self.daemon.process.kill()
            self.daemon.process.communicate()


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[_World]:
    """A fresh outside world for one check."""
    world = _World(tmp_path)
    try:
        yield world
    finally:
        world.close()


def _available(case: Case) -> None:
    if case.needs is not None:
        pytest.importorskip(case.needs, reason=f"{case.name} needs {case.needs}, which is not installed")


def _ids(case: Case) -> str:
    return case.name


@pytest.mark.usefixtures("confinement")
@pytest.mark.parametrize("case", ALL_CASES, ids=_ids)
def test_confined_check_gives_the_adr_verdict_and_nothing_escapes(case: Case, outside: _World) -> None:
    _available(case)
    before = _state(outside.folder)
    started = time.perf_counter()
    report = check_tool(case.factory, **case.options)
    _timings[case.name] = time.perf_counter() - started
    assert report.observation == "os"
    assert report.partial is None
    assert [f.rule_id for f in report.findings] == list(case.expected), report.render()
    assert bool(report.warnings) == case.warning, report.render()
    assert report.passed == (not case.expected)
    if not case.expected and not case.warning:
        assert report.headline().endswith(": conforms to the tool-author contract")
    # Nothing the tool did reached the real system: the files, the databases, the endpoints, the daemon and the
    # helper are as they were.
    time.sleep(0.1)  # a datagram in flight would have arrived by now
    assert _state(outside.folder) == before
    assert outside.listeners.received == []
    assert outside.handles.helper_received() == b""
    assert outside.daemon.signals_received() == 0


_timings: dict[str, float] = {}


@pytest.mark.parametrize("case", ALL_CASES, ids=_ids)
def test_python_level_observation_marks_each_effect_kind_it_cannot_see_as_partial(case: Case, outside: _World) -> None:
    _available(case)
    report = check_tool(case.factory, observation="python", **case.options)
    assert report.observation == "python"
    assert report.partial is not None
    assert all(spot in report.partial for spot in PYTHON_BLIND_SPOTS)
    assert "conforms to the tool-author contract" not in report.headline()
    assert "partial observation: observed at the Python level only" in report.headline()
    if [f.rule_id for f in report.findings] != list(case.expected):
        # A verdict that differs from the confined one is only allowed where the fallback says it is blind.
        assert case.blind is not None, report.render()
        assert BLIND_SPOTS[case.blind] in report.partial


def test_the_corpus_covers_what_the_issue_names() -> None:
    assert len(ALL_CASES) >= 25
    names = " ".join(case.name for case in ALL_CASES)
    for kind in (
        "sync",
        "async",
        "urllib",
        "requests",
        "tcp",
        "udp",
        "smtplib",
        "sqlite-outside",
        "subprocess",
        "os-system",
        "shutil",
        "logging",
        "touch-existing",
        "chmod",
        "ctypes",
        "mmap",
        "get-webhook",
        "body-key",
        "git",
        "sighup",
        "killpg",
        "pidfd-signal",
        "shell-kill",
        "proc-self-fd",
        "directory-fd",
        "pipe-opened-before",
        "sqlite-wal-opened-before",
        "mmap-opened-before",
        "unix-datagram-to-path",
        "unix-abstract",
        "netlink-route",
        "netlink-audit",
        "raw-icmp",
        "thread-posts-after-returning",
        "task-posts-after-returning",
        "detached-child-writes-later",
    ):
        assert kind in names, kind
    assert {bool(case.expected) for case in ALL_CASES} == {True, False}


def _check(report: ContractReport) -> list[str]:
    return [f.rule_id for f in report.findings]
