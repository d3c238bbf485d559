"""The effect trace: every event of one example, numbered by one counter shared by all observers.

The watermark, the transport's requests, workspace writes, refused operations and the
harness's own cancellation all take their number from the same counter, so "before" means
the same thing for all of them. Observers run in several threads; the counter is locked.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class EventKind(StrEnum):
    """What an event of the trace is."""

    ATTEMPT = "attempt"
    """An execution attempt starts."""
    MARK = "mark"
    """The tool called mark_effect_sent()."""
    HTTP = "http"
    """A request reached the recorded transport."""
    WORKSPACE = "workspace"
    """A write inside the workspace (opened for writing, created, renamed, removed)."""
    NETWORK = "network"
    """Bytes that reached the target other than an HTTP request: a raw TCP stream or a UDP datagram."""
    OUTSIDE = "outside"
    """An operation outside the workspace and the target: refused by the gate, or kept from escaping."""
    PROCESS = "process"
    """A process started (observed under confinement; its own effects are judged like the tool's)."""
    CANCEL = "cancel"
    """The harness requested cancellation (the deadline passed)."""
    END = "end"
    """The tool returned, raised, was cancelled or was abandoned."""


@dataclass
class TraceEvent:
    """One numbered event."""

    seq: int
    """Position in the example, shared by every observer."""
    kind: EventKind
    """What happened."""
    text: str
    """How the report shows it."""
    attempt: int
    """The execution attempt it belongs to (1-based)."""
    effect: bool = False
    """Whether it can leave a mark on the world (an unsafe request, a workspace write)."""


class TraceSink(Protocol):
    """Where the context records its watermark: a trace, or a confined example's channel."""

    def add(self, kind: EventKind, text: str, *, effect: bool = False) -> object:
        """Record an event."""
        ...


class Trace:
    """The events of one example, in sequence order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next = 1
        self._events: dict[int, TraceEvent] = {}
        self.attempt = 0
        """The attempt in progress; events are attributed to it."""

    def reserve(self) -> int:
        """Take the next number now, for an event whose details arrive later (see ``fill``)."""
        with self._lock:
            seq = self._next
            self._next += 1
            return seq

    def add(self, kind: EventKind, text: str, *, effect: bool = False) -> TraceEvent:
        """Record an event with the next number."""
        return self.fill(self.reserve(), kind, text, effect=effect)

    def fill(self, seq: int, kind: EventKind, text: str, *, effect: bool = False) -> TraceEvent:
        """Record the event of a reserved number."""
        event = TraceEvent(seq, kind, text, self.attempt, effect)
        with self._lock:
            self._events[seq] = event
        return event

    def events(self, attempt: int | None = None) -> list[TraceEvent]:
        """Recorded events in order, of one attempt or of all."""
        with self._lock:
            chosen = [e for _, e in sorted(self._events.items())]
        return [e for e in chosen if attempt is None or e.attempt == attempt]

    def number(self, event: TraceEvent) -> int:
        """The number ``event`` is shown with in ``lines()``."""
        shown = [e.seq for e in self.events() if e.kind is not EventKind.ATTEMPT]
        return shown.index(event.seq) + 1

    def lines(self) -> list[str]:
        """The trace as the report prints it: attempt headers, then events numbered 1, 2, ... in order."""
        shown: list[str] = []
        number = 0
        for event in self.events():
            if event.kind is EventKind.ATTEMPT:
                shown.append(event.text)
            else:
                number += 1
                shown.append(f"  {number}. {event.text}")
        return shown
