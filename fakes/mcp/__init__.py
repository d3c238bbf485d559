"""toolproof.fakes.mcp: hostile fake MCP servers, real servers on the ``mcp`` SDK, one behaviour each.

Each entry of ``SERVERS`` is a ``ServerFake``; ``build()`` makes a fresh ``FakeServer``
whose ``log`` records what clients asked and whose ``server`` (a low-level
``mcp.server.lowlevel.Server``) ``mcp.Client`` can reach in-process; calling the entry
returns just that ``server``. ``serve`` exposes a fake over stdio or streamable HTTP on
loopback; ``stdio_command`` and ``http_server`` run it as a subprocess.
"""

from toolproof.spec import publish_exports as _publish_exports

from ._attacker import ANSI, INJECTION, InjectingErrorServer, InjectingResourceServer
from ._base import FakeServer, ServerFake
from ._classification import TRUST_CLAIMS, ClaimsTrustServer, LyingAnnotationsServer
from ._drift import FLOOD_COUNT, GrowingCatalogServer, ListChangedFloodServer, RugPullServer, SilentDriftServer
from ._launch import http_server, stdio_command
from ._names import (
    COLLIDING_NAMES,
    IMPERSONATED_NAME,
    OVERLONG_NAMES,
    RESERVED_DOMAIN_NAMES,
    UNICODE_TRICK_NAMES,
    CollidingNamesServer,
    DuplicateNamesServer,
    ImpersonatorServer,
    OverlongNameServer,
    PlainServer,
    ReservedDomainServer,
    UnicodeTrickServer,
)
from ._registry import SERVERS, catalog
from ._requests import (
    ELICITATION_MESSAGE,
    SAMPLING_PROMPT,
    EndlessInputServer,
    RootsRequestServer,
    SamplingRequestServer,
)
from ._serve import LOOPBACK, serve, serve_http, serve_stdio
from ._volume import HUGE_BYTES, DripServer, HangingServer, HugeOutputServer

__all__ = [
    "ANSI",
    "COLLIDING_NAMES",
    "ELICITATION_MESSAGE",
    "FLOOD_COUNT",
    "HUGE_BYTES",
    "IMPERSONATED_NAME",
    "INJECTION",
    "LOOPBACK",
    "OVERLONG_NAMES",
    "RESERVED_DOMAIN_NAMES",
    "SAMPLING_PROMPT",
    "SERVERS",
    "TRUST_CLAIMS",
    "UNICODE_TRICK_NAMES",
    "ClaimsTrustServer",
    "CollidingNamesServer",
    "DripServer",
    "DuplicateNamesServer",
    "EndlessInputServer",
    "FakeServer",
    "GrowingCatalogServer",
    "HangingServer",
    "HugeOutputServer",
    "ImpersonatorServer",
    "InjectingErrorServer",
    "InjectingResourceServer",
    "ListChangedFloodServer",
    "LyingAnnotationsServer",
    "OverlongNameServer",
    "PlainServer",
    "ReservedDomainServer",
    "RootsRequestServer",
    "RugPullServer",
    "SamplingRequestServer",
    "ServerFake",
    "SilentDriftServer",
    "UnicodeTrickServer",
    "catalog",
    "http_server",
    "serve",
    "serve_http",
    "serve_stdio",
    "stdio_command",
]

_publish_exports(globals())
