"""Witnesses: the reference with one deliberate defect each.

A witness proves a scenario can fail: every rule the suite covers names at least one
witness here, and the harness's own tests check that the suite rejects each witness on
the rules it breaks (and that the reference passes them). Use one like any
implementation: ``toolproof run --impl toolproof.reference.witnesses:status_honouring``.
"""

from toolproof.spec import publish_exports as _publish_exports

from . import d01, d02, d03, d04, d05, d06, d07, d08, d09, d10, d11, d12, d13, d14, d15, d16, d17, d18
from ._registry import WITNESSES, Witness

# Each witness is reachable as ``toolproof.reference.witnesses:<name>``.
globals().update(WITNESSES)

_MODULES = (d01, d02, d03, d04, d05, d06, d07, d08, d09, d10, d11, d12, d13, d14, d15, d16, d17, d18)
"""One module per decision: the witnesses whose first broken rule is of that decision."""

__all__ = ["WITNESSES", "Witness", *WITNESSES]

_publish_exports(globals())
