"""The MCP lifecycle, catalog and result witnesses over HTTP: each, served behind the driver protocol, fails the rules
it breaks.

``tests/test_witnesses.py`` rejects these witnesses in-process; ``tests/test_witness_transport.py``
serves every witness over HTTP in one long module. This module judges only the MCP lifecycle,
catalog, result and hostile-kit witnesses, one test each, so a change to the MCP adapter or its scenarios can be
checked over the driver protocol without the whole matrix: ``pytest -m transport_matrix -n 0
tests/test_witness_transport_mcp.py``. A witness here has to read ``fail`` over HTTP on every rule it
breaks: none of these rules is judged only in-process.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_witness_transport import _judge

from toolproof.reference.witnesses import WITNESSES
from toolproof.spec import Verdict

pytestmark = [pytest.mark.slow, pytest.mark.transport_matrix]

ISSUE_17 = (
    "early_notice_lost",
    "listen_notice_twice",
    "dead_server_stops_every_run",
    "never_reconnects",
    "drop_after_mark_unavailable",
    "prompts_named_as_tools",
    "first_prompt_wins",
    "cap_verdict_as_remote_text",
    "read_tool_without_resources",
    "stdio_env_ignored",
    "stdio_inherits_worker_env",
)
"""The witnesses of the MCP lifecycle, catalog and result defects."""

HOSTILE_KIT = (
    "schema_verdict_as_remote",
    "mcp_structure_unjudged",
    "missing_structure_accepted",
    "notices_dropped_during_call",
    "drift_judged_by_input_schema",
)
"""The witnesses of the hostile kit mid-session: structure against its schema, a flood, a silent change."""


def test_every_issue_17_witness_is_registered() -> None:
    assert set(ISSUE_17 + HOSTILE_KIT) <= set(WITNESSES)


@pytest.mark.parametrize("name", ISSUE_17 + HOSTILE_KIT)
def test_issue_17_witness_fails_its_rules_over_http(name: str, tmp_path: Path) -> None:
    verdicts = _judge(name, tmp_path)
    wrong = {
        rule: (verdict.value, evidence[:300])
        for rule, (verdict, evidence) in verdicts.items()
        if verdict is not Verdict.FAIL
    }
    assert wrong == {}, f"{name} is not rejected over HTTP: {wrong}"
