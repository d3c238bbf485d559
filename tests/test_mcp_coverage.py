"""The MCP scenarios exercise every hostile fake server, in both protocol eras."""

from __future__ import annotations

from pathlib import Path

from toolproof.fakes.mcp import SERVERS

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def _sources() -> str:
    return "\n".join(p.read_text() for p in sorted(SCENARIOS.glob("test_*.py")))


CHECK_SERVER_ONLY = {
    "DiscoverInvalidParamsServer": "only how check-server words an era refusal (-32602): no pipeline rule differs",
    "DiscoverInternalErrorServer": "only how check-server words an era refusal (-32603): no pipeline rule differs",
    "DiscoverSessionErrorServer": "only how check-server words an era refusal (-32000): no pipeline rule differs",
    "AcceptsUnlistedServer": "a server's answer to a name it never listed, which the pipeline never calls (D5): "
    "a check-server finding",
}
"""Fakes that exist for what ``toolproof check-server`` reports about a server, with why no scenario needs them;
tests/test_check_server.py exercises each."""


def test_every_hostile_server_is_exercised_by_a_scenario() -> None:
    sources = _sources()
    missing = [name for name in SERVERS if f'"{name}"' not in sources and name not in CHECK_SERVER_ONLY]
    assert missing == []


def test_every_check_server_only_fake_is_a_fake_that_check_server_tests_exercise() -> None:
    checks = (Path(__file__).resolve().parent / "test_check_server.py").read_text()
    assert [name for name in CHECK_SERVER_ONLY if name not in SERVERS or f'"{name}"' not in checks] == []


def test_scenarios_cover_both_protocol_eras_and_real_transports() -> None:
    sources = _sources()
    assert 'parametrize("protocol", ERAS)' in sources
    assert "stdio_command(" in sources
    assert "http_server(" in sources
