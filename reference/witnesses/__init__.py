"""Witnesses: the reference with one deliberate defect each.

A witness proves a scenario can fail: every rule the suite covers names at least one
witness here, and the harness's own tests check that the suite rejects each witness on
the rules it breaks (and that the reference passes them). Use one like any
implementation: ``toolproof run --impl toolproof.reference.witnesses:status_honouring``.
"""

from toolproof.spec import publish_exports as _publish_exports

from . import (
    _d01_d03,
    _d04_d06,
    _d04_recovery,
    _d05_d09_mcp,
    _d10_d11,
    _d12_d16,
    _d13,
    _d17_d18,
    _everywhere,
    _gaps_outcomes_breaker,
    _gaps_paths,
    _gaps_trust_keys,
    _i17_catalog,
    _i17_eras,
    _i19_listing,
    _lifecycle_mcp,
    _mid_session_mcp,
    _mut_mutgaps1,
    _mut_mutgaps2,
    _r2_keys_bridge,
    _r2_names_mcp,
    _r2_results,
    _r3_gaps3a,
    _r3_gaps3b,
    _r3_gaps3c,
    _r4_ga,
    _r4_gb,
    _r4_gc,
    _r5_gapsa,
    _r5_gapsb,
    _r6_freshness,
    _schema_mcp,
)
from ._registry import WITNESSES, Witness

# Each witness is reachable as ``toolproof.reference.witnesses:<name>``.
globals().update(WITNESSES)

_MODULES = (
    _d01_d03,
    _d04_d06,
    _d04_recovery,
    _d05_d09_mcp,
    _d10_d11,
    _d12_d16,
    _d13,
    _d17_d18,
    _everywhere,
    _gaps_outcomes_breaker,
    _gaps_paths,
    _gaps_trust_keys,
    _r2_results,
    _r2_names_mcp,
    _r2_keys_bridge,
    _mut_mutgaps1,
    _mut_mutgaps2,
    _r3_gaps3a,
    _r3_gaps3b,
    _r3_gaps3c,
    _r4_ga,
    _r4_gb,
    _r4_gc,
    _schema_mcp,
    _i17_catalog,
    _i17_eras,
    _i19_listing,
    _lifecycle_mcp,
    _mid_session_mcp,
    _r5_gapsb,
    _r5_gapsa,
    _r6_freshness,
)

__all__ = ["WITNESSES", "Witness", *WITNESSES]

_publish_exports(globals())
