"""``summary.json``: the rule verdicts of a run, for machines."""

from __future__ import annotations

import json
from collections.abc import Sequence

from toolproof.spec import ResultRow, StaleExpectation

from ._results import RunInfo, selected_rules, verdict_table
from ._verdict import run_verdict


def render_summary(info: RunInfo, rows: Sequence[ResultRow], stale: Sequence[StaleExpectation] = ()) -> str:
    """The text of ``summary.json``: every selected rule's verdict, rules in catalog order.

    One implementation gives ``{"implementation", "run_id", "rules"}``; several give
    ``{"run_id", "implementations": {name: {"rules": ...}}}``. Then ``"conforms"`` (true, false, or null when
    nothing was judged), ``"exit_code"`` (null for a run recorded before toolproof stored it) and ``"verdict"``,
    the report's verdict line. A run with stale expectations adds
    ``"stale_expectations": [{"implementation", "file", "entry", "target", "problem"}, ...]``, in the order given.

    Raises:
        ConfigurationError: a selected rule ID is not in the catalog.
    """
    rules = selected_rules(info)
    table = verdict_table(info, rows, rules)
    as_text = {name: {rule_id: verdict.value for rule_id, verdict in rules.items()} for name, rules in table.items()}
    document: dict[str, object]
    if len(info.implementations) == 1:
        (name,) = info.implementations
        document = {"implementation": name, "run_id": info.run_id, "rules": as_text[name]}
    else:
        document = {"run_id": info.run_id, "implementations": {name: {"rules": as_text[name]} for name in as_text}}
    verdict = run_verdict(info, table, rules, stale)
    document["conforms"] = verdict.conforms
    document["exit_code"] = info.exit_code
    document["verdict"] = verdict.line
    if stale:
        # Only when there are some: a run without expectations files keeps its summary as it was.
        document["stale_expectations"] = [item.model_dump(exclude={"run_id"}) for item in stale]
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
