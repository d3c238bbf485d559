"""Decision 4's exploration over HTTP says how far it has gone, and Ctrl-C or SIGTERM stops it where it is.

With the ``ci`` profile (200 examples) the exploration takes many minutes behind a driver; a run that prints nothing
for that long looks hung, and one that ignores a signal until every example is done must be killed.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from queue import Empty, Queue

import pytest
from helpers import served_driver

CELL = "test_d04_stateful.py::test_random_crash_and_recovery_sequences_keep_the_invariants"
TRIED = re.compile(r"(\d+) sequences tried, for the ci profile's 200 examples of at most 10 steps")
PATIENCE_S = 600
"""How long the test waits for a line or for the run to end before it gives up: a guard, never a measurement."""


@pytest.fixture
def served_reference() -> Iterator[str]:
    command = [sys.executable, "-m", "toolproof", "serve-reference", "--root", tempfile.gettempdir(), "--port"]
    with served_driver(lambda port: [*command, str(port)], quiet=True) as url:
        yield url


def _lines(stream: object, into: Queue[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        into.put(line)


@pytest.mark.slow
@pytest.mark.parametrize(("stop", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"])
def test_the_exploration_over_http_shows_progress_and_stops_on_a_signal(
    served_reference: str, tmp_path: Path, stop: signal.Signals, status: int
) -> None:
    env = {**os.environ, "TOOLPROOF_HYPOTHESIS_PROFILE": "ci"}
    command = [sys.executable, "-m", "toolproof", "run", "--impl", served_reference, "--cell", CELL]
    run = subprocess.Popen(
        [*command, "--out", str(tmp_path / "out")], env=env, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    said: Queue[str] = Queue()
    threading.Thread(target=_lines, args=(run.stderr, said), daemon=True).start()
    seen: list[str] = []
    try:
        while not any(TRIED.search(line) for line in seen):
            seen.append(said.get(timeout=PATIENCE_S))  # The first sequence is said as it starts.
        run.send_signal(stop)
        run.wait(timeout=PATIENCE_S)
    except (Empty, subprocess.TimeoutExpired):
        run.kill()
        run.wait()
        pytest.fail(f"no progress line, or the run went on after {stop.name}; it said: {''.join(seen)[-3000:]}")
    while not said.empty():
        seen.append(said.get())
    text = "".join(seen)
    assert run.returncode == status, text[-3000:]
    assert "toolproof: interrupted" in text
    tried = [int(m.group(1)) for m in TRIED.finditer(text)]
    assert tried
    assert max(tried) < 200  # Stopped inside the exploration, not after it.
    assert "Traceback" not in text
