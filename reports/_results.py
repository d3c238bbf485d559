"""What a run was asked to do (``RunInfo``), and the rule verdicts its rows (``spec.ResultRow``) add up to."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolproof.spec import Catalog, HarnessError, ResultRow, Rule, Verdict, load_catalog

# Worst first. A rule's verdict is the first entry any of its scenario rows reaches.
PRECEDENCE: tuple[Verdict, ...] = (
    Verdict.FAIL,
    Verdict.ERROR,
    Verdict.XFAIL,
    Verdict.NOT_COVERED,
    Verdict.REVIEW_ONLY,
    Verdict.PASS,
    Verdict.NOT_CLAIMED,
)


class RunInfo(BaseModel):
    """What a run was asked to do and by which toolproof."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str = Field(min_length=1)
    """Unique ID of the run."""
    implementations: list[str] = Field(min_length=1)
    """Names of the implementations under test, in the order the user gave them."""
    selected_rules: list[str]
    """Rule IDs this run was asked for."""
    started_at: str
    """When the run started, ISO 8601 (a time without an offset is read as UTC)."""
    toolproof_version: str
    """Version of toolproof that produced the run."""
    profiles: dict[str, list[str]] = Field(default_factory=dict)
    """Implementation name to the profiles it claims."""
    exit_code: int | None = None
    """The exit status ``toolproof run`` returned for the run (0 conforms, 1 a failure or a stale expectation);
    None for a run recorded before toolproof stored it."""
    implementation_refs: dict[str, str] = Field(default_factory=dict)
    """Implementation name to the ``--impl`` it was loaded from, for the commands that rerun one failure."""
    catalog_sha256: str | None = None
    """SHA-256 of the rule catalog (``rules.toml``) the run judged against; None for a run recorded before toolproof
    stored it."""
    shard: str | None = None
    """``K/N`` for shard K of a run split N ways with ``--shard``; None for a whole run."""
    whole_selection: list[str] = Field(default_factory=list)
    """For a shard: the rules the whole run selects (its ``selected_rules`` are the ones its own cells judge)."""
    wall_s: float | None = None
    """How long the run took, start to its files, in seconds (the next run's first line says it); None for a merged
    run, or one recorded before toolproof stored it."""
    rerun_options: list[str] = Field(default_factory=list)
    """The options of the run that a command rerunning one of its cells needs too (``--database-url URL``, its
    password left out), as words of the command line."""

    @field_validator("implementations", "selected_rules")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        dupes = sorted({v for v in value if value.count(v) > 1})
        if dupes:
            raise ValueError(f"names must be unique, these repeat: {dupes}")
        return value

    @field_validator("started_at")
    @classmethod
    def _iso_8601(cls, value: str) -> str:
        try:
            datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"started_at={value!r} is not ISO 8601, e.g. '2025-01-31T12:00:00+00:00'") from None
        return value

    @property
    def started(self) -> datetime:
        """``started_at`` as an aware datetime, for ordering runs."""
        moment = datetime.fromisoformat(self.started_at)
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def rule_verdicts(rows: Sequence[ResultRow], rule_ids: Sequence[str]) -> dict[str, Verdict]:
    """The verdict of each rule in ``rule_ids`` (same order) for ONE implementation's rows.

    A rule's verdict is the worst of its scenario rows, by ``fail > error > xfail > not-covered > pass >
    not-claimed`` (a scenario that could not judge the rule keeps it from passing).
    A rule without scenario rows is ``not-claimed`` or ``review-only`` when a rule-level row says so, else
    ``not-covered``: never ``pass``. Rows of rules not in ``rule_ids`` are ignored.

    Raises:
        HarnessError: the rows belong to more than one implementation.
    """
    names = sorted({row.implementation for row in rows})
    if len(names) > 1:
        raise HarnessError(f"rule_verdicts takes one implementation's rows, got implementations={names!r}")
    scenario_verdicts: dict[str, set[Verdict]] = {}
    unclaimed: set[str] = set()
    review: set[str] = set()
    for row in rows:
        if row.scenario:
            scenario_verdicts.setdefault(row.rule_id, set()).add(row.verdict)
        elif row.verdict is Verdict.NOT_CLAIMED:
            unclaimed.add(row.rule_id)
        elif row.verdict is Verdict.REVIEW_ONLY:
            review.add(row.rule_id)
    verdicts: dict[str, Verdict] = {}
    for rule_id in rule_ids:
        seen = scenario_verdicts.get(rule_id)
        if seen:
            verdicts[rule_id] = next(v for v in PRECEDENCE if v in seen)
        elif rule_id in unclaimed:
            verdicts[rule_id] = Verdict.NOT_CLAIMED
        elif rule_id in review:
            verdicts[rule_id] = Verdict.REVIEW_ONLY
        else:
            verdicts[rule_id] = Verdict.NOT_COVERED
    return verdicts


def selected_rules(info: RunInfo, catalog: Catalog | None = None) -> tuple[Rule, ...]:
    """The run's selected rules in catalog order.

    Raises:
        ConfigurationError: a selected rule ID is not in the catalog.
    """
    catalog = catalog or load_catalog()
    wanted = {catalog.rule(rule_id).id for rule_id in info.selected_rules}
    return tuple(rule for rule in catalog.rules if rule.id in wanted)


def scenario_modules(rows: Iterable[ResultRow], rule_id: str) -> list[str]:
    """The modules whose scenarios judged ``rule_id`` in ``rows``, sorted, as the checkout names them
    (``scenarios/test_d09_freshness.py``): their docstrings say how the rule is judged (cells, sweeps, bounds), which
    the rule's interpretation leaves out."""
    return sorted(
        {f"scenarios/{row.scenario.partition('::')[0]}" for row in rows if row.rule_id == rule_id and row.scenario}
    )


def rows_of(rows: Iterable[ResultRow], implementation: str) -> list[ResultRow]:
    """The rows of one implementation."""
    return [row for row in rows if row.implementation == implementation]


def verdict_table(info: RunInfo, rows: Sequence[ResultRow], rules: Sequence[Rule]) -> dict[str, dict[str, Verdict]]:
    """Implementation name to (rule ID to verdict), both in the run's order.

    As ``rule_verdicts``, and a rule no scenario covers is also ``not-claimed`` when ``info.profiles``
    shows the implementation does not claim the rule's profile, else ``review-only`` when the catalog marks it so
    (``Rule.review_only``: no run can judge it).
    """
    table: dict[str, dict[str, Verdict]] = {}
    for name in info.implementations:
        verdicts = rule_verdicts(rows_of(rows, name), [rule.id for rule in rules])
        claimed = info.profiles.get(name)
        for rule in rules:
            if verdicts[rule.id] is not Verdict.NOT_COVERED:
                continue
            if claimed is not None and rule.profile not in claimed:
                verdicts[rule.id] = Verdict.NOT_CLAIMED
            elif rule.review_only:
                verdicts[rule.id] = Verdict.REVIEW_ONLY
        table[name] = verdicts
    return table


def complete_rows(info: RunInfo, rows: Sequence[ResultRow]) -> list[ResultRow]:
    """The rows to store: every scenario row, plus one rule-level row per implementation and selected rule
    that no scenario row covers, in a canonical order.

    The rule-level row carries the rule's verdict from ``verdict_table``: ``not-claimed`` when a given
    rule-level row or ``info.profiles`` says so, ``review-only`` (the catalog's reason as evidence) for a rule no
    run can judge, else ``not-covered``. Given rule-level rows
    for rules that do have scenario rows carry no verdict and are dropped.

    Raises:
        ConfigurationError: a selected rule ID is not in the catalog.
        HarnessError: a row names another run, an implementation or a rule the run did not select.
    """
    rules = selected_rules(info)
    by_id = {rule.id: rule for rule in rules}
    for row in rows:
        problem = _foreign(info, row, by_id)
        if problem:
            raise HarnessError(f"row does not belong to run_id={info.run_id!r}: {problem}")
    table = verdict_table(info, rows, rules)
    completed: list[ResultRow] = []
    for name in info.implementations:
        own = rows_of(rows, name)
        for rule in rules:
            scenario_rows = [row for row in own if row.rule_id == rule.id and row.scenario]
            if scenario_rows:
                completed.extend(scenario_rows)
                continue
            verdict = table[name][rule.id]
            given = next((row for row in own if row.rule_id == rule.id and row.verdict == verdict), None)
            reason = f"review-only: {rule.review_only}" if verdict is Verdict.REVIEW_ONLY and rule.review_only else ""
            completed.append(given or _rule_level(info.run_id, name, rule.id, verdict, reason))
    return sorted(completed, key=row_order(info))


def row_order(info: RunInfo) -> Callable[[ResultRow], tuple[int, int, str, str, float, str]]:
    """Sort key for rows: implementation as the run lists them, rule in catalog order, then scenario name."""
    implementations = {name: index for index, name in enumerate(info.implementations)}
    rules = {rule.id: index for index, rule in enumerate(load_catalog().rules)}

    def key(row: ResultRow) -> tuple[int, int, str, str, float, str]:
        # Unknown names sort last rather than fail: a stored run may predate the current catalog.
        return (
            implementations.get(row.implementation, len(implementations)),
            rules.get(row.rule_id, len(rules)),
            row.scenario,
            row.verdict.value,
            row.duration_s,
            row.evidence,
        )

    return key


def _foreign(info: RunInfo, row: ResultRow, by_id: dict[str, Rule]) -> str:
    if row.run_id != info.run_id:
        return f"run_id={row.run_id!r}"
    if row.implementation not in info.implementations:
        return f"implementation={row.implementation!r} is not one of {info.implementations!r}"
    if row.rule_id not in by_id:
        return f"rule_id={row.rule_id!r} was not selected (scenario={row.scenario!r})"
    return ""


def _rule_level(run_id: str, implementation: str, rule_id: str, verdict: Verdict, evidence: str = "") -> ResultRow:
    return ResultRow(
        run_id=run_id,
        implementation=implementation,
        rule_id=rule_id,
        scenario="",
        verdict=verdict,
        duration_s=0.0,
        evidence=evidence,
    )
