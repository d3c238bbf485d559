"""Run red-team pipelines one at a time and record exit code and failing rules.

Usage: python -m redteam.run [module:factory ...]   (default: every entry of MANIFEST not yet in results)
Results accumulate in /tmp/redteam/results.jsonl (one JSON object per run).
Round 2: ``REDTEAM_ROUND=2 python -m redteam.run`` runs redteam/manifest_r2.py into /tmp/redteam2/.
Round 3: ``REDTEAM_ROUND=3 python -m redteam.run`` runs redteam/manifest_r3.py into /tmp/redteam3/ (then copy
/tmp/redteam3/results.jsonl to redteam/results-r3.jsonl).
Round 4: ``REDTEAM_ROUND=4 python -m redteam.run`` runs redteam/manifest_r4.py into /tmp/redteam4/ (then copy
/tmp/redteam4/results.jsonl to redteam/results-r4.jsonl).
Round 5: ``REDTEAM_ROUND=5 python -m redteam.run`` runs redteam/manifest_r5.py into /tmp/redteam5/ (then copy
/tmp/redteam5/results.jsonl to redteam/results-r5.jsonl).
Round 6: ``REDTEAM_ROUND=6 python -m redteam.run`` runs redteam/manifest_r6.py into /tmp/redteam6/ (then copy
/tmp/redteam6/results.jsonl to redteam/results-r6.jsonl).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from . import manifest, manifest_r2, manifest_r3, manifest_r4, manifest_r5, manifest_r6
from .manifest import PG_DECISIONS

ROUND = os.environ.get("REDTEAM_ROUND", "1")
"""Which round's manifest to run: 1 (redteam/manifest.py), or 2-6 (redteam/manifest_r2.py ... manifest_r6.py)."""
MANIFEST = {
    "2": manifest_r2.MANIFEST,
    "3": manifest_r3.MANIFEST,
    "4": manifest_r4.MANIFEST,
    "5": manifest_r5.MANIFEST,
    "6": manifest_r6.MANIFEST,
}.get(ROUND, manifest.MANIFEST)
OUT = Path(
    {"2": "/tmp/redteam2", "3": "/tmp/redteam3", "4": "/tmp/redteam4", "5": "/tmp/redteam5", "6": "/tmp/redteam6"}.get(
        ROUND, "/tmp/redteam"
    )
)
RESULTS = OUT / "results.jsonl"
DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/test"
# Fewer lease races than the default 200 for pipelines whose mistake is not in the claim (shared 2-core machine);
# the claim pipeline is run with the default (see RESULTS.md).
ENV = {**os.environ, "TOOLPROOF_RACES": os.environ.get("TOOLPROOF_RACES", "40")}


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
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
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


def order(ref: str) -> tuple[int, str]:
    """Slow decisions (recovery, PostgreSQL) last."""
    decisions = [d.split(".")[0] for d in MANIFEST[ref].split(",")]  # "D4.14" is a rule of D4
    return (2 if "D4" in decisions else 1 if any(d in PG_DECISIONS for d in decisions) else 0, ref)


def main(argv: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    wanted = argv or sorted((ref for ref in MANIFEST if ref not in done()), key=order)
    for ref in wanted:
        result = run(ref, MANIFEST[ref])
        with RESULTS.open("a") as f:
            f.write(json.dumps(result) + "\n")
        print(f"{ref}: exit {result['exit']} failing {result['failing']} ({result['seconds']}s)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])


def collect(ref: str) -> None:
    """Record a run whose runner was stopped but whose report was written (exit read from the verdicts)."""
    name = ref.replace(":", ".").replace("redteam.", "")
    verdicts = json.loads((OUT / name / "summary.json").read_text())["rules"]
    failing = sorted((r for r, v in verdicts.items() if v in ("fail", "error")), key=_key)
    result = {
        "impl": ref,
        "rules": MANIFEST[ref],
        "exit": 1 if failing else 0,
        "failing": failing,
        "verdicts": verdicts,
        "seconds": None,
        "stderr": ["collected from summary.json"],
    }
    with RESULTS.open("a") as f:
        f.write(json.dumps(result) + "\n")
