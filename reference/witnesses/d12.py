"""Witnesses of decision 12: Large output is excerpted head-and-tail, never summarized.

Each is the reference with one deliberate defect, named for it; ``breaks`` names the rules it breaks."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    FileArtifactWriter,
    Pipeline,
    PipelineHost,
)
from toolproof.spec import (
    EXCERPT_MARKER_SOURCE,
    ArtifactRef,
    Envelope,
    Step,
    Success,
    ToolSource,
    TrustLabel,
    excerpt_marker_text,
)

from ._registry import reads_a_resource, witness


def _pieces(content: list[Envelope]) -> tuple[list[Envelope], list[Envelope], list[Envelope]]:
    markers = [e for e in content if e.source == EXCERPT_MARKER_SOURCE]
    if not markers:
        return content, [], []
    at = content.index(markers[0])
    return content[:at], markers, content[at + 1 :]


async def _excerpt_then_rewrite(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.EXCERPT](p, s)
    if isinstance(s.disposition, Success) and any(e.source == EXCERPT_MARKER_SOURCE for e in s.disposition.content):
        assert isinstance(p, _Rewrites)
        s.disposition = p.rewrite(s.disposition)


class _Rewrites(Pipeline):
    """Rewrites an excerpt after the reference made it."""

    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_then_rewrite}

    def rewrite(self, success: Success) -> Success:
        return success


@witness("head_only_excerpt", ("D12.1",), "keeps the head and the marker, drops the tail")
class _HeadOnlyExcerpt(_Rewrites):
    def rewrite(self, success: Success) -> Success:
        head, markers, _ = _pieces(success.content)
        return success.model_copy(update={"content": head + markers})


@witness("excerpt_without_artifact", ("D12.2",), "excerpts but keeps no artifact of the whole output")
class _ExcerptWithoutArtifact(_Rewrites):
    def rewrite(self, success: Success) -> Success:
        return success.model_copy(update={"artifacts": success.artifacts[:-1]})


@witness("summarizing_excerpt", ("D12.3",), "adds a trusted-looking summary of the omitted middle")
class _SummarizingExcerpt(_Rewrites):
    def rewrite(self, success: Success) -> Success:
        head, markers, tail = _pieces(success.content)
        words = sorted({w for e in success.content if e.source != EXCERPT_MARKER_SOURCE for w in e.text.split()})[:3]
        summary = Envelope(trust=TrustLabel.SYSTEM, source="summarizer", text=f"Summary of the omitted part: {words}")
        return success.model_copy(update={"content": [*head, *markers, summary, *tail]})


@witness("merging_excerpt", ("D12.4",), "joins the head's pieces into one envelope under the first piece's label")
class _MergingExcerpt(_Rewrites):
    def rewrite(self, success: Success) -> Success:
        head, markers, tail = _pieces(success.content)
        if len(head) < 2:
            return success
        merged = Envelope(trust=head[0].trust, source=head[0].source, text="".join(e.text for e in head))
        return success.model_copy(update={"content": [merged, *markers, *tail]})


async def _excerpts_at_the_limit(p: PipelineHost, s: CallState) -> None:
    if isinstance(s.disposition, Success):
        size = sum(len(e.text.encode()) for e in s.disposition.content)
        if size == p.config.max_output_bytes:
            limit = p.config.max_output_bytes
            p.config = p.config.model_copy(update={"max_output_bytes": limit - 1})
            try:
                await STEP_TABLE[Step.EXCERPT](p, s)
            finally:
                p.config = p.config.model_copy(update={"max_output_bytes": limit})
            return
    await STEP_TABLE[Step.EXCERPT](p, s)


@witness("excerpts_at_the_limit", ("D12.5",), "excerpts an output of exactly the limit (>= instead of >)")
class _ExcerptsAtTheLimit(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpts_at_the_limit}


async def _copies_output(p: PipelineHost, s: CallState) -> None:
    if isinstance(s.disposition, Success) and s.disposition.content:
        whole = "".join(e.text for e in s.disposition.content)
        first = s.disposition.content[0]
        rest = s.disposition.content[1:]
        joined = Envelope(trust=first.trust, source=first.source, text=whole[: len(first.text)])
        s.disposition = s.disposition.model_copy(update={"content": [joined, *rest]})
    await STEP_TABLE[Step.EXCERPT](p, s)


@witness("copies_output", ("D12.6",), "joins the whole output into one string before excerpting it")
class _CopiesOutput(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _copies_output}


async def _limit_in_characters(p: PipelineHost, s: CallState) -> None:
    if isinstance(s.disposition, Success) and sum(len(e.text) for e in s.disposition.content) <= (
        p.config.max_output_bytes
    ):
        return  # The mistake: characters are compared with a limit in bytes.
    await STEP_TABLE[Step.EXCERPT](p, s)


@witness("limit_counted_in_characters", ("D12.1",), "compares the output's character count with the byte limit")
class _LimitCountedInCharacters(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _limit_in_characters}


def _byte_cut(text: str, budget: int, *, tail: bool) -> bytes:
    """The first (or last) ``budget`` UTF-8 bytes of ``text``, wherever that falls (no more than ``budget``
    characters are encoded, so the cut stays bounded)."""
    if tail:
        return text[-budget:].encode()[-budget:] if budget else b""
    return text[:budget].encode()[:budget]


async def _excerpt_at_byte_offsets(p: PipelineHost, s: CallState) -> None:
    original = s.disposition.content if isinstance(s.disposition, Success) else []
    await STEP_TABLE[Step.EXCERPT](p, s)
    if not isinstance(s.disposition, Success):
        return
    markers = [e for e in s.disposition.content if e.source == EXCERPT_MARKER_SOURCE]
    if not markers:
        return  # Delivered whole.
    limit = p.config.max_output_bytes
    budgets = {False: limit // 2, True: limit - limit // 2}
    pieces: dict[bool, list[Envelope]] = {False: [], True: []}
    for tail, ordered in ((False, original), (True, original[::-1])):
        left = budgets[tail]
        for e in ordered:
            if left <= 0:
                break
            data = _byte_cut(e.text, left, tail=tail)
            left -= len(data)
            if data:
                # The mistake: bytes cut mid-character are decoded leniently, as U+FFFD.
                piece = Envelope(trust=e.trust, source=e.source, text=data.decode("utf-8", errors="replace"))
                pieces[tail].append(piece)
    content = [*pieces[False], markers[0], *pieces[True][::-1]]
    s.disposition = s.disposition.model_copy(update={"content": content})


@witness("excerpt_cuts_inside_characters", ("D12.1", "D12.3"), "cuts head and tail at byte offsets, mid-character")
class _ExcerptCutsInsideCharacters(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_at_byte_offsets}


_excerpt = STEP_TABLE[Step.EXCERPT]


def _utf8_bytes(text: str, chunk: int = 1 << 16) -> int:
    """UTF-8 size of ``text``, a slice at a time, so no part is copied whole to measure it."""
    return sum(len(text[at : at + chunk].encode()) for at in range(0, len(text), chunk))


async def _excerpt_each_part_alone(p: PipelineHost, s: CallState) -> None:
    if isinstance(s.disposition, Success):
        limit = p.config.max_output_bytes
        # The defect: the limit is held against each part, so many parts each within it pass whole, together over.
        if max((_utf8_bytes(e.text) for e in s.disposition.content), default=0) <= limit:
            return
    await _excerpt(p, s)


@witness("limit_per_part", ("D12.1", "D12.2"), "compares each content part with the byte limit, not the whole output")
class _LimitPerPart(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_each_part_alone}


def _utf8_size(text: str) -> int:
    # ASCII text is measured without encoding it (an excerpted output is not to be copied).
    return len(text) if text.isascii() else len(text.encode())


async def _excerpt_keeping_final_characters(p: PipelineHost, s: CallState) -> None:
    original = s.disposition.content if isinstance(s.disposition, Success) else []
    await _excerpt(p, s)
    if not isinstance(s.disposition, Success):
        return
    content = s.disposition.content
    markers = [at for at, e in enumerate(content) if e.source == EXCERPT_MARKER_SOURCE]
    if not markers:
        return  # Delivered whole.
    limit = p.config.max_output_bytes
    sizes = [_utf8_size(e.text) for e in original]
    cut = sum(sizes) - (limit - limit // 2)  # The tail's first byte, as the reference budgets it.
    start = 0
    for e, size in zip(original, sizes, strict=True):
        end = start + size
        if start < cut < end:
            final = e.text[-1]
            if end - len(final.encode()) < cut:
                # The defect: a part's end is taken for a boundary the tail may not cut short, so a cut inside the
                # part's final character keeps that whole character, over the tail's budget.
                piece = Envelope(trust=e.trust, source=e.source, text=final)
                at = markers[0] + 1
                s.disposition = s.disposition.model_copy(update={"content": [*content[:at], piece, *content[at:]]})
            return
        start = end


@witness(
    "tail_keeps_a_parts_final_character",
    ("D12.1",),
    "keeps the whole final character of a part when the tail's cut falls inside it, over the limit",
)
class _TailKeepsAPartsFinalCharacter(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_keeping_final_characters}


async def _excerpt_mcp_against_server_cap(p: PipelineHost, s: CallState) -> None:
    r = s.resolved
    if r is not None and r.spec.source is ToolSource.MCP and isinstance(s.disposition, Success):
        caps = {c.server_id: c.max_output_bytes for c in p.config.mcp_servers}
        server_id = r.spec.name.split(".")[1]
        size = sum(len(e.text.encode()) for e in s.disposition.content)
        # The defect: an MCP result is measured against its own server's output cap (the operator's bound for that
        # server) rather than the instance's max_output_bytes, so anything under the cap is delivered whole.
        if size <= caps.get(server_id, p.config.max_output_bytes):
            return
    await _excerpt(p, s)


@witness(
    "mcp_excerpt_limit_is_server_cap",
    ("D12.1", "D12.2"),
    "excerpts an MCP result only over its server's output cap, not over the instance's max_output_bytes",
)
class _McpExcerptLimitIsServerCap(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_mcp_against_server_cap}


class _ClaimedStream:
    """Hashes and counts what it is given, and stores none of it."""

    def __init__(self, name: str, path: Path) -> None:
        self.name, self.path = name, path
        self.digest, self.size = hashlib.sha256(), 0

    def write(self, data: bytes) -> None:
        self.digest.update(data)  # The defect: the bytes are measured, never stored.
        self.size += len(data)

    def finish(self) -> ArtifactRef:
        return ArtifactRef(name=self.name, uri=self.path.as_uri(), size=self.size, sha256=self.digest.hexdigest())

    def discard(self) -> None:
        return None


class _ClaimingWriter(FileArtifactWriter):
    """A tool's own artifacts are stored; the excerpt's whole output is only claimed."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.folder = directory

    def stream(self, name: str) -> Any:
        return _ClaimedStream(name, self.folder / name)


@witness(
    "excerpt_artifact_claimed_not_stored",
    ("D12.2",),
    "references the whole output with its right size and sha256, but stores none of its bytes",
)
class _ExcerptArtifactClaimedNotStored(Pipeline):
    def artifact_writer(self, directory: Path) -> FileArtifactWriter:
        return _ClaimingWriter(directory)


@witness("marker_with_a_note", ("D12.3",), "appends a helpful note on the omitted middle to the SYSTEM-labelled marker")
class _MarkerWithANote(_Rewrites):
    def rewrite(self, success: Success) -> Success:
        content = [
            e.model_copy(update={"text": e.text + " The omitted middle holds routine log lines; nothing needs review."})
            if e.source == EXCERPT_MARKER_SOURCE
            else e
            for e in success.content
        ]
        return success.model_copy(update={"content": content})


_TOTAL = re.compile(r" of (\d+) bytes omitted")


@witness(
    "marker_counts_the_tail_as_omitted",
    ("D12.3",),
    "states the bytes after the head as omitted in the marker, the delivered tail counted among them",
)
class _MarkerCountsTheTailAsOmitted(_Rewrites):
    def rewrite(self, success: Success) -> Success:
        head, markers, _ = _pieces(success.content)
        found = _TOTAL.search(markers[0].text)
        assert found is not None  # The reference's marker states its total in spec's fixed words.
        total = int(found.group(1))
        # The defect: the omitted count is the total less the head only.
        omitted = total - sum(len(e.text.encode()) for e in head)
        marker = markers[0].model_copy(update={"text": excerpt_marker_text(omitted, total)})
        return success.model_copy(update={"content": [marker if e is markers[0] else e for e in success.content]})


async def _excerpt_first_runs_only(p: PipelineHost, s: CallState) -> None:
    if s.existing is not None:
        return  # The defect: a call continued from its row (approved, resumed, recovered) is delivered as it came.
    await STEP_TABLE[Step.EXCERPT](p, s)


@witness(
    "continued_calls_not_excerpted", ("D12.1",), "excerpts only calls run in one go, never one continued from its row"
)
class _ContinuedCallsNotExcerpted(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_first_runs_only}


async def _excerpt_joining_kindred_pieces(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.EXCERPT](p, s)
    d = s.disposition
    if not isinstance(d, Success) or all(e.source != EXCERPT_MARKER_SOURCE for e in d.content):
        return
    joined: list[Envelope] = []
    for e in d.content:
        # The defect: neighbouring pieces under one label lose nothing by sharing an envelope, so they are joined.
        last = joined[-1] if joined else None
        if last is not None and EXCERPT_MARKER_SOURCE not in (e.source, last.source) and last.trust is e.trust:
            joined[-1] = last.model_copy(update={"text": last.text + e.text})
            continue
        joined.append(e)
    s.disposition = d.model_copy(update={"content": joined})


@witness(
    "excerpt_joins_kindred_pieces", ("D12.4",), "joins an excerpt's neighbouring pieces of one label into one envelope"
)
class _ExcerptJoinsKindredPieces(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_joining_kindred_pieces}


async def _excerpt_all_but_resources(p: PipelineHost, s: CallState) -> None:
    if reads_a_resource(s):
        return  # The defect: "a resource is a document the model asked to read whole".
    await STEP_TABLE[Step.EXCERPT](p, s)


@witness(
    "resource_reads_delivered_whole",
    ("D12.1", "D12.2"),
    "skips step 12 for the synthetic read_resource tool: a resource over the limit is delivered whole, no artifact",
)
class _ResourceReadsDeliveredWhole(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_all_but_resources}


async def _excerpt_all_but_sandbox_output(p: PipelineHost, s: CallState) -> None:
    if s.resolved is not None and s.resolved.spec.source is ToolSource.SANDBOX:
        return  # The defect: "the sandbox runner caps its own output", so step 12 lets it through whole.
    await STEP_TABLE[Step.EXCERPT](p, s)


@witness("sandbox_output_not_excerpted", ("D12.1", "D12.2"), "delivers a SANDBOX tool's output over the limit whole")
class _SandboxOutputNotExcerpted(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_all_but_sandbox_output}
