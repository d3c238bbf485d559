"""Stale expectations: entries of an expectations file the run contradicted, which fail the run."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from toolproof.spec import HarnessError

from ._results import RunInfo


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
