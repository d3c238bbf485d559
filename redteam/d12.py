"""Decision 12: head-and-tail excerpts, artifactized, never summarized, never splitting an envelope."""

from __future__ import annotations

from collections.abc import Iterator

from toolproof.reference.hooks import CallState, Pipeline, ReferenceImplementation, excerpt_parts
from toolproof.spec import EXCERPT_MARKER_SOURCE, Envelope, Success, TrustLabel, lowest_trust

from ._common import impl, table

FULL = "full-output.txt"


def _pieces(text: str, size: int = 1 << 16) -> Iterator[str]:
    return (text[i : i + size] for i in range(0, len(text), size))


def _size(content: list[Envelope]) -> int:
    """UTF-8 size of the content, measured piece by piece (bounded memory)."""
    return sum(len(piece.encode()) for e in content for piece in _pieces(e.text))


async def _excerpt_chars(p: Pipeline, s: CallState) -> None:
    if not isinstance(s.disposition, Success) or s.prepared is None:
        return
    content = s.disposition.content
    limit = p.config.max_output_bytes
    if sum(len(e.text) for e in content) <= limit:  # The mistake: characters, not UTF-8 bytes.
        return
    stream = s.prepared.parts.artifact_writer.stream(FULL)
    ex = excerpt_parts(((e.trust, e.source, _pieces(e.text)) for e in content), limit, stream.write)
    full = stream.finish()
    s.disposition = s.disposition.model_copy(
        update={"content": ex.envelopes, "artifacts": [*s.disposition.artifacts, full]}
    )


class _Chars(Pipeline):
    steps = table(EXCERPT=_excerpt_chars)


def limit_counted_in_characters() -> ReferenceImplementation:
    """D12 "Large output is excerpted": the limit is compared with the number of characters, so multibyte output
    whose character count fits but whose UTF-8 size exceeds max_output_bytes is delivered whole."""
    return impl("d12-limit-in-characters", _Chars)


async def _excerpt_merged(p: Pipeline, s: CallState) -> None:
    if not isinstance(s.disposition, Success) or s.prepared is None:
        return
    content = s.disposition.content
    limit = p.config.max_output_bytes
    if _size(content) <= limit:
        return
    label = lowest_trust(*(e.trust for e in content))  # The mistake: one envelope at the lowest label.
    stream = s.prepared.parts.artifact_writer.stream(FULL)
    source = content[0].source if content else ""
    merged = (piece for e in content for piece in _pieces(e.text))
    ex = excerpt_parts([(label, source, merged)], limit, stream.write)
    full = stream.finish()
    s.disposition = s.disposition.model_copy(
        update={"content": ex.envelopes, "artifacts": [*s.disposition.artifacts, full]}
    )


class _Merged(Pipeline):
    steps = table(EXCERPT=_excerpt_merged)


def excerpt_merges_envelopes() -> ReferenceImplementation:
    """D12 "Excerpts never split a trust envelope": when output is excerpted its parts are joined into one envelope
    labelled with the lowest label (safe-looking), so the delivered pieces no longer keep their own envelopes."""
    return impl("d12-excerpt-merges-envelopes", _Merged)


async def _excerpt_no_artifact(p: Pipeline, s: CallState) -> None:
    if not isinstance(s.disposition, Success):
        return
    content = s.disposition.content
    limit = p.config.max_output_bytes
    if _size(content) <= limit:
        return
    ex = excerpt_parts(((e.trust, e.source, _pieces(e.text)) for e in content), limit, lambda _b: None)
    s.disposition = s.disposition.model_copy(update={"content": ex.envelopes})  # The mistake: nothing stored.


class _NoArtifact(Pipeline):
    steps = table(EXCERPT=_excerpt_no_artifact)


def excerpt_without_artifact() -> ReferenceImplementation:
    """D12 "excerpted head-and-tail and artifactized": the excerpt is delivered but the whole output is not written
    as an artifact nor referenced from the disposition."""
    return impl("d12-excerpt-without-artifact", _NoArtifact)


async def _excerpt_at_limit(p: Pipeline, s: CallState) -> None:
    if not isinstance(s.disposition, Success) or s.prepared is None:
        return
    content = s.disposition.content
    limit = p.config.max_output_bytes
    total = _size(content)
    if total < limit:  # The mistake: "at the limit" counts as over it.
        return
    stream = s.prepared.parts.artifact_writer.stream(FULL)
    effective = limit - 1 if total == limit else limit
    ex = excerpt_parts(((e.trust, e.source, _pieces(e.text)) for e in content), effective, stream.write)
    full = stream.finish()
    s.disposition = s.disposition.model_copy(
        update={"content": ex.envelopes, "artifacts": [*s.disposition.artifacts, full]}
    )


class _AtLimit(Pipeline):
    steps = table(EXCERPT=_excerpt_at_limit)


def output_at_limit_excerpted() -> ReferenceImplementation:
    """D12 threshold off-by-one: output of exactly max_output_bytes is excerpted (< instead of <=) instead of being
    delivered whole."""
    return impl("d12-output-at-limit-excerpted", _AtLimit)


async def _excerpt_copying(p: Pipeline, s: CallState) -> None:
    if not isinstance(s.disposition, Success) or s.prepared is None:
        return
    content = s.disposition.content
    limit = p.config.max_output_bytes
    encoded = [e.text.encode() for e in content]  # The mistake: every part is encoded (copied) up front.
    if sum(len(b) for b in encoded) <= limit:
        return
    stream = s.prepared.parts.artifact_writer.stream(FULL)
    ex = excerpt_parts(
        ((e.trust, e.source, [b.decode()]) for e, b in zip(content, encoded, strict=True)), limit, stream.write
    )
    full = stream.finish()
    s.disposition = s.disposition.model_copy(
        update={"content": ex.envelopes, "artifacts": [*s.disposition.artifacts, full]}
    )


class _Copying(Pipeline):
    steps = table(EXCERPT=_excerpt_copying)


def excerpt_copies_output() -> ReferenceImplementation:
    """D12 (200 MB in bounded memory): the output is UTF-8 encoded whole to measure it and decoded again to excerpt
    it, so memory grows with the output's size (two copies) instead of staying bounded."""
    return impl("d12-excerpt-copies-output", _Copying)


async def _excerpt_bytes_cut(p: Pipeline, s: CallState) -> None:
    if not isinstance(s.disposition, Success) or s.prepared is None:
        return
    content = s.disposition.content
    limit = p.config.max_output_bytes
    if 4 * sum(len(e.text) for e in content) <= limit:
        return
    stream = s.prepared.parts.artifact_writer.stream(FULL)
    total = 0
    for e in content:
        for piece in _pieces(e.text):
            data = piece.encode()
            stream.write(data)
            total += len(data)
    if total <= limit:
        stream.discard()
        return
    full = stream.finish()
    head_budget, tail_budget = limit // 2, limit - limit // 2
    out: list[Envelope] = []
    used = 0
    for e in content:  # head: byte slices, decoded leniently (the mistake: a cut character becomes U+FFFD)
        if used >= head_budget:
            break
        data = e.text[: head_budget - used].encode()[: head_budget - used]
        if data:
            out.append(Envelope(trust=e.trust, source=e.source, text=data.decode("utf-8", errors="replace")))
            used += len(data)
    tail: list[Envelope] = []
    used = 0
    for e in reversed(content):
        if used >= tail_budget:
            break
        want = tail_budget - used
        encoded = e.text[-want:].encode() if want else b""
        data = encoded[max(0, len(encoded) - want) :]
        if data:
            tail.insert(0, Envelope(trust=e.trust, source=e.source, text=data.decode("utf-8", errors="replace")))
            used += len(data)
    omitted = total - sum(len(x.text.encode()) for x in out + tail)
    marker = Envelope(
        trust=TrustLabel.SYSTEM,
        source=EXCERPT_MARKER_SOURCE,
        text=f"[… {omitted} of {total} bytes omitted; the whole output is in the artifact …]",
    )
    s.disposition = s.disposition.model_copy(
        update={"content": [*out, marker, *tail], "artifacts": [*s.disposition.artifacts, full]}
    )


class _BytesCut(Pipeline):
    steps = table(EXCERPT=_excerpt_bytes_cut)


def excerpt_cuts_characters() -> ReferenceImplementation:
    """D12 "byte-exact head and tail, never summarized": head and tail are cut at byte offsets without looking for a
    character boundary and decoded with errors="replace", so a cut multibyte character is delivered as U+FFFD, a
    character that is not in the original."""
    return impl("d12-excerpt-cuts-characters", _BytesCut)
