"""The verdict a report opens with: conforms or not, per implementation and claimed profile, the exit code, and
what the run did not judge."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from toolproof.spec import Rule, StaleExpectation, Verdict

from ._results import RunInfo

FAILING = frozenset({Verdict.FAIL, Verdict.ERROR})
"""Verdicts that fail a run."""

_UNSELECTED = ": no rule selected"
# How many rule ids a verdict line names before it says "and N more".
_SHOWN = 5


NOTHING_JUDGED = 5
"""The exit status of a run that judged no rule, as pytest's when it collects no test."""
_JUDGED = frozenset({Verdict.PASS, Verdict.FAIL, Verdict.ERROR, Verdict.XFAIL})


def run_exit_code(table: Mapping[str, Mapping[str, Verdict]], stale: Sequence[StaleExpectation] = ()) -> int:
    """The exit status of ``toolproof run``: 1 when a rule fails or errors or an expectation is stale; else 5
    (``NOTHING_JUDGED``) when no rule was judged (each selected one not claimed, not covered or review-only, or none
    selected: an empty shard); else 0."""
    failed = any(verdict in FAILING for verdicts in table.values() for verdict in verdicts.values())
    if failed or stale:
        return 1
    judged = any(verdict in _JUDGED for verdicts in table.values() for verdict in verdicts.values())
    return 0 if judged else NOTHING_JUDGED


@dataclass(frozen=True)
class ImplementationVerdict:
    """One implementation's verdict over the selected rules of the profiles it claims."""

    implementation: str
    """Its name."""
    conforms: bool | None
    """True: every judged rule of its claimed profiles passed; False: one failed, errored or failed as expected;
    None: no rule of a claimed profile was judged."""
    profiles: tuple[str, ...]
    """One phrase per claimed profile, e.g. ``core: 1 of 6 rules fail (D13.4)``."""
    not_claimed: tuple[str, ...]
    """Selected rules of profiles it does not claim, as ``D7.1 (mcp)``."""
    not_covered: tuple[str, ...]
    """Selected rules of claimed profiles that no scenario judges."""
    review_only: tuple[str, ...] = ()
    """Selected rules of claimed profiles that no run can judge, only a reviewer (``Rule.review_only``)."""

    @property
    def word(self) -> str:
        """``conforms``, ``does not conform`` or ``not judged``."""
        return {True: "conforms", False: "does not conform", None: "not judged"}[self.conforms]


@dataclass(frozen=True)
class RunVerdict:
    """What a report says before any table."""

    implementations: tuple[ImplementationVerdict, ...]
    """In the run's order."""
    exit_code: int | None
    """As stored with the run; None for a run recorded before toolproof stored it."""
    stale: int
    """How many expectations the run found stale."""

    @property
    def conforms(self) -> bool | None:
        """False when any implementation does not conform; True when all do; None when nothing was judged."""
        seen = [item.conforms for item in self.implementations]
        if False in seen:
            return False
        return True if True in seen else None

    @property
    def line(self) -> str:
        """The one line, in plain text."""
        several = len(self.implementations) > 1
        parts = []
        for item in self.implementations:
            parts.append(f"{item.implementation} {item.word} — {'; '.join(item.profiles)}")
        text = "; ".join(parts) + "."
        if self.exit_code is None:
            text += " Exit code not recorded."
        else:
            text += f" Exit code {self.exit_code}"
            if self.stale:
                text += f" ({self.stale} stale expectation{'' if self.stale == 1 else 's'})"
            text += "."
        for label, field in (("Not claimed", "not_claimed"), ("Not covered", "not_covered")):
            named = [
                (f"{item.implementation} " if several else "") + _ids(getattr(item, field))
                for item in self.implementations
                if getattr(item, field)
            ]
            text += f" {label}: {'; '.join(named) if named else 'none'}."
        # Named only when there are some, so a run without such rules reads as it always did.
        review = [
            (f"{item.implementation} " if several else "") + _ids(item.review_only)
            for item in self.implementations
            if item.review_only
        ]
        if review:
            text += f" Review-only (a reviewer judges them, never a run): {'; '.join(review)}."
        return text


def run_verdict(
    info: RunInfo,
    table: Mapping[str, Mapping[str, Verdict]],
    rules: Sequence[Rule],
    stale: Sequence[StaleExpectation] = (),
) -> RunVerdict:
    """The run's verdict from its verdict table (``verdict_table``) and its selected rules in catalog order."""
    return RunVerdict(
        implementations=tuple(_implementation(info, name, table[name], rules) for name in info.implementations),
        exit_code=info.exit_code,
        stale=len(stale),
    )


def _implementation(
    info: RunInfo, name: str, verdicts: Mapping[str, Verdict], rules: Sequence[Rule]
) -> ImplementationVerdict:
    stated = info.profiles.get(name)
    # A run recorded without profiles: every profile with a selected rule stands as claimed.
    claimed = sorted(stated) if stated is not None else sorted({rule.profile.value for rule in rules})
    phrases: list[str] = []
    judged: list[bool] = []
    not_covered: list[str] = []
    review_only: list[str] = []
    for profile in claimed:
        everything = [rule.id for rule in rules if rule.profile.value == profile]
        # No run judges a review-only rule: it is named apart and counts neither way.
        reviewed = [rule_id for rule_id in everything if verdicts[rule_id] is Verdict.REVIEW_ONLY]
        review_only += reviewed
        everything = [rule_id for rule_id in everything if rule_id not in reviewed]
        # A rule of a claimed profile can still read not-claimed (its scenarios need a profile not claimed).
        own = [rule_id for rule_id in everything if verdicts[rule_id] is not Verdict.NOT_CLAIMED]
        bad = [rule_id for rule_id in own if verdicts[rule_id] in FAILING]
        known = [rule_id for rule_id in own if verdicts[rule_id] is Verdict.XFAIL]
        passed = [rule_id for rule_id in own if verdicts[rule_id] is Verdict.PASS]
        uncovered = [rule_id for rule_id in own if verdicts[rule_id] is Verdict.NOT_COVERED]
        not_covered += uncovered
        of = f"of {_rules(len(own))}"
        if bad:
            phrases.append(f"{profile}: {len(bad)} {of} fail ({_ids(bad)})")
            judged.append(False)
        elif known:
            phrases.append(f"{profile}: {len(known)} {of} fail as expected ({_ids(known)})")
            judged.append(False)
        elif passed:
            phrases.append(f"{profile}: {len(passed)} {of} pass")
            judged.append(True)
        elif own:
            phrases.append(f"{profile}: not judged ({_rules(len(own))} not covered)")
        elif everything:
            phrases.append(f"{profile}: not judged ({_rules(len(everything))} not claimed)")
        elif reviewed:
            phrases.append(f"{profile}: not judged ({_rules(len(reviewed))} review-only)")
        else:
            phrases.append(f"{profile}{_UNSELECTED}")
    if not claimed:
        phrases.append("claims no profile")
    not_claimed = [
        f"{rule.id} ({rule.profile.value})"
        for rule in rules
        if rule.profile.value not in claimed or verdicts[rule.id] is Verdict.NOT_CLAIMED
    ]
    conforms = False if False in judged else (True if judged else None)
    return ImplementationVerdict(
        implementation=name,
        conforms=conforms,
        profiles=tuple(_merge_unselected(phrases)),
        not_claimed=tuple(not_claimed),
        not_covered=tuple(not_covered),
        review_only=tuple(review_only),
    )


def _merge_unselected(phrases: list[str]) -> list[str]:
    # "bridge: no rule selected; mcp: no rule selected" reads better as one phrase, after the judged ones.
    empty = [phrase.removesuffix(_UNSELECTED) for phrase in phrases if phrase.endswith(_UNSELECTED)]
    kept = [phrase for phrase in phrases if not phrase.endswith(_UNSELECTED)]
    return [*kept, f"{', '.join(empty)}{_UNSELECTED}"] if empty else kept


def _rules(count: int) -> str:
    return f"{count} rule{'' if count == 1 else 's'}"


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:_SHOWN])
    return shown + (f" and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else "")
