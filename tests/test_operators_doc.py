"""docs/operators.md's worked session, run as the page writes it: its files, its commands and its script, against
the fake it names served over stdio and over streamable HTTP; the script must print what the page shows.

Only the ports and the root folder are substituted (a test cannot own 8787, 8765 or /tmp/toolproof-ops).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import free_port, wait_for_driver

from toolproof.spec import load_mcp_servers

PAGE = Path(__file__).resolve().parents[1] / "docs" / "operators.md"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)
DRIVER_PORT, SERVER_PORT, ROOT = "8787", "8765", "/tmp/toolproof-ops"
"""What the page names and the test substitutes."""


@dataclass(frozen=True)
class Page:
    """The page's blocks, by what they are."""

    stdio_file: str
    http_file: str
    own_environment_file: str
    commands: list[str]
    """The session's commands (section 2), in order."""
    http_server: str
    """The command that serves the fake over HTTP (section 4)."""
    script: str
    output: str


def _page() -> Page:
    blocks = [(lang, text) for lang, text in BLOCK.findall(PAGE.read_text(encoding="utf-8"))]
    tomls = [text for lang, text in blocks if lang == "toml"]
    shells = [text for lang, text in blocks if lang == "sh"]
    [script] = [text for lang, text in blocks if lang == "python"]
    [output] = [text for lang, text in blocks if lang == "text"]
    [stdio_file] = [t for t in tomls if 'command = "toolproof"' in t]
    [http_file] = [t for t in tomls if "url = " in t]
    [own] = [t for t in tomls if t not in (stdio_file, http_file)]
    [session, http] = shells
    return Page(stdio_file, http_file, own, session.strip().splitlines(), http.strip(), script, output)


def _environment() -> dict[str, str]:
    # `toolproof` as the page runs it: the one installed beside this Python.
    return os.environ | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


class Substitute:
    """The page's ports and root, replaced by this test's own."""

    def __init__(self, root: Path) -> None:
        self.driver_port, self.server_port = str(free_port()), str(free_port())
        self.root = root

    def __call__(self, text: str) -> str:
        text = text.replace(ROOT, str(self.root))
        return text.replace(DRIVER_PORT, self.driver_port).replace(SERVER_PORT, self.server_port)


@pytest.fixture
def background() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in reversed(started):
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_worked_session_runs_as_written(
    transport: str, tmp_path: Path, background: list[subprocess.Popen[bytes]]
) -> None:
    page = _page()
    swap = Substitute(tmp_path / "toolproof-ops")
    environment = _environment()
    servers = page.stdio_file if transport == "stdio" else page.http_file
    (tmp_path / "servers.toml").write_text(swap(servers), encoding="utf-8")
    if transport == "http":
        log = (tmp_path / "fake-mcp.log").open("w")
        background.append(
            subprocess.Popen(shlex.split(swap(page.http_server)), cwd=tmp_path, env=environment, stderr=log)
        )
        wait_for_port(int(swap.server_port), background[-1])
    check, mkdir, serve = page.commands
    assert check.startswith("toolproof check-server ")
    checked = subprocess.run(swap(check), shell=True, cwd=tmp_path, env=environment, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "verdict: can be admitted as configured (exit 0)" in checked.stdout
    subprocess.run(swap(mkdir), shell=True, cwd=tmp_path, env=environment, check=True)
    serve_log = (tmp_path / "serve-reference.log").open("w")
    background.append(subprocess.Popen(shlex.split(swap(serve)), cwd=tmp_path, env=environment, stderr=serve_log))
    wait_for_driver(f"http://127.0.0.1:{swap.driver_port}", background[-1])
    (tmp_path / "session.py").write_text(swap(page.script), encoding="utf-8")
    session = subprocess.run(
        [sys.executable, "session.py"], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300
    )
    assert session.returncode == 0, session.stderr
    assert session.stdout == page.output
    assert session.stderr == ""


def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    """Return once something listens on ``port``; fail if ``process`` exits first."""
    import socket
    import time

    for _ in range(600):
        assert process.poll() is None, "the fake MCP server exited"
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listened on {port}")


def test_the_servers_in_their_own_environments_are_a_valid_file(tmp_path: Path) -> None:
    # uvx, npx and a venv need the network or a real install to run: the file itself is what the page promises.
    path = tmp_path / "servers.toml"
    path.write_text(_page().own_environment_file, encoding="utf-8")
    assert [(s.server_id, (s.command or [""])[0]) for s in load_mcp_servers(path)] == [
        ("sqlite", "uvx"),
        ("memory", "npx"),
        ("inhouse", "/opt/inhouse-mcp/.venv/bin/python"),
    ]
