"""Head-and-tail excerpts of large tool output, streamed in bounded memory (decision 12).

Large output is excerpted, never summarized: the model sees a byte-exact head, one marker
and a byte-exact tail, while the whole output streams to a sink (the artifact). An excerpt
never splits a trust envelope: every delivered piece keeps its part's label and source, and
no two parts ever share an envelope.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from toolproof.spec import EXCERPT_MARKER_SOURCE as MARKER_SOURCE
from toolproof.spec import ConfigurationError, Envelope, TrustLabel, excerpt_marker_text

Part = tuple[TrustLabel, str, Iterable[str]]
"""One enveloped piece of tool output: ``(label, source, chunks of its text)``."""


@dataclass(frozen=True, slots=True)
class Excerpt:
    """What the model is shown of one tool output."""

    envelopes: list[Envelope]
    """Delivered content: every part whole, or head pieces, one marker, tail pieces."""
    excerpted: bool
    """Whether the output was over the limit (and so the marker is present)."""
    total_bytes: int
    """UTF-8 bytes of the whole output."""
    omitted_bytes: int
    """UTF-8 bytes of the whole output that no envelope delivers."""


def marker_text(omitted_bytes: int, total_bytes: int) -> str:
    """The marker's text: the only text an excerpt adds to the output (spec ``excerpt_marker_text``)."""
    return excerpt_marker_text(omitted_bytes, total_bytes)


def chunked(text: str, size: int = 1 << 16) -> Iterator[str]:
    """``text`` in pieces of at most ``size`` characters (not bytes); nothing for empty text."""
    if size < 1:
        raise ConfigurationError(f"chunk size must be at least 1 character, got size={size!r}; pass a positive size")
    # A generator expression rather than a generator function, so a bad size fails here, not at first use.
    return (text[start : start + size] for start in range(0, len(text), size))


class _PartKey:
    """Identity of one part; compared with ``is`` so equal labels and sources never merge."""

    __slots__ = ("label", "source")

    def __init__(self, label: TrustLabel, source: str) -> None:
        self.label = label
        self.source = source


@dataclass(slots=True)
class _Segment:
    """Contiguous encoded text of one part; a bytearray so the window can drop its front cheaply."""

    part: _PartKey
    data: bytearray = field(default_factory=bytearray)

    def envelope(self) -> Envelope:
        return Envelope(trust=self.part.label, source=self.part.source, text=self.data.decode("utf-8"))


def _is_continuation(byte: int) -> bool:
    # UTF-8 continuation bytes are 0b10xxxxxx; every other byte starts a character.
    return byte & 0xC0 == 0x80


def _boundary_at_or_before(data: bytearray | bytes, offset: int) -> int:
    """The last character boundary of ``data`` at or before ``offset``."""
    while 0 < offset < len(data) and _is_continuation(data[offset]):
        offset -= 1
    return offset


def _boundary_at_or_after(data: bytearray, offset: int) -> int:
    """The first character boundary of ``data`` at or after ``offset``."""
    while offset < len(data) and _is_continuation(data[offset]):
        offset += 1
    return offset


def _append(segments: list[_Segment] | deque[_Segment], part: _PartKey, data: bytes) -> None:
    # Invariant: consecutive segments belong to different parts, so one segment is one envelope.
    if not segments or segments[-1].part is not part:
        segments.append(_Segment(part))
    segments[-1].data += data


def _trim(window: deque[_Segment], buffered: int, keep: int) -> int:
    """Drop text from the front of ``window`` while more than ``keep`` bytes remain; return the new size."""
    # Invariant: the window keeps at least ``keep`` bytes (or everything) and starts on a character boundary.
    while buffered > keep:
        first = window[0]
        excess = buffered - keep
        if len(first.data) <= excess:
            window.popleft()
            buffered -= len(first.data)
            continue
        cut = _boundary_at_or_before(first.data, excess)
        del first.data[:cut]
        return buffered - cut
    return buffered


def excerpt_parts(parts: Iterable[Part], limit: int, sink: Callable[[bytes], object]) -> Excerpt:
    """Excerpt ``parts`` to at most ``limit`` bytes of delivered text, streaming the whole output to ``sink``.

    Output within ``limit`` UTF-8 bytes is delivered whole, one envelope per part (empty parts
    included). Longer output is delivered as the longest prefix fitting ``limit // 2`` bytes,
    one marker envelope, and the longest suffix fitting the rest of ``limit``; neither ever cuts
    a character, and each is split at part boundaries into envelopes that keep the part's label
    and source (empty pieces are not delivered). Memory is O(limit + largest chunk).

    Args:
        parts: ``(label, source, chunks)`` per part, in output order; each part's chunks are
            consumed before the next part is requested.
        limit: Most UTF-8 bytes of output text to deliver (the marker is extra); at least 2.
        sink: Called with the UTF-8 bytes of every non-empty chunk, in order: the whole output; its
            return value is ignored, so a file's ``write`` can be passed directly.

    Raises:
        ConfigurationError: ``limit`` is below 2 (a ``ValueError``).
    """
    if limit < 2:
        raise ConfigurationError(
            f"excerpt limit must be at least 2 bytes (one for the head, one for the tail), got limit={limit!r}; "
            "raise the budget's max_output_bytes"
        )
    head_budget = limit // 2
    tail_budget = limit - head_budget
    head: list[_Segment] = []
    head_bytes = 0
    head_open = True
    # The rolling window keeps the last ``limit`` bytes: the whole output while it fits, else enough for the tail.
    window: deque[_Segment] = deque()
    buffered = 0
    total = 0
    for label, source, chunks in parts:
        part = _PartKey(label, source)
        if total <= limit:
            # Registered up front so an empty part still gets its envelope when the output is delivered whole.
            window.append(_Segment(part))
        for chunk in chunks:
            data = chunk.encode("utf-8")
            if not data:
                continue
            sink(data)
            total += len(data)
            if head_open:
                taken = _boundary_at_or_before(data, min(head_budget - head_bytes, len(data)))
                if taken:
                    _append(head, part, data[:taken])
                    head_bytes += taken
                # The head is a prefix: once one character does not fit, nothing after it may join.
                head_open = taken == len(data)
            _append(window, part, data)
            buffered = _trim(window, buffered + len(data), limit)

    if total <= limit:
        return Excerpt([segment.envelope() for segment in window], excerpted=False, total_bytes=total, omitted_bytes=0)

    tail: list[Envelope] = []
    tail_bytes = 0
    skip = buffered - tail_budget  # >= 0: the window holds at least ``limit`` bytes here.
    for segment in window:
        if skip >= len(segment.data):
            skip -= len(segment.data)
            continue
        start = _boundary_at_or_after(segment.data, skip)
        skip = 0
        if start < len(segment.data):
            del segment.data[:start]
            tail.append(segment.envelope())
            tail_bytes += len(segment.data)
    omitted = total - head_bytes - tail_bytes
    marker = Envelope(trust=TrustLabel.SYSTEM, source=MARKER_SOURCE, text=marker_text(omitted, total))
    envelopes = [segment.envelope() for segment in head] + [marker] + tail
    return Excerpt(envelopes, excerpted=True, total_bytes=total, omitted_bytes=omitted)
