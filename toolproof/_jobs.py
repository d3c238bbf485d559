"""``toolproof run --jobs N``: one run split into N shards run side by side, each in a process of its own, and merged.

The shards are the ones ``--shard K/N`` makes (balanced by the cell durations of the last run in ``--out`` when it has
one), each written into a scratch folder, and ``toolproof merge``'s merge makes the one run ``--out`` keeps. Verdicts
are worked out from every shard's rows, as in one process; the run's wall time is the parent's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from toolproof.spec import ConfigurationError, HarnessError

from ._outcome import RunOutcome

_PROGRESS_PREFIXES = ("[", "  ... ")
"""The lines of a shard's stderr that say how far it has gone (a cell's verdict, a long scenario's note)."""


@dataclass(frozen=True)
class ShardedRun:
    """What every shard's process is given besides its shard and folder (``toolproof run``'s options)."""

    impls: Sequence[str]
    rules: str | None
    database_url: str | None
    expectations: Sequence[Path]
    durations_from: Path | None
    quiet: bool


@dataclass
class _Shard:
    index: int
    out: Path
    process: subprocess.Popen[str]
    kept: list[str] = field(default_factory=list)
    """Its stderr lines other than progress: said when the shard fails on its own (bad input, a harness failure)."""


def check_jobs(jobs: int, shard: str | None, draft: Path | None, stops: bool) -> None:
    """--jobs runs every shard of the whole selection itself, and merges them.

    Raises:
        ConfigurationError: --jobs above 1 with an option that asks for one process's run.
    """
    if jobs == 1:
        return
    if shard is not None:
        raise ConfigurationError(f"--jobs {jobs} runs every shard itself: give --shard K/N or --jobs N, not both")
    if draft is not None:
        raise ConfigurationError(f"--write-expectations drafts from one process's run: run it without --jobs {jobs}")
    if stops:
        raise ConfigurationError(f"-x and --maxfail stop one process's run: run them without --jobs {jobs}")


def _command(run: ShardedRun, index: int, count: int, out: Path) -> list[str]:
    command = [sys.executable, "-m", "toolproof", "run", "--shard", f"{index}/{count}", "--out", str(out)]
    for ref in run.impls:
        command += ["--impl", ref]
    if run.rules is not None:
        command += ["--rules", run.rules]
    if run.database_url:
        command += ["--database-url", run.database_url]
    for path in run.expectations:
        command += ["--expectations", str(path)]
    if run.durations_from is not None:
        command += ["--shard-durations", str(run.durations_from)]
    if run.quiet:
        command.append("--quiet")
    return command


def _relay(shard: _Shard, count: int, stream: IO[str], say: Callable[[str], None]) -> None:
    """Pass a shard's progress on, named by its shard, and keep its other lines."""
    for line in stream:
        text = line.rstrip("\n")
        if text.startswith(_PROGRESS_PREFIXES):
            say(f"shard {shard.index}/{count} {text}")
        elif text:
            shard.kept.append(text)


def run_in_shards(
    run: ShardedRun,
    count: int,
    out_dir: Path,
    say: Callable[[str], None],
    merge: Callable[[Sequence[Path], Path, float], RunOutcome],
) -> RunOutcome:
    """Run ``count`` shards of the selection at once and merge them into ``out_dir``; ``say`` prints a progress line.

    Raises:
        ConfigurationError: a shard refused its input (exit 2), with the shard's own line.
        HarnessError: a shard's harness failed (exit 3) or its process ended otherwise, with its last line.
        KeyboardInterrupt: Ctrl-C or SIGTERM; every shard's process is stopped first.
    """
    started = time.monotonic()
    environment = {**os.environ, "COLUMNS": "1000"}  # A progress line is relayed whole, not wrapped.
    with tempfile.TemporaryDirectory(prefix="toolproof-shards-") as scratch:
        shards: list[_Shard] = []
        relays: list[threading.Thread] = []
        try:
            for index in range(1, count + 1):
                out = Path(scratch) / f"shard-{index}"
                process = subprocess.Popen(
                    _command(run, index, count, out),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=environment,
                    start_new_session=True,  # Stopped by this process, so a Ctrl-C reaches each shard once.
                )
                shard = _Shard(index, out, process)
                shards.append(shard)
                assert process.stderr is not None  # Invariant: piped above.
                relay = threading.Thread(target=_relay, args=(shard, count, process.stderr, say), daemon=True)
                relay.start()
                relays.append(relay)
            for shard in shards:
                shard.process.wait()
        except BaseException:
            _stop(shards)
            raise
        for relay in relays:
            relay.join()
        _check(shards, count)
        return merge([shard.out for shard in shards], out_dir, time.monotonic() - started)


def _stop(shards: Sequence[_Shard]) -> None:
    """SIGINT to every shard still running (each stops what it started and writes nothing), then wait for them."""
    for shard in shards:
        if shard.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(shard.process.pid, signal.SIGINT)
    for shard in shards:
        try:
            shard.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(shard.process.pid, signal.SIGKILL)
            shard.process.wait()


def _check(shards: Sequence[_Shard], count: int) -> None:
    """A shard that ended with a verdict (0, 1) or nothing to judge (5) wrote its folder; any other end is said."""
    for shard in shards:
        code = shard.process.returncode
        if code in (0, 1, 5):
            continue
        said = shard.kept[-1].removeprefix("toolproof: ") if shard.kept else f"it ended with exit status {code}"
        where = f"shard {shard.index}/{count}"
        if code == 2:
            raise ConfigurationError(f"{where}: {said}")
        raise HarnessError(f"{where}: {said}")
