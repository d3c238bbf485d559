"""A clock the harness moves by hand."""

from __future__ import annotations


class FakeClock:
    """Starts at a fixed instant and moves only when told to.

    Args:
        start: Seconds since the epoch at which it starts.
    """

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._start = start
        self._now = start

    @property
    def elapsed(self) -> float:
        """Seconds moved since the start."""
        return self._now - self._start

    def now(self) -> float:
        """The current fake time."""
        return self._now

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``."""
        if seconds < 0:
            raise ValueError(f"seconds={seconds!r}: a clock does not go back")
        self._now += seconds
