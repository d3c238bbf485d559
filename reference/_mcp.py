"""The reference MCP adapter (decisions 5-9): servers become pinned, operator-classified tools of the one pipeline.

The adapter never runs a call itself. It supplies a ``Tool`` for a pinned name and the
pipeline re-enters its one function with it; everything a server sends is data, never
classification, identity or trust. It is four layers, one module each, each a subclass of
the one before:

- ``_mcp_connection``: connecting the servers, decision 7's configuration checks, one ``Link`` each (``_mcp_link``: what a
  link holds, and how an opening fails);
- ``_mcp_catalog``: names, definition hashes and the recorded catalog history (drift);
- ``_mcp_classify``: the operator's classification, the pinned spec, and results as ToolResults;
- ``_mcp_pins``: session pins, advertisement, and step 1 for ``mcp.*`` names.
"""

from __future__ import annotations

from ._mcp_pins import McpSessions


class McpAdapter(McpSessions):
    """Connects the configured servers, keeps catalog history and session pins, and resolves ``mcp.*`` names.

    Witnesses subclass it and override one public hook: ``check``, ``client_options``, ``stdio_parameters``,
    ``verify``, ``open_error``, ``prefix``, ``lost``, ``lose``, ``backoff``, ``reconnect`` (connection); ``notified``, ``invalidate``,
    ``fresh_for``, ``connection_changed``, ``normalize``, ``lists_resources``, ``register``, ``definition_hash``,
    ``refresh``, ``record`` (catalog); ``classify``, ``spec_for``, ``output_cap``, ``over_cap``, ``malformed``
    (classification); ``prefetch``, ``listed``, ``reusable``, ``failed``, ``skills``, ``start``, ``advertise``,
    ``resolve`` (sessions).
    """
