"""Write redteam/RESULTS.md's table from /tmp/redteam/results.jsonl and the factories' docstrings.

``python -m redteam.report > /tmp/redteam/table.md``; the gap notes in RESULTS.md are written by hand.
"""

from __future__ import annotations

import importlib
import inspect
import json
from typing import cast

from .run import MANIFEST, OUT

RESULTS = OUT / "results.jsonl"


def clause_and_mistake(ref: str) -> tuple[str, str]:
    module, _, name = ref.partition(":")
    doc = " ".join((inspect.getdoc(getattr(importlib.import_module(module), name)) or "").split())
    head, sep, rest = doc.partition(": ")
    return (head, rest) if sep else ("", doc)


def main() -> None:
    latest: dict[str, dict[str, object]] = {}
    for line in RESULTS.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            latest[r["impl"]] = r
    rows = []
    caught = total = 0
    for ref in MANIFEST:
        r = latest.get(ref)
        clause, mistake = clause_and_mistake(ref)
        short = ref.removeprefix("redteam.")
        if r is None:
            rows.append(f"| `{short}` | {clause} | {mistake} | {MANIFEST[ref]} | not run | |")
            continue
        total += 1
        exit_code = r["exit"]
        caught += exit_code == 1
        failing = ", ".join(cast(list[str], r["failing"])) or ("**GAP**" if exit_code == 0 else "")
        rows.append(f"| `{short}` | {clause} | {mistake} | {r['rules']} | {exit_code} | {failing} |")
    print(f"Catch rate: **{caught}/{total}** (exit 1 = caught; exit 0 = gap).\n")
    per: dict[str, list[int]] = {}
    for ref in MANIFEST:
        r = latest.get(ref)
        if r is not None:
            module = ref.split(":")[0].rsplit(".", 1)[1]  # d01 (round 1), r2_d01 ... r4_d01 (rounds 2-4)
            d = "D" + str(int(module.rsplit("d", 1)[1]))
            per.setdefault(d, [0, 0])
            per[d][0] += r["exit"] == 1
            per[d][1] += 1
    print("| decision | " + " | ".join(per) + " |")
    print("|---|" + "---|" * len(per))
    print("| caught/total | " + " | ".join(f"{c}/{t}" for c, t in per.values()) + " |\n")
    print("| pipeline | ADR clause | mistake | rules run | exit | failing rules |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
