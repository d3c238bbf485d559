"""Every command in a ``sh`` block of README.md and docs/*.md, run: as written where it can be, else through a
substitute named here with its reason, so a documented command that stops working fails a test.

The commands are read from the pages at test time (a page's edit is what gets run). Each page's commands run in
order in one folder of their own, since a page's commands build on each other (a file written, then checked).
A command this file does not name runs as written when it is a ``toolproof`` command given ``--rules`` (a
verdict in seconds), and otherwise fails the test until it is named below.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers import free_port, wait_for_driver

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.DOTALL | re.MULTILINE)
FAST_RULES = "D13.1"
"""What a substitute of a whole-suite run judges: one rule, a verdict in seconds."""
PLAIN = "PlainServer"
"""The fake a substitute checks in place of a server from npm or PyPI (a real MCP server with one tool)."""


@dataclass(frozen=True)
class Run:
    """Run as written (``substitute`` None) or this instead, and expect ``exit_code``."""

    substitute: str | None = None
    reason: str = ""
    exit_code: int = 0


@dataclass(frozen=True)
class Background:
    """A server that runs until stopped: start it (or its substitute), wait until it answers, leave it running."""

    substitute: str | None = None
    reason: str = ""
    port: str = "8787"
    """The port the page names, replaced by a free one (``{port}`` in later commands of the page)."""
    driver: bool = True
    """Wait for a driver's ``/v1/info``; else for the port to accept."""


@dataclass(frozen=True)
class Elsewhere:
    """Run by another test, named here, which must exist."""

    test: str
    reason: str


Handling = Run | Background | Elsewhere

QUICK_START_ELSEWHERE = Elsewhere(
    "tests/test_docs_pages.py::test_the_quick_start_installs_and_tests_as_ci_does",
    "the install and the harness's own tests are what .ci/run runs (a test cannot install the venv it runs in); "
    "that test holds the page's lines to .ci/run's",
)

COMMANDS: dict[str, Handling] = {
    "python3.11 -m venv .venv && . .venv/bin/activate": QUICK_START_ELSEWHERE,
    "python -m pip install --upgrade pip && python -m pip install -e '.[test]'": QUICK_START_ELSEWHERE,
    "python -m pytest": QUICK_START_ELSEWHERE,
    "toolproof run --impl reference --out toolproof-report": Run(
        f"toolproof run --impl reference --out toolproof-report --rules {FAST_RULES}",
        "the whole suite takes minutes: the same command on one rule",
    ),
    # docs/check-server.md: the servers named are from npm and PyPI; the fake stands in, reached the same way.
    "toolproof check-server servers.toml --server fetch": Run(reason="servers.toml's fetch is the fake (setup)"),
    "toolproof check-server -- npx -y @modelcontextprotocol/server-memory": Run(
        f"toolproof check-server -- {{python}} -m toolproof.fakes.mcp {PLAIN}", "npx fetches from npm: a fake instead"
    ),
    "toolproof check-server http://127.0.0.1:9000/mcp": Run(
        "toolproof check-server http://127.0.0.1:{http_port}/mcp", "the fake served over HTTP on a free port (setup)"
    ),
    "toolproof check-server servers.toml": Run(
        reason="the file the printf before it wrote, its uvx server swapped for the fake (uvx fetches from PyPI)"
    ),
    "toolproof serve-reference --mcp-config servers.toml --port 8787": Background(),
    # docs/driver-protocol.md and implementers.md: where a driver in another language gets the document.
    "toolproof protocol": Run(),
    "toolproof protocol --print": Run(),
    "toolproof serve-reference --port 8787": Background(),
    "toolproof run --impl http://127.0.0.1:8787": Run(
        f"toolproof run --impl http://127.0.0.1:{{port}} --rules {FAST_RULES}",
        "the whole suite over HTTP takes minutes: one rule, against the server the page started",
    ),
    # docs/ci.md: three shards of one rule's decision, merged as the page merges them.
    "for k in 1 2 3; do toolproof run --shard $k/3 --out shard-$k; done": Run(
        "for k in 1 2 3; do toolproof run --shard $k/3 --out shard-$k --rules D13; done",
        "three shards of the whole suite take minutes: the same loop over one decision",
    ),
    # docs/development.md: nox sessions run the suite in fresh virtual environments.
    **{
        f"nox -s {session}": Run(
            f"nox -f {{repo}}/noxfile.py -l | grep -Eq '^[-*] {session}(-3\\.[0-9]+)? '",
            "a nox session installs and runs for minutes: the session must exist (nox -l lists it)",
        )
        for session in ("quick", "transport", "model", "tests", "lint", "conformance", "stateful", "bench", "mutation")
    },
    "toolproof run --impl mypipeline --expectations expectations/mypipeline.toml": Run(
        f"toolproof run --impl reference --expectations expectations/reference.toml --rules {FAST_RULES}",
        "mypipeline is the reader's: the reference with an expectations file of its own (setup)",
    ),
    "toolproof supervise -- node dist/src/main.js --port 8787 &": Background(
        "toolproof supervise -- {python} -m toolproof.driver reference {port} {tmp} supervised",
        "the TypeScript example needs node and npm packages (tests/test_typescript_example.py builds it): the "
        "reference's own driver process, supervised the same way",
    ),
    "toolproof run --impl http://127.0.0.1:8787 --out report --write-expectations expectations.toml": Run(
        f"toolproof run --impl http://127.0.0.1:{{port}} --out report --write-expectations expectations.toml "
        f"--rules {FAST_RULES}",
        "one rule against the supervised driver",
    ),
    "toolproof diff toolproof-report@20250301T100000Z-1a2b3c toolproof-report   # add --json for machines": Run(
        "toolproof diff toolproof-report@{run_id} toolproof-report",
        "the page's run id is an example: the id of a run made in setup",
    ),
    "toolproof check-tool mypackage.tools:PayInvoiceTool --key-in body:request.idempotency_key --strict": Run(
        "toolproof check-tool mypackage.tools:CreateTicketTool --key-in header:Idempotency-Key --strict",
        "PayInvoiceTool is not on the page: the page's CreateTicketTool, its key where it sends it, --strict",
    ),
    "toolproof run --impl toolproof.reference.witnesses:narrates_remote_errors --rules D13": Run(
        reason="a witness: the run must find it failing", exit_code=1
    ),
}
"""How each documented command is checked, by its text as the page writes it (a trailing comment left off)."""

PAGES_ELSEWHERE = {
    "operators.md": Elsewhere(
        "tests/test_operators_doc.py",
        "the page's session, its files, commands and script, over stdio and HTTP, output compared",
    ),
}
"""Pages whose every command another test runs as written."""


def commands_of(page: Path) -> list[str]:
    """The page's commands: a line each, or a whole block when it is one script (a loop, continued lines)."""
    found: list[str] = []
    for block in SH_BLOCK.findall(page.read_text(encoding="utf-8")):
        lines = [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        if any(line.endswith("\\") for line in lines) or any(
            line.strip() == "done" or line.startswith("done ") for line in lines
        ):
            found.append(block.strip())
        else:
            found.extend(line.strip() for line in lines)
    return found


def handling(command: str) -> Handling | None:
    """How ``command`` is checked; None: no way is known (the test fails naming it)."""
    for text in (command, command.split("  #", 1)[0].strip()):
        if text in COMMANDS:
            return COMMANDS[text]
    if command.startswith("toolproof run ") and "--rules" in command:
        return Run()
    if command.startswith("while read -r impl rules; do"):
        return Run(reason="the red-team loop over a manifest of one witness and one reference line (setup)")
    if command.startswith(("mkdir ", "printf ")):
        return Run()
    if command.startswith('python -c "import duckdb'):
        return Run(reason="query.sql is the page's first query (setup)")
    if command.startswith("toolproof check-tool mypackage.tools:CreateTicketTool"):
        return Run(reason="mypackage/tools.py is the page's example tool (setup)")
    if command.startswith("toolproof merge "):
        return Run()
    return None


@dataclass
class Folder:
    """One page's working folder, what runs in it, and the values substitutes name."""

    path: Path
    values: dict[str, str] = field(default_factory=dict)
    background: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def environment(self) -> dict[str, str]:
        # `toolproof` and `nox` as the page runs them: the ones installed beside this Python.
        return os.environ | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}

    def fill(self, text: str) -> str:
        for name, value in self.values.items():
            text = text.replace("{" + name + "}", value)
        return text

    def run(self, command: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", command],
            cwd=self.path,
            env=self.environment,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def start(self, command: str) -> subprocess.Popen[bytes]:
        log = (self.path / f"background-{len(self.background)}.log").open("w")
        process = subprocess.Popen(
            shlex.split(command, comments=True),
            cwd=self.path,
            env=self.environment,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        self.background.append(process)
        return process

    def stop(self) -> None:
        for process in reversed(self.background):
            with contextlib.suppress(ProcessLookupError):  # Exited already (a failed start).
                os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)


def _wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    for _ in range(600):
        assert process.poll() is None, f"the server on {port} exited"
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listened on {port}")


def _fake_file(folder: Folder, server_id: str) -> str:
    command, *args = [sys.executable, "-m", "toolproof.fakes.mcp", PLAIN]
    return f'[[server]]\nid = "{server_id}"\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\n'


def _setup_check_server(folder: Folder) -> None:
    (folder.path / "servers.toml").write_text(_fake_file(folder, "fetch"), encoding="utf-8")
    port = free_port()
    folder.values["http_port"] = str(port)
    fake = folder.start(f"{sys.executable} -m toolproof.fakes.mcp {PLAIN} --transport http --port {port}")
    _wait_for_port(port, fake)


def _setup_expectations(folder: Folder) -> None:
    (folder.path / "expectations").mkdir()
    (folder.path / "expectations" / "reference.toml").write_text('implementation = "reference"\n', encoding="utf-8")


def _setup_red_team(folder: Folder) -> None:
    lines = ["toolproof.reference.witnesses:narrates_remote_errors D13", f"reference {FAST_RULES}"]
    (folder.path / "manifest.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _setup_reports(folder: Folder) -> None:
    made = folder.run(f"toolproof run --impl reference --rules {FAST_RULES} --out toolproof-report -q")
    assert made.returncode == 0, made.stderr
    summary = json.loads((folder.path / "toolproof-report" / "summary.json").read_text(encoding="utf-8"))
    folder.values["run_id"] = str(summary["run_id"])
    [query] = re.findall(r"^```sql\n(.*?)^```", (ROOT / "docs" / "reports.md").read_text("utf-8"), re.S | re.M)[:1]
    (folder.path / "query.sql").write_text(query, encoding="utf-8")


def _setup_tool_authors(folder: Folder) -> None:
    text = (ROOT / "docs" / "tool-authors.md").read_text(encoding="utf-8")
    [example] = [b for b in re.findall(r"^```python\n(.*?)^```", text, re.S | re.M) if "class CreateTicketTool" in b]
    (folder.path / "mypackage").mkdir()
    (folder.path / "mypackage" / "__init__.py").write_text("", encoding="utf-8")
    (folder.path / "mypackage" / "tools.py").write_text(example, encoding="utf-8")


SETUP: dict[str, Callable[[Folder], None]] = {
    "check-server.md": _setup_check_server,
    "expectations.md": _setup_expectations,
    "red-team.md": _setup_red_team,
    "reports.md": _setup_reports,
    "tool-authors.md": _setup_tool_authors,
}
"""What a page's commands assume is already there (a server file, a run, the reader's package)."""


def _after(command: str, folder: Folder) -> None:
    # The printf writes the page's uvx server; the check after it reaches the fake instead (uvx fetches from PyPI).
    written = folder.path / "servers.toml"
    if command.startswith("printf ") and written.exists() and '"uvx"' in written.read_text("utf-8"):
        written.write_text(_fake_file(folder, "fetch"), encoding="utf-8")


def test_every_documented_command_has_a_way_to_be_checked() -> None:
    unknown = [
        f"{page.name}: {command}"
        for page in PAGES
        if page.name not in PAGES_ELSEWHERE
        for command in commands_of(page)
        if handling(command) is None
    ]
    assert unknown == [], "documented commands with no way to check them: name each in COMMANDS"
    for way in [*COMMANDS.values(), *PAGES_ELSEWHERE.values()]:
        if isinstance(way, Elsewhere):
            assert (ROOT / way.test.split("::")[0]).is_file(), way.test


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Folder]:
    # {tmp}: the system's temp folder, where the scenarios put their stores (a driver's --root must hold them).
    values = {"python": sys.executable, "repo": str(ROOT), "tmp": tempfile.gettempdir()}
    made = Folder(tmp_path, values)
    try:
        yield made
    finally:
        made.stop()


@pytest.mark.slow
@pytest.mark.parametrize(
    "page",
    [p for p in PAGES if p.name not in PAGES_ELSEWHERE and commands_of(p)],
    ids=lambda p: p.name,
)
def test_the_pages_commands_work(page: Path, folder: Folder) -> None:
    if page.name in SETUP:
        SETUP[page.name](folder)
    for command in commands_of(page):
        way = handling(command)
        assert way is not None, f"{page.name}: {command!r} has no way to be checked"
        if isinstance(way, Elsewhere):
            continue
        if isinstance(way, Background):
            port = free_port()
            folder.values["port"] = str(port)
            text = way.substitute or command.replace(way.port, "{port}")
            process = folder.start(folder.fill(text))
            if way.driver:
                wait_for_driver(f"http://127.0.0.1:{port}", process)
            else:
                _wait_for_port(port, process)
            continue
        text = folder.fill(way.substitute or command)
        done = folder.run(text)
        assert done.returncode == way.exit_code, f"{page.name}: {text}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        _after(command, folder)
