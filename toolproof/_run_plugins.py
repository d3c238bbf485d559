"""The pytest plugins a run adds to the scenarios': quiet after an interrupt, short tracebacks, and a harness
failure stopping the run."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from toolproof.scenarios import scenario_names
from toolproof.spec import HarnessError

from ._interrupt import quiet_debris, was_interrupted


class QuietAfterInterrupt:
    """After Ctrl-C, pytest's unconfigure collects garbage and warns of what failed to be collected (an object the
    interrupt left half-built): debris, quieted before pytest's own unconfigure runs.

    Ctrl-C also stops the run at the next cell boundary even when the cell it landed in swallowed its
    KeyboardInterrupt (code that catches BaseException, a task group turning it into a cancellation): the handler
    has recorded it, and the run ends as interrupted, writing nothing, rather than running on to the end."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_unconfigure(self) -> None:
        if was_interrupted():
            quiet_debris()

    def pytest_runtest_logstart(self) -> None:
        if was_interrupted():
            raise KeyboardInterrupt

    def pytest_runtest_logfinish(self) -> None:
        if was_interrupted():
            raise KeyboardInterrupt


class ShortTracebacks:
    """An error's traceback without each frame's arguments, so evidence never shows `harness = <... object at 0x...>`
    (pytest's terminal plugin, which has the --tb option, is not loaded)."""

    def pytest_configure(self, config: pytest.Config) -> None:
        config.option.tbstyle = "short"


class HarnessFault:
    """Stops the run at the first HarnessError a cell raises: the harness failed there, so no verdict is given (the
    run is exit 3, naming it), rather than the rules of that cell reading error as if the implementation had."""

    def __init__(self) -> None:
        self.fault: str | None = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        raised = _harness_error(call.excinfo.value) if call.excinfo is not None else None
        if raised is not None and self.fault is None:
            implementation = getattr(getattr(item, "callspec", None), "params", {}).get("implementation")
            against = f" against {implementation.name}" if implementation is not None else ""
            said = " ".join(str(raised).split())  # One line: a database's own message may run to several.
            self.fault = f"in {scenario_names(item)[1]}{against}: {said}"
            item.session.shouldstop = self.fault
        return report


def _harness_error(exc: BaseException) -> HarnessError | None:
    if isinstance(exc, HarnessError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _harness_error(inner)
            if found is not None:
                return found
    return None
