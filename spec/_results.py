"""The records a run produces, defined once: scenario rows, crash-matrix cells and stale expectations.

Scenarios build them, the CLI passes them on, and the reports store and render them; ``results.duckdb``
has one table per record, one column per field.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._enums import CrashPoint, IdempotencyClass, SideEffect, Verdict
from ._faults import FaultKind, FaultPoint


class RecoveryMode(StrEnum):
    """How a crash-matrix cell killed its worker, and which store the recovering worker read."""

    SIMULATED = "simulated"
    """``SimulatedCrash`` raised in-process; both worker lives share a SQLite file."""
    SIGKILL_SQLITE = "sigkill-sqlite"
    """A forked worker process killed by SIGKILL over a shared SQLite file."""
    SIGKILL_POSTGRES = "sigkill-postgres"
    """A forked worker process killed by SIGKILL over PostgreSQL, a fresh schema per cell."""


class BatchPosition(StrEnum):
    """Where the crashed call sat in its step's batch, in the order cells are listed."""

    SINGLE = "single"
    """The only call of its step."""
    FIRST = "first"
    """The first of three calls."""
    MIDDLE = "middle"
    """The second of three calls."""
    LAST = "last"
    """The third of three calls."""


class DecisionPath(StrEnum):
    """What step 5 decided for the crashed call, in the order cells are listed."""

    ALLOW = "allow"
    """A trusted call: it runs at once."""
    APPROVAL = "approval"
    """A consequential call with an EXTERNAL_UNTRUSTED argument: held for approval, approved after the hold."""
    CONTROL = "control"
    """A control call: suspended at step 7, resumed with the run's answer after the suspension."""


class RecoveryVia(StrEnum):
    """How the crashed call was picked up again, in the order cells are listed."""

    SWEEP = "sweep"
    """Another worker sweeps after the lease expired, then the step is replayed."""
    REPLAY = "replay"
    """Another worker replays the step after the lease expired, without a sweep."""


class FaultMode(StrEnum):
    """How a fault-matrix cell failed the store, in the order cells are listed."""

    PLAN_SQLITE = "plan-sqlite"
    """The implementation failed its own store as ``InstanceConfig.fault`` asked, over its default store."""
    PLAN_POSTGRES = "plan-postgres"
    """The same, over PostgreSQL (a fresh schema per cell)."""
    PG_TRIGGER = "pg-trigger"
    """The harness's trigger on ``tool_invocations`` raised on the point's write (a real error, rolled back)."""
    PG_TERMINATE = "pg-terminate"
    """The harness's trigger terminated the implementation's own backend at the point's write (a lost connection)."""
    PG_LOCK_TIMEOUT = "pg-lock-timeout"
    """A second session of the harness held the row while the implementation wrote it, under a ``lock_timeout``."""
    SQLITE_FULL_DISK = "sqlite-full-disk"
    """The SQLite store on a size-limited tmpfs in a private mount namespace, filled by the harness at the point."""
    SQLITE_READ_ONLY = "sqlite-read-only"
    """The SQLite store on an ext4 image in a private mount namespace, which the harness turns read-only at the point
    (ext4's ``errors=remount-ro``, triggered): writes through the files already open fail too; the file system is
    mounted again once the faulty instance closed."""


class FaultPath(StrEnum):
    """How the call met the fault, in the order cells are listed."""

    FIRST = "first"
    """A one-call step, on its first submission."""
    BATCH = "batch"
    """The middle call of a sequential batch of three."""
    APPROVED = "approved"
    """A call held for approval: the fault meets it in the answer's life (record and hold: in its submission)."""
    RESUMED = "resumed"
    """A control call: the fault meets it when it is resumed (record and hold: in its submission)."""
    RECOVERED = "recovered"
    """A call a crashed worker left RUNNING: the fault meets it in the sweep that recovers it."""
    BRIDGE = "bridge"
    """The first call of a bridge script."""


class FaultRecovery(StrEnum):
    """Who resolved the call once the store returned, in the order cells are listed."""

    ANOTHER_WORKER = "another-worker"
    """Another instance, past the lease: a sweep, then the step (or script, or answer) again."""
    OWN_SWEEP = "own-sweep"
    """The instance whose write failed, by its own sweep once its own lease expired."""
    OWN_RESUBMISSION = "own-resubmission"
    """The instance whose write failed, by submitting the same step again once its own lease expired."""


SCENARIO_VERDICTS = frozenset(
    {Verdict.PASS, Verdict.FAIL, Verdict.ERROR, Verdict.XFAIL, Verdict.NOT_CLAIMED, Verdict.NOT_COVERED}
)
"""Verdicts a scenario row may carry: what happened when the scenario ran, that it was skipped as unclaimed,
or that it could not judge its rules against this implementation (``not-covered``, the reason as evidence)."""

RULE_LEVEL_VERDICTS = frozenset({Verdict.NOT_CLAIMED, Verdict.NOT_COVERED, Verdict.REVIEW_ONLY})
"""Verdicts a rule-level row (``scenario == ""``) may carry: no scenario judged the rule, so it cannot pass
(``review-only``: no run can, only a reviewer)."""

CRASH_VERDICTS = frozenset({Verdict.PASS, Verdict.FAIL, Verdict.ERROR})
"""Verdicts a crash cell may carry: the recovery scenario judged it, or could not."""


def new_run_id(started: datetime | None = None) -> str:
    """A sortable, unique run id: the start time (UTC, to the second) and six random hex digits."""
    moment = (started or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:6]


class ResultRow(BaseModel):
    """One scenario's verdict on one rule for one implementation, or a rule-level row when no scenario ran."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str = Field(min_length=1)
    """The run this row belongs to."""
    implementation: str = Field(min_length=1)
    """Name of the implementation under test."""
    rule_id: str = Field(min_length=1)
    """Catalog ID of the rule the scenario judges, e.g. ``D1.1``."""
    scenario: str
    """Test name such as ``test_d01_tool_result.py::test_x``; ``""`` for a rule-level row."""
    verdict: Verdict
    """The scenario's verdict; a rule-level row says only ``not-claimed``, ``not-covered`` or ``review-only``."""
    duration_s: float = Field(ge=0.0)
    """Wall-clock seconds the scenario took (setup and call); 0 for a rule-level row."""
    evidence: str = ""
    """Failure text with a reproduction; ``""`` on pass."""

    @model_validator(mode="after")
    def _verdict_fits_level(self) -> ResultRow:
        # Invariant: only a scenario can pass, fail or error; a rule nobody exercised has no judgement.
        allowed = SCENARIO_VERDICTS if self.scenario else RULE_LEVEL_VERDICTS
        if self.verdict not in allowed:
            level = f"scenario={self.scenario!r}" if self.scenario else "a rule-level row (scenario='')"
            choices = ", ".join(sorted(allowed))
            raise ValueError(f"verdict={self.verdict.value!r} is not allowed for {level}: use one of {choices}")
        return self


class CrashCell(BaseModel):
    """One crash scenario's result: a worker killed at ``crash_point`` while running a call of one idempotency class."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str = Field(min_length=1)
    """The run this cell belongs to."""
    implementation: str = Field(min_length=1)
    """Name of the implementation under test."""
    mode: RecoveryMode
    """How the crash was made and which store recovery read."""
    crash_point: CrashPoint
    """Where the worker died."""
    idempotency: IdempotencyClass
    """The crashed call's tool class."""
    position: BatchPosition
    """The call's place in its batch."""
    path: DecisionPath = DecisionPath.ALLOW
    """What step 5 decided for the call: allowed, held for approval, or a control suspension."""
    recovery: RecoveryVia = RecoveryVia.SWEEP
    """How the recovering worker picked the call up: a sweep then a replay, or a replay alone."""
    expected: str
    """The disposition recovery must reach, e.g. ``SUCCEEDED`` or ``UNCERTAIN effect_unknown``."""
    observed: str
    """The disposition recovery reached; ``not reached`` when the scenario stopped before recovery ended."""
    effects: int = Field(ge=0)
    """Effects the world ledger kept for the call."""
    duplicates: int = Field(ge=0)
    """Effects beyond the first, counted for NON_IDEMPOTENT calls."""
    verdict: Verdict
    """``pass``, ``fail`` or ``error``."""
    evidence: str = ""
    """Failure text with a reproduction; ``""`` on pass."""

    @model_validator(mode="after")
    def _consistent(self) -> CrashCell:
        # Invariant: a crash cell is always judged, and a duplicate is an effect beyond the first.
        if self.verdict not in CRASH_VERDICTS:
            choices = ", ".join(sorted(CRASH_VERDICTS))
            raise ValueError(f"verdict={self.verdict.value!r} is not allowed for a crash cell: use one of {choices}")
        if self.duplicates > max(self.effects - 1, 0):
            raise ValueError(
                f"duplicates={self.duplicates!r} exceeds effects={self.effects!r} minus the first:"
                " count only effects beyond the first"
            )
        return self

    @property
    def differs(self) -> bool:
        """Whether recovery reached another disposition than the expected one."""
        return self.observed != self.expected


class FaultCell(BaseModel):
    """One store-fault scenario's result: a write failed at ``point`` while the worker lived."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str = Field(min_length=1)
    """The run this cell belongs to."""
    implementation: str = Field(min_length=1)
    """Name of the implementation under test."""
    mode: FaultMode
    """How the store was failed."""
    point: FaultPoint
    """Which write failed."""
    kind: FaultKind
    """How it failed."""
    idempotency: IdempotencyClass
    """The call's tool class."""
    path: FaultPath
    """How the call met the fault."""
    store_returns: bool
    """Whether the store served the instance's later writes."""
    expected: str
    """What the submitter, then recovery, must reach, e.g. ``StoreFault; SUCCEEDED``."""
    observed: str
    """What they reached; ``not reached`` where the scenario stopped."""
    effects: int = Field(ge=0)
    """Effects the world kept for the call, after recovery."""
    verdict: Verdict
    """``pass``, ``fail`` or ``error``."""
    evidence: str = ""
    """Failure text with a reproduction; ``""`` on pass."""
    side_effect: SideEffect = SideEffect.EXTERNAL_WRITE
    """The side effect of the step's tools (READ_ONLY IDEMPOTENT tools make a batch parallel)."""
    recovery: FaultRecovery = FaultRecovery.ANOTHER_WORKER
    """Who resolved the call once the store returned."""

    @model_validator(mode="after")
    def _judged(self) -> FaultCell:
        if self.verdict not in CRASH_VERDICTS:
            choices = ", ".join(sorted(CRASH_VERDICTS))
            raise ValueError(f"verdict={self.verdict.value!r} is not allowed for a fault cell: use one of {choices}")
        return self


class StaleExpectation(BaseModel):
    """One entry of an expectations file that no longer describes the implementation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str = Field(min_length=1)
    """The run that found the entry stale."""
    implementation: str = Field(min_length=1)
    """The implementation the file applies to."""
    file: str = Field(min_length=1)
    """The expectations file, as given to ``--expectations``."""
    entry: int = Field(ge=1)
    """Position of the ``[[expect]]`` entry in its file, from 1."""
    target: str = Field(min_length=1)
    """What the entry names: ``rule D4.1`` or ``scenario test_x.py::test_y``."""
    problem: str = Field(min_length=1)
    """Why it is stale: an unexpected pass, or nothing it matched ran."""

    @property
    def label(self) -> str:
        """``FILE entry N (TARGET)``: names the entry so a reader can find it."""
        return f"{self.file} entry {self.entry} ({self.target})"
