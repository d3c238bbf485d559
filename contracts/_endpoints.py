"""The recording service's endpoints: a TCP listener that speaks HTTP (or lets any stream in) and a UDP socket.

Every connection gets its own thread. A client that sends first is read as HTTP when its
first line is a request line, else as a raw stream until it falls quiet; a client that
waits is greeted like a mail server and answered line by line (SMTP), so ``smtplib``
reaches the point where it delivers a message.
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
from collections.abc import Callable
from typing import BinaryIO

from toolproof.fakes import load_factor

from ._transport import REMOTE_ERROR_TEXT, ArrivalKind, Conversation, Recorder, Request, TransportMode, preview

_GREET_AFTER_S = 0.3
"""Silence after which a client is taken to wait for a server greeting, on an idle machine (times the load factor)."""
_WAIT_S = 5.0
"""How long a conversation waits for the client."""
_QUIET_S = 0.3
"""Silence that ends a raw stream."""
_MAX_BYTES = 1 << 20
_REQUEST_LINE = re.compile(rb"^(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS|TRACE|CONNECT) ")


def serve(recorder: Recorder, tcp: socket.socket, udp: socket.socket) -> Callable[[], None]:
    """Start the endpoints; return the function that stops them."""
    stop = threading.Event()
    tcp.listen(64)
    tcp.settimeout(0.05)

    def accept_loop() -> None:
        while not stop.is_set():
            try:
                sock, peer = tcp.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            sock.settimeout(None)
            conn = recorder.accepted(sock, (str(peer[0]), int(peer[1])))
            threading.Thread(target=_converse, args=(recorder, conn), name="toolproof-endpoint", daemon=True).start()

    def datagram_loop() -> None:
        while not stop.is_set():
            try:
                ready = select.select([udp], [], [], 0.05)[0]
            except (OSError, ValueError):
                return
            if ready:
                recorder.datagram()

    threads = [
        threading.Thread(target=accept_loop, name="toolproof-recorder", daemon=True),
        threading.Thread(target=datagram_loop, name="toolproof-recorder-udp", daemon=True),
    ]
    for thread in threads:
        thread.start()

    def close() -> None:
        stop.set()
        for thread in threads:
            thread.join(timeout=2)
        tcp.close()
        udp.close()

    return close


def _converse(recorder: Recorder, conn: Conversation) -> None:
    sock = conn.sock
    try:
        if recorder.first_bytes(conn, _GREET_AFTER_S * load_factor()):
            head = sock.recv(64, socket.MSG_PEEK)
            if _REQUEST_LINE.match(head):
                _http(recorder, conn)
            else:
                _raw(recorder, conn)
        else:
            session = recorder.session()
            if session is not None and session.mode is TransportMode.HOLD:
                # The greeting is the server's answer: the deadline probe holds it as it holds HTTP answers, so a
                # tool waiting for it is inside a call it made when cancelled, whatever the machine's load.
                session.release.wait(session.hold_s)
            sock.sendall(b"220 toolproof recording endpoint ESMTP\r\n")
            if recorder.first_bytes(conn, _WAIT_S):
                _smtp(recorder, conn)
    except (OSError, ValueError):
        pass  # the tool went away (cancelled mid-conversation), or sent what no parser reads: nothing to answer
    finally:
        recorder.forget(conn)
        sock.close()


def _http(recorder: Recorder, conn: Conversation) -> None:
    conn.sock.settimeout(_WAIT_S)
    rfile = conn.sock.makefile("rb")
    method, target, _ = rfile.readline(65536).decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while (line := rfile.readline(65536)) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    body = _body(rfile, headers)
    session = recorder.record(conn, ArrivalKind.HTTP, "", Request(method, target, headers, body))
    if session is None:
        _send(conn.sock, method, 503, b"not recording", "text/plain")
    elif session.mode is TransportMode.FAIL:
        _send(conn.sock, method, 503, REMOTE_ERROR_TEXT.encode(), "text/plain")
    else:
        if session.mode is TransportMode.HOLD:
            session.release.wait(session.hold_s)
        _send(conn.sock, method, 200, json.dumps({"accepted": True}).encode(), "application/json")


def _body(rfile: BinaryIO, headers: dict[str, str]) -> bytes:
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks = []
        while size := int(rfile.readline().split(b";")[0].strip() or b"0", 16):
            chunks.append(rfile.read(size))
            rfile.readline()
        rfile.readline()
        return b"".join(chunks)
    return rfile.read(int(headers.get("content-length") or 0))


def _send(sock: socket.socket, method: str, status: int, body: bytes, content_type: str) -> None:
    reason = {200: "OK", 503: "Service Unavailable"}[status]
    head = f"HTTP/1.0 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
    sock.sendall(head.encode() + (b"" if method == "HEAD" else body))


def _raw(recorder: Recorder, conn: Conversation) -> None:
    data = b""
    while len(data) < _MAX_BYTES:
        if not select.select([conn.sock], [], [], _QUIET_S)[0]:
            break
        chunk = conn.sock.recv(65536)
        if not chunk:
            break
        data += chunk
    text = f"{len(data)} bytes over TCP at the target, not HTTP: {preview(data)}"
    recorder.record(conn, ArrivalKind.TCP, text, None)


def _smtp(recorder: Recorder, conn: Conversation) -> None:
    conn.sock.settimeout(_WAIT_S)
    rfile = conn.sock.makefile("rb")
    commands: list[str] = []
    message = 0
    try:
        while line := rfile.readline(65536):
            verb = line.split(b" ", 1)[0].strip().upper().decode("ascii", "replace")
            commands.append(verb)
            if verb in ("EHLO", "HELO"):
                conn.sock.sendall(b"250 toolproof\r\n")
            elif verb == "DATA":
                conn.sock.sendall(b"354 end data with <CR><LF>.<CR><LF>\r\n")
                while (body := rfile.readline(65536)) not in (b".\r\n", b".\n", b""):
                    message += len(body)
                conn.sock.sendall(b"250 2.0.0 queued\r\n")
            elif verb == "QUIT":
                conn.sock.sendall(b"221 bye\r\n")
                break
            else:
                conn.sock.sendall(b"250 ok\r\n")
    except OSError:
        pass
    delivered = f", a {message}-byte message delivered" if "DATA" in commands else ", no message delivered"
    recorder.record(conn, ArrivalKind.SMTP, f"an SMTP session at the target: {' '.join(commands)}{delivered}", None)
