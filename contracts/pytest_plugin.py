"""The contract suite as a pytest fixture.

Enable it in a ``conftest.py`` with one line::

    pytest_plugins = ["toolproof.contracts.pytest_plugin"]

and check a tool in one line::

    def test_send_email_conforms(tool_contract):
        tool_contract(SendEmailTool)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ._check import assert_conforms
from ._findings import ContractReport

ToolContract = Callable[..., ContractReport]
"""``tool_contract(factory, **options) -> ContractReport`` (``check_tool``'s options), raising ContractViolation."""


@pytest.fixture
def tool_contract() -> ToolContract:
    """Check a tool factory against the tool-author contract; fails the test with every finding."""

    def check(factory: Callable[[], Any], **options: Any) -> ContractReport:
        __tracebackhide__ = True
        return assert_conforms(factory, **options)

    return check
