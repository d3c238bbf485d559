"""toolproof: a conformance suite and reference pipeline for ADR-0021."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("toolproof")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
