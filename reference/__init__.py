"""toolproof.reference: the minimal reference pipeline, plugged in like any implementation.

What a witness (or a fork of the reference) may override is re-exported by ``toolproof.reference.hooks``.
"""

from ._instance import ReferenceImplementation, ReferenceInstance
from ._pipeline import Pipeline
from ._state import CallState

__all__ = ["CallState", "Pipeline", "ReferenceImplementation", "ReferenceInstance"]
