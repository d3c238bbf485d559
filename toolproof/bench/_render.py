"""The table ``toolproof bench`` prints, and the verdicts on the issue's must-show targets."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table


@dataclass(frozen=True, slots=True)
class Target:
    """A must-show figure and the bound its median must meet."""

    name: str
    path: tuple[str, ...]
    """Where the figure sits under ``figures`` in bench.json."""
    comparison: str
    bound: float

    def holds(self, value: float) -> bool:
        """Whether ``value`` meets the bound."""
        compare: Callable[[float, float], bool] = _COMPARISONS[self.comparison]
        return compare(value, self.bound)


_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "<": operator.lt,
}

TARGETS = (
    Target("efficiency, IDEMPOTENT read", ("toolproof", "read", "efficiency"), ">=", 0.7),
    Target("efficiency, NON_IDEMPOTENT write", ("toolproof", "write", "efficiency"), ">=", 0.7),
    Target("latency toolproof ÷ DBOS, IDEMPOTENT read", ("latency_ratio", "read"), "<=", 0.5),
    Target("batch wall parallel ÷ sequential", ("batch", "ratio"), "<=", 0.2),
    Target("catalog registered (s)", ("catalog", "register_s"), "<", 1.0),
    Target("catalog registered ÷ SDK listing", ("catalog", "register_ratio"), "<=", 1.5),
    Target("catalog pinned ÷ SDK listing", ("catalog", "advertise_ratio"), "<=", 1.5),
    Target("catalog pin check ÷ SDK listing", ("catalog", "pin_check_ratio"), "<=", 1.5),
    Target("MCP call latency, 10,000 ÷ 10 tools", ("mcp_calls", "ratio"), "<=", 1.2),
    Target("MCP read ÷ its floor (SDK call alone + floor read)", ("mcp_calls", "floor_ratio"), "<=", 1.5),
    Target("excerpt peak RSS (MiB)", ("excerpt", "peak_rss_mib"), "<", 100.0),
)
"""The issue's must-show figures, judged on the median."""


def _find(figures: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
    node: Any = figures
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node if isinstance(node, dict) and "median" in node else None


def evaluate_targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One verdict per target: ``pass``, ``fail``, or ``n/a`` (with the reason) when the figure was not measured."""
    verdicts = []
    for target in TARGETS:
        figure = _find(report["figures"], target.path)
        entry: dict[str, Any] = {
            "name": target.name,
            "figure": ".".join(target.path),
            "comparison": target.comparison,
            "bound": target.bound,
        }
        if figure is None:
            reason = report["figures"].get("dbos", {}).get("reason") if target.path[0] == "latency_ratio" else None
            entry |= {"verdict": "n/a", "reason": reason or "not measured in this run"}
        else:
            samples = figure["samples"]
            entry |= {
                "median": figure["median"],
                "min": figure["min"],
                "max": figure["max"],
                "verdict": "pass" if target.holds(figure["median"]) else "fail",
                "repetitions_meeting_bound": sum(1 for s in samples if target.holds(s)),
                "repetitions": len(samples),
            }
        verdicts.append(entry)
    return verdicts


def _number(value: float) -> str:
    size = abs(value)
    if size >= 100:
        return f"{value:,.0f}"
    if size >= 10:
        return f"{value:.1f}"
    if size >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _load(section: dict[str, Any]) -> str:
    return " ".join(f"{x:.2f}" for x in section.get("load", []))


def _rows(figures: dict[str, Any]) -> list[tuple[str, str, dict[str, Any] | None, str]]:
    """``(number, label, figure, load)`` per table row, in the issue's order."""
    rows: list[tuple[str, str, dict[str, Any] | None, str]] = []
    limit = figures["commit_limit"]
    rows.append(("1", "commit limit (1-row transactions)", limit["commits_per_s"], _load(limit)))
    ours, floor = figures["toolproof"], figures["floor"]
    for workload, label in (("read", "IDEMPOTENT read"), ("write", "NON_IDEMPOTENT write + watermark")):
        rows.append(("2", f"floor {label}: latency", floor[workload]["ms_per_call"], _load(floor)))
        rows.append(("2", f"toolproof {label}: latency", ours[workload]["ms_per_call"], _load(ours)))
        for key, what in (
            ("efficiency", "efficiency = floor ms ÷ toolproof ms"),
            ("calls_per_s", "throughput"),
            ("commits_per_call", "commits per call (counted)"),
        ):
            rows.append(("2", f"toolproof {label}: {what}", ours[workload][key], _load(ours)))
        rows.append(
            ("2", f"floor {label}: commits per call (counted)", floor[workload]["commits_per_call"], _load(floor))
        )
    peer = figures["dbos"]
    if peer["available"]:
        for workload in ("read", "write"):
            for key, what in (("ms_per_call", "latency"), ("commits_per_call", "commits per call (counted)")):
                rows.append(("3", f"DBOS {peer['version']} {workload}: {what}", peer[workload][key], _load(peer)))
            rows.append(("3", f"latency toolproof ÷ DBOS, {workload}", figures["latency_ratio"][workload], _load(peer)))
    else:
        rows.append(("3", f"DBOS peer unavailable: {peer['reason']}", None, _load(peer)))
    batch = figures["batch"]
    size = f"{batch['calls']} reads × {batch['wait_ms']:.0f} ms"
    rows.append(("4", f"batch of {size}: parallel wall", batch["parallel_ms"], _load(batch)))
    rows.append(("4", f"batch of {size}: sequential wall", batch["sequential_ms"], _load(batch)))
    rows.append(("4", "batch parallel ÷ sequential", batch["ratio"], _load(batch)))
    catalog = figures["catalog"]
    tools = f"{catalog['tools']:,}-tool"
    for key, what in (
        ("sdk_list_s", f"MCP SDK alone: one tools/list of the {tools} catalog, in process"),
        ("register_s", f"{tools} catalog listed, normalized and registered by the MCP adapter"),
        ("advertise_s", f"session pin of the {tools} catalog (advertise)"),
        ("pin_check_s", f"pin check of a {tools} list_changed"),
    ):
        rows.append(("5", what, catalog[key], _load(catalog)))
    for key, what in (
        ("register_ratio", "registered ÷ SDK listing (same repetition)"),
        ("advertise_ratio", "pinned ÷ SDK listing"),
        ("pin_check_ratio", "pin check ÷ SDK listing"),
    ):
        rows.append(("5", f"{tools} catalog {what}", catalog[key], _load(catalog)))
    calls = figures["mcp_calls"]
    small, large = (f"{size:,}" for size in calls["tools"])
    rows.append(("5", f"MCP read through the pipeline, {small}-tool server: latency", calls["small_ms"], _load(calls)))
    rows.append(("5", f"MCP read through the pipeline, {large}-tool server: latency", calls["large_ms"], _load(calls)))
    rows.append(("5", f"MCP read latency, {large} ÷ {small} tools", calls["ratio"], _load(calls)))
    if "floor_ratio" in calls:  # bench.json files written before the MCP floor was measured lack it.
        rows.append(("5", f"the SDK alone: Client.call_tool, {small}-tool server", calls["sdk_ms"], _load(calls)))
        rows.append(("5", "MCP floor: the SDK alone + the floor's builtin read", calls["floor_ms"], _load(calls)))
        rows.append(
            ("5", f"MCP read through the pipeline ÷ its floor, {small}-tool server", calls["floor_ratio"], _load(calls))
        )
    excerpt = figures["excerpt"]
    mib = excerpt["total_bytes"] / 2**20
    rows.append(("6", f"excerpt of {mib:,.0f} MiB: peak RSS of the process", excerpt["peak_rss_mib"], _load(excerpt)))
    rows.append(
        ("6", f"excerpt of {mib:,.0f} MiB: RSS growth while excerpting", excerpt["rss_growth_mib"], _load(excerpt))
    )
    suite = figures.get("suite")
    if suite is not None and suite["wall_s"] is not None:
        rows.append(("7", f"quick conformance run ({suite['rules']}): wall", suite["wall_s"], _load(suite)))
    return rows


def _decision_table(decisions: dict[str, Any]) -> Table:
    """Section 8: each decision's run, slowest first, and the share of the whole it takes."""
    runs = sorted(decisions["runs"], key=lambda run: -run["wall_s"])
    whole = sum(run["wall_s"] for run in runs) or 1.0
    load = " ".join(map(str, decisions["load"]))
    table = Table(
        "decision", "cells", "wall s", "share", "CPU s", "waiting s", "CPU ÷ wall", "exit",
        title=f"8 · each decision's conformance run on its own ({decisions['command']}; load at the start {load})",
    )  # fmt: skip
    for run in runs:
        table.add_row(
            run["decision"],
            "—" if run["cells"] is None else str(run["cells"]),
            f"{run['wall_s']:.1f}",
            f"{run['wall_s'] / whole:.0%}",
            f"{run['cpu_s']:.1f}",
            f"{run['waiting_s']:.1f}",
            f"{run['cpu_s'] / run['wall_s']:.2f}" if run["wall_s"] else "—",
            str(run["exit_code"]),
        )
    cpu = sum(run["cpu_s"] for run in runs)
    table.add_row("all", str(sum(run["cells"] or 0 for run in runs)), f"{whole:.1f}", "100%", f"{cpu:.1f}", "", "", "")
    return table


def render(report: dict[str, Any], console: Console) -> None:
    """Print the figures table, the targets and what the settings promise."""
    machine = report["machine"]
    console.print(
        f"toolproof bench ({report['mode']}), toolproof {report['toolproof_version']}, {machine['cores']} cores "
        f"({machine['cpu']}), Python {machine['python']}, SQLite {machine['sqlite']}; load before "
        f"{' '.join(map(str, machine['load_before']))}, after {' '.join(map(str, machine['load_after']))}",
        markup=False,
        soft_wrap=True,
    )
    table = Table("#", "figure", "median", "min", "max", "unit", "n", "load (1/5/15 min)", title="figures")
    for number, label, figure, load in _rows(report["figures"]):
        if figure is None:
            table.add_row(number, escape(label), "—", "—", "—", "", "", load)
            continue
        table.add_row(
            number,
            escape(label),
            _number(figure["median"]),
            _number(figure["min"]),
            _number(figure["max"]),
            figure["unit"],
            str(figure["repetitions"]),
            load,
        )
    console.print(table)
    decisions = report["figures"].get("decisions")
    if decisions is not None:
        console.print(_decision_table(decisions))
    targets = Table("target", "bound", "median (min–max)", "reps meeting it", "verdict", title="must-show targets")
    for entry in report["targets"]:
        if entry["verdict"] == "n/a":
            targets.add_row(
                escape(entry["name"]),
                f"{entry['comparison']} {entry['bound']}",
                "—",
                "",
                escape(f"n/a: {entry['reason']}"),
            )
            continue
        style = "green" if entry["verdict"] == "pass" else "red"
        targets.add_row(
            escape(entry["name"]),
            f"{entry['comparison']} {entry['bound']}",
            f"{_number(entry['median'])} ({_number(entry['min'])}–{_number(entry['max'])})",
            f"{entry['repetitions_meeting_bound']}/{entry['repetitions']}",
            f"[{style}]{entry['verdict']}[/]",
        )
    console.print(targets)
    settings = report["settings"]
    read_back = ", ".join(
        f"{name}: {values['journal_mode']}/{values['synchronous']}" if values else f"{name}: not run"
        for name, values in settings["read_back"].items()
    )
    console.print(f"settings read back from each system's connection: {read_back}", markup=False, soft_wrap=True)
    console.print(settings["promise"], markup=False, soft_wrap=True)
    sigkill = settings["sigkill_check"]
    if sigkill is not None:
        console.print(
            f"SIGKILL check: a writer acknowledged {sigkill['acknowledged']} commits and was killed by signal "
            f"{sigkill['killed_by_signal']}; {sigkill['missing_after_kill']} acknowledged commits missing, "
            f"{sigkill['rows_after_kill']} rows in the file, integrity_check {sigkill['integrity_check']}",
            markup=False,
            soft_wrap=True,
        )
    figures = report["figures"]
    console.print(figures["floor"]["note"], markup=False, soft_wrap=True)
    console.print(figures["dbos"]["note"], markup=False, soft_wrap=True)
    console.print(f"catalog: {figures['catalog']['method']}", markup=False, soft_wrap=True)
    console.print(f"MCP calls: {figures['mcp_calls']['method']}", markup=False, soft_wrap=True)
