"""toolproof.reference: the minimal reference pipeline, plugged in like any implementation."""

from ._instance import ReferenceImplementation, ReferenceInstance
from ._pipeline import CallState, Pipeline

__all__ = ["CallState", "Pipeline", "ReferenceImplementation", "ReferenceInstance"]
