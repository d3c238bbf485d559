"""Decision 12: output over the limit is head, one marker and tail, byte-exact and within the limit; never summarized.

The head and tail lengths are the implementation's choice: the model states what any excerpt must be, as a test.
"""

from __future__ import annotations

from toolproof.spec import EXCERPT_MARKER_SOURCE, TrustLabel, excerpt_marker_text

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


def _walk(
    pieces: list[Piece], parts: list[tuple[str, TrustLabel]], where: str, label_rules: tuple[str, ...]
) -> Problems:
    """Each piece is a run of one part from where the last ended, under that part's label (D12.1, D12.4; the part's
    label is D1.3's, so a piece under another label breaks ``label_rules`` too). A piece that runs on into the next
    part joins two envelopes (D12.4); a piece that is not output text at all is a summary (D12.3)."""
    at, offset = 0, 0
    output = "".join(t for t, _ in parts)
    for label, _, text in pieces:
        if not text:
            continue
        while at < len(parts) and offset == len(parts[at][0]):
            at, offset = at + 1, 0
        if at == len(parts) or not parts[at][0].startswith(text, offset):
            if output.startswith(text, sum(len(t) for t, _ in parts[:at]) + offset):
                # The output's next characters, run on past the end of their part: two envelopes made one.
                return [("D12.4", f"the {where} piece {text[:30]!r} runs across a part's end in one envelope")]
            shown = f"the {where} piece {text[:30]!r} is not the output's next bytes"
            return [("D12.1", shown)] + ([] if text in output else [("D12.3", shown)])
        if label != parts[at][1].value:
            shown = f"the {where} piece {text[:30]!r} came labelled {label}, its part is {parts[at][1].value}"
            return [(rule, shown) for rule in ("D12.4", *label_rules)]
        offset += len(text)
    return []


def excerpt_problems(
    parts: tuple[tuple[str, TrustLabel], ...],
    source: str,
    limit: int,
    delivered: list[Piece],
    label_rules: tuple[str, ...] = ("D1.3",),
) -> Problems:
    """What is wrong with ``delivered`` as the excerpt of ``parts`` under ``limit`` (empty when nothing)."""
    markers = [i for i, (_, src, _) in enumerate(delivered) if src == EXCERPT_MARKER_SOURCE]
    if len(markers) != 1:
        return [("D12.1", f"model allowed exactly one marker envelope, implementation gave {len(markers)}")]
    at = markers[0]
    head, tail = delivered[:at], delivered[at + 1 :]
    problems: Problems = []
    if any(src != source for _, src, _ in head + tail):
        # Text under another source is not the output's: a summary (D12.3), and the envelope misnames it (D1.5).
        shown = f"a delivered piece names a source other than {source!r}"
        problems += [("D1.5", shown), ("D12.3", shown)]
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
    problems += _walk(head, list(parts), "head", label_rules)
    reversed_parts = [(t[::-1], label) for t, label in reversed(parts)]
    reversed_tail = [(label, src, t[::-1]) for label, src, t in reversed(tail)]
    walked = _walk(reversed_tail, reversed_parts, "tail", label_rules)
    problems += [(rule, msg.replace("next", "last")) for rule, msg in walked]
    marker_label, _, marker = delivered[at]
    if any(marker[i : i + MARKER_QUOTE] in text for i in range(max(0, len(marker) - MARKER_QUOTE + 1))):
        problems.append(("D12.3", f"the marker {marker[:60]!r} quotes the output"))
    # D12.3's interpretation: the marker's whole text is fixed, the bytes no envelope delivers and the whole's.
    total = total_bytes(parts)
    want = excerpt_marker_text(total - size, total)
    if marker != want:
        problems.append(("D12.3", f"model allowed the marker {want!r}, implementation gave {marker[:120]!r}"))
    if marker_label != TrustLabel.SYSTEM.value:
        problems.append(("D12.3", f"model allowed the marker labelled SYSTEM, implementation gave {marker_label}"))
    return problems
