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
