"""The pytest entry: a tool author enables the plugin in one line and checks a tool in one line."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

CONFTEST = 'pytest_plugins = ["toolproof.contracts.pytest_plugin"]\n'

TESTS = """
from toolproof.fakes._authors import PostsOrderTool, PostsUnmarkedTool


def test_posts_order_conforms(tool_contract):
    tool_contract(PostsOrderTool)


def test_posts_unmarked_conforms(tool_contract):
    tool_contract(PostsUnmarkedTool)
"""


def test_the_fixture_passes_a_good_tool_and_fails_a_bad_one_with_its_finding(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_tools=TESTS)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*ContractViolation: D4.10: messages.send_unmarked (EXTERNAL_WRITE, NON_IDEMPOTENT): 1 finding",
            "*D4.10 consequential effect without a watermark*",
        ]
    )
    # The contract hides its own frames: the failure points at the author's test, not at toolproof.
    assert "_check.py" not in result.stdout.str()
