"""Local servers the tests start: a free loopback port, waiting until a driver answers on it, and a driver served
for the length of a test."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx2

DRIVER_PATIENCE_POLLS = 600
"""Polls of ``/v1/info``, 0.1 s apart at least, before a driver that never answered fails the test."""


def free_port() -> int:
    """A loopback TCP port nobody listens on at the moment of asking."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_driver(url: str, process: subprocess.Popen[bytes] | None = None) -> None:
    """Return once a driver answers ``GET {url}/v1/info``; fail the test if it never does or its process exits."""
    for _ in range(DRIVER_PATIENCE_POLLS):
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the driver for {url} exited with code {process.returncode} before answering")
        try:
            httpx2.get(f"{url}/v1/info", timeout=1)
            return
        except httpx2.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"no driver answered at {url}")


@contextlib.contextmanager
def served_driver(
    command: Callable[[int], list[str]], importable: Path | None = None, *, quiet: bool = False
) -> Iterator[str]:
    """A driver started by ``command(port)`` on a free port (with ``importable``, if given, on its path and as its
    folder; ``quiet``: its stderr dropped); the address once it answers; terminated on the way out."""
    port = free_port()
    env = None
    if importable is not None:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(importable), os.environ.get("PYTHONPATH")])),
        }
    stderr = subprocess.DEVNULL if quiet else None
    process = subprocess.Popen(command(port), env=env, cwd=importable, stderr=stderr)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_driver(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=60)
