"""toolproof.scenarios: executable scenarios, one module per ADR decision, judged per rule.

Scenarios talk to the Implementation port only; they never import an implementation.
"""

from ._harness import USER_ITEM, Harness, Session, describe

__all__ = ["USER_ITEM", "Harness", "Session", "describe"]
