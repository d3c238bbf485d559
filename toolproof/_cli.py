"""The ``toolproof`` command (wiring only: every decision lives in spec, scenarios or reports)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperArgument, TyperCommand, TyperOption

from toolproof.spec import (
    DRIVER_PROTOCOL,
    ConfigurationError,
    HarnessError,
    Profile,
    ResultRow,
    Rule,
    Verdict,
    available_implementations,
    load_catalog,
    load_implementation,
    load_mcp_servers,
)

from . import __version__
from ._interrupt import interrupted_status, say_interrupted, was_interrupted
from ._preflight import check_out_dir, require

if TYPE_CHECKING:
    from toolproof.scenarios import Shard

    from ._run import RunOutcome

app = typer.Typer(
    name="toolproof",
    help=(
        "Conformance suite for ADR-0021's tool execution pipeline: run the scenarios against an "
        "implementation and get a verdict per rule (pass, fail, error, xfail, not-claimed, not-covered, review-only)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Lines are never wrapped: a terminal folds them itself, and a pipe gets them whole.
err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)

EXIT_USAGE = 2
EXIT_HARNESS = 3


class _Command(TyperCommand):
    """Help as git or pytest write it: a flag shows no value, arguments in capitals (NAME, [NAME])."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        for param in params:
            if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
                param.metavar = ""  # Typer would show <bool>, as if the flag took a value.
        return params

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = (param.metavar or param.name or "ARG").upper()
                pieces.append(name if param.required else f"[{name}]")
        return pieces


def _die(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    err.print(f"toolproof: error: {message}", markup=False, soft_wrap=True)
    return typer.Exit(code)


def _version(value: bool) -> None:
    if value:
        out.print(f"toolproof {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Conformance suite for ADR-0021's tool execution pipeline."""


@app.command(cls=_Command)
def rules(
    as_json: Annotated[bool, typer.Option("--json", help="Print the catalog as JSON.")] = False,
    profile: Annotated[Profile | None, typer.Option(help="Only rules of this profile.")] = None,
    interpretations: Annotated[
        bool,
        typer.Option(
            "--interpretations",
            help="Print instead the page of what toolproof assumes beyond the ADR (Markdown, as docs/assumptions.md):"
            " the policy matrix, control suspension, refused calls' rows and events, cancellation order, clocks,"
            " the idempotency key, event and metric names, and every interpretation.",
        ),
    ] = False,
) -> None:
    """List the rule catalog: every rule of the ADR's 18 decisions, with its ID, profile and text."""
    if interpretations:
        from toolproof.reports import render_assumptions

        sys.stdout.write(render_assumptions())
        return
    catalog = load_catalog()
    chosen = [r for r in catalog.rules if profile is None or r.profile is profile]
    if as_json:
        payload = {
            "decisions": [d.model_dump() for d in catalog.decisions],
            "rules": [r.model_dump(mode="json") | {"decision": r.decision} for r in chosen],
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    if not out.is_terminal:  # A pipe gets one line per rule, tab-separated, for scripts.
        for rule in chosen:
            sys.stdout.write(f"{rule.id}\t{rule.profile.value}\t{_listed(rule)}\n")
        return
    table = Table("id", "profile", "rule", show_lines=False, expand=True)
    for rule in chosen:
        table.add_row(rule.id, rule.profile.value, _listed(rule))
    out.print(table)


def _listed(rule: Rule) -> str:
    """A rule's text as ``toolproof rules`` lists it: a review-only rule says so, and why."""
    return f"{rule.text} [review-only: {rule.review_only}]" if rule.review_only else rule.text


@app.command(cls=_Command)
def impls() -> None:
    """List implementations registered under the toolproof.implementations entry point, and the witnesses."""
    for name in available_implementations():
        out.print(name, markup=False)
    try:
        from toolproof.reference.witnesses import WITNESSES
    except ImportError:  # pragma: no cover - the reference is part of the distribution
        return
    for witness in WITNESSES.values():
        out.print(
            f"toolproof.reference.witnesses:{witness.name}  (witness; breaks {', '.join(witness.breaks)}"
            + (f", seen through {', '.join(witness.through)}" if witness.through else "")
            + f": {witness.defect})",
            markup=False,
        )


@app.command(cls=_Command)
def run(
    impl: Annotated[
        list[str] | None,
        typer.Option(
            "--impl",
            metavar="IMPL",
            help=(
                "Implementation: an entry-point name (see `toolproof impls`), package.module:factory (the working"
                " directory is importable while the module is imported), or a driver URL (http://127.0.0.1:PORT,"
                " see serve-reference). Repeatable: one report, side by side."
            ),
        ),
    ] = None,
    rule_selectors: Annotated[
        str | None,
        typer.Option(
            "--rules", metavar="IDS", help="Comma-separated decisions or rule ids, e.g. D1,D5.3. Default: all."
        ),
    ] = None,
    out_dir: Annotated[
        Path,
        typer.Option(
            "--out", metavar="DIR", help="Folder for results.duckdb, summary.json, report.md, report.html, junit.xml."
        ),
    ] = Path("toolproof-report"),
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No per-scenario progress lines.")] = False,
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url",
            metavar="URL",
            envvar="TOOLPROOF_DATABASE_URL",
            help="PostgreSQL URL for the multi-worker crash scenarios (SIGKILL over PostgreSQL, the PostgreSQL lease race); "
            "without it they do not run and the crash matrix has no PostgreSQL column.",
        ),
    ] = None,
    cells: Annotated[
        list[str] | None,
        typer.Option(
            "--cell",
            metavar="CELL",
            help="Run only this scenario (module.py::test_name) or one cell of it (module.py::test_name\\[param]),"
            " named as the report names it; the report then holds the rules it judges. Repeatable. A failure's"
            " entry in the report gives the command that reruns it.",
        ),
    ] = None,
    expectations: Annotated[
        list[Path] | None,
        typer.Option(
            "--expectations",
            metavar="FILE",
            help="An expectations file (TOML; see the README): the failures it declares for the implementation "
            "it names read xfail, and an entry the run contradicts (a pass, or nothing selected ran) is stale "
            "and fails the run. Repeatable.",
        ),
    ] = None,
    write_expectations: Annotated[
        Path | None,
        typer.Option(
            "--write-expectations",
            metavar="FILE",
            help="Also draft an expectations file (a new FILE) from the run's failures, one entry each, for one"
            " --impl; the reasons are left empty and the file is refused by --expectations until you write them"
            " and delete its draft line.",
        ),
    ] = None,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            metavar="K/N",
            help="Run shard K of N: a deterministic share of the scenario cells, for N CI jobs; combine the N"
            " folders with `toolproof merge`. The shard's own report holds the rules its cells judge.",
        ),
    ] = None,
    shard_durations: Annotated[
        Path | None,
        typer.Option(
            "--shard-durations",
            metavar="DIR",
            help="With --shard: balance the shards by the cell durations of the latest run in this results folder"
            " (every shard must be given the same one). Without it, shards get equal numbers of cells.",
        ),
    ] = None,
) -> None:
    """Run the conformance scenarios and write the report.

    Exit status: 0 when every claimed, covered rule passes or fails as expected;
    1 when any fails or errors, or an expectation is stale (one line each on stderr);
    2 for bad input (unknown implementation, rule or cell, a malformed --shard, bad or draft expectations file, unwritable --out,
    an existing --write-expectations file, unknown $TOOLPROOF_HYPOTHESIS_PROFILE);
    3 when the harness itself failed; 130 on Ctrl-C and 143 on SIGTERM (one line; what the run started is stopped,
    and results.duckdb keeps only complete runs).
    """
    try:
        load_catalog().select(rule_selectors)
        split = _shard(shard)
        check_out_dir(out_dir)
        if database_url:
            require("psycopg", "--database-url")
    except ConfigurationError as exc:
        raise _die(str(exc)) from None

    try:
        outcome = _run(
            impl,
            rule_selectors,
            out_dir,
            quiet,
            database_url,
            expectations,
            cells,
            write_expectations,
            (split, shard_durations),
        )
    except BaseException:
        # After Ctrl-C, whatever surfaces (pytest's own stop, a plugin failing as it unwinds) is the interruption.
        if was_interrupted():
            say_interrupted()
            raise typer.Exit(interrupted_status()) from None
        raise
    _summarise(outcome)


def _shard(text: str | None) -> Shard | None:
    if text is None:
        return None
    from toolproof.scenarios import Shard

    return Shard.parse(text)


def _run(
    impl: list[str] | None,
    rule_selectors: str | None,
    out_dir: Path,
    quiet: bool,
    database_url: str | None,
    expectations: list[Path] | None,
    cells: list[str] | None,
    write_expectations: Path | None,
    sharding: tuple[Shard | None, Path | None] = (None, None),
) -> RunOutcome:
    from ._run import run_suite

    def progress(result: ResultRow, done: int, total: int) -> None:
        style = {"pass": "green", "fail": "red", "error": "red", "xfail": "yellow"}.get(result.verdict.value, "dim")
        width = len(str(total))
        # The cell's parameters are in brackets: escaped, or rich would take them for markup and drop them.
        err.print(
            f"[{done:>{width}}/{total}] [{style}]{result.verdict.value:<11}[/] "
            f"{escape(result.implementation)}  {escape(result.scenario)}",
            highlight=False,
        )

    try:
        outcome = run_suite(
            impl or [],
            rule_selectors,
            out_dir,
            progress=None if quiet else progress,
            database_url=database_url,
            expectations=expectations or [],
            cells=cells or [],
            write_expectations=write_expectations,
            shard=sharding[0],
            shard_durations=sharding[1],
        )
    except ConfigurationError as exc:
        raise _die(str(exc)) from None
    except HarnessError as exc:
        raise _die(f"harness failure: {exc}", EXIT_HARNESS) from None
    return outcome


def _summarise(outcome: RunOutcome) -> None:
    for name, verdicts in outcome.verdicts.items():
        counts = Counter(v.value for v in verdicts.values())
        shown = ", ".join(f"{counts[v.value]} {v.value}" for v in Verdict if counts[v.value])
        cells = outcome.cells.get(name, {})
        cells_shown = ", ".join(f"{cells[v]} {v.value}" for v in Verdict if cells.get(v)) or "none ran"
        out.print(f"{name}: rules: {shown}; scenario cells: {cells_shown}", markup=False)
        for rule_id in outcome.failed.get(name, []):
            out.print(f"  {verdicts[rule_id].value}: {rule_id} {load_catalog().rule(rule_id).text}", markup=False)
            cause = outcome.causes.get(name, {}).get(rule_id)
            if cause:
                err.print(f"toolproof: {name}: {rule_id}: {cause.removeprefix(f'{rule_id}: ')}", markup=False)
    for item in outcome.stale:
        err.print(f"toolproof: stale expectation: {item.label}: {item.problem}", markup=False, soft_wrap=True)
    out.print(
        f"report: {outcome.out_dir / 'report.md'} and {outcome.out_dir / 'report.html'} (run {outcome.run_id})",
        markup=False,
    )
    if outcome.draft is not None:
        out.print(
            f"expectations draft: {outcome.draft} (write its reasons, then delete its draft line)",
            markup=False,
            soft_wrap=True,
        )
    raise typer.Exit(outcome.exit_code)


@app.command()
def merge(
    folders: Annotated[
        list[Path], typer.Argument(metavar="DIR...", help="The results folders of every shard of one run.")
    ],
    out_dir: Annotated[
        Path,
        typer.Option("--out", metavar="DIR", help="Folder for the merged run's results.duckdb and reports."),
    ] = Path("toolproof-report"),
) -> None:
    """Combine the folders of `run --shard 1/N` ... `N/N` into one run, and render every report again.

    A rule's verdict is worked out from all the shards' rows, as in one unsharded run.

    Exit status: as `run` for the merged run (0 conforms, 1 a failure or a stale expectation);
    2 when the folders are not every shard of one run (one missing or given twice; another catalog,
    implementation, selection or toolproof version).
    """

    from ._run import merge_runs

    try:
        outcome = merge_runs(folders, out_dir)
    except ConfigurationError as exc:
        raise _die(str(exc)) from None
    _summarise(outcome)


@app.command(cls=_Command)
def report(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="A folder written by `toolproof run`.")],
    run_id: Annotated[
        str | None, typer.Option("--run-id", metavar="RUN_ID", help="Which run to render; default the latest.")
    ] = None,
) -> None:
    """Re-render summary.json, report.md, report.html and junit.xml from the folder's results.duckdb."""
    from toolproof.reports import rerender

    try:
        rerender(directory, run_id)
    except ConfigurationError as exc:
        raise _die(str(exc)) from None
    out.print(f"report: {directory / 'report.md'}", markup=False)


def _run_ref(argument: str) -> tuple[Path, str | None]:
    """``FOLDER`` or ``FOLDER@RUN_ID``; a folder whose own name holds an ``@`` is taken whole."""
    if "@" not in argument or Path(argument).is_dir():
        return Path(argument), None
    folder, run_id = argument.rsplit("@", 1)
    if not run_id:
        raise ConfigurationError(f"{argument!r} ends in '@': give FOLDER or FOLDER@RUN_ID")
    return Path(folder), run_id


@app.command(cls=_Command)
def diff(
    before: Annotated[
        str,
        typer.Argument(
            metavar="RUN_A", help="The earlier run: a folder written by --out (its latest run) or FOLDER@RUN_ID."
        ),
    ],
    after: Annotated[str, typer.Argument(metavar="RUN_B", help="The later run, as RUN_A.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the changes as JSON.")] = False,
) -> None:
    """List every (implementation, rule) whose verdict differs between two runs, and rules in one run only.

    Prints a table rule | implementation | before | after (— where a run does not hold the rule).
    Implementations are paired by name; two runs of one implementation each are paired whatever their names.

    Exit status: 0 when nothing changed; 1 when something did; 2 for bad input (missing folder, unknown run id).
    """
    from toolproof.reports import diff_runs, load_run

    try:
        refs = [_run_ref(argument) for argument in (before, after)]
        loaded = [load_run(folder, run_id) for folder, run_id in refs]
        changes = diff_runs(loaded[0], loaded[1])
    except ConfigurationError as exc:
        raise _die(str(exc)) from None
    labels = (str(refs[0][0]), str(refs[1][0]))
    text = changes.as_json(*labels) if as_json else changes.as_table(*labels)
    sys.stdout.write(text)
    raise typer.Exit(1 if changes.changed else 0)


@app.command("check-tool", cls=_Command)
def check_tool_command(
    ref: Annotated[
        str,
        typer.Argument(
            metavar="MODULE:FACTORY",
            help="A zero-argument callable that returns a Tool, e.g. mypackage.tools:SendEmailTool (the attribute "
            "may be dotted; the working directory is importable while the module is imported).",
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as stable JSON.")] = False,
    key_in: Annotated[
        str | None,
        typer.Option(
            "--key-in",
            metavar="PLACE:NAME",
            help="Where the tool's requests carry the idempotency key for the service to deduplicate on: "
            "header:NAME (default header:Idempotency-Key), body:FIELD.PATH (JSON body) or query:NAME.",
        ),
    ] = None,
    requests_act: Annotated[
        bool, typer.Option("--requests-act", help="The tool's requests act even with a safe method (GET webhooks).")
    ] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Fail (exit 1) on a warning or a partial observation too.")
    ] = False,
    observation: Annotated[
        Literal["auto", "os", "python"],
        typer.Option(
            "--observation",
            help="auto: confined at the operating-system boundary when possible, else Python-level (partial); "
            "os: confined or exit 2; python: Python-level only.",
        ),
    ] = "auto",
) -> None:
    """Check one tool against the tool-author contract (watermark before effect, and the other tool-side rules).

    Each example runs confined (private mount, network and PID namespaces, an overlay over the system, strace)
    where Linux allows it; elsewhere the verdict says the observation was partial.
    Exit status: 0 when the tool passes; 1 with one finding per violated rule (or, with --strict, a warning);
    2 for bad input.
    """
    from toolproof.contracts import run_check_tool

    raise typer.Exit(
        run_check_tool(
            ref, as_json=as_json, key_in=key_in, requests_act=requests_act, strict=strict, observation=observation
        )
    )


@app.command(cls=_Command)
def bench(
    out_dir: Annotated[Path, typer.Option("--out", metavar="DIR", help="Folder for bench.json.")] = Path(
        "toolproof-bench"
    ),
    quick: Annotated[bool, typer.Option("--quick", help="Fewer repetitions: under a minute.")] = False,
) -> None:
    """Measure what the reference costs: commit limit, throughput, DBOS, batches, catalog, excerpts, the suite.

    Prints a table and writes bench.json. Exit status 0 once written: a missed target is a figure, not an error.
    """
    from toolproof.bench import bench_command

    raise typer.Exit(bench_command(out_dir, quick=quick))


def _list_fake_servers(value: bool) -> None:
    if not value:
        return
    from toolproof.fakes import mcp as fake_servers

    for server_name, behaviour in fake_servers.catalog():
        typer.echo(f"{server_name}\t{behaviour}")  # Plain: tab-separated, one line each, for scripts.
    raise typer.Exit()


@app.command("fake-mcp", cls=_Command)
def fake_mcp(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The fake MCP server to serve: a name `--list` prints.")],
    transport: Annotated[
        Literal["stdio", "http"],
        typer.Option("--transport", help="stdio, or http (streamable HTTP on 127.0.0.1, path /mcp)."),
    ] = "stdio",
    port: Annotated[int, typer.Option("--port", metavar="PORT", help="HTTP port on 127.0.0.1.")] = 8765,
    list_: Annotated[
        bool,
        typer.Option(
            "--list", callback=_list_fake_servers, is_eager=True, help="List the fake MCP servers (NAME, behaviour)."
        ),
    ] = False,
) -> None:
    """Serve one hostile fake MCP server (a real MCP server with one hostile behaviour) to test an MCP adapter."""
    from toolproof.fakes import mcp as fake_servers

    if name not in fake_servers.SERVERS:
        raise _die(f"unknown fake MCP server {name!r}; the names are: {', '.join(fake_servers.SERVERS)}")
    if transport not in fake_servers.SERVERS[name].transports:
        raise _die(f"fake MCP server {name!r} is served over {', '.join(fake_servers.SERVERS[name].transports)} only")
    fake_servers.serve(name, transport, port)


@app.command(
    "check-server",
    cls=_Command,
    context_settings={"allow_interspersed_args": False},
)
def check_server_command(
    target: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="FILE.toml | URL | -- COMMAND ARGS...",
            help="An operator MCP server file (TOML, one \\[\\[server]] table each; see the README), a streamable-HTTP"
            " URL, or after -- the command line of a stdio server.",
            show_default=False,
        ),
    ] = None,
    server_ids: Annotated[
        list[str] | None,
        typer.Option("--server", metavar="ID", help="Only this server of the file (repeatable); default: every one."),
    ] = None,
    calls: Annotated[
        list[str] | None,
        typer.Option(
            "--call",
            metavar="NAME[=JSON]",
            help="Also call the listed tool NAME (its remote name) with these arguments (a JSON object; default {}),"
            " as the adapter calls it, in each era. Its effects happen: name only tools you know are safe to call."
            " Repeatable.",
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="The longest wait for one answer (caps the server's call_timeout_s); one era's check may take"
            " 6 such waits plus one per --call.",
        ),
    ] = 30.0,
    era: Annotated[
        Literal["legacy", "2026-07-28"] | None,
        typer.Option("--era", help="Try only this protocol era (default: both, the configured one first)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as stable JSON instead of text.")] = False,
    html: Annotated[Path | None, typer.Option("--html", metavar="FILE", help="Also write the HTML report.")] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            metavar="DIR",
            help="Also write server-check.json, server-check.txt and server-check.html into DIR.",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines on stderr.")] = False,
) -> None:
    """Check an MCP server before admitting it: what ADR-0021 will do to it, in each protocol era.

    Connects as the reference's adapter does and reports registered and dropped names, the classification source,
    definition hashes and drift between two listings, notifications, declined requests, the resources and prompts
    mapping, error shapes and output sizes. Besides the adapter's own requests it sends one tools/call of a name
    the server did not list (its error shape); a listed tool is called only when named with --call.

    Exit status: 0 when every server can be admitted as configured; 1 with findings ADR-0021 will act on (dropped
    tools or prompts, drift between listings, tools/list_changed, declined requests, a result over the cap or
    breaking its own output schema, a call past its deadline, a lost connection, non-JSON-RPC output, a check stopped early, the configured era
    failing while another works); 2 when a server connects in no era, or for bad input (bad file, unknown
    --server, command not found).
    """
    from ._check_command import run_check_server

    raise typer.Exit(
        run_check_server(
            target or [],
            server_ids=server_ids or [],
            calls=calls or [],
            timeout=timeout,
            era=era,
            as_json=as_json,
            html=html,
            out_dir=out_dir,
            progress=(lambda line: None) if quiet else (lambda line: err.print(f"check-server: {line}", markup=False)),
            fail=lambda line: err.print(f"toolproof: error: {line}", markup=False, soft_wrap=True),
        )
    )


@app.command("serve-reference", cls=_Command)
def serve_reference(
    port: Annotated[int, typer.Option("--port", metavar="PORT", help="Port on 127.0.0.1.")] = 8787,
    impl: Annotated[
        str,
        typer.Option(
            "--impl",
            metavar="IMPL",
            help="A Python implementation to serve instead (entry-point name or module:factory, the working "
            "directory importable while the module is imported).",
        ),
    ] = "reference",
    root: Annotated[
        Path | None,
        typer.Option(
            "--root", metavar="DIR", help="Stores and workspaces must lie under it (default: the system temp folder)."
        ),
    ] = None,
    mcp_config: Annotated[
        Path | None,
        typer.Option(
            "--mcp-config",
            metavar="FILE",
            help="The operator's MCP servers (TOML, one \\[\\[server]] table each; see the README): every instance"
            " opened gets them besides the servers its client sends, stdio commands included. Not for a"
            " conformance run: the scenarios would see their tools too.",
        ),
    ] = None,
) -> None:
    """Serve the reference behind the driver protocol (spec/driver-openapi.json) at http://127.0.0.1:PORT.

    Test it with `toolproof run --impl http://127.0.0.1:PORT`. A supervisor restarts the server each time a
    crash plan kills it (SIGKILL), so the recovery scenarios run over HTTP too. Stop it with Ctrl-C.
    Exit status 2 for bad input (unknown implementation, bad port, root or --mcp-config file).
    """
    import tempfile

    from toolproof.driver import child_command, supervise

    try:
        load_implementation(impl)
        servers = load_mcp_servers(mcp_config) if mcp_config is not None else []
    except ConfigurationError as exc:
        raise _die(str(exc)) from None
    if not 0 < port < 65536:
        raise _die(f"--port {port}: not a TCP port")
    base = (root or Path(tempfile.gettempdir())).resolve()
    if not base.is_dir():
        raise _die(f"--root {base}: not a directory")
    err.print(f"serving {impl} at http://127.0.0.1:{port} (driver protocol {DRIVER_PROTOCOL}, root {base})")
    if servers:
        err.print(f"MCP servers of {mcp_config}: {', '.join(s.server_id for s in servers)}", markup=False)
    command = child_command(impl, port, base, [sys.executable], mcp_config=mcp_config)
    raise typer.Exit(supervise(command, lambda n: err.print(f"restarted after a SIGKILL crash ({n})")))


@app.command("supervise", cls=_Command, context_settings={"ignore_unknown_options": True})
def supervise_command(
    command: Annotated[
        list[str],
        typer.Argument(
            metavar="COMMAND...",
            help="The driver's command line, after --: any program serving the driver protocol, in any language.",
        ),
    ],
) -> None:
    """Run a driver COMMAND and start it again each time a crash plan kills it (SIGKILL), as serve-reference does.

    For a driver in another language: `toolproof supervise -- node dist/src/main.js --port 8787`, then
    `toolproof run --impl http://127.0.0.1:8787`; the recovery scenarios' SIGKILL cells then run over HTTP. The
    driver finds TOOLPROOF_SUPERVISED=1 in its environment (driver protocol revision 3): its sign that a SIGKILL
    plan is safe to accept. SIGINT and SIGTERM are passed on to the driver. Exit status: the driver's own when it exits by itself (0 when
    stopped by SIGINT or SIGTERM); 2 when COMMAND cannot be started.
    """
    import shutil

    from toolproof.driver import supervise

    if shutil.which(command[0]) is None:
        raise _die(f"COMMAND {command[0]!r}: no such program (give its path, or put it on PATH)")
    err.print(f"supervising {' '.join(command)}", markup=False)
    raise typer.Exit(supervise(command, lambda n: err.print(f"restarted after a SIGKILL crash ({n})")))
