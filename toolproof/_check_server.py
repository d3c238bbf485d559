"""``toolproof check-server``: check one MCP server in every protocol era, and say what ADR-0021 does to it.

Each era is checked on a connection of its own (``_check_era``); this module runs them, keeps the server's last
stderr lines, and puts the server's report together with the findings (``_check_findings``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence

from toolproof.reports import EraCheck, Finding, FindingKind, ServerCheck
from toolproof.spec import MCP_PROTOCOLS, UNCLASSIFIED, McpServerConfig, McpTransport

from ._check_call import Call
from ._check_era import Progress, check_era
from ._check_findings import findings_for
from ._check_text import shown
from ._server_file import not_admitted

STDERR_LINES = 20
"""How many of the server's last stderr lines the report keeps."""


def target_text(server: McpServerConfig) -> str:
    """The command line or the URL of ``server``."""
    return " ".join(server.command or []) if server.transport is McpTransport.STDIO else str(server.url)


def eras_for(server: McpServerConfig, configured: bool, only: str | None) -> list[str]:
    """The eras to try: the one asked for, else every era, the configured one first."""
    if only is not None:
        return [only]
    first = server.protocol if configured else MCP_PROTOCOLS[0]
    return [first, *(era for era in MCP_PROTOCOLS if era != first)]


async def check_server(
    server: McpServerConfig,
    *,
    configured: bool,
    egress_allowlist: Sequence[str] = (),
    calls: Sequence[Call] = (),
    wait_s: float = 30.0,
    era: str | None = None,
    progress: Progress = lambda line: None,
) -> ServerCheck:
    """Check ``server`` in every era (or in ``era``); ``configured``: it came from an operator file, whose
    ``egress_allowlist`` decision 7 admits a tenant's server by."""
    eras: list[EraCheck] = []
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        for name in eras_for(server, configured, era):
            eras.append(
                await check_era(
                    server, name, calls, wait_s, errlog, lambda line: progress(f"{server.server_id}: {line}")
                )
            )
        errlog.seek(0)
        stderr_tail = [shown(line.rstrip("\n")) for line in errlog.read().splitlines()[-STDERR_LINES:]]
    findings = findings_for(server, eras, configured=configured)
    refusal = not_admitted(server, egress_allowlist)
    if refusal is not None:
        findings.append(Finding(kind=FindingKind.NOT_ADMITTED, decision=7, era=None, message=refusal))
    connected = any(e.connected for e in eras)
    classification = server.classification
    return ServerCheck(
        server_id=server.server_id,
        transport=server.transport.value,
        target=target_text(server),
        configured_era=server.protocol if configured else None,
        classification=classification.model_dump(mode="json") if classification else None,
        classification_source=(
            "operator config: " + ", ".join(f"{k}={v}" for k, v in classification.model_dump(mode="json").items())
            if classification
            else "none in the operator config: unclassified, so the most restrictive, "
            + ", ".join(f"{k}={v}" for k, v in UNCLASSIFIED.model_dump(mode="json").items())
            + " (decision 6). The server's annotations are ignored."
        ),
        max_output_bytes=server.max_output_bytes,
        call_timeout_s=server.call_timeout_s,
        eras=eras,
        findings=findings,
        stderr_tail=stderr_tail,
        exit_code=2 if not connected else (1 if findings else 0),
    )
