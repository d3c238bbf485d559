"""Calls through the reference pipeline, one workload, for a profiler to watch.

Runs the same single-call steps ``toolproof bench`` times (an IDEMPOTENT read or a
NON_IDEMPOTENT watermarked write, no approval), then prints milliseconds per call
and the committed transactions per call. The calls run in this process's main thread,
so any profiler sees them:

    pyinstrument benchmarks/profile_pipeline.py read 400
    python -m cProfile -s cumtime benchmarks/profile_pipeline.py read 400
    py-spy record -o profile.svg -- python benchmarks/profile_pipeline.py write 400
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

import anyio

from toolproof.bench import ReferenceRig, Sample, Workload


async def profile(directory: Path, workload: Workload, calls: int, repetitions: int) -> list[Sample]:
    """Warm up, then time ``repetitions`` rounds of ``calls`` calls, in the running event loop."""
    rig = ReferenceRig(directory, 0.05)
    async with rig.open() as instance:
        rig.attach(instance)
        try:
            await rig.timed(rig.requests(workload, "warmup", 50), "warmup")
            return [await rig.timed(rig.requests(workload, f"r{rep}", calls), workload) for rep in range(repetitions)]
        finally:
            rig.close()


def main() -> None:
    """Parse the arguments, profile, print the figures."""
    parser = argparse.ArgumentParser(description="Time one workload through the reference pipeline.")
    parser.add_argument("workload", choices=["read", "write"])
    parser.add_argument("calls", type=int, nargs="?", default=300, help="calls per round (default 300)")
    parser.add_argument("--repetitions", type=int, default=5, help="rounds (default 5)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="toolproof-profile-") as scratch:
        samples = anyio.run(profile, Path(scratch), args.workload, args.calls, args.repetitions)
    walls = [s.ms_per_call for s in samples]
    print(
        f"{args.workload}: {statistics.median(walls):.2f} ms/call median (min {min(walls):.2f}, max {max(walls):.2f}) "
        f"over {args.repetitions} x {args.calls} calls, {samples[0].commits_per_call:.2f} commits/call; "
        f"load {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
