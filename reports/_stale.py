"""Stale expectations in a run: which belong to it, and the order the reports list them in."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from toolproof.spec import HarnessError, StaleExpectation

from ._results import RunInfo


def check_stale(info: RunInfo, stale: Sequence[StaleExpectation]) -> None:
    """Refuse stale entries that do not belong to the run.

    Raises:
        HarnessError: an entry names another run or an implementation the run did not test.
    """
    for item in stale:
        if item.run_id != info.run_id:
            raise HarnessError(f"stale expectation {item.label} does not belong to run_id={info.run_id!r}")
        if item.implementation not in info.implementations:
            raise HarnessError(
                f"stale expectation {item.label} names implementation={item.implementation!r},"
                f" not one of {info.implementations!r}"
            )


def stale_order(info: RunInfo) -> Callable[[StaleExpectation], tuple[int, str, int, str]]:
    """Sort key: implementation as the run lists them, then file and entry."""
    implementations = {name: index for index, name in enumerate(info.implementations)}

    def key(item: StaleExpectation) -> tuple[int, str, int, str]:
        return (implementations.get(item.implementation, len(implementations)), item.file, item.entry, item.problem)

    return key
