"""docs/ci.md: its workflows are valid for the CI systems they are written for, and use the commands that exist."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).parent.parent / "docs" / "ci.md"
SCHEMAS = {"GitHub Actions": "vendor.github-workflows", "GitLab CI": "vendor.gitlab-ci"}
"""Each section's workflow, and the schema check-jsonschema bundles for it (no network)."""


def _workflow(section: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(r"```yaml\n(.*?)```", body, flags=re.DOTALL)
    return block


def _checker() -> str:
    found = shutil.which("check-jsonschema") or str(Path(sys.executable).parent / "check-jsonschema")
    if not Path(found).exists():
        pytest.fail("check-jsonschema is missing: install the test extra (pip install -e '.[test]')")
    return found


@pytest.mark.parametrize("section", sorted(SCHEMAS))
def test_the_workflow_is_valid_for_its_ci_system(section: str, tmp_path: Path) -> None:
    workflow = tmp_path / "workflow.yml"
    workflow.write_text(_workflow(section), encoding="utf-8")
    checked = subprocess.run(
        [_checker(), "--builtin-schema", SCHEMAS[section], str(workflow)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize("section", sorted(SCHEMAS))
def test_a_broken_workflow_is_refused_by_the_same_check(section: str, tmp_path: Path) -> None:
    # The check can fail: a job without its steps or script is invalid for either system.
    broken = re.sub(r"\n(  |    )(steps|script):", r"\n\1stepz:", _workflow(section))
    workflow = tmp_path / "workflow.yml"
    workflow.write_text(broken, encoding="utf-8")
    checked = subprocess.run(
        [_checker(), "--builtin-schema", SCHEMAS[section], str(workflow)], capture_output=True, text=True
    )
    assert checked.returncode != 0


@pytest.mark.parametrize("section", sorted(SCHEMAS))
def test_the_workflow_runs_shards_and_merges_them(section: str) -> None:
    workflow = _workflow(section)
    assert re.search(r"toolproof run .*--shard .+/", workflow)
    assert re.search(r"toolproof merge \S+", workflow)
    assert "junit.xml" in workflow
    assert "postgres" in workflow
