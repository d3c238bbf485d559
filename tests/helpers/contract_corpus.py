"""Tools written the way integrations are written, each with the verdict ADR-0021 expects of it.

Every transport and effect kind a tool author reaches for: HTTP through httpx (sync and async),
urllib and requests; a raw TCP line, UDP datagrams, SMTP; SQLite, subprocesses, ``os.system``,
``shutil``, a logging handler opened before the check, ``Path.touch`` and ``chmod`` on existing
files, native code (libc ``fopen``/``fwrite`` through ctypes), memory-mapped writes, a GET webhook,
an idempotency key in the request body or the query, and a workspace-confined ``git``. Correct
and violating variants of most. ``tests/test_contracts_corpus.py`` checks each one.

Paths and endpoints outside the check are set by the test (``Outside``) before a check: a
confined example is forked from the test's process, so it sees them.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import importlib
import json
import logging
import mmap
import os
import shutil
import smtplib
import socket
import sqlite3
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import anyio

from toolproof.spec import (
    ContentPart,
    IdempotencyClass,
    JsonObject,
    Risk,
    SideEffect,
    ToolExecutionContext,
    ToolFailure,
    ToolResult,
    ToolSpec,
)


def _client_module() -> Any:
    """httpx when installed, else httpx2 (the fork toolproof depends on, with the same API)."""
    for name in ("httpx", "httpx2"):
        with contextlib.suppress(ImportError):
            return importlib.import_module(name)
    raise ImportError("neither httpx nor httpx2 is installed")


httpx = _client_module()
HTTPX_NAME: str = httpx.__name__
requests: Any
try:
    import requests
except ImportError:  # pragma: no cover - requests comes with schemathesis, but need not
    requests = None


@dataclass
class Outside:
    """What lies outside the workspace and the target during a check (set by the test)."""

    folder: Path = Path("/nonexistent")
    tcp: tuple[str, int] = ("127.0.0.1", 9)
    """A listener of the real system's network (a Graphite- or API-like endpoint)."""
    udp: tuple[str, int] = ("127.0.0.1", 9)
    """A datagram socket of the real system's network (a statsd-like endpoint)."""
    connection: socket.socket | None = None
    """A connection to ``tcp`` opened before the check (a client a module keeps)."""


OUTSIDE = Outside()
AUDIT = logging.getLogger("toolproof.corpus.audit")
"""A module-level logger; the test attaches a FileHandler outside the workspace before checking."""

_TEXT: JsonObject = {
    "type": "object",
    "properties": {"text": {"type": "string", "maxLength": 16}},
    "required": ["text"],
    "additionalProperties": False,
}
_OK = ToolResult(ok=True, content=[ContentPart(text="done")])


def _spec(name: str, side_effect: SideEffect, idempotency: IdempotencyClass) -> ToolSpec:
    return ToolSpec(
        name=f"corpus.{name}",
        side_effect=side_effect,
        idempotency=idempotency,
        risk=Risk.MEDIUM,
        input_schema=_TEXT,
        deadline_s=5.0,
    )


_NON = IdempotencyClass.NON_IDEMPOTENT
_COND = IdempotencyClass.CONDITIONALLY_IDEMPOTENT
_IDEM = IdempotencyClass.IDEMPOTENT
_EXTERNAL = SideEffect.EXTERNAL_WRITE
_WORKSPACE = SideEffect.WORKSPACE_WRITE


def _failed(exc: BaseException) -> ToolResult:
    return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_UNAVAILABLE", detail=str(exc)))


def _host_port(context: ToolExecutionContext) -> tuple[str, int]:
    parts = urlsplit(context.target or "")
    return parts.hostname or "", parts.port or 80


async def _blocking(call: Callable[[], Any]) -> Any:
    return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)


class _Tool:
    spec: ToolSpec

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        try:
            await self.act(str(arguments["text"]), context)
        except OSError as exc:
            return _failed(exc)
        return _OK

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        raise NotImplementedError


# -- HTTP ----------------------------------------------------------------------------------------


class HttpxSyncKeyedOrder(_Tool):
    """CONDITIONALLY_IDEMPOTENT: marks, then POSTs with httpx (sync) and the Idempotency-Key header."""

    spec = _spec("httpx_sync_order", _EXTERNAL, _COND)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()

        def send() -> None:
            with httpx.Client(trust_env=False) as client:
                client.post(
                    f"{context.target}/orders",
                    json={"text": text},
                    headers={"Idempotency-Key": context.identity.idempotency_key},
                )

        await _blocking(send)


class HttpxSyncUnmarked(_Tool):
    """NON_IDEMPOTENT: POSTs with httpx (sync) without marking."""

    spec = _spec("httpx_sync_unmarked", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        def send() -> None:
            with httpx.Client(trust_env=False) as client:
                client.post(f"{context.target}/messages", json={"text": text})

        await _blocking(send)


class HttpxAsyncMessage(_Tool):
    """NON_IDEMPOTENT: marks, then POSTs with httpx's AsyncClient."""

    spec = _spec("httpx_async_message", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        async with httpx.AsyncClient(trust_env=False) as client:
            await client.post(f"{context.target}/messages", json={"text": text})


class HttpxAsyncLateMark(_Tool):
    """NON_IDEMPOTENT: POSTs with httpx's AsyncClient, then marks."""

    spec = _spec("httpx_async_late_mark", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        async with httpx.AsyncClient(trust_env=False) as client:
            await client.post(f"{context.target}/messages", json={"text": text})
        await context.mark_effect_sent()


def _urllib_post(url: str, body: bytes) -> None:
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=5) as answer:
        answer.read()


class UrllibMessage(_Tool):
    """NON_IDEMPOTENT: marks, then POSTs with urllib."""

    spec = _spec("urllib_message", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        await _blocking(lambda: _urllib_post(f"{context.target}/messages", json.dumps({"text": text}).encode()))


class UrllibUnmarked(_Tool):
    """NON_IDEMPOTENT: POSTs with urllib without marking."""

    spec = _spec("urllib_unmarked", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await _blocking(lambda: _urllib_post(f"{context.target}/messages", json.dumps({"text": text}).encode()))


class RequestsKeyedOrder(_Tool):
    """CONDITIONALLY_IDEMPOTENT: marks, then POSTs with requests and the Idempotency-Key header."""

    spec = _spec("requests_order", _EXTERNAL, _COND)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()

        def send() -> None:
            with requests.Session() as session:
                session.trust_env = False
                session.post(
                    f"{context.target}/orders",
                    json={"text": text},
                    headers={"Idempotency-Key": context.identity.idempotency_key},
                    timeout=5,
                )

        await _blocking(send)


class RequestsOutsideApi(_Tool):
    """NON_IDEMPOTENT: marks, then POSTs with requests to an API that is not context.target."""

    spec = _spec("requests_outside_api", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        host, port = OUTSIDE.tcp

        def send() -> None:
            with requests.Session() as session:
                session.trust_env = False
                session.post(f"http://{host}:{port}/v1/messages", json={"text": text}, timeout=2)

        try:
            await _blocking(send)
        except requests.RequestException as exc:
            raise OSError(str(exc)) from None


class GetWebhookUnmarked(_Tool):
    """NON_IDEMPOTENT: triggers a deploy webhook with a GET (which acts) and never marks."""

    spec = _spec("get_webhook_unmarked", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await _blocking(
            lambda: (
                urllib.request.build_opener(urllib.request.ProxyHandler({}))
                .open(f"{context.target}/hooks/deploy", timeout=5)
                .read()
            )
        )


class GetWebhookMarked(_Tool):
    """NON_IDEMPOTENT: marks, then triggers a deploy webhook with a GET; checked with requests_act."""

    spec = _spec("get_webhook_marked", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        await _blocking(
            lambda: (
                urllib.request.build_opener(urllib.request.ProxyHandler({}))
                .open(f"{context.target}/hooks/deploy", timeout=5)
                .read()
            )
        )


class BodyKeyOrder(_Tool):
    """CONDITIONALLY_IDEMPOTENT: marks, then POSTs the key in the JSON body (``idempotency_key``), as many APIs take it."""

    spec = _spec("body_key_order", _EXTERNAL, _COND)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        body = {"text": text, "idempotency_key": context.identity.idempotency_key}
        async with httpx.AsyncClient(trust_env=False) as client:
            await client.post(f"{context.target}/orders", json=body)


class QueryKeyOrder(_Tool):
    """CONDITIONALLY_IDEMPOTENT: marks, then POSTs with the key as the ``request_id`` query parameter."""

    spec = _spec("query_key_order", _EXTERNAL, _COND)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        url = f"{context.target}/orders?request_id={context.identity.idempotency_key}"
        async with httpx.AsyncClient(trust_env=False) as client:
            await client.post(url, json={"text": text})


# -- other protocols -----------------------------------------------------------------------------


def _graphite(address: tuple[str, int], text: str) -> None:
    with socket.create_connection(address, timeout=2) as sock:
        sock.sendall(f"corpus.jobs.{len(text)} 1 1700000000\n".encode())


class GraphiteLineMarked(_Tool):
    """NON_IDEMPOTENT: marks, then sends a Graphite plaintext line over raw TCP to the target."""

    spec = _spec("graphite_marked", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        await _blocking(lambda: _graphite(_host_port(context), text))


class GraphiteLineUnmarked(_Tool):
    """NON_IDEMPOTENT: sends a Graphite plaintext line over raw TCP to the target, unmarked."""

    spec = _spec("graphite_unmarked", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await _blocking(lambda: _graphite(_host_port(context), text))


class GraphiteLineElsewhere(_Tool):
    """NON_IDEMPOTENT: marks, then sends its Graphite line to a TCP endpoint that is not the target."""

    spec = _spec("graphite_elsewhere", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        await _blocking(lambda: _graphite(OUTSIDE.tcp, text))


def _datagram(address: tuple[str, int], text: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(f"<14>corpus: {text!r}".encode(), address)


class SyslogUdpMarked(_Tool):
    """NON_IDEMPOTENT: marks, then sends a syslog datagram over UDP to the target."""

    spec = _spec("syslog_udp_marked", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        _datagram(_host_port(context), text)


class SyslogUdpUnmarked(_Tool):
    """NON_IDEMPOTENT: sends a syslog datagram over UDP to the target, unmarked."""

    spec = _spec("syslog_udp_unmarked", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        _datagram(_host_port(context), text)


class StatsdElsewhere(_Tool):
    """NON_IDEMPOTENT: marks, then sends a statsd counter to a UDP endpoint that is not the target."""

    spec = _spec("statsd_elsewhere", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        _datagram(OUTSIDE.udp, text)


def _mail(address: tuple[str, int], text: str) -> None:
    with smtplib.SMTP(*address, timeout=5) as smtp:
        message = f"Subject: corpus\r\n\r\n{text}\r\n".encode()
        smtp.sendmail("tool@example.org", ["ops@example.org"], message)


class SmtpMarked(_Tool):
    """NON_IDEMPOTENT: marks, then sends a mail with smtplib through the target."""

    spec = _spec("smtp_marked", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        await _blocking(lambda: _mail(_host_port(context), text))


class SmtpUnmarked(_Tool):
    """NON_IDEMPOTENT: sends a mail with smtplib through the target, unmarked."""

    spec = _spec("smtp_unmarked", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await _blocking(lambda: _mail(_host_port(context), text))


# -- files ---------------------------------------------------------------------------------------


def _insert(database: Path, text: str) -> None:
    with contextlib.closing(sqlite3.connect(database)) as db:
        db.execute("create table if not exists events (text text)")
        db.execute("insert into events values (?)", (text,))
        db.commit()


class SqliteOutside(_Tool):
    """NON_IDEMPOTENT workspace write: marks, then records a row in a database outside the workspace."""

    spec = _spec("sqlite_outside", _WORKSPACE, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        _insert(OUTSIDE.folder / "app.db", text)


class SqliteWorkspace(_Tool):
    """NON_IDEMPOTENT workspace write: marks, then records a row in a database in the workspace."""

    spec = _spec("sqlite_workspace", _WORKSPACE, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        _insert(context.workspace / "events.db", text)


class SubprocessTouchOutside(_Tool):
    """IDEMPOTENT workspace write: runs ``touch`` on a stamp file outside the workspace."""

    spec = _spec("subprocess_touch_outside", _WORKSPACE, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await anyio.run_process(["touch", str(OUTSIDE.folder / "stamp")])


class SubprocessTouchWorkspace(_Tool):
    """IDEMPOTENT workspace write: runs ``touch`` on a file in the workspace."""

    spec = _spec("subprocess_touch_workspace", _WORKSPACE, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await anyio.run_process(["touch", "ready"], cwd=context.workspace)


class OsSystemOutside(_Tool):
    """NON_IDEMPOTENT workspace write: marks, then appends to a ledger outside the workspace with ``os.system``."""

    spec = _spec("os_system_outside", _WORKSPACE, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        os.system(f"echo corpus >> {OUTSIDE.folder / 'ledger.txt'}")  # noqa: ASYNC221 - as tools do


class OsSystemWorkspace(_Tool):
    """NON_IDEMPOTENT workspace write: marks, then appends to a ledger in the workspace with ``os.system``."""

    spec = _spec("os_system_workspace", _WORKSPACE, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        os.system(f"echo corpus >> {context.workspace / 'ledger.txt'}")  # noqa: ASYNC221 - as tools do


class WorkspaceGitCommit(_Tool):
    """NON_IDEMPOTENT workspace write: marks, then commits a note with ``git`` in the workspace."""

    spec = _spec("workspace_git_commit", _WORKSPACE, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        (context.workspace / "note.txt").write_text(text, encoding="utf-8")
        config = ["-c", "user.name=corpus", "-c", "user.email=corpus@example.org", "-c", "init.defaultBranch=main"]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(context.workspace)}
        env |= {"GIT_CONFIG_NOSYSTEM": "1"}
        for command in (["init", "-q"], ["add", "note.txt"], ["commit", "-q", "-m", "note"]):
            await anyio.run_process(["git", *config, *command], cwd=context.workspace, env=env)


class ShutilCopyOutside(_Tool):
    """IDEMPOTENT workspace write: writes a report, then backs it up outside the workspace with ``shutil``."""

    spec = _spec("shutil_copy_outside", _WORKSPACE, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        report = context.workspace / "report.txt"
        report.write_text(text, encoding="utf-8")
        shutil.copy2(report, OUTSIDE.folder / "report-backup.txt")


class ShutilCopyWorkspace(_Tool):
    """IDEMPOTENT workspace write: writes a report and copies its folder within the workspace."""

    spec = _spec("shutil_copy_workspace", _WORKSPACE, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        (context.workspace / "out").mkdir(exist_ok=True)
        (context.workspace / "out" / "report.txt").write_text(text, encoding="utf-8")
        shutil.copytree(context.workspace / "out", context.workspace / "backup", dirs_exist_ok=True)


class LogsToHandlerOpenedBefore(_Tool):
    """IDEMPOTENT workspace write: puts a file, and logs it to a module-level handler opened before the check."""

    spec = _spec("logs_outside", _WORKSPACE, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        (context.workspace / "note.txt").write_text(text, encoding="utf-8")
        AUDIT.warning("note written: %r", text)


class TouchExistingOutside(_Tool):
    """IDEMPOTENT workspace write: puts a file, then ``Path.touch`` on an existing stamp outside (a time change)."""

    spec = _spec("touch_existing_outside", _WORKSPACE, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        (context.workspace / "note.txt").write_text(text, encoding="utf-8")
        (OUTSIDE.folder / "stamp").touch()


class TouchWorkspace(_Tool):
    """IDEMPOTENT workspace write: ``Path.touch`` in the workspace."""

    spec = _spec("touch_workspace", _WORKSPACE, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        (context.workspace / "stamp").touch()


class ChmodOutside(_Tool):
    """IDEMPOTENT workspace write: makes an existing script outside the workspace executable."""

    spec = _spec("chmod_outside", _WORKSPACE, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        os.chmod(OUTSIDE.folder / "deploy.sh", 0o755)


class ChmodWorkspace(_Tool):
    """IDEMPOTENT workspace write: writes a script in the workspace and makes it executable."""

    spec = _spec("chmod_workspace", _WORKSPACE, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        script = context.workspace / "run.sh"
        script.write_text("#!/bin/sh\necho corpus\n", encoding="utf-8")
        os.chmod(script, 0o755)


def _native_append(path: Path, text: str) -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fwrite.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    handle = libc.fopen(os.fsencode(path), b"a")
    if not handle:
        raise OSError(ctypes.get_errno(), f"fopen {path}")
    line = f"native: {text!r}\n".encode()
    libc.fwrite(line, 1, len(line), handle)
    libc.fclose(handle)


class NativeWriteOutside(_Tool):
    """NON_IDEMPOTENT workspace write: marks, then appends with libc ``fopen``/``fwrite`` outside the workspace."""

    spec = _spec("native_write_outside", _WORKSPACE, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        _native_append(OUTSIDE.folder / "native.log", text)


class NativeWriteBeforeMark(_Tool):
    """NON_IDEMPOTENT workspace write: appends with libc ``fopen``/``fwrite`` in the workspace, then marks."""

    spec = _spec("native_write_before_mark", _WORKSPACE, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        _native_append(context.workspace / "native.log", text)
        await context.mark_effect_sent()


class NativeWriteMarked(_Tool):
    """NON_IDEMPOTENT workspace write: marks, then appends with libc ``fopen``/``fwrite`` in the workspace."""

    spec = _spec("native_write_marked", _WORKSPACE, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        _native_append(context.workspace / "native.log", text)


def _map_and_write(path: Path) -> None:
    fd = os.open(path, os.O_RDWR)
    try:
        with mmap.mmap(fd, 0, access=mmap.ACCESS_WRITE) as mapped:
            mapped[:4] = b"MMAP"
            mapped.flush()
    finally:
        os.close(fd)


class MmapOutside(_Tool):
    """IDEMPOTENT workspace write: writes a counter file outside the workspace through a memory map."""

    spec = _spec("mmap_outside", _WORKSPACE, _IDEM)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        _map_and_write(OUTSIDE.folder / "counters.bin")


class MmapWorkspaceUnmarked(_Tool):
    """NON_IDEMPOTENT workspace write: creates a file in the workspace and writes it through a memory map, unmarked."""

    spec = _spec("mmap_workspace_unmarked", _WORKSPACE, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        path = context.workspace / "counters.bin"
        if not path.exists():
            with path.open("wb") as new:
                new.write(bytes(16))
        _map_and_write(path)


class SendsOnConnectionOpenedBefore(_Tool):
    """NON_IDEMPOTENT: marks, then sends on a connection its module opened before the check (a kept client)."""

    spec = _spec("connection_opened_before", _EXTERNAL, _NON)

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        if OUTSIDE.connection is None:
            raise OSError("no connection")
        OUTSIDE.connection.sendall(f"event {text!r}\n".encode())


class QueuesInMemory(_Tool):
    """NON_IDEMPOTENT: claims an external effect, but only appends to a list in memory (no observable effect)."""

    spec = _spec("queues_in_memory", _EXTERNAL, _NON)
    queued: ClassVar[list[str]] = []

    async def act(self, text: str, context: ToolExecutionContext) -> None:
        await context.mark_effect_sent()
        self.queued.append(text)


@dataclass(frozen=True)
class Case:
    """One corpus tool, how it is checked, and the verdict the ADR expects."""

    name: str
    factory: Callable[[], Any]
    expected: tuple[str, ...]
    """Rule IDs of the findings, in report order; () when it conforms."""
    options: dict[str, Any] = field(default_factory=dict)
    warning: bool = False
    """A warning is expected in the headline (no observable effect)."""
    blind: str | None = None
    """The Python-level blind spot its effect falls in (``native``, ``handle``, ``process``, ``signal``), if any."""
    needs: str | None = None
    """A module that must be installed."""


CASES: tuple[Case, ...] = (
    Case(f"{HTTPX_NAME}-sync-keyed-order", HttpxSyncKeyedOrder, ()),
    Case(f"{HTTPX_NAME}-sync-unmarked", HttpxSyncUnmarked, ("D4.10",)),
    Case(f"{HTTPX_NAME}-async-message", HttpxAsyncMessage, ()),
    Case(f"{HTTPX_NAME}-async-late-mark", HttpxAsyncLateMark, ("D4.1",)),
    Case("urllib-message", UrllibMessage, ()),
    Case("urllib-unmarked", UrllibUnmarked, ("D4.10",)),
    Case("requests-keyed-order", RequestsKeyedOrder, (), needs="requests"),
    Case("requests-outside-api", RequestsOutsideApi, ("D2.7",), needs="requests"),
    Case("get-webhook-unmarked", GetWebhookUnmarked, ("D4.10",)),
    Case("get-webhook-marked-declared", GetWebhookMarked, (), {"requests_act": True}),
    Case("get-webhook-unmarked-declared", GetWebhookUnmarked, ("D4.10",), {"requests_act": True}),
    Case("body-key-declared", BodyKeyOrder, (), {"key_in": "body:idempotency_key"}),
    Case("body-key-undeclared", BodyKeyOrder, ("D10.6",)),
    Case("query-key-declared", QueryKeyOrder, (), {"key_in": "query:request_id"}),
    Case("graphite-tcp-marked", GraphiteLineMarked, ()),
    Case("graphite-tcp-unmarked", GraphiteLineUnmarked, ("D4.10",)),
    Case("graphite-tcp-elsewhere", GraphiteLineElsewhere, ("D2.7",)),
    Case("syslog-udp-marked", SyslogUdpMarked, ()),
    Case("syslog-udp-unmarked", SyslogUdpUnmarked, ("D4.10",)),
    Case("statsd-udp-elsewhere", StatsdElsewhere, ("D2.7",)),
    Case("smtplib-marked", SmtpMarked, ()),
    # Cancelled at the deadline probe mid-session, its abandoned thread still delivers the mail: D2.4.
    Case("smtplib-unmarked", SmtpUnmarked, ("D4.10", "D2.4")),
    Case("sqlite-outside", SqliteOutside, ("D2.7",)),
    Case("sqlite-workspace", SqliteWorkspace, ()),
    Case("subprocess-touch-outside", SubprocessTouchOutside, ("D2.7",), blind="process"),
    Case("subprocess-touch-workspace", SubprocessTouchWorkspace, (), blind="process"),
    Case("os-system-outside", OsSystemOutside, ("D2.7",), blind="process"),
    Case("os-system-workspace", OsSystemWorkspace, (), blind="process"),
    Case("workspace-git-commit", WorkspaceGitCommit, (), blind="process"),
    Case("shutil-copy-outside", ShutilCopyOutside, ("D2.7",)),
    Case("shutil-copy-workspace", ShutilCopyWorkspace, ()),
    Case("logging-handler-opened-before", LogsToHandlerOpenedBefore, ("D2.7",), blind="handle"),
    Case("touch-existing-outside", TouchExistingOutside, ("D2.7",)),
    Case("touch-workspace", TouchWorkspace, ()),
    Case("chmod-outside", ChmodOutside, ("D2.7",)),
    Case("chmod-workspace", ChmodWorkspace, ()),
    Case("ctypes-fwrite-outside", NativeWriteOutside, ("D2.7",), blind="native"),
    Case("ctypes-fwrite-before-mark", NativeWriteBeforeMark, ("D4.1",), blind="native"),
    Case("ctypes-fwrite-marked", NativeWriteMarked, (), blind="native"),
    Case("mmap-outside", MmapOutside, ("D2.7",)),
    Case("mmap-workspace-unmarked", MmapWorkspaceUnmarked, ("D4.10",)),
    Case("socket-opened-before", SendsOnConnectionOpenedBefore, ("D2.7",), blind="handle"),
    Case("in-memory-only", QueuesInMemory, (), warning=True),
)
"""Every corpus tool with its expected verdict."""

BLIND_SPOTS = {
    "native": "writes by native code",
    "handle": "connections opened before the check",
    "process": "what a started process does",
    "signal": "signals sent other than with os.kill and os.killpg",
}
"""Each blind-spot kind of Python-level observation and the words its partial verdict uses for it."""
