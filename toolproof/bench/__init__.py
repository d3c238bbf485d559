"""toolproof.bench: what the reference pipeline costs (``toolproof bench``, ``python -m toolproof.bench``).

It reaches the reference only through its public surface (``toolproof.reference`` and
``toolproof.reference.hooks``) and registers the public fake tools, like any measuring harness would.
"""

from toolproof.spec import publish_exports as _publish_exports

from ._catalog import CallSample, definitions, measure_calls, measure_catalog
from ._dbos import unavailable_reason
from ._pipeline import ReferenceRig, Sample, Workload
from ._render import TARGETS, render
from ._run import FULL, QUICK, BenchSizes, bench_command, main, mcp_floor, run_bench
from ._sqlite import sigkill_survival
from ._stats import Figure, ratios

__all__ = [
    "FULL",
    "QUICK",
    "TARGETS",
    "BenchSizes",
    "CallSample",
    "Figure",
    "ReferenceRig",
    "Sample",
    "Workload",
    "bench_command",
    "definitions",
    "main",
    "mcp_floor",
    "measure_calls",
    "measure_catalog",
    "ratios",
    "render",
    "run_bench",
    "sigkill_survival",
    "unavailable_reason",
]

_publish_exports(globals())
