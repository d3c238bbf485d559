"""Run red-team pipelines one at a time and record exit code and failing rules.

Usage: python -m redteam.run [module:factory ...]   (default: every entry of MANIFEST not yet in results)
Results accumulate in /tmp/redteam/results.jsonl (one JSON object per run).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from .manifest import MANIFEST, PG_DECISIONS

OUT = Path("/tmp/redteam")
RESULTS = OUT / "results.jsonl"
DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/test"


def done() -> set[str]:
    if not RESULTS.exists():
        return set()
    return {json.loads(line)["impl"] for line in RESULTS.read_text().splitlines() if line.strip()}


def run(ref: str, rules: str) -> dict[str, object]:
    name = ref.replace(":", ".").replace("redteam.", "")
    out = OUT / name
    cmd = ["nice", ".venv/bin/toolproof", "run", "--impl", ref, "--rules", rules, "-q", "--out", str(out)]
    if any(rules.split(",")[i].split(".")[0] in PG_DECISIONS for i in range(len(rules.split(",")))):
        cmd += ["--database-url", DATABASE_URL]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    failing: list[str] = []
    verdicts: dict[str, str] = {}
    summary = out / "summary.json"
    if summary.exists():
        verdicts = json.loads(summary.read_text()).get("rules", {})
        failing = sorted((r for r, v in verdicts.items() if v in ("fail", "error")), key=_key)
    return {
        "impl": ref,
        "rules": rules,
        "exit": proc.returncode,
        "failing": failing,
        "verdicts": verdicts,
        "seconds": round(time.monotonic() - start, 1),
        "stderr": proc.stderr.strip().splitlines()[-5:],
    }


def _key(rule: str) -> tuple[int, int]:
    d, _, n = rule[1:].partition(".")
    return int(d), int(n or 0)


def main(argv: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    wanted = argv or [ref for ref in MANIFEST if ref not in done()]
    for ref in wanted:
        result = run(ref, MANIFEST[ref])
        with RESULTS.open("a") as f:
            f.write(json.dumps(result) + "\n")
        print(f"{ref}: exit {result['exit']} failing {result['failing']} ({result['seconds']}s)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
