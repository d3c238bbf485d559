"""Figures of ``toolproof bench``: medians over repetitions with their spread, and the machine they came from."""

from __future__ import annotations

import os
import platform
import sqlite3
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Figure:
    """One measured quantity over its repetitions."""

    unit: str
    """What the samples count: ``calls/s``, ``ms``, ``MiB``, ``ratio``..."""
    samples: tuple[float, ...]
    """One value per repetition, in the order they were taken."""

    @classmethod
    def of(cls, unit: str, samples: Sequence[float]) -> Figure:
        """A figure over ``samples``; at least one is needed."""
        if not samples:
            raise ValueError(f"a figure needs at least one sample, got samples={samples!r}")
        return cls(unit, tuple(float(s) for s in samples))

    @property
    def median(self) -> float:
        """Median of the samples."""
        return statistics.median(self.samples)

    @property
    def low(self) -> float:
        """Smallest sample."""
        return min(self.samples)

    @property
    def high(self) -> float:
        """Largest sample."""
        return max(self.samples)

    def to_json(self) -> dict[str, Any]:
        """The figure as bench.json stores it."""
        return {
            "unit": self.unit,
            "median": self.median,
            "min": self.low,
            "max": self.high,
            "repetitions": len(self.samples),
            "samples": list(self.samples),
        }


def ratios(numerators: Sequence[float], denominators: Sequence[float]) -> list[float]:
    """Pairwise ``n / d`` of two interleaved series (a repetition is compared with its own neighbour)."""
    if len(numerators) != len(denominators):
        raise ValueError(f"series differ in length: {len(numerators)} and {len(denominators)}")
    return [n / d for n, d in zip(numerators, denominators, strict=True)]


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages (other users share these cores)."""
    return [round(x, 2) for x in os.getloadavg()]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict[str, Any]:
    """What the figures depend on besides the code: cores, CPU, Python, SQLite."""
    return {
        "cores": os.cpu_count(),
        "cpu": _cpu_model(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
    }
