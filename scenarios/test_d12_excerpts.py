"""Decision 12: large output is excerpted head-and-tail and artifactized, never summarized."""

from __future__ import annotations

import hashlib

import pytest

from toolproof.fakes import PartsTool
from toolproof.spec import EXCERPT_MARKER_SOURCE, Envelope, Success, TrustLabel

from ._harness import Harness

LIMIT = 1000
# Three parts with different labels and multi-byte text; the head and the tail each span two parts.
PARTS: list[tuple[str, TrustLabel | None]] = [
    ("HEAD-" + "é" * 40 + "line\n" * 10, None),
    ("middle " * 300, TrustLabel.EXTERNAL_UNTRUSTED),
    ("€" * 30 + "-TAIL", None),
]
WHOLE = "".join(text for text, _ in PARTS)


async def _excerpted(
    harness: Harness, parts: list[tuple[str, TrustLabel | None]] = PARTS, limit: int = LIMIT
) -> Success:
    tool = PartsTool(harness.world, parts, output_trust=TrustLabel.INTERNAL)
    async with harness.open(tool, max_output_bytes=limit) as session:
        return harness.success("D12.1", await session.call(tool.spec.name), "a large output")


def _split(content: list[Envelope]) -> tuple[list[Envelope], list[Envelope], list[Envelope]]:
    """(head pieces, markers, tail pieces), split at the first marker."""
    markers = [e for e in content if e.source == EXCERPT_MARKER_SOURCE]
    if not markers:
        return content, [], []
    at = content.index(markers[0])
    return content[:at], markers, [e for e in content[at + 1 :] if e.source != EXCERPT_MARKER_SOURCE]


@pytest.mark.rules("D12.1")
async def test_large_output_is_head_marker_tail_byte_exact(harness: Harness) -> None:
    d = await _excerpted(harness)
    head, markers, tail = _split(d.content)
    head_text, tail_text = "".join(e.text for e in head), "".join(e.text for e in tail)
    harness.expect("D12.1", len(markers) == 1, f"expected exactly one marker envelope, found {len(markers)}")
    harness.expect(
        "D12.1",
        bool(head_text) and bool(tail_text) and WHOLE.startswith(head_text) and WHOLE.endswith(tail_text),
        f"delivered head {head_text[:40]!r}… and tail …{tail_text[-40:]!r}; expected a byte-exact prefix and suffix",
    )
    size = len(head_text.encode()) + len(tail_text.encode())
    harness.expect("D12.1", size <= LIMIT, f"head and tail carry {size} bytes, over the {LIMIT}-byte limit")


@pytest.mark.rules("D12.2")
async def test_whole_output_is_stored_as_an_artifact(harness: Harness) -> None:
    d = await _excerpted(harness)
    raw = WHOLE.encode()
    refs = [(a.size, a.sha256) for a in d.artifacts]
    harness.expect(
        "D12.2",
        (len(raw), hashlib.sha256(raw).hexdigest()) in refs,
        f"no artifact holds the whole {len(raw)}-byte output; artifacts: {refs}",
    )


@pytest.mark.rules("D12.3")
async def test_excerpt_adds_nothing_but_the_marker(harness: Harness) -> None:
    d = await _excerpted(harness)
    head, markers, tail = _split(d.content)
    head_text, tail_text = "".join(e.text for e in head), "".join(e.text for e in tail)
    harness.expect(
        "D12.3",
        len(markers) == 1 and WHOLE.startswith(head_text) and WHOLE.endswith(tail_text),
        f"text outside the marker does not come from the output: {[e.text[:50] for e in d.content]}",
    )


@pytest.mark.rules("D12.4")
async def test_excerpt_never_splits_a_trust_envelope(harness: Harness) -> None:
    d = await _excerpted(harness)
    labels = [TrustLabel.INTERNAL if label is None else label for _, label in PARTS]
    for envelope in d.content:
        if envelope.source == EXCERPT_MARKER_SOURCE:
            continue
        owners = [i for i, (text, _) in enumerate(PARTS) if envelope.text in text]
        harness.expect(
            "D12.4",
            len(owners) >= 1 and any(labels[i] is envelope.trust for i in owners),
            f"the delivered piece {envelope.text[:40]!r}… ({envelope.trust.value}) is not a piece of one part "
            "under that part's label",
        )


@pytest.mark.rules("D12.5")
async def test_output_at_the_limit_is_delivered_whole(harness: Harness) -> None:
    exact = [("a" * 600, None), ("b" * 398 + "é", TrustLabel.EXTERNAL_UNTRUSTED)]
    assert sum(len(text.encode()) for text, _ in exact) == LIMIT
    d = await _excerpted(harness, exact)
    harness.expect(
        "D12.5",
        [e.text for e in d.content] == [text for text, _ in exact],
        f"an output of exactly {LIMIT} bytes was delivered as {[e.text[:20] for e in d.content]}",
    )


@pytest.mark.rules("D12.6")
async def test_excerpting_does_not_copy_the_output(harness: Harness) -> None:
    size = 8 * 1024 * 1024
    tool = PartsTool(harness.world, [("x" * size, None), ("-end", TrustLabel.EXTERNAL_UNTRUSTED)])
    async with harness.open(tool, max_output_bytes=64 * 1024) as session:
        d, peak = await session.call_measuring_memory(tool.spec.name)
    harness.success("D12.6", d, "an 8 MiB output")
    harness.expect(
        "D12.6",
        peak < size // 2,
        f"excerpting an {size // 2**20} MiB output allocated {peak / 2**20:.1f} MiB while the call ran; "
        "an excerpt must not copy the output",
    )
