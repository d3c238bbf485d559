"""The fakes' fork server: a forked fake is the server the plain command starts, seen from the pipeline's side (its
pipes, environment, directory, exit status, last words and signals), and nothing it forked outlives its launcher."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from toolproof.fakes import mcp as fakes
from toolproof.fakes.mcp import _forkserver

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _texts(result: object) -> str:
    return "".join(getattr(part, "text", "") for part in getattr(result, "content", []))


def _launcher(command: list[str]) -> bool:
    return command[:4] == [sys.executable, "-I", "-S", "-c"] and command[4] == _forkserver.LAUNCHER


def _until(condition: object, what: str) -> None:
    # A bound on waiting for the kernel to reap, not a verdict on speed: generous, and only failing when never true.
    deadline = time.monotonic() + 60
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_commands_go_through_the_fork_server_unless_it_is_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    command = fakes.stdio_command("PlainServer")
    assert _launcher(command)
    assert command[-3:] == ["PlainServer", "--transport", "stdio"]
    assert Path(command[5]).exists()  # The fork server listens before the first command is handed out.
    monkeypatch.setenv(_forkserver.SWITCH, "0")
    plain = [sys.executable, "-m", "toolproof.fakes.mcp"]
    assert fakes.stdio_command("PlainServer") == [*plain, "PlainServer", "--transport", "stdio"]


async def test_a_forked_server_has_the_launchers_environment_and_directory(tmp_path: Path) -> None:
    command, *args = fakes.stdio_command("EnvironmentServer")
    env = {"TOOLPROOF_FAKE_API_KEY": "k-123", "ONLY_HERE": "yes", "PATH": os.environ.get("PATH", "")}
    with anyio.fail_after(60):
        async with Client(StdioServerParameters(command=command, args=args, env=env, cwd=tmp_path)) as client:
            said = _texts(await client.call_tool("environment", {"names": ["ONLY_HERE", "TOOLPROOF_HYPOTHESIS"]}))
    assert "TOOLPROOF_FAKE_API_KEY=k-123" in said
    assert f"cwd={tmp_path}" in said
    assert "ONLY_HERE=yes" in said
    names = said.rpartition("names=")[2].split(",")
    # What the SDK adds to a server's environment, and nothing of the harness's own (the fork server's) environment.
    assert "ONLY_HERE" in names
    assert not [name for name in names if name.startswith(("PYTEST", "TOOLPROOF_HYPOTHESIS"))]


def test_a_forked_server_exits_with_the_plain_servers_status_and_last_words(monkeypatch: pytest.MonkeyPatch) -> None:
    forked = subprocess.run(fakes.stdio_command("CrashesAtStartServer"), capture_output=True, timeout=120, check=False)
    monkeypatch.setenv(_forkserver.SWITCH, "0")
    plain = subprocess.run(fakes.stdio_command("CrashesAtStartServer"), capture_output=True, timeout=120, check=False)
    assert plain.returncode == 3
    assert (forked.returncode, forked.stdout, forked.stderr) == (plain.returncode, plain.stdout, plain.stderr)


def test_a_server_kept_down_exits_3_through_the_gate_and_serves_once_the_path_is_gone(tmp_path: Path) -> None:
    gate = tmp_path / "down"
    gate.touch()
    command = fakes.stdio_command("PlainServer", down_while=gate)
    kept = subprocess.run(command, capture_output=True, timeout=120, check=False, stdin=subprocess.DEVNULL)
    assert kept.returncode == 3
    gate.unlink()
    served = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert served.stdin is not None
    served.stdin.close()  # End of input: a served fake ends as the plain one does.
    assert served.wait(timeout=120) == 0


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_the_launcher_reaches_the_server_and_the_launcher_dies_of_it(number: int) -> None:
    before = set(_forkserver.served_pids())
    launcher = subprocess.Popen(fakes.stdio_command("PlainServer"), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    _until(lambda: set(_forkserver.served_pids()) - before, "the fork server never forked the server")
    (server,) = set(_forkserver.served_pids()) - before
    launcher.send_signal(number)
    code = launcher.wait(timeout=120)
    _until(lambda: server not in _forkserver.served_pids(), "the server outlived the signal its launcher got")
    # As the plain fake does. (SIGINT is left out: the plain fake, blocked reading stdin, goes on serving after it.)
    assert code == -number


def test_a_launcher_killed_outright_takes_its_server_with_it() -> None:
    before = set(_forkserver.served_pids())
    launcher = subprocess.Popen(fakes.stdio_command("PlainServer"), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    _until(lambda: set(_forkserver.served_pids()) - before, "the fork server never forked the server")
    (server,) = set(_forkserver.served_pids()) - before
    launcher.kill()
    assert launcher.wait(timeout=120) == -signal.SIGKILL
    _until(lambda: server not in _forkserver.served_pids(), "the server outlived its SIGKILLed launcher")


def test_a_launcher_that_cannot_reach_a_fork_server_becomes_the_plain_command(tmp_path: Path) -> None:
    command = fakes.stdio_command("CrashesAtStartServer")
    command[5] = str(tmp_path / "no-such.sock")
    ended = subprocess.run(command, capture_output=True, timeout=120, check=False)
    assert ended.returncode == 3
    assert fakes.CRASH_MESSAGE.encode() in ended.stderr


def test_the_fork_server_stops_with_its_harness_and_kills_what_it_forked(tmp_path: Path) -> None:
    # A harness process of its own: it starts a fork server, launches a fake, and is then killed outright.
    script = (
        "import subprocess, sys, time\n"
        "from toolproof.fakes import mcp as fakes\n"
        "from toolproof.fakes.mcp import _forkserver\n"
        "p = subprocess.Popen(fakes.stdio_command('PlainServer'), stdin=subprocess.PIPE, stdout=subprocess.PIPE)\n"
        "while not _forkserver.served_pids(): time.sleep(0.02)\n"
        "print(_forkserver._Started.process.pid, *_forkserver.served_pids(), p.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    harness = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert harness.stdout is not None
    fork_server, server, launcher = map(int, harness.stdout.readline().split())
    harness.kill()
    harness.wait(timeout=120)

    def gone(pid: int) -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            return True
        return state == "Z"

    _until(lambda: gone(fork_server) and gone(server), "the fork server or its server outlived the harness")
    os.kill(launcher, signal.SIGKILL)  # The launcher was the harness's child; it is not the fork server's to stop.
