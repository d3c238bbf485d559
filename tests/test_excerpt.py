"""Decision 12's excerpter: byte-exact head and tail, one marker, envelopes never split, bounded memory."""

from __future__ import annotations

import hashlib
import itertools
import tracemalloc
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.reference._excerpt import MARKER_SOURCE, Excerpt, chunked, excerpt_parts, marker_text
from toolproof.spec import ConfigurationError, Envelope, TrustLabel

SOURCES = ("web.fetch", "fs.read", "shell.run")
ALPHABET = st.one_of(st.sampled_from(["a", "b", " ", "\n", "é", "€", "𝄞"]), st.characters(codec="utf-8"))

# A part as the tests see it: label, source, and its text already split into chunks (empty chunks included).
ChunkedPart = tuple[TrustLabel, str, list[str]]


@st.composite
def chunkings(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` split at random character offsets, sometimes into empty chunks."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=6)))
    bounds = [0, *cuts, len(text)]
    return [text[start:end] for start, end in itertools.pairwise(bounds)]


@st.composite
def part_texts(draw: st.DrawFn) -> list[tuple[TrustLabel, str, str]]:
    labels = st.sampled_from(list(TrustLabel))
    return draw(st.lists(st.tuples(labels, st.sampled_from(SOURCES), st.text(ALPHABET, max_size=30)), max_size=6))


@st.composite
def outputs(draw: st.DrawFn) -> list[ChunkedPart]:
    return [(label, source, draw(chunkings(text))) for label, source, text in draw(part_texts())]


def text_of(part: ChunkedPart) -> str:
    return "".join(part[2])


def size(text: str) -> int:
    return len(text.encode("utf-8"))


def run(parts: list[ChunkedPart], limit: int) -> tuple[Excerpt, bytes]:
    received: list[bytes] = []
    # Fresh iterators, the way a streaming tool hands its output over.
    result = excerpt_parts(((label, source, iter(chunks)) for label, source, chunks in parts), limit, received.append)
    return result, b"".join(received)


def split_at_marker(result: Excerpt) -> tuple[list[Envelope], Envelope, list[Envelope]]:
    markers = [i for i, envelope in enumerate(result.envelopes) if envelope.source == MARKER_SOURCE]
    assert len(markers) == 1, result.envelopes
    (at,) = markers
    return result.envelopes[:at], result.envelopes[at], result.envelopes[at + 1 :]


def expected_pieces(parts: list[ChunkedPart], start: int, end: int) -> list[tuple[TrustLabel, str, str]]:
    """The non-empty pieces of the characters ``start:end`` of the whole output, one per part touched."""
    pieces = []
    offset = 0
    for part in parts:
        text = text_of(part)
        piece = text[max(start - offset, 0) : max(end - offset, 0)]
        if piece:
            pieces.append((part[0], part[1], piece))
        offset += len(text)
    return pieces


def triples(envelopes: list[Envelope]) -> list[tuple[TrustLabel, str, str]]:
    return [(envelope.trust, envelope.source, envelope.text) for envelope in envelopes]


@st.composite
def over_the_limit(draw: st.DrawFn) -> tuple[list[ChunkedPart], int]:
    parts = draw(outputs().filter(lambda parts: size("".join(map(text_of, parts))) >= 3))
    return parts, draw(st.integers(2, size("".join(map(text_of, parts))) - 1))


@given(parts=outputs(), slack=st.integers(0, 8))
def test_output_within_the_limit_is_delivered_whole_one_envelope_per_part(parts: list[ChunkedPart], slack: int) -> None:
    whole = "".join(map(text_of, parts))
    result, sunk = run(parts, max(2, size(whole) + slack))
    assert result == Excerpt(
        [Envelope(trust=label, source=source, text="".join(chunks)) for label, source, chunks in parts],
        excerpted=False,
        total_bytes=size(whole),
        omitted_bytes=0,
    )
    assert sunk == whole.encode("utf-8")


@settings(max_examples=300)
@given(case=over_the_limit())
def test_output_over_the_limit_is_a_maximal_head_one_marker_and_a_maximal_tail(
    case: tuple[list[ChunkedPart], int],
) -> None:
    parts, limit = case
    whole = "".join(map(text_of, parts))
    head_budget, tail_budget = limit // 2, limit - limit // 2
    result, sunk = run(parts, limit)
    head, marker, tail = split_at_marker(result)
    head_text = "".join(envelope.text for envelope in head)
    tail_text = "".join(envelope.text for envelope in tail)
    tail_start = len(whole) - len(tail_text)

    assert whole.startswith(head_text)
    assert size(head_text) <= head_budget < size(whole[: len(head_text) + 1])
    assert whole.endswith(tail_text)
    assert size(tail_text) <= tail_budget < size(whole[tail_start - 1 :])
    assert len(head_text) < tail_start

    assert triples(head) == expected_pieces(parts, 0, len(head_text))
    assert triples(tail) == expected_pieces(parts, tail_start, len(whole))
    texts = {(label, source): [text_of(p) for p in parts if p[:2] == (label, source)] for label, source, _ in parts}
    assert all(any(text.startswith(e.text) for text in texts[e.trust, e.source]) for e in head)
    assert all(any(text.endswith(e.text) for text in texts[e.trust, e.source]) for e in tail)

    omitted = size(whole) - size(head_text) - size(tail_text)
    assert marker == Envelope(trust=TrustLabel.SYSTEM, source=MARKER_SOURCE, text=marker_text(omitted, size(whole)))
    assert (result.excerpted, result.total_bytes, result.omitted_bytes) == (True, size(whole), omitted)
    assert omitted > 0
    assert sunk == whole.encode("utf-8")


@given(texts=part_texts(), data=st.data(), limit=st.integers(2, 120))
def test_chunking_does_not_change_the_excerpt(
    texts: list[tuple[TrustLabel, str, str]], data: st.DataObject, limit: int
) -> None:
    first = [(label, source, data.draw(chunkings(text))) for label, source, text in texts]
    second = [(label, source, data.draw(chunkings(text))) for label, source, text in texts]
    assert run(first, limit) == run(second, limit)


@given(parts=outputs(), limit=st.integers(2, 120))
def test_the_marker_is_the_only_text_not_from_the_output(parts: list[ChunkedPart], limit: int) -> None:
    whole = "".join(map(text_of, parts))
    result, _ = run(parts, limit)
    added = [envelope for envelope in result.envelopes if envelope.source == MARKER_SOURCE]
    delivered = [envelope.text for envelope in result.envelopes if envelope.source != MARKER_SOURCE]
    if not result.excerpted:
        assert added == []
        assert "".join(delivered) == whole
        return
    assert [envelope.text for envelope in added] == [marker_text(result.omitted_bytes, result.total_bytes)]
    at = result.envelopes.index(added[0])
    head = "".join(envelope.text for envelope in result.envelopes[:at])
    tail = "".join(envelope.text for envelope in result.envelopes[at + 1 :])
    assert whole.startswith(head)
    assert whole.endswith(tail)


def test_a_character_that_does_not_fit_its_budget_is_omitted_whole() -> None:
    # "a€b𝄞" is 9 bytes; limit 6 gives head and tail 3 bytes each: "a€" needs 4, "𝄞" needs 4.
    untrusted = (TrustLabel.EXTERNAL_UNTRUSTED, "web.fetch")
    result, _ = run([(*untrusted, ["a€", "b𝄞"])], limit=6)
    assert triples(result.envelopes) == [(*untrusted, "a"), (TrustLabel.SYSTEM, MARKER_SOURCE, marker_text(8, 9))]
    # limit 2 gives 1 byte each: "€" cannot start the head, "b" ends the tail.
    result, _ = run([(*untrusted, ["€a"]), (TrustLabel.INTERNAL, "fs.read", ["b"])], limit=2)
    assert triples(result.envelopes) == [
        (TrustLabel.SYSTEM, MARKER_SOURCE, marker_text(4, 5)),
        (TrustLabel.INTERNAL, "fs.read", "b"),
    ]


def test_empty_parts_keep_their_envelopes_when_the_output_fits_exactly() -> None:
    parts: list[ChunkedPart] = [
        (TrustLabel.INTERNAL, "fs.read", []),
        (TrustLabel.EXTERNAL_UNTRUSTED, "web.fetch", ["", "é€"]),
        (TrustLabel.INTERNAL, "fs.read", [""]),
    ]
    result, sunk = run(parts, limit=5)
    assert triples(result.envelopes) == [
        (TrustLabel.INTERNAL, "fs.read", ""),
        (TrustLabel.EXTERNAL_UNTRUSTED, "web.fetch", "é€"),
        (TrustLabel.INTERNAL, "fs.read", ""),
    ]
    assert (result.excerpted, result.total_bytes, sunk) == (False, 5, "é€".encode())


def test_neighbouring_parts_with_the_same_label_are_never_merged() -> None:
    same = (TrustLabel.USER, "shell.run")
    result, _ = run([(*same, ["abc"]), (*same, ["def"]), (*same, ["ghi"])], limit=8)
    assert triples(result.envelopes) == [
        (*same, "abc"),
        (*same, "d"),
        (TrustLabel.SYSTEM, MARKER_SOURCE, marker_text(1, 9)),
        (*same, "f"),
        (*same, "ghi"),
    ]


def test_a_limit_below_two_bytes_is_refused() -> None:
    expected = (
        r"^excerpt limit must be at least 2 bytes \(one for the head, one for the tail\), got limit=1; "
        r"raise the budget's max_output_bytes$"
    )
    with pytest.raises(ConfigurationError, match=expected):
        excerpt_parts([], 1, lambda data: None)
    assert issubclass(ConfigurationError, ValueError)


def test_the_marker_names_what_was_omitted_and_where_it_is() -> None:
    assert marker_text(123, 456) == "[… 123 of 456 bytes omitted; the whole output is in the artifact …]"


def test_chunked_splits_by_characters_and_refuses_an_empty_size() -> None:
    assert list(chunked("é€𝄞ab", 2)) == ["é€", "𝄞a", "b"]
    assert list(chunked("")) == []
    with pytest.raises(ConfigurationError, match=r"^chunk size must be at least 1 character, got size=0; "):
        chunked("abc", 0)


def generated_output(megabytes: int) -> Iterator[tuple[TrustLabel, str, Iterator[str]]]:
    """``megabytes`` MiB of text in four parts, made chunk by chunk; the same every time."""
    labels = [TrustLabel.INTERNAL, TrustLabel.EXTERNAL_UNTRUSTED, TrustLabel.USER, TrustLabel.EXTERNAL_UNTRUSTED]

    def chunks(part: int, count: int) -> Iterator[str]:
        for i in range(count):
            yield f"part {part} chunk {i}: é€𝄞 ".ljust(16 * 1024, "x")

    per_part = megabytes * 64 // len(labels)  # 16 KiB chunks, 64 per MiB.
    for part, label in enumerate(labels):
        yield label, f"tool.part{part}", chunks(part, per_part)


def test_twenty_megabytes_are_excerpted_in_bounded_memory() -> None:
    digest, limit = hashlib.sha256(), 64 * 1024
    tracemalloc.start()
    try:
        result = excerpt_parts(generated_output(20), limit, digest.update)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    expected = hashlib.sha256()
    for _, _, chunks in generated_output(20):
        for chunk in chunks:
            expected.update(chunk.encode("utf-8"))
    assert digest.hexdigest() == expected.hexdigest()
    assert result.excerpted
    assert result.total_bytes > 20 * 1024 * 1024
    assert sum(size(envelope.text) for envelope in result.envelopes if envelope.source != MARKER_SOURCE) <= limit
    assert [envelope.source for envelope in result.envelopes] == ["tool.part0", MARKER_SOURCE, "tool.part3"]
    assert peak < 5 * 1024 * 1024, f"peak traced memory {peak / 2**20:.1f} MiB"
