"""toolproof.fakes.mcp: hostile fake MCP servers, real servers on the ``mcp`` SDK, one behaviour each.

Each entry of ``SERVERS`` is a ``ServerFake``; ``build()`` makes a fresh ``FakeServer``
whose ``log`` records what clients asked and whose ``server`` (a low-level
``mcp.server.lowlevel.Server``) ``mcp.Client`` can reach in-process; calling the entry
returns just that ``server``. ``serve`` exposes a fake over stdio or streamable HTTP on
loopback; ``stdio_command`` and ``http_server`` run it as a subprocess.
"""

from toolproof.spec import publish_exports as _publish_exports

from ._attacker import (
    ANSI,
    INJECTION,
    SHADOWING_TOOL_NAMES,
    InjectingErrorServer,
    InjectingResourceServer,
    ShadowingResourceServer,
    shadowing_resource_server,
)
from ._base import FakeServer, ServerFake
from ._classification import TRUST_CLAIMS, ClaimsTrustServer, LyingAnnotationsServer
from ._drift import (
    FLOOD_COUNT,
    PAGE_SIZE,
    GrowingCatalogServer,
    ListChangedFloodServer,
    PaginatedCatalogServer,
    RugPullServer,
    SilentDriftServer,
)
from ._launch import http_server, stdio_command
from ._lifecycle import EXIT, WRITE, EarlyNoticeServer, ExitsBetweenCallsServer, ExitsMidCallServer
from ._names import (
    COLLIDING_NAMES,
    IMPERSONATED_NAME,
    NORMALIZATION_ORDER_NAMES,
    OVERLONG_NAMES,
    RESERVED_DOMAIN_NAMES,
    UNICODE_TRICK_NAMES,
    CollidingNamesServer,
    DuplicateNamesServer,
    ImpersonatorServer,
    NormalizationOrderServer,
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
from ._surfaces import (
    ENV_KEY,
    SHARED_NAME,
    TEMPLATE,
    TWIN_PROMPT_NAMES,
    TWIN_RESOURCE_URI,
    EmptyResourcesServer,
    EnvironmentServer,
    TemplateResourcesServer,
    TwinNamesServer,
)
from ._volume import (
    HANG_RESOURCE,
    HUGE_BYTES,
    DripServer,
    HangingServer,
    HugeOutputServer,
    MultibyteOutputServer,
    repeat_uri,
)

__all__ = [
    "ANSI",
    "COLLIDING_NAMES",
    "ELICITATION_MESSAGE",
    "ENV_KEY",
    "EXIT",
    "FLOOD_COUNT",
    "HANG_RESOURCE",
    "HUGE_BYTES",
    "IMPERSONATED_NAME",
    "INJECTION",
    "LOOPBACK",
    "NORMALIZATION_ORDER_NAMES",
    "OVERLONG_NAMES",
    "PAGE_SIZE",
    "RESERVED_DOMAIN_NAMES",
    "SAMPLING_PROMPT",
    "SERVERS",
    "SHADOWING_TOOL_NAMES",
    "SHARED_NAME",
    "TEMPLATE",
    "TRUST_CLAIMS",
    "TWIN_PROMPT_NAMES",
    "TWIN_RESOURCE_URI",
    "UNICODE_TRICK_NAMES",
    "WRITE",
    "ClaimsTrustServer",
    "CollidingNamesServer",
    "DripServer",
    "DuplicateNamesServer",
    "EarlyNoticeServer",
    "EmptyResourcesServer",
    "EndlessInputServer",
    "EnvironmentServer",
    "ExitsBetweenCallsServer",
    "ExitsMidCallServer",
    "FakeServer",
    "GrowingCatalogServer",
    "HangingServer",
    "HugeOutputServer",
    "ImpersonatorServer",
    "InjectingErrorServer",
    "InjectingResourceServer",
    "ListChangedFloodServer",
    "LyingAnnotationsServer",
    "MultibyteOutputServer",
    "NormalizationOrderServer",
    "OverlongNameServer",
    "PaginatedCatalogServer",
    "PlainServer",
    "ReservedDomainServer",
    "RootsRequestServer",
    "RugPullServer",
    "SamplingRequestServer",
    "ServerFake",
    "ShadowingResourceServer",
    "SilentDriftServer",
    "TemplateResourcesServer",
    "TwinNamesServer",
    "UnicodeTrickServer",
    "catalog",
    "http_server",
    "repeat_uri",
    "serve",
    "serve_http",
    "serve_stdio",
    "shadowing_resource_server",
    "stdio_command",
]

_publish_exports(globals())
