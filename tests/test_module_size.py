"""Small modules with one job (style.md, guideline 12): no module of the reference, the contract suite or the CLI
past 400 lines without its reason.

The CLI's folder holds the driver, the bench and the expectations too; the reference's holds its witnesses.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 400
CHECKED = ("reference", "contracts", "toolproof")
"""Folders (from the checkout) whose every module keeps under ``LIMIT``."""
_WITNESSES = "one module per decision, so the tree answers which wrong pipelines a decision rejects: its witnesses"
LONGER: dict[str, str] = {
    "reference/witnesses/d03.py": _WITNESSES + " (the fourteen steps and store faults: 33 of them)",
    "reference/witnesses/d04.py": _WITNESSES + " (recovery and store faults: 44 of them)",
    "reference/witnesses/d07.py": _WITNESSES + " (MCP transports and lifecycle: 41)",
    "reference/witnesses/d09.py": _WITNESSES + " (the MCP catalog: 33)",
    "reference/witnesses/d11.py": _WITNESSES + " (labels and approvals: 28)",
    "reference/witnesses/d02.py": _WITNESSES + " (the context a tool is handed: 23)",
    "reference/witnesses/d17.py": _WITNESSES + " (the bridge: 19, most of them with a sandbox of their own)",
}
"""Module (path from the checkout) -> why it may be longer than ``LIMIT``."""


def long_modules(root: Path, folders: tuple[str, ...], limit: int) -> dict[str, int]:
    """Every module under ``folders`` of ``root`` longer than ``limit`` lines, with its length."""
    found = {}
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            length = len(path.read_text(encoding="utf-8").splitlines())
            if length > limit:
                found[path.relative_to(root).as_posix()] = length
    return found


def test_no_module_is_longer_than_the_limit_without_its_reason() -> None:
    unexplained = {path: length for path, length in long_modules(ROOT, CHECKED, LIMIT).items() if path not in LONGER}
    if unexplained:
        lines = [f"  {path}: {length} lines" for path, length in unexplained.items()]
        pytest.fail(
            f"modules past {LIMIT} lines: split each along a seam a reader can name, or give its reason in LONGER\n"
            + "\n".join(lines),
            pytrace=False,
        )


def test_a_long_module_is_found(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "_long.py").write_text("x = 1\n" * 401, encoding="utf-8")
    (tmp_path / "pkg" / "_short.py").write_text("x = 1\n" * 400, encoding="utf-8")
    assert long_modules(tmp_path, ("pkg",), 400) == {"pkg/_long.py": 401}
