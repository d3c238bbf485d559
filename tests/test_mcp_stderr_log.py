"""A stdio MCP server's stderr goes to its own log in the store directory, and an open error quotes its last lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolproof.fakes import FakeClock
from toolproof.fakes.mcp import CRASH_MESSAGE, stdio_command
from toolproof.reference import ReferenceImplementation
from toolproof.spec import InstanceConfig, McpOpenError, McpServerConfig, McpTransport

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _config(tmp_path: Path, fake: str, protocol: str = "legacy") -> InstanceConfig:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    server = McpServerConfig(
        server_id="weather", transport=McpTransport.STDIO, command=stdio_command(fake), protocol=protocol
    )
    return InstanceConfig(store_dir=tmp_path / "store", workspace=workspace, mcp_servers=[server])


async def _refusal(config: InstanceConfig) -> McpOpenError:
    with pytest.raises(McpOpenError) as refused:
        async with ReferenceImplementation().open(config, [], FakeClock()):
            pass
    return refused.value


@pytest.mark.parametrize("protocol", ["legacy", "2026-07-28"])
async def test_a_crash_at_start_is_logged_and_quoted(
    tmp_path: Path, protocol: str, capfd: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, "CrashesAtStartServer", protocol)
    error = await _refusal(config)
    log = tmp_path / "store" / "mcp-weather.stderr.log"
    assert CRASH_MESSAGE in log.read_text()
    assert (error.server_id, error.era) == ("weather", protocol)
    assert "exited before answering" in error.answer
    assert CRASH_MESSAGE in error.answer
    assert str(log) in str(error)
    assert "\n" not in str(error)
    assert CRASH_MESSAGE not in capfd.readouterr().err  # Not the worker's stderr.


async def test_the_log_is_appended_across_starts_and_the_error_quotes_the_latest(tmp_path: Path) -> None:
    config = _config(tmp_path, "CrashesAtStartServer")
    await _refusal(config)
    error = await _refusal(config)
    text = (tmp_path / "store" / "mcp-weather.stderr.log").read_text()
    assert text.count("--- toolproof: starting ") == 2
    assert text.count(CRASH_MESSAGE) == 2
    assert error.answer.count(CRASH_MESSAGE) == 1  # Only the latest start's lines are quoted.


async def test_a_running_server_logs_there_too(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, "PlainServer")
    async with ReferenceImplementation().open(config, [], FakeClock()) as instance:
        assert [t.name for t in (await instance.advertise("run-1")).tools] == ["mcp.weather.echo"]
    log = tmp_path / "store" / "mcp-weather.stderr.log"
    assert log.read_text().startswith("--- toolproof: starting ")
