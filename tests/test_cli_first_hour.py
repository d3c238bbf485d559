"""A newcomer's first hour through the real CLI: each first slip of an implementer, its exit status and its one line."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from toolproof.reports import load_run

MISTAKES = Path(__file__).resolve().parent / "first_hour"
"""mistakes.py: an implementer's first slips, each on top of the reference."""


def _toolproof(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolproof", *args], capture_output=True, text=True, cwd=cwd, check=False
    )


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("url", "line"),
    [
        (
            "http://::garbage",
            "toolproof: error: driver URL 'http://::garbage' is malformed (Port could not be cast to integer value as"
            " ':garbage'); give http://HOST:PORT",
        ),
        ("http://:80", "toolproof: error: driver URL 'http://:80' names no host; give http://HOST:PORT"),
        # Nothing listens on port 9 (discard): probed once, no minute of retries.
        (
            "http://127.0.0.1:9",
            "toolproof: error: no driver answers at http://127.0.0.1:9: [Errno 111] Connection refused",
        ),
    ],
)
def test_a_bad_driver_url_is_one_line_and_exit_2(url: str, line: str, tmp_path: Path) -> None:
    result = _toolproof("run", "--impl", url, "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert _one_error_line(result) == line
    assert not (tmp_path / "out").exists()


def test_every_bad_rule_id_is_reported(tmp_path: Path) -> None:
    result = _toolproof("run", "--rules", "D1.99,X,D1", "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert _one_error_line(result) == (
        "toolproof: error: unknown rule id 'D1.99'; rule selector 'X' is neither a decision (D5) nor a rule id (D5.3):"
        " see `toolproof rules`"
    )


def test_an_out_that_is_a_file_is_refused_before_anything_loads(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("mine")
    # An unknown implementation too: were it loaded first, its error would be the one shown.
    result = _toolproof("run", "--impl", "no_such_module:make", "--out", str(blocker))
    assert result.returncode == 2
    assert _one_error_line(result) == f"toolproof: error: --out {str(blocker)!r} is a file, not a folder"
    assert blocker.read_text() == "mine"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["report", "nope"], "toolproof: error: no toolproof results in 'nope': it is not a folder;"),
        (["fake-mcp", "NoSuchServer"], "toolproof: error: unknown fake MCP server 'NoSuchServer'; the names are: "),
        (
            ["fake-mcp", "NonJsonServer", "--transport", "http"],
            "toolproof: error: fake MCP server 'NonJsonServer' is served over stdio only",
        ),
    ],
)
def test_messages_are_words_not_python_reprs(args: list[str], line: str, tmp_path: Path) -> None:
    result = _toolproof(*args, cwd=tmp_path)
    assert result.returncode == 2
    shown = _one_error_line(result)
    assert shown.startswith(line)
    assert "=" not in shown.split(": error: ", 1)[1].split(";")[0]


def test_an_unknown_run_id_is_said_in_words(tmp_path: Path) -> None:
    assert _toolproof("run", "--rules", "D1.1", "--out", str(tmp_path), "-q").returncode == 0
    result = _toolproof("report", str(tmp_path), "--run-id", "nope")
    assert result.returncode == 2
    assert _one_error_line(result).startswith(
        f"toolproof: error: no run 'nope' in {str(tmp_path / 'results.duckdb')!r}"
    )


def test_help_reads_like_a_well_kept_cli() -> None:
    for command in (["run"], ["diff"], ["report"], ["fake-mcp"], ["check-tool"], ["rules"]):
        shown = _toolproof(*command, "--help").stdout
        assert "<bool>" not in shown, command
        assert "{" not in shown.split("\n\n", 2)[1], command  # The usage line: no {directory}-style names.
    usage = {c: _toolproof(c, "--help").stdout for c in ("report", "diff", "fake-mcp")}
    lines = {c: [line.strip() for line in text.splitlines()] for c, text in usage.items()}
    assert "Usage: python -m toolproof report [OPTIONS] DIR" in lines["report"]
    assert "Usage: python -m toolproof diff [OPTIONS] RUN_A RUN_B" in lines["diff"]
    assert "Usage: python -m toolproof fake-mcp [OPTIONS] NAME" in lines["fake-mcp"]
    assert "<stdio|http>" in usage["fake-mcp"]


def test_fake_mcp_needs_a_name_and_list_needs_none() -> None:
    missing = _toolproof("fake-mcp")
    assert missing.returncode == 2
    assert "Missing argument 'NAME'" in missing.stderr
    listed = _toolproof("fake-mcp", "--list")
    assert listed.returncode == 0
    assert listed.stdout.splitlines()[0].startswith("PlainServer\t")


def test_check_tool_imports_a_module_beside_the_user(tmp_path: Path) -> None:
    (tmp_path / "beside_me.py").write_text("def make():\n    return 1\n")
    result = _toolproof("check-tool", "beside_me:make", cwd=tmp_path)
    assert result.returncode == 2
    # It imported, and called the factory: what it made is the complaint.
    assert _one_error_line(result).endswith(
        "factory 'make' returned int, which is not a Tool: it needs a `spec`"
        " (ToolSpec) and `async def execute(arguments, context)`"
    )


def test_piped_output_is_never_wrapped(tmp_path: Path) -> None:
    rules = _toolproof("rules")
    assert all(len(line.split("\t")) == 3 for line in rules.stdout.splitlines())
    run = _toolproof("run", "--rules", "D1.1", "--out", str(tmp_path / ("a-folder-name-long-enough-to-wrap" * 3)), "-q")
    assert run.returncode == 0
    assert run.stdout.splitlines()[-1].startswith("report: ")
    assert run.stdout.splitlines()[-1].endswith(")")


@pytest.mark.slow
def test_progress_shows_each_cells_parameters_and_the_summary_counts_cells_and_rules(tmp_path: Path) -> None:
    # One scenario of D9.2 (its other scenarios come and go as the rule's sweep grows).
    scenario = "test_d09_catalog.py::test_list_changed_is_recorded_and_not_applied"
    result = _toolproof("run", "--rules", "D9.2", "--cell", scenario, "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    cells = [line.rsplit("  ", 1)[1] for line in result.stderr.splitlines() if line.startswith("[")]
    assert cells == [
        "test_d09_catalog.py::test_list_changed_is_recorded_and_not_applied[legacy]",
        "test_d09_catalog.py::test_list_changed_is_recorded_and_not_applied[2026-07-28]",
    ]
    assert "reference: rules: 1 pass; scenario cells: 2 pass" in result.stdout


@pytest.mark.parametrize(
    ("factory", "line"),
    [
        (
            "StringProfiles",
            "toolproof: error: implementation 'mistakes:StringProfiles': profiles holds 'core', not spec.Profile"
            " members; write e.g. frozenset({Profile.CORE})",
        ),
        (
            "AsyncOpen",
            "toolproof: error: implementation 'mistakes:AsyncOpen': open() is `async def`; it must return an async"
            " context manager",
        ),
        (
            "DictResults",
            "toolproof: error: implementation 'reference': Instance.submit returned a wrong value at 0.Success.status:",
        ),
    ],
)
def test_an_implementers_slip_is_one_line_naming_it(factory: str, line: str, tmp_path: Path) -> None:
    result = _toolproof(
        "run", "--impl", f"mistakes:{factory}", "--rules", "D1", "-q", "--out", str(tmp_path / "o"), cwd=MISTAKES
    )
    assert result.returncode == 2
    assert _one_error_line(result).startswith(line)


def test_a_failures_cause_is_on_the_terminal(tmp_path: Path) -> None:
    result = _toolproof(
        "run",
        "--impl",
        "toolproof.reference.witnesses:narrates_remote_errors",
        "--rules",
        "D13.4",
        "-q",
        "--out",
        str(tmp_path),
    )
    assert result.returncode == 1
    assert "fail: D13.4" in result.stdout
    [cause] = [line for line in result.stderr.splitlines() if "D13.4" in line]
    assert cause.startswith(
        "toolproof: witness:narrates_remote_errors: D13.4: mcp.errs.fail's message carries the server's text: "
    )
    assert "message carries the server's text" in cause


def _interrupted_run(out: Path, ready: str | None) -> subprocess.CompletedProcess[str]:
    """Start a run into ``out``; SIGINT once ``ready`` is on stderr or, without it, once ``out`` exists
    (the run creates it just before pytest collects the scenarios)."""
    stderr = out.parent / "stderr.txt"
    with stderr.open("w") as sink:
        child = subprocess.Popen(
            [sys.executable, "-m", "toolproof", "run", "--rules", "D1,D2", "--out", str(out)],
            stdout=subprocess.PIPE,
            stderr=sink,
            text=True,
        )
        # The progress line pads the cell's number to the total's width: "[ 2/63", "[  2/140".
        pattern = None if ready is None else re.compile(r"\[\s*" + re.escape(ready.lstrip("[ ")))
        while child.poll() is None and not (
            pattern.search(stderr.read_text()) if pattern is not None else out.exists()
        ):
            time.sleep(0.02)
        child.send_signal(signal.SIGINT)
        stdout, _ = child.communicate(timeout=300)
    return subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr.read_text())


@pytest.mark.slow
def test_ctrl_c_mid_run_is_one_line_exit_130_and_keeps_the_stored_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _toolproof("run", "--rules", "D1.1", "--out", str(out), "-q").returncode == 0
    before, _ = load_run(out)
    result = _interrupted_run(out, "[ 2/")
    assert result.returncode == 130
    assert result.stderr.splitlines()[-1] == "toolproof: interrupted; results.duckdb keeps only complete runs"
    assert "Traceback" not in result.stderr
    assert load_run(out)[0].run_id == before.run_id


_TASK_ENDED_BY_CTRL_C = """
import asyncio, gc, signal
from toolproof._interrupt import interrupted

async def ended_by_ctrl_c() -> None:
    interrupted(signal.SIGINT, None)

loop = asyncio.new_event_loop()
task = loop.create_task(ended_by_ctrl_c())
try:
    loop.run_until_complete(task)
except KeyboardInterrupt:
    pass
del task
gc.collect()
"""


def test_a_task_ctrl_c_ended_leaves_no_traceback_when_it_is_collected() -> None:
    # A run interrupted inside a scenario's event loop leaves a task whose KeyboardInterrupt nobody retrieves.
    result = subprocess.run([sys.executable, "-c", _TASK_ENDED_BY_CTRL_C], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


@pytest.mark.slow
def test_ctrl_c_while_collecting_is_one_line_exit_130(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _interrupted_run(out, None)
    assert result.returncode == 130
    # The run's first line (what runs) may come before the interrupt; then the one line, and nothing else.
    lines = result.stderr.splitlines()
    assert lines[-1] == "toolproof: interrupted; results.duckdb keeps only complete runs", result.stderr
    assert all(line.startswith("toolproof: running ") for line in lines[:-1]), result.stderr
    assert not (out / "results.duckdb").exists()


def test_ctrl_c_before_a_command_handles_it_is_one_line_exit_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # E.g. while the command line is still importing: the console script's own handler says it.
    import logging

    import toolproof._cli
    from toolproof import _interrupt, _main

    def app(**_: object) -> None:
        _interrupt.interrupted(signal.SIGINT, None)

    monkeypatch.setattr(toolproof._cli, "app", app)
    monkeypatch.setattr(_interrupt._State, "interrupted", False)
    monkeypatch.setattr(_interrupt._State, "signum", signal.SIGINT)
    # A run an earlier test made in this process marked its files written: here no run has written anything (else
    # the handler ends the process, as it must once a run's files are written).
    monkeypatch.setattr(_interrupt._State, "written", None)
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)  # The handler quiets these; put back after.
    monkeypatch.setattr(logging.getLogger("asyncio"), "disabled", False)
    before = {stopping: signal.getsignal(stopping) for stopping in (signal.SIGINT, signal.SIGTERM)}
    try:
        with warnings.catch_warnings(), pytest.raises(SystemExit) as exit_:
            _main.main()
    finally:
        for stopping, handler in before.items():
            signal.signal(stopping, handler)
    assert exit_.value.code == 130
    assert capsys.readouterr().err == "toolproof: interrupted; results.duckdb keeps only complete runs\n"


_INTERRUPT_HANDLED_IN_A_STRING_EXEC = """
import sys
from toolproof._interrupt import forget_handled_interrupt

try:
    exec("raise KeyboardInterrupt", {})
except KeyboardInterrupt:
    pass
if sys.argv[1] == "forget":
    forget_handled_interrupt()
sys.exit(7)
"""


@pytest.mark.parametrize(("forget", "returncode"), [(True, 7), (False, -signal.SIGINT)])
def test_a_handled_interrupt_keeps_the_exit_status_under_python_m(
    tmp_path: Path, forget: bool, returncode: int
) -> None:
    # Under `python -m`, CPython kills the process with SIGINT at exit when a KeyboardInterrupt once left a string
    # exec/eval, even a handled one (how `python -m toolproof run` ended -2 when Ctrl-C landed while pytest
    # collected). The case without forget_handled_interrupt shows the behaviour is still there to guard against.
    (tmp_path / "handled_interrupt.py").write_text(_INTERRUPT_HANDLED_IN_A_STRING_EXEC)
    result = subprocess.run(
        [sys.executable, "-m", "handled_interrupt", "forget" if forget else "keep"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == returncode, result.stderr


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid``, read from /proc (children, their children, ...)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue  # Gone meanwhile.
            children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _command_line(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc (Linux)")
def test_sigterm_mid_run_stops_the_fake_servers_it_started_and_exits_143(tmp_path: Path) -> None:
    # A cancelled CI job sends SIGTERM: the run unwinds as after Ctrl-C, so the fake MCP server it serves over HTTP
    # (D7.2's scenario) is stopped, not left running.
    child = subprocess.Popen(
        [sys.executable, "-m", "toolproof", "run", "--rules", "D7.2", "--out", str(tmp_path / "out")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    fakes: list[int] = []
    deadline = time.monotonic() + 240
    while not fakes and child.poll() is None and time.monotonic() < deadline:
        below = _descendants(child.pid)
        # The fake's process (the plain command, or the fork server's launcher of it), and what the fork server forked.
        fakes = [p for p in below if "PlainServer --transport http" in _command_line(p)]
        if fakes:
            fakes += [q for p in below if "_forkserver" in _command_line(p) for q in [p, *_descendants(p)]]
        time.sleep(0.05)
    assert fakes, "the run never served its fake MCP server over HTTP"
    child.send_signal(signal.SIGTERM)
    _, stderr = child.communicate(timeout=300)
    left = time.monotonic() + 30
    while any("toolproof.fakes.mcp" in _command_line(p) for p in fakes) and time.monotonic() < left:
        time.sleep(0.1)
    running = [p for p in fakes if "toolproof.fakes.mcp" in _command_line(p)]
    for pid in running:  # Whatever the verdict, nothing of this test outlives it.
        os.kill(pid, signal.SIGKILL)
    assert running == [], "the fake MCP server outlived the run"
    assert child.returncode == 143, stderr
    assert stderr.splitlines()[-1] == "toolproof: interrupted; results.duckdb keeps only complete runs"


_DEBRIS_AFTER_CTRL_C = """
import gc, signal, sys, warnings
from toolproof._interrupt import exit_interrupted, interrupted

class HalfBuilt:
    def __del__(self):
        raise AttributeError("half-built by the interrupt")

try:
    interrupted(signal.SIGINT, None)
except KeyboardInterrupt:
    pass
debris = HalfBuilt()
del debris
gc.collect()
warnings.warn("debris")
exit_interrupted()
"""


def test_what_python_writes_to_stderr_after_ctrl_c_is_left_out_of_the_one_line() -> None:
    # Seen in a full run: Ctrl-C inside an event loop's constructor left a loop whose __del__ failed when collected,
    # and pytest printed that unraisable exception's traceback above the run's one line.
    result = subprocess.run([sys.executable, "-c", _DEBRIS_AFTER_CTRL_C], capture_output=True, text=True, check=False)
    assert result.returncode == 130
    assert result.stderr == "toolproof: interrupted; results.duckdb keeps only complete runs\n"


def test_ctrl_c_a_cell_swallowed_stops_the_run_at_the_next_cell_boundary(monkeypatch: pytest.MonkeyPatch) -> None:
    # The handler records the interrupt before it raises; a cell that swallows the KeyboardInterrupt must not let the
    # run go on to the end and write its files.
    from toolproof import _interrupt
    from toolproof._run_plugins import QuietAfterInterrupt

    plugin = QuietAfterInterrupt()
    monkeypatch.setattr(_interrupt._State, "interrupted", False)
    plugin.pytest_runtest_logstart()
    plugin.pytest_runtest_logfinish()
    monkeypatch.setattr(_interrupt._State, "interrupted", True)
    with pytest.raises(KeyboardInterrupt):
        plugin.pytest_runtest_logstart()
    with pytest.raises(KeyboardInterrupt):
        plugin.pytest_runtest_logfinish()
