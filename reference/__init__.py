"""toolproof.reference: the minimal reference pipeline, plugged in like any implementation.

What a witness (or a fork of the reference) may override is re-exported by ``toolproof.reference.hooks``.
"""

from toolproof.spec import publish_exports as _publish_exports

from ._instance import ReferenceImplementation, ReferenceInstance
from ._pipeline import Pipeline
from ._state import CallState

__all__ = ["CallState", "Pipeline", "ReferenceImplementation", "ReferenceInstance"]

_publish_exports(globals())
