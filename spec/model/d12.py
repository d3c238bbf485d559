"""Decision 12: output over the limit is head, one marker and tail, byte-exact and within the limit; never summarized.

The head and tail lengths are the implementation's choice: the model states what any excerpt must be, as a test.
"""

from __future__ import annotations

from toolproof.spec import EXCERPT_MARKER_SOURCE, TrustLabel

from ._expect import Problems

Piece = tuple[str, str, str]
"""A delivered envelope as observed: (label, source, text)."""
MARKER_QUOTE = 8
"""A marker that quotes this many characters of the output in a row carries output text (D12.3)."""


def total_bytes(parts: tuple[tuple[str, TrustLabel], ...]) -> int:
    """D12.1: the limit is on the UTF-8 bytes of all parts together."""
    return sum(len(text.encode()) for text, _ in parts)


def whole(parts: tuple[tuple[str, TrustLabel], ...], source: str) -> list[Piece]:
    """D12.5: output at or under the limit is delivered whole, each part in its envelope."""
    return [(label.value, source, text) for text, label in parts]


def _walk(pieces: list[Piece], parts: list[tuple[str, TrustLabel]], where: str) -> Problems:
    """Each piece is a run of one part from where the last ended, under that part's label (D12.1, D12.4)."""
    at, offset = 0, 0
    for label, _, text in pieces:
        if not text:
            continue
        while at < len(parts) and offset == len(parts[at][0]):
            at, offset = at + 1, 0
        if at == len(parts) or not parts[at][0].startswith(text, offset):
            return [("D12.1", f"the {where} piece {text[:30]!r} is not the output's next bytes")]
        if label != parts[at][1].value:
            return [
                ("D12.4", f"the {where} piece {text[:30]!r} came labelled {label}, its part is {parts[at][1].value}")
            ]
        offset += len(text)
    return []


def excerpt_problems(
    parts: tuple[tuple[str, TrustLabel], ...], source: str, limit: int, delivered: list[Piece]
) -> Problems:
    """What is wrong with ``delivered`` as the excerpt of ``parts`` under ``limit`` (empty when nothing)."""
    markers = [i for i, (_, src, _) in enumerate(delivered) if src == EXCERPT_MARKER_SOURCE]
    if len(markers) != 1:
        return [("D12.1", f"model allowed exactly one marker envelope, implementation gave {len(markers)}")]
    at = markers[0]
    head, tail = delivered[:at], delivered[at + 1 :]
    problems: Problems = []
    if any(src != source for _, src, _ in head + tail):
        problems.append(("D1.5", f"a delivered piece names a source other than {source!r}"))
    head_text, tail_text = "".join(t for *_, t in head), "".join(t for *_, t in tail)
    text = "".join(t for t, _ in parts)
    if not head_text or not tail_text:
        problems.append(
            (
                "D12.1",
                f"model allowed a non-empty head and tail, implementation gave {len(head_text)} and {len(tail_text)} characters",
            )
        )
    size = len(head_text.encode()) + len(tail_text.encode())
    if size > limit:
        problems.append(("D12.1", f"head and tail carry {size} bytes, over the {limit}-byte limit"))
    problems += _walk(head, list(parts), "head")
    reversed_parts = [(t[::-1], label) for t, label in reversed(parts)]
    reversed_tail = [(label, src, t[::-1]) for label, src, t in reversed(tail)]
    problems += [(rule, msg.replace("next", "last")) for rule, msg in _walk(reversed_tail, reversed_parts, "tail")]
    marker = delivered[at][2]
    if any(marker[i : i + MARKER_QUOTE] in text for i in range(max(0, len(marker) - MARKER_QUOTE + 1))):
        problems.append(("D12.3", f"the marker {marker[:60]!r} quotes the output"))
    return problems
