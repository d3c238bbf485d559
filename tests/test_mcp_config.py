"""The operator's MCP server file: read into McpServerConfigs, refused in one typed line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from toolproof.spec import McpConfigError, McpServerConfig, McpTransport, load_mcp_servers

SECRET = "sk-never-shown-9f2c"
"""An env value no error line may contain."""


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
    )
    fetch, search = load_mcp_servers(path)
    assert fetch.transport is McpTransport.STDIO
    assert fetch.command == ["uvx", "mcp-server-fetch", "--ignore-robots-txt"]
    assert fetch.env == {"FETCH_TOKEN": SECRET}
    assert (fetch.cwd, fetch.call_timeout_s, fetch.protocol) == ("/srv/fetch", 5.0, "legacy")
    assert fetch.effective_classification.required_scopes == frozenset()
    assert search == McpServerConfig.model_validate(
        {
            "server_id": "search",
            "transport": "http",
            "url": "http://127.0.0.1:9000/mcp",
            "origin": "tenant",
            "protocol": "2026-07-28",
            "max_output_bytes": 4096,
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
        "{file}: unknown top-level key 'servers'; the file holds only [[server]] tables",
    ),
    "unknown key": (
        SERVER + "timeout = 3\n",
        "{file}: server 1 (id 'fetch'): timeout: unknown key; a server has id, command, args, env, cwd, url, origin,"
        " classification, protocol, call_timeout_s, max_output_bytes",
    ),
    "transport given": (
        SERVER + 'transport = "stdio"\n',
        "{file}: server 1 (id 'fetch'): transport: unknown key; a server has id, command, args, env, cwd, url, origin,"
        " classification, protocol, call_timeout_s, max_output_bytes",
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


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_file_raises_one_typed_line(tmp_path: Path, case: str) -> None:
    path, expected = _bad_file(tmp_path, case)
    with pytest.raises(McpConfigError) as caught:
        load_mcp_servers(path)
    message = str(caught.value)
    assert _matches(message, expected), message
    assert caught.value.path == path
    assert SECRET not in message
