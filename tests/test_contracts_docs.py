"""The tool-author page's complete example is a tool that conforms, checked as the page shows it."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

from toolproof.contracts import check_tool

PAGE = Path(__file__).resolve().parent.parent / "docs" / "tool-authors.md"


def _example() -> types.ModuleType:
    section = PAGE.read_text(encoding="utf-8").split("## The Tool interface", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the Tool interface section has no python block"
    module = types.ModuleType("tool_authors_example")
    sys.modules[module.__name__] = module  # dataclasses and pickling look classes up by module
    exec(compile(match.group(1), str(PAGE), "exec"), module.__dict__)
    return module


@pytest.mark.usefixtures("confinement")
def test_the_complete_example_on_the_page_conforms() -> None:
    report = check_tool(_example().CreateTicketTool)
    assert report.headline() == (
        "tickets.create (EXTERNAL_WRITE, CONDITIONALLY_IDEMPOTENT): conforms to the tool-author contract"
    )
