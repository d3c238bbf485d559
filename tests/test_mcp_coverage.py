"""The MCP scenarios exercise every hostile fake server, in both protocol eras."""

from __future__ import annotations

from pathlib import Path

from toolproof.fakes.mcp import SERVERS

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def _sources() -> str:
    return "\n".join(p.read_text() for p in sorted(SCENARIOS.glob("test_*.py")))


def test_every_hostile_server_is_exercised_by_a_scenario() -> None:
    sources = _sources()
    missing = [name for name in SERVERS if f'"{name}"' not in sources]
    assert missing == []


def test_scenarios_cover_both_protocol_eras_and_real_transports() -> None:
    sources = _sources()
    assert 'parametrize("protocol", ERAS)' in sources
    assert "stdio_command(" in sources
    assert "http_server(" in sources
