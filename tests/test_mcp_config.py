"""The operator's MCP server file (``serve-reference --mcp-config``): read by the real CLI, refused in one line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from helpers import free_port, wait_for_driver
from typer.testing import CliRunner

from toolproof._cli import app
from toolproof.driver import HttpImplementation, child_command
from toolproof.fakes import FakeClock
from toolproof.fakes.mcp import ENV_KEY, stdio_command
from toolproof.spec import (
    ContextItem,
    InstanceConfig,
    McpConfigError,
    McpServerConfig,
    McpTransport,
    ProposedCall,
    StepRequest,
    Success,
    TrustLabel,
    load_mcp_servers,
)

ROOT = Path(__file__).resolve().parent.parent
SECRET = "sk-never-shown-9f2c"
"""An env value no error line may contain."""


def _toolproof(*args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI, in a terminal wide enough that help is not folded."""
    environment = os.environ | {"COLUMNS": "240"}
    return subprocess.run(
        [sys.executable, "-m", "toolproof", *args], capture_output=True, text=True, check=False, env=environment
    )


def _toml_list(items: list[str]) -> str:
    return json.dumps(items)  # A JSON array of strings is a TOML array of basic strings.


def test_a_file_reads_into_operator_configurations(tmp_path: Path) -> None:
    path = tmp_path / "servers.toml"
    path.write_text(
        "[[server]]\n"
        'id = "fetch"\n'
        'command = "uvx"\n'
        'args = ["mcp-server-fetch", "--ignore-robots-txt"]\n'
        f'env = {{ FETCH_TOKEN = "{SECRET}" }}\n'
        'cwd = "/srv/fetch"\n'
        'classification = { side_effect = "READ_ONLY", risk = "LOW", idempotency = "IDEMPOTENT" }\n'
        "call_timeout_s = 5\n"
        "\n"
        "[[server]]\n"
        'id = "search"\n'
        'url = "http://127.0.0.1:9000/mcp"\n'
        'origin = "tenant"\n'
        'protocol = "2026-07-28"\n'
        "max_output_bytes = 4096\n"
        "listing_max_age_s = 2.5\n"
    )
    fetch, search = load_mcp_servers(path)
    assert fetch.transport is McpTransport.STDIO
    assert fetch.command == ["uvx", "mcp-server-fetch", "--ignore-robots-txt"]
    assert fetch.env == {"FETCH_TOKEN": SECRET}
    assert (fetch.cwd, fetch.call_timeout_s, fetch.protocol, fetch.listing_max_age_s) == (
        "/srv/fetch",
        5.0,
        "legacy",
        30.0,
    )
    assert fetch.effective_classification.required_scopes == frozenset()
    assert search == McpServerConfig.model_validate(
        {
            "server_id": "search",
            "transport": "http",
            "url": "http://127.0.0.1:9000/mcp",
            "origin": "tenant",
            "protocol": "2026-07-28",
            "max_output_bytes": 4096,
            "listing_max_age_s": 2.5,
        }
    )


SERVER = '[[server]]\nid = "fetch"\ncommand = "uvx"\n'
"""A valid entry, for the cases that break something after it."""

BAD_FILES: dict[str, tuple[str | bytes | None, str]] = {
    "missing": (None, "{file}: cannot be read (No such file or directory); give a UTF-8 TOML file"),
    "a directory": (None, "{file}: cannot be read (Is a directory); give a UTF-8 TOML file"),
    "not utf-8": (b'[[server]]\nid = "\xff"\n', "{file}: cannot be read (UnicodeDecodeError); give a UTF-8 TOML file"),
    "not toml": ("[[server]\nid = fetch\n", r"{file}: not TOML: .* \(at line 1, column \d+\)"),
    "empty": ("", "{file}: no [[server]] tables; give one per MCP server"),
    "server not a table list": ('server = "fetch"\n', "{file}: no [[server]] tables; give one per MCP server"),
    "unknown top-level key": (
        "servers = []\n" + SERVER,
        "{file}: unknown top-level key 'servers'; the file holds [[server]] tables and egress_allowlist",
    ),
    "allowlist not a list": (
        'egress_allowlist = "127.0.0.1"\n' + SERVER,
        '{file}: egress_allowlist: must be a list of host names, e.g. ["127.0.0.1"]',
    ),
    "allowlist entry names no host": (
        'egress_allowlist = ["127.0.0.1", "."]\n' + SERVER,
        "{file}: egress_allowlist: '.' names no host a client can reach",
    ),
    "unknown key": (
        SERVER + "timeout = 3\n",
        "{file}: server 1 (id 'fetch'): timeout: unknown key; a server has id, command, args, env, cwd, url, origin,"
        " classification, protocol, call_timeout_s, max_output_bytes, listing_max_age_s",
    ),
    "transport given": (
        SERVER + 'transport = "stdio"\n',
        "{file}: server 1 (id 'fetch'): transport: unknown key; a server has id, command, args, env, cwd, url, origin,"
        " classification, protocol, call_timeout_s, max_output_bytes, listing_max_age_s",
    ),
    "missing id": (
        '[[server]]\ncommand = "uvx"\n',
        '{file}: server 1: id: missing; give the server\'s id, e.g. id = "fetch"',
    ),
    "id not a segment": (
        '[[server]]\nid = "My-Server"\ncommand = "uvx"\n',
        r"{file}: server 1 (id 'My-Server'): id: server_id 'My-Server' is not one segment [a-z][a-z0-9_]* (D5.5)",
    ),
    "id not a string": (
        '[[server]]\nid = 7\ncommand = "uvx"\n',
        "{file}: server 1: id: Input should be a valid string",
    ),
    "neither command nor url": (
        '[[server]]\nid = "fetch"\n',
        "{file}: server 1 (id 'fetch'): command: neither of command and url; give command (stdio) or url (HTTP),"
        " not both",
    ),
    "both command and url": (
        SERVER + 'url = "http://127.0.0.1:9000/mcp"\n',
        "{file}: server 1 (id 'fetch'): command: both of command and url; give command (stdio) or url (HTTP), not both",
    ),
    "command as a list": (
        '[[server]]\nid = "fetch"\ncommand = ["uvx", "mcp-server-fetch"]\n',
        "{file}: server 1 (id 'fetch'): command: must be a non-empty string (the executable); put its arguments in"
        " args",
    ),
    "empty command": (
        '[[server]]\nid = "fetch"\ncommand = ""\n',
        "{file}: server 1 (id 'fetch'): command: must be a non-empty string (the executable); put its arguments in"
        " args",
    ),
    "args not strings": (
        SERVER + "args = [1, 2]\n",
        "{file}: server 1 (id 'fetch'): args: must be a list of strings",
    ),
    "args without command": (
        '[[server]]\nid = "fetch"\nurl = "http://127.0.0.1:9000/mcp"\nargs = ["x"]\n',
        "{file}: server 1 (id 'fetch'): args: args without command; args are the stdio command's arguments",
    ),
    "bad era": (
        SERVER + 'protocol = "2025-06-18"\n',
        "{file}: server 1 (id 'fetch'): protocol: Input should be 'legacy' or '2026-07-28'",
    ),
    "bad origin": (
        SERVER + 'origin = "admin"\n',
        "{file}: server 1 (id 'fetch'): origin: Input should be 'operator' or 'tenant'",
    ),
    "bad classification member": (
        SERVER + 'classification = { side_effect = "READ_ONLY", risk = "low", idempotency = "IDEMPOTENT" }\n',
        "{file}: server 1 (id 'fetch'): classification.risk: Input should be 'LOW', 'MEDIUM', 'HIGH' or 'CRITICAL'",
    ),
    "incomplete classification": (
        SERVER + 'classification = { side_effect = "READ_ONLY", risk = "LOW" }\n',
        "{file}: server 1 (id 'fetch'): classification.idempotency: Field required",
    ),
    "unknown classification key": (
        SERVER + 'classification = { side_effect = "READ_ONLY", risk = "LOW", idempotency = "IDEMPOTENT", x = 1 }\n',
        "{file}: server 1 (id 'fetch'): classification.x: Extra inputs are not permitted",
    ),
    "tenant over stdio": (
        SERVER + 'origin = "tenant"\n',
        "{file}: server 1 (id 'fetch'): origin: a tenant server must use HTTP (D7.1); give url, or origin ="
        ' "operator"',
    ),
    "zero timeout": (
        SERVER + "call_timeout_s = 0\n",
        "{file}: server 1 (id 'fetch'): call_timeout_s: Input should be greater than 0",
    ),
    "output cap as text": (
        SERVER + 'max_output_bytes = "16MB"\n',
        "{file}: server 1 (id 'fetch'): max_output_bytes: Input should be a valid integer, unable to parse string as"
        " an integer",
    ),
    "negative listing age": (
        SERVER + "listing_max_age_s = -1\n",
        "{file}: server 1 (id 'fetch'): listing_max_age_s: Input should be greater than or equal to 0",
    ),
    "endless listing age": (
        SERVER + "listing_max_age_s = inf\n",
        "{file}: server 1 (id 'fetch'): listing_max_age_s: Input should be a finite number",
    ),
    "listing age as text": (
        SERVER + 'listing_max_age_s = "30s"\n',
        "{file}: server 1 (id 'fetch'): listing_max_age_s: Input should be a valid number, unable to parse string as a"
        " number",
    ),
    "duplicate id": (
        SERVER + '\n[[server]]\nid = "fetch"\nurl = "http://127.0.0.1:9000/mcp"\n',
        "{file}: server 2 (id 'fetch'): id: id 'fetch' is also server 1's; give each server its own id",
    ),
    "env not a table": (
        SERVER + f'env = "{SECRET}"\n',
        "{file}: server 1 (id 'fetch'): env: must be a table of NAME = \"value\"",
    ),
    "bad env name": (
        SERVER + f'env = {{ "API-KEY" = "{SECRET}" }}\n',
        "{file}: server 1 (id 'fetch'): env.API-KEY: not a variable name [A-Za-z_][A-Za-z0-9_]*; rename it",
    ),
    "env value not a string": (
        SERVER + "env = { PORT = 8080 }\n",
        "{file}: server 1 (id 'fetch'): env.PORT: must be a string (quote it)",
    ),
    "env value with NUL": (
        SERVER + f'env = {{ TOKEN = "{SECRET}\\u0000" }}\n',
        "{file}: server 1 (id 'fetch'): env: env 'TOKEN' contains NUL; remove it (D7.4)",
    ),
    "env on an http server": (
        f'[[server]]\nid = "fetch"\nurl = "http://127.0.0.1:9000/mcp"\nenv = {{ TOKEN = "{SECRET}" }}\n',
        "{file}: server 1 (id 'fetch'): env: env applies only to a stdio server, not transport='http'; remove it"
        " (D7.4)",
    ),
    "relative cwd": (
        SERVER + 'cwd = "servers/fetch"\n',
        "{file}: server 1 (id 'fetch'): cwd: cwd='servers/fetch' is not an absolute path; give one starting with /"
        " (D7.4)",
    ),
    "second entry bad": (
        SERVER + '\n[[server]]\nid = "search"\nurl = "http://127.0.0.1:9000/mcp"\nprotocol = "2026"\n',
        "{file}: server 2 (id 'search'): protocol: Input should be 'legacy' or '2026-07-28'",
    ),
}
"""Each bad file, and the one line that refuses it ({file}: the path; a regular expression where marked by ``\\(``)."""


def _bad_file(tmp_path: Path, case: str) -> tuple[Path, str]:
    content, expected = BAD_FILES[case]
    path = tmp_path / "servers.toml"
    if case == "a directory":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    return path, expected.replace("{file}", str(path))


def _matches(line: str, expected: str) -> bool:
    return line == expected or ("\\(" in expected and re.fullmatch(expected, line) is not None)


def test_the_docs_example_file_reads(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "check-server.md").read_text()
    section = page.split("## Connecting the reference to a real server", 1)[1]
    example = section.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "servers.toml").write_text(example)
    assert [s.server_id for s in load_mcp_servers(tmp_path / "servers.toml")] == ["fetch", "search"]


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_file_raises_one_typed_line(tmp_path: Path, case: str) -> None:
    path, expected = _bad_file(tmp_path, case)
    with pytest.raises(McpConfigError) as caught:
        load_mcp_servers(path)
    message = str(caught.value)
    assert _matches(message, expected), message
    assert caught.value.path == path
    assert SECRET not in message


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_serve_reference_refuses_a_bad_file_in_one_line(tmp_path: Path, case: str) -> None:
    """Every bad file through the command's own code, in-process (the process boundary: the test below)."""
    path, expected = _bad_file(tmp_path, case)
    root = tmp_path / "root"
    root.mkdir()
    before = sorted(tmp_path.rglob("*"))
    args = ["serve-reference", "--mcp-config", str(path), "--port", str(free_port()), "--root", str(root)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert _matches(lines[0], f"toolproof: error: {expected}"), lines[0]
    assert SECRET not in result.stderr
    assert sorted(tmp_path.rglob("*")) == before  # Nothing written on failure.


@pytest.mark.slow
@pytest.mark.parametrize("case", ["missing", "not utf-8"])
def test_serve_reference_refuses_a_bad_file_as_a_process(tmp_path: Path, case: str) -> None:
    """The same refusal as a user's process sees it: exit status 2, one line on stderr, nothing on stdout."""
    path, expected = _bad_file(tmp_path, case)
    root = tmp_path / "root"
    root.mkdir()
    result = _toolproof("serve-reference", "--mcp-config", str(path), "--port", str(free_port()), "--root", str(root))
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert [_matches(line, f"toolproof: error: {expected}") for line in result.stderr.splitlines()] == [True]


@pytest.mark.slow
def test_serve_reference_help_names_the_option() -> None:
    result = _toolproof("serve-reference", "--help")
    assert result.returncode == 0
    assert "--mcp-config" in result.stdout
    assert "[[server]]" in result.stdout


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``toolproof serve-reference --mcp-config`` serving EnvironmentServer over stdio, started by its command."""
    command, *args = stdio_command("EnvironmentServer")
    cwd = tmp_path / "server-cwd"
    cwd.mkdir()
    config = tmp_path / "servers.toml"
    config.write_text(
        "[[server]]\n"
        'id = "keyed"\n'
        f"command = {json.dumps(command)}\n"
        f"args = {_toml_list(args)}\n"
        f'env = {{ {ENV_KEY} = "{SECRET}" }}\n'
        f"cwd = {json.dumps(str(cwd.resolve()))}\n"
        'classification = { side_effect = "READ_ONLY", risk = "LOW", idempotency = "IDEMPOTENT" }\n'
    )
    root = tmp_path / "root"
    root.mkdir()
    port = free_port()
    environment = os.environ | {ENV_KEY: "the-workers-own-key"}
    command = ["serve-reference", "--mcp-config", str(config), "--port", str(port), "--root", str(root)]
    log = tmp_path / "serve-reference.log"  # A file, not a pipe: nobody reads it while the server runs.
    with log.open("w") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "toolproof", *command], env=environment, stderr=stderr)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_driver(url, process)
        yield url, root
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert SECRET not in log.read_text()


@pytest.mark.slow
def test_serve_reference_gives_every_instance_the_files_servers(served: tuple[str, Path]) -> None:
    url, root = served

    async def session() -> tuple[list[str], str]:
        (root / "workspace").mkdir()
        config = InstanceConfig(store_dir=root / "store", workspace=root / "workspace")
        async with HttpImplementation(url).open(config, [], FakeClock()) as instance:
            names = (await instance.advertise("run-1")).names()
            call = ProposedCall(call_id="c1", tool_name="mcp.keyed.environment")
            user = ContextItem(id="user-1", trust=TrustLabel.USER, text="Which key?")
            [answer] = await instance.submit(StepRequest(run_id="run-1", step_number=0, calls=[call], context=[user]))
        assert isinstance(answer, Success), answer
        return names, "".join(e.text for e in answer.content)

    names, seen = anyio.run(session)
    assert "mcp.keyed.environment" in names
    assert f"{ENV_KEY}={SECRET}" in seen.splitlines()
    assert f"cwd={(root.parent / 'server-cwd').resolve()}" in seen.splitlines()


@pytest.mark.slow
def test_a_client_may_not_send_a_server_with_an_operators_id(served: tuple[str, Path]) -> None:
    url, root = served
    mine = McpServerConfig(server_id="keyed", transport=McpTransport.HTTP, url="http://127.0.0.1:9/mcp")
    config = InstanceConfig(store_dir=root / "store", workspace=root, mcp_servers=[mine])
    body = {"config": json.loads(config.model_dump_json()), "tools": [], "tool_host": "http://127.0.0.1:9"}
    answer = httpx2.post(f"{url}/v1/instances", json=body)
    assert answer.status_code == 422
    assert answer.json()["field"] == "config.mcp_servers.0.server_id"


@pytest.mark.slow
def test_a_driver_child_refuses_a_file_gone_bad_in_one_line(tmp_path: Path) -> None:
    """The child reads the file again (only its path is on its command line): a file changed since is one line."""
    path = tmp_path / "servers.toml"
    path.write_text(SERVER + f'env = {{ TOKEN = "{SECRET}" }}\n')
    root = tmp_path / "root"
    root.mkdir()
    command = child_command("reference", free_port(), root, [], supervised=False, mcp_config=path)
    assert not any(SECRET in part for part in command)
    path, expected = _bad_file(tmp_path, "env on an http server")
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"toolproof: error: {expected}"]
    assert SECRET not in result.stderr
