"""``run_check_tool``: what ``toolproof check-tool module:factory [--json]`` prints and exits with."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion
from typer.testing import CliRunner

from toolproof._cli import app
from toolproof.contracts import EXIT_BAD_INPUT, EXIT_CONFORMS, EXIT_FINDINGS, run_check_tool
from toolproof.fakes._authors import BAD_AUTHOR_TOOLS, GOOD_AUTHOR_TOOLS, PutsFileTool

MODULE = "toolproof.fakes._authors"


def _run(ref: str, *, as_json: bool = False) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = run_check_tool(ref, as_json=as_json, out=out, err=err)
    return status, out.getvalue(), err.getvalue()


@pytest.mark.usefixtures("confinement")
def test_a_conforming_tool_exits_0_with_one_line() -> None:
    status, out, err = _run(f"{MODULE}:SendsMessageTool")
    assert (status, err) == (EXIT_CONFORMS, "")
    assert out == "messages.send (EXTERNAL_WRITE, NON_IDEMPOTENT): conforms to the tool-author contract\n"


@pytest.mark.usefixtures("confinement")
def test_a_violating_tool_exits_1_with_one_readable_finding_per_rule() -> None:
    status, out, err = _run(f"{MODULE}:MarksAfterPostTool")
    assert (status, err) == (EXIT_FINDINGS, "")
    lines = out.splitlines()
    assert lines[0] == "messages.send_late_mark (EXTERNAL_WRITE, NON_IDEMPOTENT): 1 finding"
    assert lines[2] == "D4.1 effect before the watermark"
    assert lines[3].startswith("  seen: the first effect, POST /messages (no Idempotency-Key) at the transport")
    assert lines[4].startswith("  fix:  Move `await context.mark_effect_sent()` before the first operation")
    assert lines[5] == '  arguments: {"text": ""}'
    assert lines[6:] == [
        "  trace:",
        "    attempt 1 (idempotency key 44ac9e99a8d0…439541)",
        "      1. POST /messages (no Idempotency-Key) at the transport -> 200",
        "      2. mark_effect_sent()",
        "      3. returned ToolResult(ok=True)",
    ]


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("SendsMessageTool", r"is not module:factory \(e\.g\. mypackage\.tools:SendEmailTool\)$"),
        ("no_such_module_xyz:Tool", r"module 'no_such_module_xyz' cannot be imported \(ModuleNotFoundError: "),
        (f"{MODULE}:NoSuchTool", rf"'{re.escape(MODULE)}' has no attribute 'NoSuchTool'$"),
        (
            f"{MODULE}:BAD_AUTHOR_TOOLS",
            r"'toolproof.fakes._authors:BAD_AUTHOR_TOOLS': expected a Tool or a zero-argument callable that makes one, "
            r"found dict \{",
        ),
        (f"{MODULE}:reply", r"factory 'reply' raised TypeError: "),
        (f"{MODULE}:ContentPart", r"factory 'ContentPart' raised ValidationError: "),
        (f"{MODULE}:Path", r"factory 'Path' returned PosixPath, which is not a Tool: it needs a `spec`"),
    ],
    ids=["no-colon", "no-module", "no-attribute", "not-callable", "needs-arguments", "raises", "not-a-tool"],
)
def test_bad_input_exits_2_with_one_line_on_stderr(ref: str, message: str) -> None:
    status, out, err = _run(ref)
    assert (status, out) == (EXIT_BAD_INPUT, "")
    assert err.startswith("toolproof check-tool: error: ")
    assert err.count("\n") == 1
    assert re.search(message, err.rstrip("\n")), err


_INSTANCE = PutsFileTool()


def test_a_tool_instance_is_accepted_as_its_own_factory() -> None:
    status, out, _ = _run(f"{__name__}:_INSTANCE")
    assert status == EXIT_CONFORMS
    assert out.startswith("notes.put (WORKSPACE_WRITE, IDEMPOTENT): conforms")


@pytest.mark.usefixtures("confinement")
@pytest.mark.parametrize("tool", [*GOOD_AUTHOR_TOOLS[:2], *BAD_AUTHOR_TOOLS], ids=lambda t: t.__name__)
def test_json_output_is_stable(tool: type, snapshot: SnapshotAssertion) -> None:
    status, out, _ = _run(f"{MODULE}:{tool.__name__}", as_json=True)
    payload = json.loads(out)
    assert status == (EXIT_CONFORMS if payload["passed"] else EXIT_FINDINGS)
    assert list(payload) == sorted(payload)
    assert "/tmp" not in out
    assert "toolproof-contract-" not in out
    assert not re.search(r"0x[0-9a-f]{6,}", out)
    assert "127.0.0.1" not in out  # the transport's port changes from run to run
    assert '"observation": "os"' in out
    assert out == snapshot


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ([f"{MODULE}:PutsFileTool"], EXIT_CONFORMS),
        ([f"{MODULE}:RaisesTrustTool", "--json"], EXIT_FINDINGS),
        (["nonsense"], EXIT_BAD_INPUT),
    ],
    ids=["conforms", "json-findings", "bad-input"],
)
def test_the_typer_wiring_passes_the_exit_status_through(args: list[str], code: int) -> None:
    result = CliRunner().invoke(app, ["check-tool", *args])
    assert result.exit_code == code


def test_the_console_script_imports_a_module_from_the_working_directory(tmp_path: Path) -> None:
    # A console script, unlike `python -m`, does not put the working directory on sys.path: the loader does.
    (tmp_path / "beside_the_author.py").write_text(
        "from toolproof.fakes import PutsFileTool\n\n\ndef make():\n    return PutsFileTool()\n", encoding="utf-8"
    )
    script = Path(sys.executable).with_name("toolproof")
    completed = subprocess.run(
        [str(script), "check-tool", "beside_the_author:make", "--observation", "python"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert (completed.returncode, completed.stderr) == (EXIT_CONFORMS, "")
    assert completed.stdout.startswith("notes.put (WORKSPACE_WRITE, IDEMPOTENT): no violation found")
