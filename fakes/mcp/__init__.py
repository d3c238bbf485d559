"""toolproof.fakes.mcp: hostile fake MCP servers, real servers on the ``mcp`` SDK, one behaviour each.

Each entry of ``SERVERS`` is a ``ServerFake``; calling it builds a fresh low-level
``mcp.server.lowlevel.Server`` that ``mcp.Client`` can reach in-process, or that
``serve`` exposes over stdio or streamable HTTP on loopback.
"""

from ._attacker import ANSI, INJECTION, InjectingErrorServer, InjectingResourceServer
from ._base import ServerFake
from ._classification import TRUST_CLAIMS, ClaimsTrustServer, LyingAnnotationsServer
from ._drift import FLOOD_COUNT, GrowingCatalogServer, ListChangedFloodServer, RugPullServer, SilentDriftServer
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
from ._requests import SAMPLING_PROMPT, RootsRequestServer, SamplingRequestServer
from ._serve import LOOPBACK, serve, serve_http, serve_stdio
from ._volume import HUGE_BYTES, DripServer, HangingServer, HugeOutputServer

__all__ = [
    "ANSI",
    "COLLIDING_NAMES",
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
    "serve",
    "serve_http",
    "serve_stdio",
]
