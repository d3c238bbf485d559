"""``toolproof bench``: the quick logic on tiny sizes, and the shape of bench.json. Never its timings."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from toolproof.bench import (
    QUICK,
    TARGETS,
    Figure,
    definitions,
    mcp_floor,
    measure_calls,
    measure_catalog,
    ratios,
    render,
    run_bench,
    sigkill_survival,
    unavailable_reason,
)

TINY = replace(
    QUICK,
    repetitions=2,
    calls=4,
    warmup=2,
    probe_commits=10,
    batch_repetitions=1,
    batch_size=3,
    batch_wait_s=0.01,
    catalog_tools=40,
    catalog_repetitions=1,
    call_large_tools=40,
    mcp_calls=4,
    excerpt_bytes=256 * 1024,
    excerpt_in_subprocess=False,
    suite_repetitions=0,
    sigkill_acknowledged=0,
    decisions=("D18",),
)
FIGURE_KEYS = {"unit", "median", "min", "max", "repetitions", "samples"}


def _figure(node: dict[str, Any], repetitions: int) -> None:
    assert set(node) == FIGURE_KEYS
    assert len(node["samples"]) == node["repetitions"] == repetitions
    assert node["min"] <= node["median"] <= node["max"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("bench")
    return run_bench(out, TINY, mode="tiny"), out


def test_bench_json_holds_what_run_bench_returned(tiny: tuple[dict[str, Any], Path]) -> None:
    report, out = tiny
    assert json.loads((out / "bench.json").read_text(encoding="utf-8")) == report
    assert report["mode"] == "tiny"
    assert report["sizes"]["calls"] == TINY.calls
    assert {"cores", "cpu", "python", "sqlite", "load_before", "load_after"} <= set(report["machine"])
    assert len(report["machine"]["load_before"]) == 3


def test_every_figure_has_median_min_max_and_its_repetitions(tiny: tuple[dict[str, Any], Path]) -> None:
    figures = tiny[0]["figures"]
    _figure(figures["commit_limit"]["commits_per_s"], TINY.repetitions)
    for workload in ("read", "write"):
        assert set(figures["toolproof"][workload]) == {"calls_per_s", "ms_per_call", "commits_per_call", "efficiency"}
        for node in figures["toolproof"][workload].values():
            _figure(node, TINY.repetitions)
        assert set(figures["floor"][workload]) == {"calls_per_s", "ms_per_call", "commits_per_call"}
        for node in figures["floor"][workload].values():
            _figure(node, TINY.repetitions)
    for key in ("parallel_ms", "sequential_ms", "ratio"):
        _figure(figures["batch"][key], TINY.batch_repetitions)
    for key in ("sdk_list_s", "register_s", "advertise_s", "pin_check_s"):
        _figure(figures["catalog"][key], TINY.catalog_repetitions)
    for key in ("register", "advertise", "pin_check"):
        _figure(figures["catalog"][f"{key}_ratio"], TINY.catalog_repetitions)
        assert figures["catalog"][f"{key}_ratio"]["samples"] == [
            mine / sdk
            for mine, sdk in zip(
                figures["catalog"][f"{key}_s"]["samples"], figures["catalog"]["sdk_list_s"]["samples"], strict=True
            )
        ]
    for key in ("small_ms", "large_ms", "ratio"):
        _figure(figures["mcp_calls"][key], TINY.repetitions)
    assert figures["mcp_calls"]["tools"] == [TINY.call_small_tools, TINY.call_large_tools]
    for key in ("peak_rss_mib", "rss_growth_mib", "seconds"):
        _figure(figures["excerpt"][key], TINY.excerpt_repetitions)
    assert "suite" not in figures  # suite_repetitions=0 skips it
    for section in ("commit_limit", "floor", "toolproof", "dbos", "batch", "catalog", "mcp_calls", "excerpt"):
        assert len(figures[section]["load"]) == 3


def test_the_watermark_costs_exactly_one_counted_commit_per_call(tiny: tuple[dict[str, Any], Path]) -> None:
    figures = tiny[0]["figures"]
    for system in ("toolproof", "floor"):
        read = set(figures[system]["read"]["commits_per_call"]["samples"])
        write = set(figures[system]["write"]["commits_per_call"]["samples"])
        assert len(read) == len(write) == 1
        assert write.pop() - read.pop() == 1


def test_efficiency_pairs_each_repetition_of_the_floor_with_the_same_repetition_of_the_reference(
    tiny: tuple[dict[str, Any], Path],
) -> None:
    figures = tiny[0]["figures"]
    for workload in ("read", "write"):
        floor = figures["floor"][workload]["ms_per_call"]["samples"]
        ours = figures["toolproof"][workload]["ms_per_call"]["samples"]
        expected = [f / r for f, r in zip(floor, ours, strict=True)]
        assert figures["toolproof"][workload]["efficiency"]["samples"] == pytest.approx(expected)


def test_every_system_reads_back_wal_and_full(tiny: tuple[dict[str, Any], Path]) -> None:
    settings = tiny[0]["settings"]
    assert settings["durability_pragmas"] == {"journal_mode": "WAL", "synchronous": "FULL"}
    assert "SIGKILL" in settings["promise"]
    assert "power loss" in settings["promise"].lower()
    measured = {name: values for name, values in settings["read_back"].items() if values is not None}
    assert {"commit_limit_probe", "floor", "toolproof"} <= set(measured)
    assert all(values == {"journal_mode": "WAL", "synchronous": "FULL"} for values in measured.values())


def test_the_peer_is_measured_or_says_why_not(tiny: tuple[dict[str, Any], Path]) -> None:
    report = tiny[0]
    peer = report["figures"]["dbos"]
    latency = next(t for t in report["targets"] if t["figure"] == "latency_ratio.read")
    if unavailable_reason() is None:
        assert peer["available"]
        assert peer["reason"] is None
        assert report["settings"]["read_back"]["dbos"] == {"journal_mode": "WAL", "synchronous": "FULL"}
        for workload in ("read", "write"):
            _figure(report["figures"]["latency_ratio"][workload], TINY.repetitions)
            assert peer[workload]["commits_per_call"]["min"] > 0  # DBOS checkpoints every workflow
        assert latency["verdict"] in {"pass", "fail"}
    else:
        assert not peer["available"]
        assert "toolproof[bench]" in peer["reason"]
        assert latency["verdict"] == "n/a"


def test_a_disabled_peer_is_reported_unavailable_not_estimated(tmp_path: Path) -> None:
    sizes = replace(TINY, repetitions=1, batch_repetitions=1, peer=False)
    report = run_bench(tmp_path, sizes, mode="tiny")
    assert report["figures"]["dbos"] == {
        "available": False,
        "reason": "disabled for this run",
        "note": report["figures"]["dbos"]["note"],
        "load": report["figures"]["dbos"]["load"],
    }
    assert "latency_ratio" not in report["figures"]
    latency = next(t for t in report["targets"] if t["figure"] == "latency_ratio.read")
    assert latency == {
        "name": latency["name"],
        "figure": "latency_ratio.read",
        "comparison": "<=",
        "bound": 0.5,
        "verdict": "n/a",
        "reason": "disabled for this run",
    }


def test_every_must_show_target_gets_a_verdict(tiny: tuple[dict[str, Any], Path]) -> None:
    targets = tiny[0]["targets"]
    assert [t["figure"] for t in targets] == [".".join(t.path) for t in TARGETS]
    for target in targets:
        assert target["verdict"] in {"pass", "fail", "n/a"}
        if target["verdict"] != "n/a":
            assert 0 <= target["repetitions_meeting_bound"] <= target["repetitions"]


def test_the_table_shows_each_section_and_what_the_settings_promise(tiny: tuple[dict[str, Any], Path]) -> None:
    console = Console(record=True, width=220)
    render(tiny[0], console)
    text = console.export_text()
    for expected in (
        "commit limit",
        "commits per call (counted)",
        "efficiency = floor ms ÷ toolproof ms",
        "floor IDEMPOTENT read: latency",
        "floor: the reference's design on plain sqlite3",
        "batch parallel ÷ sequential",
        "catalog listed, normalized and registered by the MCP adapter",
        "catalog registered ÷ SDK listing (same repetition)",
        "MCP read latency, 40 ÷ 10 tools",
        "the SDK alone: Client.call_tool, 10-tool server",
        "MCP read through the pipeline ÷ its floor, 10-tool server",
        "MCP read ÷ its floor (SDK call alone + floor read)",
        "MCP call latency, 10,000 ÷ 10 tools",
        "MCP calls: one IDEMPOTENT READ_ONLY MCP tool",
        "peak RSS",
        "must-show targets",
        "journal_mode=WAL + synchronous=FULL",
        "the reference McpAdapter over an in-process low-level MCP server",
    ):
        assert expected in text


def test_square_brackets_in_a_reason_are_printed_as_written(tiny: tuple[dict[str, Any], Path]) -> None:
    # An install hint names an extra in brackets; the table must not read it as markup and drop it.
    report = copy.deepcopy(tiny[0])
    report["targets"][0] = {**report["targets"][0], "verdict": "n/a", "reason": "pip install 'toolproof[bench]'"}
    console = Console(record=True, width=300)
    render(report, console)
    assert "pip install 'toolproof[bench]'" in console.export_text()


def test_each_decisions_run_is_timed_on_its_own_with_the_cpu_of_what_it_started(
    tiny: tuple[dict[str, Any], Path],
) -> None:
    decisions = tiny[0]["figures"]["decisions"]
    (run,) = decisions["runs"]
    assert run["decision"] == "D18"
    assert run["exit_code"] == 0
    assert run["cells"] == 5  # D18's cells, read from the run's own results.
    assert run["cpu_s"] > 0  # The child process's CPU time, counted once it was reaped.
    assert run["waiting_s"] == max(run["wall_s"] - run["cpu_s"], 0.0)
    console = Console(record=True, width=220)
    render(tiny[0], console)
    assert "each decision's conformance run on its own" in console.export_text()


def test_the_adapter_registers_every_tool_and_records_the_list_changed_without_moving_the_pin(
    tmp_path: Path,
) -> None:
    assert len(definitions(400, revision=1)) == len(definitions(400)) == 400
    sample = measure_catalog(tmp_path, 400)
    assert sample.registered == 400
    assert sample.history == {"added": 2, "changed": 4, "withdrawn": 2}
    assert (sample.change.added, sample.change.withdrawn, sample.change.changed) == (2, 2, 4)


def test_the_per_call_workload_pairs_each_repetition_of_both_servers(tmp_path: Path) -> None:
    samples = measure_calls(tmp_path, (8, 30), calls=3, warmup=1, repetitions=2)
    assert len(samples) == 2
    for sample in samples:
        assert sample.small_ms > 0
        assert sample.large_ms > 0
        assert sample.ratio == sample.large_ms / sample.small_ms
        assert sample.sdk_ms > 0  # The SDK alone, in the same turns.


def test_the_mcp_floor_adds_the_floor_read_to_the_sdk_call_per_repetition() -> None:
    calls = {
        "small_ms": Figure.of("ms", [3.0, 4.0]).to_json(),
        "sdk_ms": Figure.of("ms", [1.0, 1.5]).to_json(),
    }
    floor = mcp_floor(calls, floor_read_ms=0.5)
    assert floor["floor_ms"]["samples"] == [1.5, 2.0]
    assert floor["floor_ratio"]["samples"] == [2.0, 2.0]
    assert floor["floor_read_ms"] == 0.5


def test_the_per_call_workload_refuses_a_server_without_the_called_tool(tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match=r"^sizes=\(7, 30\): both servers must list 'tool_00007'; give each more than 7 tools$"
    ):
        measure_calls(tmp_path, (7, 30), calls=1, warmup=1, repetitions=1)


def test_a_figure_needs_samples_and_ratios_need_equal_series() -> None:
    with pytest.raises(ValueError, match=r"^a figure needs at least one sample, got samples=\[\]$"):
        Figure.of("ms", [])
    with pytest.raises(ValueError, match=r"^series differ in length: 2 and 1$"):
        ratios([1.0, 2.0], [1.0])


@pytest.mark.slow
def test_a_sigkilled_writer_loses_no_acknowledged_commit(tmp_path: Path) -> None:
    result = sigkill_survival(tmp_path / "kill.sqlite3", 50)
    assert result["acknowledged"] == 50
    assert result["missing_after_kill"] == 0
    assert result["killed_by_signal"] == 9
    assert result["integrity_check"] == "ok"


@pytest.mark.slow
@pytest.mark.thorough  # About 160 s: out of the default run to keep CI within 30 minutes (nox -s model runs it).
def test_quick_bench_runs_as_a_module_and_writes_bench_json(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "toolproof.bench", "--quick", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert "must-show targets" in completed.stdout
    report = json.loads((tmp_path / "bench.json").read_text(encoding="utf-8"))
    assert report["mode"] == "quick"
    assert report["sizes"] == {**report["sizes"], "repetitions": QUICK.repetitions, "calls": QUICK.calls}
    assert report["figures"]["suite"]["rules"] == "D1,D2,D3"
    assert report["figures"]["suite"]["exit_codes"] == [0]
    assert report["settings"]["sigkill_check"]["missing_after_kill"] == 0
    assert report["figures"]["excerpt"]["in_subprocess"] is True
