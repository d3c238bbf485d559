"""``toolproof check-tool`` and ``toolproof check-server``: check one tool, or one MCP server, outside a run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from typer.core import TyperOption

from ._console import GitStyleCommand, err


def is_server_file_or_url(word: str) -> bool:
    """Whether a check-server target is an operator file or a URL (options may follow it), not a command's first word."""
    return word.endswith(".toml") or word.startswith(("http://", "https://"))


class CheckServerCommand(GitStyleCommand):
    """check-server's parsing: options anywhere around a file or a URL; a command line is taken whole.

    A stdio server's command line is its own (``-y``, ``--port``): from its first word on, nothing is an option of
    check-server's, as if ``--`` stood before it. A file or a URL is one word, so options may come after it.
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        takes_value = {
            name
            for param in self.get_params(ctx)
            if isinstance(param, TyperOption) and not param.is_flag and not param.count
            for name in (*param.opts, *param.secondary_opts)
        }
        words = list(args)
        i = 0
        while i < len(words):
            word = words[i]
            if word == "--":
                break
            if word.startswith("-") and len(word) > 1:
                i += 2 if word in takes_value else 1  # ``--timeout=5`` carries its value.
                continue
            if not is_server_file_or_url(word):
                words.insert(i, "--")
            break
        return list(super().parse_args(ctx, words))


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

    \b
    Example:
      toolproof check-tool mypackage.tools:SendEmailTool --key-in body:idempotency_key
    """
    from toolproof.contracts import run_check_tool

    raise typer.Exit(
        run_check_tool(
            ref, as_json=as_json, key_in=key_in, requests_act=requests_act, strict=strict, observation=observation
        )
    )


def check_server_command(
    target: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="FILE.toml | URL | -- COMMAND ARGS...",
            help="An operator MCP server file (TOML, one \\[\\[server]] table each; see docs/check-server.md), a streamable-HTTP"
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
