"""Launch a fake as a real subprocess: the stdio command line, or a running streamable HTTP server."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from typing import IO

import anyio
from anyio.abc import Process

from ._forkserver import fake_command
from ._serve import LOOPBACK, _lookup

READY_TIMEOUT_S = 20.0
"""How long ``http_server`` waits for the subprocess to accept TCP connections."""

GRACE_S = 5.0
"""How long ``http_server`` waits after SIGTERM before it kills the subprocess."""


def _module_command(name: str, *options: str) -> list[str]:
    return fake_command(name, *options)


_KEPT_DOWN_GATE = """
import os, sys
if os.path.exists(sys.argv[1]):
    sys.stderr.write(f"fake MCP server {sys.argv[2]} is kept down while {sys.argv[1]} exists\\n")
    sys.exit(3)
os.execv(sys.executable, [sys.executable, *sys.argv[3:]])
"""
"""What a start kept down runs first (``python -c GATE PATH NAME …``, then the fake's own command line): it exits 3
while PATH exists before importing anything, and otherwise becomes the fake's command (``exec``: the same process,
so the pipeline holds the process that serves, or the fork server's launcher of it; see ``_forkserver``)."""


def stdio_command(
    name: str,
    *,
    down_while: str | os.PathLike[str] | None = None,
    state_dir: str | os.PathLike[str] | None = None,
) -> list[str]:
    """The command line that serves the fake ``name`` over stdio.

    ``StdioServerParameters(command=cmd[0], args=cmd[1:])`` connects an ``mcp.Client`` to it. With ``down_while``,
    each start while that path exists exits at once (status 3) without serving: a restart that keeps failing until
    the path is removed. With ``state_dir``, the fake keeps there what must outlive its process, so a restart can
    serve something else than the first start (ChangedOnRestartServer).

    Raises:
        ValueError: Unknown ``name``.
    """
    _lookup(name)
    state = () if state_dir is None else ("--state-dir", os.fspath(state_dir))
    if down_while is None:
        return _module_command(name, "--transport", "stdio", *state)
    # The fake checks the path too, after the gate: a start racing the path's creation is still kept down.
    command = _module_command(name, "--transport", "stdio", *state, "--down-while", os.fspath(down_while))
    return [sys.executable, "-c", _KEPT_DOWN_GATE, os.fspath(down_while), name, *command[1:]]


def _free_port() -> int:
    # The OS picks a free port; a race remains until the fake binds it.
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
    return port


async def _wait_until_listening(name: str, port: int, process: Process, stderr: IO[bytes]) -> None:
    with anyio.move_on_after(READY_TIMEOUT_S):
        while process.returncode is None:
            try:
                stream = await anyio.connect_tcp(LOOPBACK, port)
            except OSError:
                await anyio.sleep(0.05)
            else:
                await stream.aclose()
                return
    if process.returncode is None:
        what = f"did not accept connections on port {port} within {READY_TIMEOUT_S} s"
    else:
        what = f"exited with status {process.returncode} before listening on port {port}"
    stderr.seek(0)
    output = stderr.read().decode(errors="replace")
    raise RuntimeError(f"fake MCP server {name!r} {what}; its stderr:\n{output}")


async def _stop(process: Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    with anyio.move_on_after(GRACE_S):
        await process.wait()
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()


@contextlib.asynccontextmanager
async def http_server(name: str, *, state_dir: str | os.PathLike[str] | None = None) -> AsyncIterator[str]:
    """Serve the fake ``name`` from a subprocess over streamable HTTP on a free loopback port.

    Runs ``python -m toolproof.fakes.mcp NAME --transport http --port P`` and yields once
    the port accepts TCP connections. On exit the subprocess gets SIGTERM, then SIGKILL
    after ``GRACE_S``, and is waited for (even when the block is cancelled). With ``state_dir``,
    the fake keeps there what it records beyond its process (as ``stdio_command``'s).

    Yields:
        The server's URL, ``http://127.0.0.1:P/mcp``.

    Raises:
        ValueError: Unknown ``name``, or a fake served over stdio only.
        RuntimeError: The subprocess exited, or did not listen within ``READY_TIMEOUT_S``;
            the message carries its stderr.
    """
    _lookup(name, "http")
    port = _free_port()
    state = () if state_dir is None else ("--state-dir", os.fspath(state_dir))
    command = _module_command(name, "--transport", "http", "--port", str(port), *state)
    # A file, not a pipe: nobody drains stderr while the server runs, and a full pipe would block it.
    with tempfile.TemporaryFile() as stderr:
        process = await anyio.open_process(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            await _wait_until_listening(name, port, process, stderr)
            yield f"http://{LOOPBACK}:{port}/mcp"
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)
