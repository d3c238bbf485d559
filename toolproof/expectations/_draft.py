"""Drafting an expectations file from a run: one entry per failure, reasons left for the implementer."""

from __future__ import annotations

import json
from collections.abc import Sequence

from toolproof.spec import ResultRow, Verdict

DRAFT_KEY = "draft"
"""The top-level key a drafted file carries until its reasons are written; a file with it is refused."""
_DRAFT_NOTE = "write every reason, then delete this line"
_FAILING = frozenset({Verdict.FAIL, Verdict.ERROR})
_JUDGED = frozenset({Verdict.PASS, Verdict.FAIL, Verdict.ERROR})


def draft_expectations(
    implementation: str, rows: Sequence[ResultRow], run_id: str = "", named: str | None = None
) -> str:
    """The text of an expectations file declaring every failure ``rows`` show for ``implementation``.

    A rule all of whose scenario rows fail with one verdict gets a rule entry; any other failing rule gets an
    entry per failing cell (``module.py::test_name[param]``). Each entry's ``reason`` is empty and the file
    carries ``draft = "…"``, so it is refused when loaded until the implementer writes the reasons and deletes
    that line. Rows are read as the scenarios gave them, before any expectations file turned them ``xfail``.
    ``named`` is what the file's ``implementation`` key says, when not ``implementation`` itself (a driver's name
    without its ``@address``).
    """
    own = [row for row in rows if row.implementation == implementation and row.verdict in _JUDGED and row.scenario]
    failing_rules = list(dict.fromkeys(row.rule_id for row in own if row.verdict in _FAILING))
    entries: list[str] = []
    for rule_id in failing_rules:
        judged = [row for row in own if row.rule_id == rule_id]
        failing = [row for row in judged if row.verdict in _FAILING]
        verdicts = {row.verdict for row in judged}
        if len(verdicts) == 1:
            scenarios = len({row.scenario for row in judged})
            entries.append(_entry("rule", rule_id, failing[0], f"every scenario of {rule_id} ({scenarios})"))
            continue
        for row in {(row.scenario, row.verdict): row for row in failing}.values():
            entries.append(_entry("scenario", row.scenario, row, f"{rule_id}, one cell"))
    source = f" from run {run_id}" if run_id else ""
    lines = [
        f"# Drafted by `toolproof run --write-expectations`{source}: one entry per failure the run saw.",
        "# Write each reason (one honest line: why the failure is expected), narrow or drop entries, then delete",
        f"# the {DRAFT_KEY} line: a file that still has it is refused when loaded.",
    ]
    if entries:
        lines.append(f"{DRAFT_KEY} = {_string(_DRAFT_NOTE)}")
    else:
        lines.append("# The run saw no failure: there is nothing to expect.")
    lines.append(f"implementation = {_string(named or implementation)}")
    return "\n".join(lines) + "\n" + "".join(entries)


def _entry(key: str, value: str, row: ResultRow, what: str) -> str:
    first = next((line.strip() for line in row.evidence.splitlines() if line.strip()), "(no evidence)")
    # json.dumps escapes every control character, so the evidence cannot end the comment or the file.
    shown = json.dumps(first[:160], ensure_ascii=False)[1:-1]
    return (
        f"\n# {what}: {row.verdict.value}. {shown}\n"
        f'[[expect]]\n{key} = {_string(value)}\nverdict = {_string(row.verdict.value)}\nreason = ""\n'
    )


def _string(text: str) -> str:
    # A JSON string is a TOML basic string: the same quotes and escapes.
    return json.dumps(text, ensure_ascii=False)
