"""``toolproof serve-reference`` as an operator runs it: bad input refused at start in one line, the admission decision
check-server makes on the same file, every refused instance logged, and a typed error for the Python client."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import free_port, wait_for_driver

from toolproof.fakes.mcp import stdio_command

CHECK_TIMEOUT = "20"
"""check-server's --timeout in these tests: a bound on a wait, never a verdict."""


def _toolproof(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolproof", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
        timeout=timeout,
    )


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("toolproof: error: "), result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    return lines[0].removeprefix("toolproof: error: ")


def _serve(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    # Exits by itself on bad input; a bounded wait in case it serves instead (the old behaviour for some inputs).
    return _toolproof("serve-reference", "--root", str(root), *args, timeout=60)


@pytest.mark.slow
def test_a_busy_port_exits_2_in_one_line_before_serving(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = _one_error_line(_serve(tmp_path, "--port", str(port)))
    assert line == f"--port {port}: cannot listen on 127.0.0.1:{port} (Address already in use); give a free port"


@pytest.mark.slow
def test_a_stdio_command_not_found_is_refused_at_start_in_check_servers_words(tmp_path: Path) -> None:
    config = tmp_path / "servers.toml"
    config.write_text('[[server]]\nid = "fetch"\ncommand = "toolproof-no-such-server"\n')
    served = _one_error_line(_serve(tmp_path, "--mcp-config", str(config), "--port", str(free_port())))
    checked = _one_error_line(_toolproof("check-server", "-q", str(config)))
    assert checked == "server 'fetch': command 'toolproof-no-such-server' not found"
    assert served == f"{config}: {checked}"


@pytest.fixture
def tenant_server() -> Iterator[str]:
    """A fake MCP server over streamable HTTP on 127.0.0.1 (its URL), for a tenant to name."""
    port = free_port()
    command = [sys.executable, "-m", "toolproof.fakes.mcp", "PlainServer", "--transport", "http", "--port", str(port)]
    served = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert served.poll() is None, "the fake MCP server exited"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        served.terminate()
        served.wait(timeout=10)


def _tenant_file(path: Path, url: str, allowlist: list[str] | None) -> Path:
    top = f"egress_allowlist = {json.dumps(allowlist)}\n" if allowlist is not None else ""
    path.write_text(f'{top}[[server]]\nid = "tenant"\nurl = "{url}"\norigin = "tenant"\n', encoding="utf-8")
    return path


@pytest.mark.slow
def test_check_server_and_serve_reference_make_one_admission_decision(tmp_path: Path, tenant_server: str) -> None:
    refused = _tenant_file(tmp_path / "refused.toml", tenant_server, None)
    checked = _toolproof("check-server", "-q", "--json", "--timeout", CHECK_TIMEOUT, str(refused))
    assert checked.returncode == 1, checked.stderr
    [server] = json.loads(checked.stdout)["servers"]
    [finding] = [f for f in server["findings"] if f["kind"] == "not_admitted"]
    assert finding["decision"] == 7
    assert finding["message"].startswith(
        "tenant MCP server 'tenant' is on host '127.0.0.1', which is not on the egress allowlist (D7.2): add its host "
        "to the file's top-level egress_allowlist"
    )
    served = _one_error_line(_serve(tmp_path, "--mcp-config", str(refused), "--port", str(free_port())))
    assert served == f"{refused}: {finding['message']}"

    # The file's allowlist admits it, for both: check-server exits 0, and every instance served gets its tools.
    admitted = _tenant_file(tmp_path / "admitted.toml", tenant_server, ["127.0.0.1"])
    checked = _toolproof("check-server", "-q", "--json", "--timeout", CHECK_TIMEOUT, str(admitted))
    assert checked.returncode == 0, checked.stdout
    port = free_port()
    root = tmp_path / "root"
    command = ["serve-reference", "--mcp-config", str(admitted), "--port", str(port), "--root", str(root)]
    log = tmp_path / "serve-reference.log"
    with log.open("w") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "toolproof", *command], stderr=stderr)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_driver(url, process)
        names = _advertised(url, root)
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert "mcp.tenant.echo" in names, log.read_text()


def _advertised(url: str, root: Path) -> list[str]:
    script = (
        "import anyio, json, sys, pathlib\n"
        "from toolproof.driver import load\n"
        "from toolproof.fakes import FakeClock\n"
        "from toolproof.spec import InstanceConfig\n"
        "root = pathlib.Path(sys.argv[2])\n"
        "async def main():\n"
        "    config = InstanceConfig(store_dir=root / 'store', workspace=root)\n"
        "    async with load(sys.argv[1]).open(config, [], FakeClock()) as instance:\n"
        "        print(json.dumps((await instance.advertise('run-1')).names()))\n"
        "anyio.run(main)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, url, str(root)], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    names: list[str] = json.loads(done.stdout)
    return names


REFUSED_CLIENT = """\
import anyio, sys, pathlib
from toolproof.driver import load
from toolproof.fakes import FakeClock
from toolproof.spec import ConfigurationError, InstanceConfig, McpOrigin, McpServerConfig, McpTransport
root = pathlib.Path(sys.argv[2])
tenant = McpServerConfig(server_id="elsewhere", origin=McpOrigin.TENANT, transport=McpTransport.HTTP,
                         url="http://198.51.100.7/mcp")
async def main():
    config = InstanceConfig(store_dir=root / "store", workspace=root, mcp_servers=[tenant])
    try:
        async with load(sys.argv[1]).open(config, [], FakeClock()):
            print("opened")
    except ConfigurationError as exc:
        print(f"{type(exc).__name__}: {exc}")
anyio.run(main)
"""


def _served_client(
    tmp_path: Path, client_code: str, *serve_options: str
) -> tuple[subprocess.CompletedProcess[str], str]:
    """Serve the reference on a free port (its log in ``tmp_path``), run ``client_code`` against it with the address
    and a root folder as arguments, stop the server; the client's result and the server's log."""
    port = free_port()
    root = tmp_path / "root"
    root.mkdir()
    log = tmp_path / "serve-reference.log"
    command = ["serve-reference", *serve_options, "--port", str(port), "--root", str(root)]
    with log.open("w") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "toolproof", *command], stderr=stderr)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_driver(url, process)
        client = subprocess.run(
            [sys.executable, "-c", client_code, url, str(root)],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
    finally:
        process.terminate()
        process.wait(timeout=30)
    return client, log.read_text()


@pytest.mark.slow
def test_a_refused_instance_is_a_typed_error_for_the_client_and_a_line_in_the_servers_log(tmp_path: Path) -> None:
    client, log = _served_client(tmp_path, REFUSED_CLIENT)
    cause = "tenant MCP server 'elsewhere' is on host '198.51.100.7', which is not on the egress allowlist (D7.2)"
    assert client.stdout.splitlines() == [f"ConfigurationError: {cause}"], client.stdout + client.stderr
    assert client.stderr == "", "the client printed on stderr (a server's CancelledError traceback)"
    logged = [line for line in log.splitlines() if "not opened" in line]
    assert logged == [f"instance not opened (422 configuration-error): {cause}"]


OPEN_CLIENT = """\
import anyio, sys, pathlib
from toolproof.driver import load
from toolproof.fakes import FakeClock
from toolproof.spec import ConfigurationError, InstanceConfig
root = pathlib.Path(sys.argv[2])
async def main():
    try:
        async with load(sys.argv[1]).open(InstanceConfig(store_dir=root / "store", workspace=root), [], FakeClock()):
            print("opened")
    except ConfigurationError as exc:
        print(f"{type(exc).__name__}: {exc}")
anyio.run(main)
"""


@pytest.mark.slow
def test_a_server_that_exits_at_start_reads_alike_in_check_server_and_serve_reference(tmp_path: Path) -> None:
    command = stdio_command("CrashesAtStartServer")
    config = tmp_path / "servers.toml"
    config.write_text(
        f'[[server]]\nid = "crashes"\ncommand = {json.dumps(command[0])}\nargs = {json.dumps(command[1:])}\n'
    )
    checked = _toolproof("check-server", "-q", "--json", "--era", "legacy", str(config))
    [era] = json.loads(checked.stdout)["servers"][0]["eras"]
    said = "MCP server 'crashes' refused at open: asked era legacy; the server exited before answering"
    assert era["failure"].startswith(f"McpOpenError: {said}; cause: "), era["failure"]
    client, log = _served_client(tmp_path, OPEN_CLIENT, "--mcp-config", str(config))
    # serve-reference adds the server's stderr tail and its log's path; the words before are check-server's.
    assert client.stdout.startswith(f"ConfigurationError: {said} (its stderr ends: "), client.stdout + client.stderr
    assert client.stderr == ""
    assert f"instance not opened (422 configuration-error): {said}" in log
