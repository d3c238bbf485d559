"""The operator's MCP server file as ``check-server`` and ``serve-reference`` both read it.

Both make the same decisions on it, with the same code and in the same words: whether decision 7 admits each
server (``spec.admission_refusal``, which the reference's adapter makes too, with the file's ``egress_allowlist``),
and whether each stdio server's command exists.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable

from toolproof.spec import McpServerConfig, McpTransport, admission_refusal


def command_found(executable: str) -> bool:
    """Whether ``executable`` (a path, or a name on PATH) can be started."""
    if "/" in executable:
        return os.access(executable, os.X_OK) and not os.path.isdir(executable)
    return shutil.which(executable) is not None


def command_problem(server: McpServerConfig) -> str | None:
    """The one line that says a stdio server's command cannot be started, or None."""
    if server.transport is McpTransport.STDIO and server.command and not command_found(server.command[0]):
        return f"server {server.server_id!r}: command {server.command[0]!r} not found"
    return None


def not_admitted(server: McpServerConfig, egress_allowlist: Iterable[str]) -> str | None:
    """Why decision 7 refuses ``server`` with this allowlist, and the fix, or None when it is admitted."""
    refusal = admission_refusal(server, egress_allowlist)
    if refusal is None:
        return None
    if "(D7.2)" in refusal:
        return f"{refusal}: add its host to the file's top-level egress_allowlist, or make it an operator's server"
    return f"{refusal}: make it an operator's server, or give it a URL"
