"""Round 3, decision 12: where the marker goes, the order of the tail, and what the artifact holds."""

from __future__ import annotations

import hashlib
from urllib.parse import unquote, urlsplit

import anyio

from toolproof.reference.hooks import STEP_TABLE, CallState, Pipeline, ReferenceImplementation
from toolproof.spec import EXCERPT_MARKER_SOURCE, Envelope, Step, Success

from ._common import impl, table


def _marker_index(content: list[Envelope]) -> int | None:
    for index, envelope in enumerate(content):
        if envelope.source == EXCERPT_MARKER_SOURCE:
            return index
    return None


async def _excerpt_marker_in_head(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.EXCERPT](p, s)
    if not isinstance(s.disposition, Success):
        return
    content = list(s.disposition.content)
    at = _marker_index(content)
    if at is None or at == 0:
        return
    head = content[at - 1]
    # The mistake: the marker is appended to the head's text, so it travels in the head part's envelope and label.
    content[at - 1 : at + 1] = [head.model_copy(update={"text": head.text + "\n" + content[at].text})]
    s.disposition = s.disposition.model_copy(update={"content": content})


class _MarkerAppendedToHead(Pipeline):
    steps = table(EXCERPT=_excerpt_marker_in_head)


def marker_appended_to_head() -> ReferenceImplementation:
    """D12 (excerpts never split a trust envelope; delivered text outside the marker comes from the output; D12.3,
    D12.4): the marker is appended to the last head piece's text instead of travelling in an envelope of its own, so
    platform text is delivered under the tool part's label and source."""
    return impl("r3-marker-appended-to-head", _MarkerAppendedToHead)


async def _excerpt_tail_reversed(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.EXCERPT](p, s)
    if not isinstance(s.disposition, Success):
        return
    content = list(s.disposition.content)
    at = _marker_index(content)
    if at is None:
        return
    # The mistake: the tail is gathered walking back from the end, one part at a time, and never put back in order.
    content[at + 1 :] = list(reversed(content[at + 1 :]))
    s.disposition = s.disposition.model_copy(update={"content": content})


class _TailPiecesReversed(Pipeline):
    steps = table(EXCERPT=_excerpt_tail_reversed)


def tail_pieces_reversed() -> ReferenceImplementation:
    """D12 (head and tail byte-exact, every delivered character in order; D12.1, D12.3): when the tail spans several
    content parts its pieces are delivered last part first, so a multi-part tail is out of order (a tail inside one
    part looks right)."""
    return impl("r3-tail-pieces-reversed", _TailPiecesReversed)


async def _excerpt_artifact_middle(p: Pipeline, s: CallState) -> None:
    before = s.disposition
    await STEP_TABLE[Step.EXCERPT](p, s)
    if not isinstance(s.disposition, Success) or not isinstance(before, Success) or s.disposition is before:
        return
    content = s.disposition.content
    at = _marker_index(content)
    if at is None:
        return
    whole = "".join(e.text for e in before.content).encode()
    head = sum(len(e.text.encode()) for e in content[:at])
    tail = sum(len(e.text.encode()) for e in content[at + 1 :])
    middle = whole[head : len(whole) - tail]
    artifacts = list(s.disposition.artifacts)
    full = artifacts[-1]
    # The mistake: the artifact keeps only what the model was not shown (the omitted middle), not the whole output.
    await anyio.Path(unquote(urlsplit(full.uri).path)).write_bytes(middle)
    artifacts[-1] = full.model_copy(update={"size": len(middle), "sha256": hashlib.sha256(middle).hexdigest()})
    s.disposition = s.disposition.model_copy(update={"artifacts": artifacts})


class _ArtifactHoldsOmittedMiddle(Pipeline):
    steps = table(EXCERPT=_excerpt_artifact_middle)


def artifact_holds_omitted_middle() -> ReferenceImplementation:
    """D12 (the whole of an excerpted output is stored as an artifact; D12.2): the artifact stores only the bytes
    the excerpt omitted (what the model was not shown), not the whole output, so head and tail are in no artifact."""
    return impl("r3-artifact-holds-omitted-middle", _ArtifactHoldsOmittedMiddle)
