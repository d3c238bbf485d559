"""The step table: one function per ``spec.STEPS`` member, checked when it is built (decision 3).

The functions live in four modules, one per band: ``_logic`` (1-5, nothing touches the world),
``_persist`` (6-8, one committed transaction each), ``_execute`` (9-12, the tool runs at 10),
``_finish`` (13-14). ``Pipeline.drive`` runs the table in ``spec.STEPS`` order; a witness plants
its defect by replacing an entry (``STEP_TABLE | {Step.X: its_function}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from toolproof.spec import STEPS, FaultPoint, Step

from ._execute import excerpt, execute, normalize, prepare
from ._finish import complete, publish
from ._host import StepFunction
from ._logic import decide, guard, label, resolve, validate
from ._persist import claim, hold, record


def step_table(entries: Mapping[Step, StepFunction], *, owner: str) -> MappingProxyType[Step, StepFunction]:
    """``entries`` as a read-only table in ``spec.STEPS`` order; ImportError naming ``owner`` when a step is
    missing or an entry is not a step (it is raised while the module defining the table is imported)."""
    missing = [step.value for step in STEPS if step not in entries]
    extra = [repr(key) for key in entries if not isinstance(key, Step) or key not in STEPS]
    if missing or extra:
        raise ImportError(
            f"the step table of {owner} must map every spec.STEPS member to one function: "
            f"missing={missing!r}, extra={extra!r}; add or remove those entries"
        )
    return MappingProxyType({step: entries[step] for step in STEPS})


STEP_TABLE: MappingProxyType[Step, StepFunction] = step_table(
    {
        Step.RESOLVE: resolve,
        Step.VALIDATE: validate,
        Step.LABEL: label,
        Step.GUARD: guard,
        Step.DECIDE: decide,
        Step.RECORD: record,
        Step.HOLD: hold,
        Step.CLAIM: claim,
        Step.PREPARE: prepare,
        Step.EXECUTE: execute,
        Step.NORMALIZE: normalize,
        Step.EXCERPT: excerpt,
        Step.COMPLETE: complete,
        Step.PUBLISH: publish,
    },
    owner="the reference",
)
"""The reference's fourteen steps."""

FINISHING = frozenset({Step.EXCERPT, Step.COMPLETE, Step.PUBLISH})
"""The steps a decided call still runs (excerpt is a no-op unless it succeeded)."""

PERSIST_FAULT_POINTS = {
    Step.RECORD: FaultPoint.RECORD,
    Step.HOLD: FaultPoint.HOLD,
    Step.CLAIM: FaultPoint.CLAIM,
    Step.COMPLETE: FaultPoint.COMPLETE,
}
"""The persistence points: the writes a step makes belong to its point of a fault plan (``spec.FaultPlan``)."""
