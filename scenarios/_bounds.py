"""Real-time bounds a scenario waits within, scaled by the machine's load and logged.

A scenario waits in real time only for what the implementation does on its own (a notification in flight, a process
restarted, an answer after a deadline the scenario set); everything it can move, it moves on the instance clock. Each
such wait has a bound on an idle machine, times ``load_factor()``: a right pipeline on a loaded machine is not judged
by an idle machine's window, and the log says which bound a cell used.
"""

from __future__ import annotations

import contextlib
import time

import anyio

from toolproof.fakes import load_factor
from toolproof.fakes.mcp import stdio_command

from ._harness import Harness


def bound(harness: Harness, seconds: float, what: str) -> float:
    """``seconds`` (a wait's bound on an idle machine) times ``load_factor()``, logged with ``what`` it waits for: a
    right pipeline on a loaded machine is not judged by an idle machine's window."""
    factor = load_factor()
    scaled = seconds * factor
    harness.log.append(f"waiting up to {scaled:.1f} s for {what} ({seconds:g} s times the load factor {factor:.2f})")
    return scaled


LAUNCH_MARGIN = 3.0
"""``launch_bound``'s factor over the start-up the harness measured: room for the load to rise between the two."""


async def launch_bound(harness: Harness, fake: str, floor_s: float) -> float:
    """A call timeout for an opening the stdio fake ``fake`` answers (or dies at) once it has started: ``floor_s``, or
    ``LAUNCH_MARGIN`` times how long the same command took here just now, started by the harness, to write its first
    line to stdout or exit, whichever is longer (logged). The fake's own start-up is the machine's, not the
    implementation's: a fixed window would fail a right pipeline on a loaded machine."""
    started = time.monotonic()
    async with await anyio.open_process(stdio_command(fake)) as process:
        # Invariant: open_process pipes both.
        assert process.stdin is not None
        assert process.stdout is not None
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.send(b"{}\n")
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
            await process.stdout.receive()
        took = time.monotonic() - started
        if process.returncode is None:
            process.kill()
    window = max(floor_s, LAUNCH_MARGIN * took)
    harness.log.append(
        f"{fake} over stdio answered its first line {took:.2f} s after the harness started it; the opening's bound is "
        f"{window:.1f} s (at least {floor_s:g} s, {LAUNCH_MARGIN:g} times the start-up measured)"
    )
    return window
