"""``toolproof bench``: what the reference pipeline costs, against the commit limit and a durable-execution peer.

One run measures, on SQLite files with the reference's durability settings: the commit limit,
the pipeline's per-call time for an IDEMPOTENT read and a NON_IDEMPOTENT watermarked write (with
committed transactions counted) against the floor (the same design on plain sqlite3) and DBOS
running the same workloads, all three interleaved, batch
parallelism, a 10,000-tool catalog and an MCP call on it, excerpt memory and the quick conformance run. It prints a
table and writes ``bench.json``; run it as ``python -m toolproof.bench [--out DIR] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from toolproof import __version__
from toolproof.spec import load_catalog

from ._catalog import CALL_METHOD, METHOD, measure_calls, measure_catalog
from ._dbos import PEER_NOTE, DbosRig, unavailable_reason
from ._decisions import decision_runs
from ._excerpt import excerpt_memory, excerpt_memory_in_subprocess
from ._floor import FLOOR_NOTE, FloorRig
from ._pipeline import ReferenceRig, Sample, Workload
from ._render import evaluate_targets, render
from ._sqlite import (
    DURABILITY_PRAGMAS,
    DURABILITY_PROMISE,
    CommitProbe,
    sigkill_survival,
)
from ._stats import Figure, load_average, machine_info, ratios

WORKLOADS: tuple[Workload, ...] = ("read", "write")
SUITE_RULES = "D1,D2,D3"
"""The quick conformance run: decisions 1-3 (the port types, the context, the fourteen steps)."""

Progress = Callable[[str], None]


@dataclass(frozen=True)
class BenchSizes:
    """How much each section measures; ``QUICK`` and ``FULL`` are the two the command offers."""

    repetitions: int
    """Interleaved repetitions of the commit limit and the four throughput workloads."""
    calls: int
    """Calls per repetition and workload."""
    warmup: int
    """Untimed calls per workload and system before the first repetition."""
    probe_commits: int
    """One-row commits per commit limit repetition."""
    batch_repetitions: int
    batch_size: int = 8
    batch_wait_s: float = 0.05
    catalog_tools: int = 10_000
    catalog_repetitions: int = 3
    call_small_tools: int = 10
    """Tools of the small server of the per-call MCP workload."""
    call_large_tools: int = 10_000
    """Tools of the large server of the per-call MCP workload."""
    mcp_calls: int = 100
    """Timed MCP calls per repetition and server (the per-call workload runs ``repetitions`` repetitions)."""
    excerpt_bytes: int = 200 * 1024 * 1024
    excerpt_repetitions: int = 1
    excerpt_in_subprocess: bool = True
    """A fresh process per repetition, so the peak is the excerpt's (in-process only for tests)."""
    suite_repetitions: int = 1
    """0 skips the quick conformance run."""
    sigkill_acknowledged: int = 200
    """Commits a SIGKILLed writer acknowledges before the kill; 0 skips the check."""
    peer: bool = True
    """Run DBOS when it is installed."""
    decisions: tuple[str, ...] = ()
    """Decisions whose conformance runs section 8 times one by one (wall, CPU of the whole process tree); empty skips
    it (``toolproof bench --decisions`` gives every decision)."""


QUICK = BenchSizes(repetitions=3, calls=100, warmup=20, probe_commits=300, batch_repetitions=3, catalog_repetitions=2)
FULL = BenchSizes(
    repetitions=7,
    calls=300,
    warmup=50,
    probe_commits=1000,
    batch_repetitions=7,
    catalog_repetitions=5,
    excerpt_repetitions=3,
    suite_repetitions=3,
    sigkill_acknowledged=1000,
)


def efficiency(floor: Sample, reference: Sample) -> float:
    """Floor per-call time ÷ reference per-call time: 1.0 means the reference costs no more than the floor."""
    return floor.ms_per_call / reference.ms_per_call


def _throughput_figures(samples: list[Sample]) -> dict[str, Any]:
    return {
        "calls_per_s": Figure.of("calls/s", [s.calls_per_s for s in samples]).to_json(),
        "ms_per_call": Figure.of("ms", [s.ms_per_call for s in samples]).to_json(),
        "commits_per_call": Figure.of("commits", [s.commits_per_call for s in samples]).to_json(),
    }


def _open_peer(stack: ExitStack, directory: Path, sizes: BenchSizes) -> tuple[DbosRig | None, str | None]:
    reason = unavailable_reason() if sizes.peer else "disabled for this run"
    if reason is not None:
        return None, reason
    try:
        return stack.enter_context(DbosRig(directory / "dbos")), None
    except Exception as exc:  # Whatever stops DBOS here is the figure's explanation, not a crash of the bench.
        return None, f"DBOS did not launch on SQLite: {type(exc).__name__}: {exc}"


def _pipelines(directory: Path, sizes: BenchSizes, progress: Progress) -> dict[str, Any]:
    """Sections 1-4: commit limit, the floor and the reference, the peer and batches, interleaved in one run."""
    limits: list[float] = []
    ours: dict[Workload, list[Sample]] = {w: [] for w in WORKLOADS}
    floors: dict[Workload, list[Sample]] = {w: [] for w in WORKLOADS}
    theirs: dict[Workload, list[Sample]] = {w: [] for w in WORKLOADS}
    load = load_average()
    with ExitStack() as stack:
        rig = stack.enter_context(ReferenceRig(directory / "toolproof", sizes.batch_wait_s))
        floor = stack.enter_context(FloorRig(directory / "floor", rig.tools))
        probe = CommitProbe(directory / "probe.sqlite3")
        stack.callback(probe.close)
        peer, reason = _open_peer(stack, directory, sizes)
        for workload in WORKLOADS:
            floor.run(rig.requests(workload, "warmup", sizes.warmup))
            rig.run_calls(workload, sizes.warmup, "warmup")
            if peer is not None:
                peer.run_calls(workload, sizes.warmup, "warmup")
        for rep in range(sizes.repetitions):
            progress(f"throughput {rep + 1}/{sizes.repetitions} (load {load_average()[0]})")
            limits.append(probe.measure(sizes.probe_commits))
            for workload in WORKLOADS:
                tag = f"r{rep}"
                # Alternate who goes first, so no system always runs on another's warm cache.
                order = ("floor", "reference", "peer") if rep % 2 else ("peer", "reference", "floor")
                for system in order:
                    if system == "floor":
                        floors[workload].append(floor.run(rig.requests(workload, tag, sizes.calls)))
                    elif system == "reference":
                        ours[workload].append(rig.run_calls(workload, sizes.calls, tag))
                    elif peer is not None:
                        theirs[workload].append(peer.run_calls(workload, sizes.calls, tag))
        batch_load = load_average()
        parallel: list[Sample] = []
        sequential: list[Sample] = []
        for rep in range(sizes.batch_repetitions):
            progress(f"batches {rep + 1}/{sizes.batch_repetitions}")
            parallel.append(rig.run_batch(sizes.batch_size, parallel=True, tag=f"p{rep}"))
            sequential.append(rig.run_batch(sizes.batch_size, parallel=False, tag=f"s{rep}"))
        settings = {
            "commit_limit_probe": probe.settings(),
            "floor": floor.settings(),
            "toolproof": rig.settings(),
            "dbos": peer.settings() if peer is not None else None,
        }
    report: dict[str, Any] = {
        "settings_read_back": settings,
        "commit_limit": {"load": load, "commits_per_s": Figure.of("commits/s", limits).to_json()},
        "floor": {"load": load, "note": FLOOR_NOTE} | {w: _throughput_figures(floors[w]) for w in WORKLOADS},
        "toolproof": {"load": load}
        | {
            w: _throughput_figures(ours[w])
            | {
                "efficiency": Figure.of(
                    "ratio", [efficiency(f, r) for f, r in zip(floors[w], ours[w], strict=True)]
                ).to_json()
            }
            for w in WORKLOADS
        },
        "dbos": {"available": peer is not None, "reason": reason, "note": PEER_NOTE, "load": load},
        "batch": {
            "load": batch_load,
            "calls": sizes.batch_size,
            "wait_ms": 1000 * sizes.batch_wait_s,
            "parallel_ms": Figure.of("ms", [1000 * s.seconds for s in parallel]).to_json(),
            "sequential_ms": Figure.of("ms", [1000 * s.seconds for s in sequential]).to_json(),
            "ratio": Figure.of(
                "ratio", ratios([s.seconds for s in parallel], [s.seconds for s in sequential])
            ).to_json(),
        },
    }
    if peer is not None:
        report["dbos"] |= {"version": DbosRig.version()} | {w: _throughput_figures(theirs[w]) for w in WORKLOADS}
        report["latency_ratio"] = {
            w: Figure.of(
                "ratio", ratios([s.ms_per_call for s in ours[w]], [s.ms_per_call for s in theirs[w]])
            ).to_json()
            for w in WORKLOADS
        }
    return report


def _catalog(directory: Path, sizes: BenchSizes, progress: Progress) -> dict[str, Any]:
    """Section 5: the MCP adapter registers the catalog, pins a session, and checks a same-size list_changed."""
    load = load_average()
    samples = []
    for rep in range(sizes.catalog_repetitions):
        progress(f"catalog {rep + 1}/{sizes.catalog_repetitions}")
        samples.append(measure_catalog(directory / f"catalog-{rep}", sizes.catalog_tools))
    last = samples[-1]
    return {
        "load": load,
        "method": METHOD,
        "tools": sizes.catalog_tools,
        "registered": last.registered,
        "list_changed": asdict(last.change),
        "history_recorded": last.history,
        "sdk_list_s": Figure.of("s", [s.list_s for s in samples]).to_json(),
        "register_s": Figure.of("s", [s.register_s for s in samples]).to_json(),
        "advertise_s": Figure.of("s", [s.advertise_s for s in samples]).to_json(),
        "pin_check_s": Figure.of("s", [s.pin_check_s for s in samples]).to_json(),
        # Each against the SDK's own listing of the same repetition.
        "register_ratio": Figure.of("ratio", [s.register_s / s.list_s for s in samples]).to_json(),
        "advertise_ratio": Figure.of("ratio", [s.advertise_s / s.list_s for s in samples]).to_json(),
        "pin_check_ratio": Figure.of("ratio", [s.pin_check_s / s.list_s for s in samples]).to_json(),
    }


def _mcp_calls(directory: Path, sizes: BenchSizes, progress: Progress) -> dict[str, Any]:
    """Section 5b: per-call time of one MCP tool on a 10-tool and a 10,000-tool server, interleaved."""
    load = load_average()
    tools = (sizes.call_small_tools, sizes.call_large_tools)
    progress(f"MCP calls on {tools[0]:,} and {tools[1]:,} tools")
    samples = measure_calls(directory / "mcp-calls", tools, sizes.mcp_calls, sizes.warmup, sizes.repetitions)
    return {
        "load": load,
        "method": CALL_METHOD,
        "tools": list(tools),
        "calls": sizes.mcp_calls,
        "small_ms": Figure.of("ms", [s.small_ms for s in samples]).to_json(),
        "large_ms": Figure.of("ms", [s.large_ms for s in samples]).to_json(),
        "ratio": Figure.of("ratio", [s.ratio for s in samples]).to_json(),
        "sdk_ms": Figure.of("ms", [s.sdk_ms for s in samples]).to_json(),
    }


def mcp_floor(mcp_calls: dict[str, Any], floor_read_ms: float) -> dict[str, Any]:
    """The MCP floor (the SDK's ``call_tool`` alone, plus the floor pipeline's per-call cost of a builtin read) and
    the pipeline's MCP read on the 10-tool server as a ratio to it, per repetition."""
    sdk = mcp_calls["sdk_ms"]["samples"]
    small = mcp_calls["small_ms"]["samples"]
    return {
        "floor_ms": Figure.of("ms", [ms + floor_read_ms for ms in sdk]).to_json(),
        "floor_ratio": Figure.of(
            "ratio", [s / (ms + floor_read_ms) for s, ms in zip(small, sdk, strict=True)]
        ).to_json(),
        "floor_read_ms": floor_read_ms,
    }


def _excerpt(sizes: BenchSizes, progress: Progress) -> dict[str, Any]:
    """Section 6: peak memory excerpting a large output."""
    load = load_average()
    runs = []
    for rep in range(sizes.excerpt_repetitions):
        progress(f"excerpt {rep + 1}/{sizes.excerpt_repetitions}")
        measure = excerpt_memory_in_subprocess if sizes.excerpt_in_subprocess else excerpt_memory
        runs.append(measure(sizes.excerpt_bytes))
    return {
        "load": load,
        "total_bytes": runs[0]["total_bytes"],
        "limit_bytes": runs[0]["limit_bytes"],
        "in_subprocess": sizes.excerpt_in_subprocess,
        "peak_rss_mib": Figure.of("MiB", [r["peak_rss_mib"] for r in runs]).to_json(),
        "rss_growth_mib": Figure.of("MiB", [r["rss_growth_mib"] for r in runs]).to_json(),
        "seconds": Figure.of("s", [r["seconds"] for r in runs]).to_json(),
    }


def _suite(sizes: BenchSizes, progress: Progress) -> dict[str, Any]:
    """Section 7: wall time of the quick conformance run on the reference, as a user starts it."""
    command = [sys.executable, "-m", "toolproof", "run", "--impl", "reference", "--rules", SUITE_RULES, "-q"]
    load = load_average()
    walls: list[float] = []
    summary = ""
    exit_codes: list[int] = []
    for rep in range(sizes.suite_repetitions):
        progress(f"suite {rep + 1}/{sizes.suite_repetitions}")
        with tempfile.TemporaryDirectory(prefix="toolproof-bench-suite-") as out:
            started = time.perf_counter()
            completed = subprocess.run([*command, "--out", out], capture_output=True, text=True, check=False)
            walls.append(time.perf_counter() - started)
        exit_codes.append(completed.returncode)
        summary = completed.stdout.splitlines()[0] if completed.stdout else completed.stderr.strip()
    return {
        "load": load,
        "command": [*command[1:], "--out", "TMP"],
        "rules": SUITE_RULES,
        "exit_codes": exit_codes,
        "summary": summary,
        "wall_s": Figure.of("s", walls).to_json() if walls else None,
    }


def run_bench(out_dir: Path, sizes: BenchSizes, *, mode: str, progress: Progress | None = None) -> dict[str, Any]:
    """Run every section, write ``out_dir/bench.json`` and return what it holds.

    Args:
        out_dir: Folder for bench.json (created when missing).
        sizes: How much to measure (``QUICK``, ``FULL``, or smaller for tests).
        mode: Name recorded for the sizes (``quick``, ``full``...).
        progress: Called with a short line as each part starts.
    """
    note = progress or (lambda _line: None)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC)
    load_before = load_average()
    report: dict[str, Any] = {
        "toolproof_version": __version__,
        "mode": mode,
        "started_at": started.isoformat(timespec="seconds"),
        "machine": machine_info() | {"load_before": load_before},
        "sizes": asdict(sizes) | {"decisions": list(sizes.decisions)},  # As bench.json holds it.
        "database_dir": str(out_dir.resolve()),
    }
    with tempfile.TemporaryDirectory(prefix="toolproof-bench-", dir=out_dir) as scratch:
        directory = Path(scratch)
        sigkill = (
            sigkill_survival(directory / "sigkill.sqlite3", sizes.sigkill_acknowledged)
            if sizes.sigkill_acknowledged
            else None
        )
        pipelines = _pipelines(directory, sizes, note)
        catalog = _catalog(directory, sizes, note)
        mcp_calls = _mcp_calls(directory, sizes, note)
    report["settings"] = {
        "durability_pragmas": dict(DURABILITY_PRAGMAS),
        "promise": DURABILITY_PROMISE,
        "read_back": pipelines.pop("settings_read_back"),
        "sigkill_check": sigkill,
    }
    # The floor's read is measured in sections 1-4 of the same run: its median is the pipeline's share of the floor.
    mcp_calls |= mcp_floor(mcp_calls, pipelines["floor"]["read"]["ms_per_call"]["median"])
    report["figures"] = pipelines | {"catalog": catalog, "mcp_calls": mcp_calls, "excerpt": _excerpt(sizes, note)}
    if sizes.suite_repetitions:
        report["figures"]["suite"] = _suite(sizes, note)
    if sizes.decisions:
        report["figures"]["decisions"] = decision_runs(sizes.decisions, note)
    report["machine"]["load_after"] = load_average()
    report["seconds"] = (datetime.now(UTC) - started).total_seconds()
    report["targets"] = evaluate_targets(report)
    (out_dir / "bench.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def bench_command(out_dir: Path, *, quick: bool, console: Console | None = None, decisions: bool = False) -> int:
    """What ``toolproof bench`` does: run, print the table, write bench.json; 0 once written. ``decisions`` adds
    section 8, every decision's conformance run timed on its own."""
    # Piped output gets a width that fits the table rather than rich's 80-column default.
    screen = console or Console(highlight=False, width=None if sys.stdout.isatty() else 150)
    errors = Console(stderr=True, highlight=False)
    sizes, mode = (QUICK, "quick") if quick else (FULL, "full")
    if decisions:
        every = tuple(dict.fromkeys(rule.id.split(".")[0] for rule in load_catalog().rules))
        sizes = replace(sizes, decisions=every)
    report = run_bench(out_dir, sizes, mode=mode, progress=lambda line: errors.print(f"bench: {line}", markup=False))
    render(report, screen)
    screen.print(f"bench.json: {out_dir / 'bench.json'}", markup=False)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m toolproof.bench [--out DIR] [--quick]``."""
    parser = argparse.ArgumentParser(
        prog="python -m toolproof.bench",
        description="Measure the reference pipeline; print a table, write bench.json.",
    )
    parser.add_argument("--out", type=Path, default=Path("toolproof-bench"), help="folder for bench.json")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions: under a minute")
    parser.add_argument(
        "--decisions", action="store_true", help="also time each decision's conformance run (wall and CPU)"
    )
    args = parser.parse_args(argv)
    return bench_command(args.out, quick=args.quick, decisions=args.decisions)
