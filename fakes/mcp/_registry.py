"""The registry of hostile fake servers, in the order the architecture lists their behaviours."""

from __future__ import annotations

from ._arguments import StrictInputSchemaServer
from ._attacker import InjectingErrorServer, InjectingResourceServer, ShadowingResourceServer
from ._base import ServerFake
from ._classification import AcceptsUnlistedServer, ClaimsTrustServer, LyingAnnotationsServer
from ._definitions import CanonicalEdgeServer
from ._drift import (
    GrowingCatalogServer,
    ListChangedFloodServer,
    PaginatedCatalogServer,
    RugPullServer,
    SilentDriftServer,
)
from ._eras import (
    CrashesAtStartServer,
    DiscoverInternalErrorServer,
    DiscoverInvalidParamsServer,
    DiscoverSessionErrorServer,
    EraViolatorServer,
    HangsAtInitializeServer,
    LegacyOnlyServer,
    NonJsonServer,
)
from ._freshness import ChangedOnRestartServer, LossMidListingServer, NoticeMidListingServer, TtlDriftServer
from ._lifecycle import (
    EarlyNoticeServer,
    ExitsBetweenCallsServer,
    ExitsMidCallServer,
    ListenRefusedServer,
    ListingErrorServer,
)
from ._names import (
    CollidingNamesServer,
    DuplicateNamesServer,
    ImpersonatorServer,
    NormalizationOrderServer,
    OverlongNameServer,
    PlainServer,
    ReservedDomainServer,
    UnicodeTrickServer,
)
from ._requests import EndlessInputServer, RootsRequestServer, SamplingRequestServer
from ._schema import SchemaViolationServer
from ._surfaces import (
    ChangingResourcesServer,
    EmptyResourcesServer,
    EnvironmentServer,
    PagedResourcesServer,
    PagedTemplatesServer,
    TemplateResourcesServer,
    TwinNamesServer,
)
from ._volume import DripServer, HangingServer, HugeOutputServer, MultibyteOutputServer

SERVERS: dict[str, ServerFake] = {
    fake.name: fake
    for fake in (
        PlainServer,
        DuplicateNamesServer,
        CollidingNamesServer,
        UnicodeTrickServer,
        OverlongNameServer,
        NormalizationOrderServer,
        ReservedDomainServer,
        ImpersonatorServer,
        LyingAnnotationsServer,
        ClaimsTrustServer,
        RugPullServer,
        SilentDriftServer,
        ListChangedFloodServer,
        GrowingCatalogServer,
        PaginatedCatalogServer,
        TtlDriftServer,
        NoticeMidListingServer,
        CanonicalEdgeServer,
        SamplingRequestServer,
        RootsRequestServer,
        EndlessInputServer,
        InjectingErrorServer,
        InjectingResourceServer,
        ShadowingResourceServer,
        HugeOutputServer,
        MultibyteOutputServer,
        DripServer,
        HangingServer,
        EmptyResourcesServer,
        TemplateResourcesServer,
        PagedResourcesServer,
        PagedTemplatesServer,
        ChangingResourcesServer,
        TwinNamesServer,
        EnvironmentServer,
        EarlyNoticeServer,
        ExitsBetweenCallsServer,
        ExitsMidCallServer,
        ChangedOnRestartServer,
        LossMidListingServer,
        SchemaViolationServer,
        StrictInputSchemaServer,
        HangsAtInitializeServer,
        LegacyOnlyServer,
        DiscoverInvalidParamsServer,
        DiscoverInternalErrorServer,
        DiscoverSessionErrorServer,
        AcceptsUnlistedServer,
        EraViolatorServer,
        NonJsonServer,
        CrashesAtStartServer,
        ListingErrorServer,
        ListenRefusedServer,
    )
}
"""Every fake server by name."""


def catalog() -> list[tuple[str, str]]:
    """``(name, behaviour)`` for every fake server, in registry order."""
    return [(fake.name, fake.behaviour) for fake in SERVERS.values()]
