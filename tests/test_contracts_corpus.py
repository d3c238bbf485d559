"""The corpus of realistic tools: the ADR's verdict for each under confinement, nothing escapes, the fallback says what it cannot see."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.contract_corpus import AUDIT, BLIND_SPOTS, CASES, OUTSIDE, Case

from toolproof.contracts import PYTHON_BLIND_SPOTS, ContractReport, check_tool

pytestmark = pytest.mark.slow


class _Listeners:
    """A TCP and a UDP endpoint of the real system's network; they note every byte that reaches them."""

    def __init__(self) -> None:
        self.received: list[str] = []
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._accept, daemon=True),
            threading.Thread(target=self._read, daemon=True),
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

    def _read(self) -> None:
        self.udp.settimeout(0.05)
        while not self._stop.is_set():
            try:
                data = self.udp.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            self.received.append(f"udp: {data!r}")

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=2)
        self.tcp.close()
        self.udp.close()


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


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[_Listeners]:
    """A fresh outside world for one check."""
    folder = tmp_path / "outside"
    folder.mkdir()
    handler = _lay_out(folder)
    listeners = _Listeners()
    OUTSIDE.folder = folder
    OUTSIDE.tcp = listeners.tcp.getsockname()
    OUTSIDE.udp = listeners.udp.getsockname()
    OUTSIDE.connection = socket.create_connection(OUTSIDE.tcp)  # a client a module keeps, opened before the check
    try:
        yield listeners
    finally:
        OUTSIDE.connection.close()
        OUTSIDE.connection = None
        AUDIT.removeHandler(handler)
        handler.close()
        listeners.close()


def _available(case: Case) -> None:
    if case.needs is not None:
        pytest.importorskip(case.needs, reason=f"{case.name} needs {case.needs}, which is not installed")


def _ids(case: Case) -> str:
    return case.name


@pytest.mark.usefixtures("confinement")
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_confined_check_gives_the_adr_verdict_and_nothing_escapes(case: Case, outside: _Listeners) -> None:
    _available(case)
    before = _state(OUTSIDE.folder)
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
    # Nothing the tool did reached the real system: the files, the database, the endpoints are as they were.
    time.sleep(0.1)  # a datagram in flight would have arrived by now
    assert _state(OUTSIDE.folder) == before
    assert outside.received == []


_timings: dict[str, float] = {}


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_python_level_observation_marks_each_effect_kind_it_cannot_see_as_partial(
    case: Case, outside: _Listeners
) -> None:
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
    assert len(CASES) >= 25
    names = " ".join(case.name for case in CASES)
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
    ):
        assert kind in names, kind
    assert {bool(case.expected) for case in CASES} == {True, False}


def _check(report: ContractReport) -> list[str]:
    return [f.rule_id for f in report.findings]
