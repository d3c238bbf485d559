"""What a newcomer from pytest or ruff expects of ``toolproof``, through the real CLI: the database probed up front,
a harness fault said as one, long paths, nothing judged, readable evidence, a guarded --out, honest interrupts, and
-x, --lf, -h, progress with an ETA, examples and completion."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.helpers._runs import POSTGRES_URL
from tests.helpers._servers import free_port, wait_for_driver
from toolproof.reports import load_run

MISTAKES = Path(__file__).resolve().parent / "first_hour"
"""mistakes.py: an implementer's first slips, each on top of the reference."""
HELD_POSTGRES_CELL = (
    "test_d04_held.py::test_two_first_submissions_of_an_untrusted_call_both_wait_for_approval[postgres]"
)
"""One scenario cell that runs only with --database-url, and asks PostgreSQL for a schema of its own."""
COMMANDS = (
    "rules",
    "impls",
    "run",
    "merge",
    "report",
    "diff",
    "check-tool",
    "bench",
    "fake-mcp",
    "check-server",
    "serve-reference",
    "supervise",
)

OPERATORS_OWN = ("check-server", "serve-reference")
"""Commands whose help the operator's work rewrites (argument parsing, the worked session in docs/operators.md)."""


def _toolproof(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolproof", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        check=False,
    )


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# 1. The database: probed up front; a harness fault mid-run is exit 3; reruns carry --database-url.


@pytest.mark.slow
def test_an_unreachable_database_url_is_one_line_and_exit_2_before_anything_runs(tmp_path: Path) -> None:
    url = "postgresql://x@127.0.0.1:1/db"
    result = _toolproof("run", "--rules", "D1.1", "--database-url", url, "--out", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    line = _one_error_line(result)
    assert line.startswith(f"toolproof: error: --database-url {url!r}: PostgreSQL does not answer ("), line
    assert not (tmp_path / "out").exists()


class _ProbeOnlyProxy:
    """A TCP proxy to PostgreSQL that forwards its first connections, then closes each new one at once: the database
    answers the up-front probe, then goes away while the run needs it."""

    def __init__(self, target: tuple[str, int], forwarded: int) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.left = forwarded
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.left <= 0:
                client.close()
                continue
            self.left -= 1
            upstream = socket.create_connection(self.target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            sink.close()

    def close(self) -> None:
        self.listener.close()


@pytest.mark.slow
@pytest.mark.postgres
def test_a_database_lost_mid_run_is_a_harness_failure_exit_3_not_a_rule_failing(tmp_path: Path) -> None:
    proxy = _ProbeOnlyProxy(("127.0.0.1", 5432), forwarded=1)  # The up-front probe's connection, then no more.
    url = POSTGRES_URL.replace("127.0.0.1:5432", f"127.0.0.1:{proxy.port}")
    try:
        result = _toolproof("run", "--database-url", url, "--cell", HELD_POSTGRES_CELL, "--out", str(tmp_path / "out"))
    finally:
        proxy.close()
    assert result.returncode == 3, result.stdout + result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.startswith(
        f"toolproof: error: harness failure: in {HELD_POSTGRES_CELL} against reference: PostgreSQL at "
    ), last
    assert last.endswith(" (no verdict is given, and nothing was written)"), last
    assert "rules:" not in result.stdout  # No verdict was given.
    assert not (tmp_path / "out" / "summary.json").exists()


@pytest.mark.slow
@pytest.mark.postgres
def test_rerun_lines_carry_the_database_url_the_run_used(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _toolproof(
        "run",
        "--impl",
        "mistakes:RaisesOnSubmit",
        "--rules",
        "D13.1",
        "--database-url",
        POSTGRES_URL,
        "--out",
        str(out),
        "-q",
        cwd=MISTAKES,
    )
    assert result.returncode == 1, result.stderr
    reruns = [line for line in (out / "report.md").read_text().splitlines() if line.startswith("Rerun: ")]
    assert reruns
    assert all(f"--database-url {POSTGRES_URL}" in line for line in reruns), reruns[0]


# 2. Long paths.


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--rules", "D1.1", "--out", "n" * 300],
        ["report", "n" * 300],
        ["diff", "a@" + "r" * 5000, "b"],
        ["merge", "n" * 300, "m"],
    ],
    ids=["run --out", "report", "diff", "merge"],
)
def test_a_name_too_long_for_the_file_system_is_one_line_and_exit_2(args: list[str], tmp_path: Path) -> None:
    result = _toolproof(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "is too long for the file system" in _one_error_line(result)
    assert list(tmp_path.iterdir()) == []


# 3. `toolproof run` with no arguments: pytest's answer, said on the first line.


def test_run_help_shows_the_default_implementation() -> None:
    shown = _toolproof("run", "--help", env={"COLUMNS": "300"}).stdout
    assert "Default: reference (as pytest without arguments runs every test)." in shown


@pytest.mark.slow
def test_the_first_line_says_what_runs_and_how_long_it_took_last_time(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = _toolproof("run", "--rules", "D1.1", "--out", str(out))
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines()[0] == (
        "toolproof: running 1 rule (--rules D1.1) against reference (the default --impl); no earlier run in"
        f" {str(out)!r} to time it by"
    )
    again = _toolproof("run", "--rules", "D1.1", "--out", str(out))
    head = again.stderr.splitlines()[0]
    assert head.startswith(
        "toolproof: running 1 rule (--rules D1.1) against reference (the default --impl); it took "
    ), head
    assert head.endswith(f" in its last run here ({load_run(out)[0].run_id})") or "last run" in head


# 4. Nothing judged: exit 5.


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [["--rules", "D2.7"], ["--rules", "D1.1", "--shard", "40/40"]],
    ids=["contract-only rule", "empty shard"],
)
def test_a_run_that_judged_nothing_exits_5(args: list[str], tmp_path: Path) -> None:
    result = _toolproof("run", *args, "--out", str(tmp_path / "out"))
    assert result.returncode == 5, result.stdout + result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["exit_code"] == 5
    assert summary["conforms"] is None
    assert "toolproof: nothing was judged" in result.stderr


def test_exit_5_is_in_the_run_help() -> None:
    shown = _toolproof("run", "--help", env={"COLUMNS": "300"}).stdout
    assert re.search(r"\b5 +nothing was judged", shown), shown


# 5. Evidence never shows a harness repr, nor does a drafted expectations file.


@pytest.mark.slow
def test_an_errors_evidence_and_its_draft_name_no_harness_object(tmp_path: Path) -> None:
    out, draft = tmp_path / "out", tmp_path / "draft.toml"
    result = _toolproof(
        "run",
        "--impl",
        "mistakes:RaisesOnSubmit",
        "--rules",
        "D13",
        "--out",
        str(out),
        "--write-expectations",
        str(draft),
        "-q",
        cwd=MISTAKES,
    )
    assert result.returncode == 1, result.stderr
    _, rows = load_run(out)
    errors = [row for row in rows if row.verdict.value == "error" and row.scenario]
    assert errors
    for row in errors:
        assert " object at 0x" not in row.evidence, row.evidence
        assert row.evidence.splitlines()[0] == "RuntimeError: this pipeline cannot submit yet", row.evidence
    text = draft.read_text()
    assert " object at 0x" not in text
    assert "# every scenario of D13.1 (" in text
    assert "RuntimeError: this pipeline cannot submit yet" in text


# 6. The smaller ones.


@pytest.mark.slow
def test_ctrl_c_once_the_report_is_written_keeps_summary_json_honest(tmp_path: Path) -> None:
    out = tmp_path / "out"
    child = subprocess.Popen(
        [sys.executable, "-u", "-m", "toolproof", "run", "--rules", "D1.1", "--out", str(out), "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    for line in child.stdout:
        if line.startswith("report: "):
            child.send_signal(signal.SIGINT)
            break
    _, stderr = child.communicate(timeout=120)
    summary = json.loads((out / "summary.json").read_text())
    # However far the process got, its status and summary.json agree, and an interrupt is said.
    assert summary["exit_code"] == child.returncode, (child.returncode, stderr)
    if child.returncode == 130:
        assert stderr.splitlines()[-1] == (
            "toolproof: interrupted after the run was written: summary.json records exit status 130"
        )


@pytest.mark.slow
def test_a_second_run_into_a_folder_in_use_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = subprocess.Popen(
        [sys.executable, "-m", "toolproof", "run", "--rules", "D1", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert first.stderr is not None
    for line in first.stderr:  # Once its first cell is done, it holds the folder; stopped there, it keeps holding it.
        if line.startswith("["):
            first.send_signal(signal.SIGSTOP)
            break
    try:
        second = _toolproof("run", "--rules", "D1.1", "--out", str(out))
    finally:
        first.send_signal(signal.SIGCONT)
    first.communicate(timeout=300)
    assert second.returncode == 2, second.stdout + second.stderr
    assert _one_error_line(second).startswith(
        f"toolproof: error: --out {str(out)!r} is in use by another toolproof run (process {first.pid})"
    )
    assert first.returncode == 0
    assert load_run(out)[0].implementations == ["reference"]


@pytest.mark.slow
def test_an_out_holding_anothers_files_is_refused_unless_forced(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.md").write_text("my own notes\n")
    refused = _toolproof("run", "--rules", "D1.1", "--out", str(out))
    assert refused.returncode == 2
    assert _one_error_line(refused) == (
        f"toolproof: error: --out {str(out)!r} holds files toolproof did not write (report.md): give a new or"
        " empty folder, or --force to write over them"
    )
    assert (out / "report.md").read_text() == "my own notes\n"
    forced = _toolproof("run", "--rules", "D1.1", "--out", str(out), "--force", "-q")
    assert forced.returncode == 0, forced.stderr
    again = _toolproof("run", "--rules", "D1.1", "--out", str(out), "-q")  # Its own files: no --force needed.
    assert again.returncode == 0, again.stderr


_HEAVY_AT_EXIT = """
import atexit, sys
atexit.register(lambda: sys.stderr.write("heavy: " + str(sorted(m for m in ("pytest", "toolproof.scenarios")
                                                                  if m in sys.modules)) + "\\n"))
sys.argv = ["toolproof", *sys.argv[1:]]
from toolproof._main import main
main()
"""


def test_a_bad_expectations_file_is_refused_before_the_heavy_imports(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('implementation = "reference"\n[[expect]]\nrule = "D1.1"\nverdict = "fail"\nreasn = "x"\n')
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            _HEAVY_AT_EXIT,
            "run",
            "--rules",
            "D1.1",
            "--expectations",
            str(bad),
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    error, heavy = result.stderr.splitlines()
    assert error.startswith(f"toolproof: error: expectations file {str(bad)!r}"), error
    assert heavy == "heavy: []"


@pytest.mark.parametrize("command", COMMANDS)
def test_help_never_breaks_a_sentence_and_has_an_example(command: str) -> None:
    shown = _toolproof(command, "--help", env={"COLUMNS": "5000"}).stdout
    usage_on = shown.split("Usage:", 1)[1].split("╭", 1)[0].splitlines()
    prose = usage_on[next(n for n, line in enumerate(usage_on) if not line.strip()) :]  # After the usage line(s).
    for line in (line.strip() for line in prose):
        if line and not line.startswith(("toolproof ", "$ ", "Example")):
            assert line[-1] in ".;:)", f"{command} --help breaks mid-sentence: {line!r}"
    if command not in OPERATORS_OWN:
        assert any(line.strip().startswith(f"toolproof {command}") for line in prose), f"{command}: no example"


def test_top_level_help_shows_no_bool_and_takes_h() -> None:
    for args in (["--help"], ["-h"]):
        result = _toolproof(*args)
        assert result.returncode == 0, result.stderr
        assert "<bool>" not in result.stdout
    assert _toolproof("--version").stdout.startswith("toolproof ")


# 7. What a pytest or ruff user expects.


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_h(command: str) -> None:
    assert _toolproof(command, "-h").returncode == 0


@pytest.mark.slow
def test_options_are_taken_after_positionals(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for out in (one, two):
        assert _toolproof("run", "--rules", "D1.1", "-q", "--out", str(out)).returncode == 0
    assert _toolproof("report", str(one), "--run-id", load_run(one)[0].run_id).returncode == 0
    assert json.loads(_toolproof("diff", str(one), str(two), "--json").stdout)["changed"] is False
    listed = _toolproof("fake-mcp", "PlainServer", "--list")
    assert listed.returncode == 0, listed.stderr


@pytest.mark.slow
def test_progress_shows_elapsed_time_and_an_eta_from_the_last_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = _toolproof("run", "--rules", "D1.1", "--out", str(out))
    progress = [line for line in first.stderr.splitlines() if line.startswith("[")]
    assert progress, first.stderr
    assert all(" elapsed" in line for line in progress), first.stderr
    again = _toolproof("run", "--rules", "D1.1", "--out", str(out))
    progress = [line for line in again.stderr.splitlines() if line.startswith("[")]
    assert progress, again.stderr
    assert all(", ETA " in line for line in progress), again.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("flag", "failed"), [(["-x"], 1), (["--maxfail", "2"], 2)])
def test_x_and_maxfail_stop_after_that_many_failed_cells(flag: list[str], failed: int, tmp_path: Path) -> None:
    result = _toolproof(
        "run",
        "--impl",
        "mistakes:RaisesOnSubmit",
        "--rules",
        "D13",
        *flag,
        "--out",
        str(tmp_path / "out"),
        cwd=MISTAKES,
    )
    assert result.returncode == 1, result.stderr
    progress = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert sum(" error " in line or " fail " in line for line in progress) == failed, result.stderr
    assert any(line.startswith(f"toolproof: stopped after {failed} failed cell") for line in result.stderr.splitlines())


@pytest.mark.slow
def test_lf_reruns_the_cells_that_failed_last_time(tmp_path: Path) -> None:
    out = tmp_path / "out"
    witness = "toolproof.reference.witnesses:status_honouring"  # Breaks D1.1, passes the rest of D1.
    first = _toolproof("run", "--impl", witness, "--rules", "D1", "--out", str(out))
    assert first.returncode == 1
    _, rows = load_run(out)
    failed = {row.scenario for row in rows if row.verdict.value in ("fail", "error") and row.scenario}
    assert failed
    assert len(failed) < len({row.scenario for row in rows if row.scenario})
    again = _toolproof("run", "--lf", "--out", str(out))
    assert again.returncode == 1, again.stderr
    ran = {line.rsplit("  ", 1)[1] for line in again.stderr.splitlines() if line.startswith("[")}
    assert ran == failed
    assert f"against {witness};" in again.stderr.splitlines()[0]
    # The last run's rules, not the catalog's: a failed cell that also judges rules of other decisions (the model
    # judge's cells do) gives no verdict on rules the first run never selected.
    judged = json.loads((out / "summary.json").read_text())["rules"]
    assert judged, again.stdout
    assert all(rule.startswith("D1.") for rule in judged), judged


def test_shell_completion_completes_a_command() -> None:
    env = {"_TOOLPROOF_COMPLETE": "complete_bash", "COMP_WORDS": "toolproof ru", "COMP_CWORD": "1"}
    result = subprocess.run(
        [sys.executable, "-c", "from toolproof._main import main; main()"],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
    )
    assert "run" in result.stdout.split(), result.stdout + result.stderr
    script = _toolproof(env={"_TOOLPROOF_COMPLETE": "source_bash"})  # What docs/running.md has bash eval.
    assert "complete " in script.stdout, script.stdout + script.stderr


# 21. A draft for a driver names it without its address.


@pytest.mark.slow
def test_a_driver_draft_names_the_implementation_without_its_address(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolproof",
            "serve-reference",
            "--impl",
            "mistakes:RaisesOnSubmit",
            "--port",
            str(port),
        ],
        cwd=MISTAKES,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_driver(url, server)
        draft = tmp_path / "draft.toml"
        result = _toolproof(
            "run",
            "--impl",
            url,
            "--rules",
            "D13.1",
            "--out",
            str(tmp_path / "out"),
            "--write-expectations",
            str(draft),
            "-q",
        )
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    assert result.returncode == 1, result.stderr
    assert 'implementation = "reference"\n' in draft.read_text()


@pytest.mark.parametrize("ref", ["127.0.0.1:8787", "localhost:8787/", "ftp://127.0.0.1:8787"])
def test_a_driver_address_without_http_is_named_as_one(ref: str, tmp_path: Path) -> None:
    """Without its scheme a driver's address read as a module that cannot be imported (module '127.0.0.1')."""
    result = _toolproof("run", "--impl", ref, "--rules", "D1.1", "--out", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    line = _one_error_line(result)
    assert "looks like a driver's address: a URL starts with http://" in line, line
