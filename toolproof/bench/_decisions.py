"""Section 8 of ``toolproof bench`` (``--decisions``): each decision's conformance run on the reference, timed in a
process of its own, with the CPU time of everything it started."""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from ._stats import load_average


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cells(out: Path) -> int | None:
    """Scenario cells the run in ``out`` judged (its junit.xml's tests); None when it wrote no report."""
    try:
        root = ElementTree.parse(out / "junit.xml").getroot()
    except (OSError, ElementTree.ParseError):
        return None
    return int(root.get("tests", "0"))


def decision_runs(decisions: Sequence[str], progress: Callable[[str], None]) -> dict[str, Any]:
    """Section 8: each decision's conformance run on the reference in a process of its own: its cells, wall time, and
    the CPU time of the process and everything it started (fake servers, workers), so wall minus CPU is what it
    spent waiting (on processes, clocks and the disk) when the CPU time is the smaller."""
    rows: list[dict[str, Any]] = []
    load = load_average()
    for decision in decisions:
        progress(f"conformance run of {decision} (load {load_average()[0]})")
        command = [sys.executable, "-m", "toolproof", "run", "--impl", "reference", "--rules", decision, "-q"]
        with tempfile.TemporaryDirectory(prefix="toolproof-bench-decision-") as out:
            cpu_before, started = _children_cpu_s(), time.perf_counter()
            completed = subprocess.run([*command, "--out", out], capture_output=True, text=True, check=False)
            wall, cpu = time.perf_counter() - started, _children_cpu_s() - cpu_before
            cells = _cells(Path(out))
        rows.append(
            {
                "decision": decision,
                "exit_code": completed.returncode,
                "cells": cells,
                "wall_s": wall,
                "cpu_s": cpu,
                "waiting_s": max(wall - cpu, 0.0),
            }
        )
    return {"load": load, "command": "toolproof run --impl reference --rules DECISION -q", "runs": rows}
