"""Round 2, decision 12: head-and-tail excerpts and the artifact."""

from __future__ import annotations

from collections.abc import Iterator

from toolproof.reference.hooks import STEP_TABLE, CallState, Pipeline, ReferenceImplementation, excerpt_parts
from toolproof.spec import EXCERPT_MARKER_SOURCE, Envelope, Step, Success, TrustLabel

from ._common import impl, table

_reference_excerpt = STEP_TABLE[Step.EXCERPT]
FULL_OUTPUT_ARTIFACT = "full-output.txt"


def _utf8_size(text: str) -> int:
    from toolproof.reference._excerpt import chunked

    # Measured chunk by chunk, so a large part is never encoded (copied) whole.
    return sum(len(chunk.encode()) for chunk in chunked(text))


async def _excerpt_per_part(p: Pipeline, s: CallState) -> None:
    if isinstance(s.disposition, Success):
        limit = p.config.max_output_bytes
        # The mistake: the limit is applied to each part ("no part may be longer than the budget").
        if all(_utf8_size(e.text) <= limit for e in s.disposition.content):
            return
    await _reference_excerpt(p, s)


class _LimitPerPart(Pipeline):
    steps = table(EXCERPT=_excerpt_per_part)


def limit_applied_per_part() -> ReferenceImplementation:
    """D12 "Large output is excerpted head-and-tail": the byte limit is compared with each content part rather than
    the whole output, so an output of several parts each under max_output_bytes but together over it (three parts
    of 60 bytes against a limit of 100) is delivered whole, unexcerpted and without an artifact."""
    return impl("r2-d12-limit-per-part", _LimitPerPart)


async def _excerpt_relabelled(p: Pipeline, s: CallState) -> None:
    before = s.disposition
    await _reference_excerpt(p, s)
    if s.disposition is before or not isinstance(s.disposition, Success) or s.resolved is None:
        return
    spec = s.resolved.spec
    # The mistake: excerpted pieces are "the tool's output", so they get the tool's registered label and name.
    content = [
        e if e.source == EXCERPT_MARKER_SOURCE else Envelope(trust=spec.output_trust, source=spec.name, text=e.text)
        for e in s.disposition.content
    ]
    s.disposition = s.disposition.model_copy(update={"content": content})


class _Relabelled(Pipeline):
    steps = table(EXCERPT=_excerpt_relabelled)


def excerpt_relabels_pieces() -> ReferenceImplementation:
    """D12 "Excerpts never split a trust envelope": when output is excerpted, every head and tail piece is delivered
    under the tool's registered output label, so a part the result lowered (a ContentPart labelled
    EXTERNAL_UNTRUSTED inside an INTERNAL tool's output) loses its label once the output is over the limit."""
    return impl("r2-d12-excerpt-relabels-pieces", _Relabelled)


async def _excerpt_joined_artifact(p: Pipeline, s: CallState) -> None:
    from toolproof.reference._excerpt import chunked

    if not isinstance(s.disposition, Success) or s.prepared is None:
        return
    content = s.disposition.content
    limit = p.config.max_output_bytes
    if 4 * sum(len(e.text) for e in content) <= limit:
        return
    stream = s.prepared.parts.artifact_writer.stream(FULL_OUTPUT_ARTIFACT)

    def sink(data: bytes) -> None:
        stream.write(data)

    def parts() -> Iterator[tuple[TrustLabel, str, Iterator[str]]]:
        for index, e in enumerate(content):
            if index:
                stream.write(b"\n")  # The mistake: the artifact is "the output as a document", one part per line.
            yield e.trust, e.source, chunked(e.text)

    excerpted = excerpt_parts(parts(), limit, sink)
    if not excerpted.excerpted:
        stream.discard()
        return
    full = stream.finish()
    s.disposition = s.disposition.model_copy(
        update={"content": excerpted.envelopes, "artifacts": [*s.disposition.artifacts, full]}
    )


class _JoinedArtifact(Pipeline):
    steps = table(EXCERPT=_excerpt_joined_artifact)


def artifact_joins_parts_with_newlines() -> ReferenceImplementation:
    """D12 "excerpted head-and-tail and artifactized": the artifact that keeps the whole output writes its content
    parts one per line (a newline between parts), so for output of more than one part the artifact's bytes (size,
    sha256) are not the output's."""
    return impl("r2-d12-artifact-joins-parts", _JoinedArtifact)
