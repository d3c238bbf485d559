"""Round 6: which rules each red-team pipeline is run against (decision 9: listing reuse, drift, the hash)."""

from __future__ import annotations

from .r6_d09 import PIPELINES

MANIFEST: dict[str, str] = {f"redteam.r6_d09:{name}": "D9" for name in PIPELINES}
