"""The numbers the ADR fixes."""

from __future__ import annotations

REPEATED_DENIAL_THRESHOLD = 3
"""Decision 14: the third identical call after denials is refused without evaluation."""
LOOP_THRESHOLD = 5
"""Decision 14: the fifth identical call in a run trips loop detection."""
DEFAULT_APPROVAL_TIMEOUT_S = 300.0
"""Decision 17: approval holds are bounded, 300 s by default."""
EXCERPT_MARKER_SOURCE = "toolproof.excerpt"
"""Decision 12: the source of the one envelope an excerpt adds (the marker)."""


def excerpt_marker_text(omitted_bytes: int, total_bytes: int) -> str:
    """Decision 12: the marker's whole text, the only text an excerpt adds: how many UTF-8 bytes of how many it
    omitted (those no envelope delivers), in fixed words, so a SYSTEM-labelled marker carries nothing else."""
    return f"[… {omitted_bytes} of {total_bytes} bytes omitted; the whole output is in the artifact …]"
