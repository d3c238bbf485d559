"""Two stored runs side by side: every (implementation, rule) whose verdict differs between them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from toolproof.spec import ResultRow, Verdict, load_catalog

from ._results import RunInfo, selected_rules, verdict_table

ABSENT = "—"
"""How the table shows a rule or implementation a run does not hold."""


@dataclass(frozen=True)
class VerdictChange:
    """One rule of one implementation whose verdict differs between the two runs."""

    rule_id: str
    """The rule."""
    before_implementation: str | None
    """The implementation's name in the earlier run; None when that run does not test it."""
    after_implementation: str | None
    """The implementation's name in the later run; None when that run does not test it."""
    before: Verdict | None
    """The verdict in the earlier run; None when the rule was not selected there."""
    after: Verdict | None
    """The verdict in the later run; None when the rule was not selected there."""

    @property
    def implementation(self) -> str:
        """The implementation's name, or ``before → after`` when two single-implementation runs name it apart."""
        names = [name for name in (self.before_implementation, self.after_implementation) if name is not None]
        return " → ".join(dict.fromkeys(names))


@dataclass(frozen=True)
class RunDiff:
    """What changed from one run to another."""

    before: RunInfo
    """The earlier run."""
    after: RunInfo
    """The later run."""
    changes: tuple[VerdictChange, ...]
    """Every differing verdict, rules in catalog order, then implementations in the later run's order."""

    @property
    def changed(self) -> bool:
        """Whether any verdict differs or any rule is in one run only."""
        return bool(self.changes)

    def as_table(self, before_label: str, after_label: str) -> str:
        """The changes as a Markdown table ``rule | implementation | before | after``, headed by the two runs."""
        lines = [_heading("before", before_label, self.before), _heading("after", after_label, self.after)]
        if not self.changes:
            return "\n".join([*lines, "No verdict changed."]) + "\n"
        lines += ["", "| rule | implementation | before | after |", "| --- | --- | --- | --- |"]
        for change in self.changes:
            before = change.before.value if change.before else ABSENT
            after = change.after.value if change.after else ABSENT
            lines.append(f"| {change.rule_id} | {change.implementation} | {before} | {after} |")
        changed = sum(1 for c in self.changes if c.before and c.after)
        only_before = sum(1 for c in self.changes if c.after is None)
        only_after = sum(1 for c in self.changes if c.before is None)
        lines += [
            "",
            f"{changed} changed, {only_before} only before, {only_after} only after ({ABSENT}: not in that run).",
        ]
        return "\n".join(lines) + "\n"

    def as_json(self, before_label: str, after_label: str) -> str:
        """The changes as JSON: both runs, then ``changes`` as ``{rule, implementation, before, after}`` (null: not in
        that run), with ``implementation_before`` where two single-implementation runs name it apart."""
        changes: list[dict[str, object]] = []
        for change in self.changes:
            entry: dict[str, object] = {
                "rule": change.rule_id,
                "implementation": change.after_implementation or change.before_implementation,
                "before": change.before.value if change.before else None,
                "after": change.after.value if change.after else None,
            }
            if change.before_implementation and change.after_implementation not in (None, change.before_implementation):
                entry["implementation_before"] = change.before_implementation
            changes.append(entry)
        document = {
            "before": _run(before_label, self.before),
            "after": _run(after_label, self.after),
            "changed": self.changed,
            "changes": changes,
        }
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def diff_runs(before: tuple[RunInfo, Sequence[ResultRow]], after: tuple[RunInfo, Sequence[ResultRow]]) -> RunDiff:
    """Compare two runs rule by rule, as ``load_run`` returns them.

    Implementations are paired by name; two runs of one implementation each are paired whatever their
    names (comparing a pipeline with a witness, or a renamed one). A rule selected in one run only, or
    an implementation tested in one only, is a change with the other side absent.

    Raises:
        ConfigurationError: a run selected a rule the catalog no longer has.
    """
    (before_info, before_rows), (after_info, after_rows) = before, after
    before_table = verdict_table(before_info, before_rows, selected_rules(before_info))
    after_table = verdict_table(after_info, after_rows, selected_rules(after_info))
    pairs: list[tuple[str | None, str | None]]
    if len(before_info.implementations) == 1 and len(after_info.implementations) == 1:
        pairs = [(before_info.implementations[0], after_info.implementations[0])]
    else:
        pairs = [(name if name in before_table else None, name) for name in after_info.implementations]
        pairs += [(name, None) for name in before_info.implementations if name not in after_table]
    order = {rule.id: index for index, rule in enumerate(load_catalog().rules)}
    found: list[tuple[int, int, VerdictChange]] = []
    for pair_index, (before_name, after_name) in enumerate(pairs):
        old = before_table[before_name] if before_name is not None else {}
        new = after_table[after_name] if after_name is not None else {}
        for rule_id in dict.fromkeys([*old, *new]):
            if old.get(rule_id) != new.get(rule_id):
                change = VerdictChange(rule_id, before_name, after_name, old.get(rule_id), new.get(rule_id))
                found.append((order[rule_id], pair_index, change))
    found.sort(key=lambda item: (item[0], item[1]))
    return RunDiff(before=before_info, after=after_info, changes=tuple(change for _, _, change in found))


def _heading(side: str, label: str, info: RunInfo) -> str:
    return f"{side + ':':<7} {label} run {info.run_id} ({', '.join(info.implementations)})"


def _run(label: str, info: RunInfo) -> dict[str, object]:
    return {"folder": label, "run_id": info.run_id, "implementations": list(info.implementations)}
