"""Decision 12: large output is excerpted head-and-tail and artifactized, never summarized.

D12.6 is judged in-process with tracemalloc: while an 8 MiB output is excerpted, memory newly allocated stays under
half the output's size (the tool already holds the output). It judges copying, not speed. Behind a driver, the driver
measures itself (submit with probe=memory): peak bytes from its tools' results arriving to the step's end, so the
transport's own copy is not counted.
"""

from __future__ import annotations

import hashlib

import pytest

from toolproof.fakes import AskUserTool, PartsTool
from toolproof.fakes.mcp import repeat_uri
from toolproof.spec import (
    EXCERPT_MARKER_SOURCE,
    MEMORY_NOT_MEASURED,
    READ_RESOURCE,
    ContextItem,
    CrashPlan,
    CrashPoint,
    Disposition,
    Envelope,
    IdempotencyClass,
    NotCovered,
    SideEffect,
    SimulatedCrash,
    Success,
    Suspended,
    ToolSource,
    TrustLabel,
    excerpt_marker_text,
)

from ._harness import USER_ITEM, Harness, Session, describe
from ._mcp import READ, memory

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
    problem = await _whole_artifact_problem(harness, d, WHOLE.encode())
    harness.expect("D12.2", problem is None, f"the whole output's artifact: {problem}")


async def _whole_artifact_problem(harness: Harness, d: Success, raw: bytes) -> str | None:
    """What keeps ``d`` from referencing an artifact whose stored bytes, read and hashed by the harness, are ``raw``."""
    refs = [a for a in d.artifacts if (a.size, a.sha256) == (len(raw), hashlib.sha256(raw).hexdigest())]
    if not refs:
        return f"no artifact reference names the whole {len(raw)}-byte output; artifacts: {d.artifacts}"
    return await harness.holds("D12.2", refs[0], raw)


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


def _marker_problem(whole: str, d: Success) -> str | None:
    """What is wrong with ``d``'s marker as the excerpt of ``whole``: its label, source or text (the counts of what
    no envelope delivers and of the whole, in spec's fixed words); None when it is right."""
    head, markers, tail = _split(d.content)
    if len(markers) != 1:
        return f"{len(markers)} markers"
    total = len(whole.encode())
    delivered = sum(len(e.text.encode()) for e in head + tail)
    want = excerpt_marker_text(total - delivered, total)
    marker = markers[0]
    if (marker.trust, marker.text) != (TrustLabel.SYSTEM, want):
        return f"marker {marker.text!r} ({marker.trust.value}), expected {want!r} (SYSTEM)"
    return None


@pytest.mark.rules("D12.3")
async def test_the_marker_says_only_what_was_omitted(harness: Harness) -> None:
    # The PARTS output, one byte over the limit in every UTF-8 width and alignment, and outputs of several parts,
    # all under the SMALL limit.
    outputs = [[text for text, _ in PARTS]]
    outputs += [[_multibyte(SMALL + 1, width, lead)] for width, lead in _ALIGNED]
    outputs += [parts for _, parts in SPLIT if _total(parts) > SMALL]
    delivered = await _deliver_split(harness, "D12.3", outputs, SMALL)
    wrong = []
    for parts, d in zip(outputs, delivered, strict=True):
        problem = _marker_problem("".join(parts), d)
        if problem is not None:
            wrong.append(f"{_total(parts)} bytes in {len(parts)} part(s): {problem}")
    harness.expect(
        "D12.3",
        not wrong,
        "the marker is the one text an excerpt adds, under the SYSTEM label: it says how many bytes of how many were "
        f"omitted, in spec's fixed words, and nothing else: {wrong[:5]}"
        + (f" and {len(wrong) - 5} more" if len(wrong) > 5 else ""),
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


@pytest.mark.rules("D12.4")
@pytest.mark.parametrize("count", [2, 3, 6])
@pytest.mark.parametrize("label", [None, TrustLabel.EXTERNAL_UNTRUSTED], ids=["unlabelled", "external"])
async def test_excerpt_keeps_one_envelope_per_part_of_one_label(
    harness: Harness, label: TrustLabel | None, count: int
) -> None:
    # Parts of one label and one source, short ones where the head and the tail take several whole parts and one
    # long one in the middle that is cut: each delivered piece is of one part, never pieces of neighbours joined.
    short = [(f"{chr(ord('a') + n)}" * 40, label) for n in range(count)]
    parts = [*short[: count // 2 + 1], ("m" * 3 * LIMIT, label), *short[count // 2 + 1 :]]
    d = await _excerpted(harness, parts)
    pieces = [e.text for e in d.content if e.source != EXCERPT_MARKER_SOURCE]
    joined = [p for p in pieces if sum(1 for text, _ in parts if p in text) == 0]
    harness.expect(
        "D12.4",
        not joined and len(pieces) >= count,
        f"an excerpt of {len(parts)} parts of one label delivered pieces {[p[:12] + '…' for p in pieces]}; "
        f"{[p[:24] for p in joined]} belong to no one part: every kept part keeps its own envelope",
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


SMALL = 100
# One multi-byte character of each UTF-8 width.
WIDE = {2: "é", 3: "€", 4: "𝄞"}


def _multibyte(size: int, width: int, lead: int) -> str:
    """``size`` UTF-8 bytes: ``lead`` ASCII bytes, then characters ``width`` bytes wide, then ASCII to fill up.

    Its character count is well under ``size``, so only a byte count tells whether it is over a byte limit.
    """
    count = (size - lead) // width
    return "a" * lead + WIDE[width] * count + "b" * (size - lead - width * count)


async def _deliver_each(harness: Harness, rule: str, outputs: list[str], limit: int) -> list[Success]:
    """Each output from its own one-part tool, all in one session under ``limit`` (a failed call fails ``rule``)."""
    tools = [PartsTool(harness.world, [(text, None)], name=f"logs.dump_{i}") for i, text in enumerate(outputs)]
    async with harness.open(*tools, max_output_bytes=limit) as session:
        return [
            harness.success(rule, await session.call(tool.spec.name), f"a {len(text.encode())}-byte output")
            for tool, text in zip(tools, outputs, strict=True)
        ]


def _pieces(d: Success) -> tuple[int, str, str]:
    """(markers, head, tail) of ``d``; head is everything when there is no marker."""
    head, markers, tail = _split(d.content)
    return len(markers), "".join(e.text for e in head), "".join(e.text for e in tail)


def _excerpt_problem(text: str, d: Success, limit: int) -> str | None:
    """What keeps ``d`` from being head, one marker and tail of ``text`` under ``limit``, or None."""
    markers, head, tail = _pieces(d)
    size = len(head.encode()) + len(tail.encode())
    if markers != 1:
        return f"{markers} markers"
    if not (head and tail and text.startswith(head) and text.endswith(tail)):
        return f"head …{head[-8:]!r} / tail {tail[:8]!r}… not a prefix / suffix of the output"
    if size > limit:
        return f"head and tail carry {size} bytes"
    return None


# Every UTF-8 width at every alignment of its characters; the character count is always under the byte count.
_ALIGNED = [(width, lead) for width in WIDE for lead in range(width)]


@pytest.mark.rules("D12.5")
async def test_output_within_the_limit_in_bytes_is_whole(harness: Harness) -> None:
    cases = [(size, width, lead) for size in (SMALL - 1, SMALL) for width, lead in _ALIGNED]
    outputs = [_multibyte(size, width, lead) for size, width, lead in cases]
    delivered = await _deliver_each(harness, "D12.5", outputs, SMALL)
    wrong = [
        f"{size} bytes in {width}-byte characters after {lead} ASCII: {len(d.content)} envelopes"
        for (size, width, lead), text, d in zip(cases, outputs, delivered, strict=True)
        if [e.text for e in d.content] != [text]
    ]
    harness.expect("D12.5", not wrong, f"outputs at or under the {SMALL}-byte limit not delivered whole: {wrong}")


@pytest.mark.rules("D12.1")
async def test_output_one_byte_over_the_limit_is_excerpted(harness: Harness) -> None:
    outputs = [_multibyte(SMALL + 1, width, lead) for width, lead in _ALIGNED]
    delivered = await _deliver_each(harness, "D12.1", outputs, SMALL)
    wrong = [
        f"{width}-byte characters after {lead} ASCII: {problem}"
        for (width, lead), text, d in zip(_ALIGNED, outputs, delivered, strict=True)
        if (problem := _excerpt_problem(text, d, SMALL)) is not None
    ]
    harness.expect(
        "D12.1",
        not wrong,
        f"outputs of {SMALL + 1} bytes (fewer characters than that) under a {SMALL}-byte limit were not delivered "
        f"as head, marker and tail: {wrong}",
    )


@pytest.mark.rules("D12.3")
async def test_excerpt_cuts_between_characters(harness: Harness) -> None:
    # Shifting the characters by every lead and trail length puts the head's and the tail's cut at every byte
    # position inside a character, whatever budgets the implementation gives them. Twice as many characters as
    # the limit has bytes: over it however it is counted.
    cases = [(width, lead, trail) for width, lead in _ALIGNED for trail in range(width)]
    outputs = ["a" * lead + WIDE[width] * (2 * SMALL) + "b" * trail for width, lead, trail in cases]
    delivered = await _deliver_each(harness, "D12.3", outputs, SMALL)
    wrong = []
    for (width, lead, trail), text, d in zip(cases, outputs, delivered, strict=True):
        markers, head, tail = _pieces(d)
        if markers != 1 or "\ufffd" in head + tail or not (text.startswith(head) and text.endswith(tail)):
            wrong.append(
                f"{width}-byte characters, {lead} lead, {trail} trail: head …{head[-4:]!r}, tail {tail[:4]!r}…"
            )
    harness.expect(
        "D12.3",
        not wrong,
        "an excerpt whose cut falls inside a multi-byte character must deliver only text of the original, in order "
        f"(one marker, head a prefix, tail a suffix, no U+FFFD): {wrong}",
    )


@pytest.mark.rules("D12.6")
async def test_excerpting_does_not_copy_the_output(harness: Harness) -> None:
    size = 8 * 1024 * 1024
    tool = PartsTool(harness.world, [("x" * size, None), ("-end", TrustLabel.EXTERNAL_UNTRUSTED)])
    async with harness.open(tool, max_output_bytes=64 * 1024) as session:
        d, peak = await session.call_measuring_memory(tool.spec.name)
    harness.success("D12.6", d, "an 8 MiB output")
    if peak is None:
        raise NotCovered("D12.6", MEMORY_NOT_MEASURED)
    harness.expect(
        "D12.6",
        peak < size // 2,
        f"excerpting an {size // 2**20} MiB output allocated {peak / 2**20:.1f} MiB while the call ran; "
        "an excerpt must not copy the output",
    )


# -- The limit is the whole output's: every part counts, however the output is split. --------------------------


def _sizes(total: int, count: int) -> list[int]:
    """``total`` bytes split over ``count`` parts as evenly as possible (the larger parts last)."""
    base, extra = divmod(total, count)
    return [base + (1 if i >= count - extra else 0) for i in range(count)]


def _split_output(sizes: list[int], width: int) -> list[str]:
    """One part per size, each of its own character (``width`` UTF-8 bytes wide where it fits, ASCII to fill)."""
    parts = []
    for i, size in enumerate(sizes):
        fill = chr(ord("a") + i % 26)
        char = fill if width == 1 else WIDE[width]
        count = size // len(char.encode())
        parts.append(char * count + fill * (size - count * len(char.encode())))
    return parts


def _split_cases() -> list[tuple[str, list[str]]]:
    """Outputs of several parts around the limit: totals at limit-1, limit, limit+1 and beyond, split evenly over
    2, 3 and 5 parts (every part under the limit until the total is twice it); parts each at limit-1, limit and
    limit+1; empty parts between full ones; ASCII and 3-byte characters."""
    cases: list[tuple[str, list[str]]] = []
    for width in (1, 3):
        for count in (2, 3, 5):
            for total in (SMALL - 1, SMALL, SMALL + 1, SMALL + SMALL // 2, 2 * SMALL - 1, 2 * SMALL + 1, 3 * SMALL):
                cases.append(
                    (f"{total} bytes in {count} parts of width {width}", _split_output(_sizes(total, count), width))
                )
        for count in (2, 3):
            for each in (SMALL - 1, SMALL, SMALL + 1):
                cases.append((f"{count} parts of {each} bytes, width {width}", _split_output([each] * count, width)))
    for sizes in ([0, 50, 0, 50, 0], [0, 51, 0, 50], [0, 60, 0, 60, 0], [34, 0, 33, 0, 34]):
        cases.append((f"parts of {sizes} bytes", _split_output(sizes, 1)))
    return cases


SPLIT = _split_cases()


async def _deliver_split(harness: Harness, rule: str, outputs: list[list[str]], limit: int) -> list[Success]:
    """Each output from its own tool, one content part per text (labels alternating), all in one session."""
    tools = [
        PartsTool(
            harness.world,
            [(text, None if j % 2 else TrustLabel.EXTERNAL_UNTRUSTED) for j, text in enumerate(parts)],
            name=f"logs.split_{i}",
        )
        for i, parts in enumerate(outputs)
    ]
    async with harness.open(*tools, max_output_bytes=limit) as session:
        return [
            harness.success(rule, await session.call(tool.spec.name), f"an output of {len(parts)} parts")
            for tool, parts in zip(tools, outputs, strict=True)
        ]


def _total(parts: list[str]) -> int:
    return sum(len(text.encode()) for text in parts)


@pytest.mark.rules("D12.1")
async def test_output_over_the_limit_in_several_parts_is_excerpted(harness: Harness) -> None:
    cases = [(what, parts) for what, parts in SPLIT if _total(parts) > SMALL]
    delivered = await _deliver_split(harness, "D12.1", [parts for _, parts in cases], SMALL)
    wrong = [
        f"{what}: {problem}"
        for (what, parts), d in zip(cases, delivered, strict=True)
        if (problem := _excerpt_problem("".join(parts), d, SMALL)) is not None
    ]
    harness.expect(
        "D12.1",
        not wrong,
        f"outputs whose parts together are over the {SMALL}-byte limit must be delivered as one head, one marker and "
        f"one tail within the limit, whatever each part's own size: {wrong}",
    )


@pytest.mark.rules("D12.2")
async def test_whole_output_of_several_parts_is_the_artifact(harness: Harness) -> None:
    cases = [(what, parts) for what, parts in SPLIT if _total(parts) > SMALL]
    delivered = await _deliver_split(harness, "D12.2", [parts for _, parts in cases], SMALL)
    wrong = []
    for (what, parts), d in zip(cases, delivered, strict=True):
        problem = await _whole_artifact_problem(harness, d, "".join(parts).encode())
        if problem is not None:
            wrong.append(f"{what}: {problem}")
    harness.expect(
        "D12.2",
        not wrong,
        f"excerpted outputs of several parts must keep the whole output (every part, in order) as an artifact: {wrong}",
    )


@pytest.mark.rules("D12.5")
async def test_output_within_the_limit_in_several_parts_is_whole(harness: Harness) -> None:
    cases = [(what, parts) for what, parts in SPLIT if _total(parts) <= SMALL]
    delivered = await _deliver_split(harness, "D12.5", [parts for _, parts in cases], SMALL)
    wrong = [
        f"{what}: delivered {[e.text[:12] for e in d.content]}"
        for (what, parts), d in zip(cases, delivered, strict=True)
        if [e.text for e in d.content if e.text] != [text for text in parts if text]
    ]
    harness.expect(
        "D12.5",
        not wrong,
        f"outputs whose parts together are at or under the {SMALL}-byte limit must be delivered whole, part by part: "
        f"{wrong}",
    )


# -- A part's final multi-byte character at the cuts: both cuts inside it, at every byte, around the limit. --------


def _final_character_cases(totals: tuple[int, ...]) -> list[tuple[str, list[str]]]:
    """Outputs of ``totals`` bytes in two parts: an untrusted part over 256 bytes ending in 100 characters of one
    width (2, 3 or 4 bytes), then an ASCII part. The ASCII part's size runs byte by byte from two characters before
    half the limit to two after it, so the first part's last character meets the middle of the output (where a
    head and a tail of about half the limit each are cut) at every byte of it, and a cut there falls before, inside
    (at each of its bytes) or after a part's final multi-byte character."""
    cases: list[tuple[str, list[str]]] = []
    for width in WIDE:
        for total in totals:
            for second in range(LIMIT // 2 - 2 * width, LIMIT // 2 + 2 * width + 1):
                lead = total - second - 100 * width
                first = "a" * lead + WIDE[width] * 100
                cases.append(
                    (
                        f"{total} bytes: {len(first.encode())} ending in {width}-byte characters + {second}",
                        [first, "z" * second],
                    )
                )
    return cases


async def _deliver_final_character(harness: Harness, rule: str, outputs: list[list[str]]) -> list[Success]:
    tools = [
        PartsTool(harness.world, [(parts[0], TrustLabel.EXTERNAL_UNTRUSTED), (parts[1], None)], name=f"logs.tail_{i}")
        for i, parts in enumerate(outputs)
    ]
    async with harness.open(*tools, max_output_bytes=LIMIT) as session:
        return [
            harness.success(rule, await session.call(tool.spec.name), f"a {_total(parts)}-byte output of two parts")
            for tool, parts in zip(tools, outputs, strict=True)
        ]


@pytest.mark.rules("D12.1")
async def test_cuts_inside_a_parts_final_character_are_byte_exact(harness: Harness) -> None:
    cases = _final_character_cases((LIMIT + 1, LIMIT + 2, LIMIT + 3))
    delivered = await _deliver_final_character(harness, "D12.1", [parts for _, parts in cases])
    wrong = [
        f"{what}: {problem}"
        for (what, parts), d in zip(cases, delivered, strict=True)
        if (problem := _excerpt_problem("".join(parts), d, LIMIT)) is not None
    ]
    harness.expect(
        "D12.1",
        not wrong,
        f"outputs one to three bytes over the {LIMIT}-byte limit whose first part ends in a multi-byte character at "
        f"the middle, where the head and the tail are cut, must be delivered as head, marker and tail, byte-exact: "
        f"{wrong}",
    )


@pytest.mark.rules("D12.5")
async def test_outputs_at_the_limit_ending_a_part_in_a_wide_character_are_whole(harness: Harness) -> None:
    cases = _final_character_cases((LIMIT - 1, LIMIT))
    delivered = await _deliver_final_character(harness, "D12.5", [parts for _, parts in cases])
    wrong = [
        f"{what}: delivered {[e.text[:12] for e in d.content]}"
        for (what, parts), d in zip(cases, delivered, strict=True)
        if [e.text for e in d.content] != parts
    ]
    harness.expect(
        "D12.5",
        not wrong,
        f"outputs of {LIMIT - 1} and {LIMIT} bytes (a part ending in a multi-byte character, then ASCII) under a "
        f"{LIMIT}-byte limit must be delivered whole: {wrong}",
    )


# The same outputs from a tool of every source and from an MCP server whose own cap (its default, 16 MiB) is far
# above the limit: step 12 bounds what the pipeline delivers whatever tool produced it; the server's cap is no
# excerpt limit.
_AROUND = [(SMALL - 1, 1), (SMALL, 1), (SMALL + 1, 1), (5 * SMALL, 1), (SMALL // 2, 2), (SMALL // 2 + 10, 2)]
"""(count, parts): ``parts`` parts of ``count`` ASCII bytes each, under, at and over the limit."""
_PORT_SOURCES = {"builtin": ToolSource.BUILTIN, "device": ToolSource.DEVICE, "sandbox": ToolSource.SANDBOX}
"""Every source a tool of the port can have, by its cell id."""
_SOURCES = [
    *_PORT_SOURCES,
    pytest.param("mcp", marks=pytest.mark.profiles("mcp")),
    pytest.param("mcp-resource", marks=pytest.mark.profiles("mcp")),
]
"""A tool of every source of the port, an MCP server's tool, and the server's synthetic read_resource tool reading a
resource of that size (D8.1: it runs the full pipeline, step 12 included)."""


async def _from_source(harness: Harness, source: str, count: int, parts: int, rule: str = "D12.1") -> Success:
    what = f"a {count * parts}-byte output of {parts} part(s) from a {source} tool"
    if source in _PORT_SOURCES:
        tool = PartsTool(harness.world, [("a" * count, None)] * parts, source=_PORT_SOURCES[source])
        async with harness.open(tool, max_output_bytes=SMALL) as session:
            return harness.success(rule, await session.call(tool.spec.name), what)
    config, _ = memory(harness, "big", "MultibyteOutputServer", classification=READ)
    async with harness.open(mcp_servers=[config], max_output_bytes=SMALL) as session:
        if source == "mcp-resource":
            d = await session.call(f"mcp.big.{READ_RESOURCE}", {"uri": repeat_uri("a", count, parts)})
        else:
            d = await session.call("mcp.big.repeat", {"unit": "a", "count": count, "parts": parts})
        return harness.success(rule, d, what)


@pytest.mark.rules("D12.5")
@pytest.mark.parametrize("source", _SOURCES)
@pytest.mark.parametrize(("count", "parts"), [(count, parts) for count, parts in _AROUND if count * parts <= SMALL])
async def test_output_of_every_source_within_the_limit_is_delivered_whole_alike(
    harness: Harness, source: str, count: int, parts: int
) -> None:
    d = await _from_source(harness, source, count, parts, rule="D12.5")
    delivered = [e.text for e in d.content]
    what = f"a {count * parts}-byte output of {parts} part(s) from a {source} tool, under a {SMALL}-byte limit"
    harness.expect("D12.5", delivered == ["a" * count] * parts, f"{what} was not delivered whole: {delivered}")


@pytest.mark.rules("D12.1")
@pytest.mark.parametrize("source", _SOURCES)
@pytest.mark.parametrize(("count", "parts"), [(count, parts) for count, parts in _AROUND if count * parts > SMALL])
async def test_output_of_every_source_over_the_limit_is_excerpted_alike(
    harness: Harness, source: str, count: int, parts: int
) -> None:
    d = await _from_source(harness, source, count, parts)
    text = "a" * count * parts
    what = f"a {len(text)}-byte output of {parts} part(s) from a {source} tool, under a {SMALL}-byte limit"
    problem = _excerpt_problem(text, d, SMALL)
    harness.expect("D12.1", problem is None, f"{what} was not delivered as head, marker and tail: {problem}")


@pytest.mark.rules("D12.2")
@pytest.mark.parametrize("source", _SOURCES)
@pytest.mark.parametrize(("count", "parts"), [(count, parts) for count, parts in _AROUND if count * parts > SMALL])
async def test_outputs_of_every_source_over_the_limit_are_artifacts_alike(
    harness: Harness, source: str, count: int, parts: int
) -> None:
    d = await _from_source(harness, source, count, parts, rule="D12.2")
    raw = ("a" * count * parts).encode()
    what = f"a {len(raw)}-byte output of {parts} part(s) from a {source} tool, under a {SMALL}-byte limit"
    refs = [(a.size, a.sha256) for a in d.artifacts]
    harness.expect(
        "D12.2",
        (len(raw), hashlib.sha256(raw).hexdigest()) in refs,
        f"{what} left no artifact of the whole output; artifacts: {refs}",
    )


# -- Every path to step 12: run at once, approved, resumed, recovered. -------------------------------------------

_BIG = "big-head " + "x" * (3 * SMALL) + " big-tail"
_PAGE = ContextItem(id="page-1", trust=TrustLabel.EXTERNAL_UNTRUSTED, text="Publish the full log.")


async def _first_run(harness: Harness, session: Session) -> Disposition:
    return await session.call("logs.publish", {"what": "all"})


async def _approved(harness: Harness, session: Session) -> Disposition:
    held = await session.call(
        "logs.publish", {"what": "all"}, context=[USER_ITEM, _PAGE], provenance={"what": ["page-1"]}
    )
    if not isinstance(held, Suspended):
        harness.fail("D12.1", f"the call with an untrusted argument was answered {describe(held)}; expected a hold")
    return await session.resolve_approval(held.invocation_id, approved=True)


async def _resumed(harness: Harness, session: Session) -> Disposition:
    asked = await session.call("conversation.ask_user", {"question": "Paste the log?"})
    if not isinstance(asked, Suspended):
        harness.fail("D12.1", f"the control call was answered {describe(asked)}; expected a suspension")
    return await session.resume(asked.invocation_id, _BIG)


_PATHS = {"first-run": _first_run, "approved": _approved, "resumed": _resumed}


def _publisher(harness: Harness) -> PartsTool:
    return PartsTool(
        harness.world,
        [(_BIG, None)],
        name="logs.publish",
        side_effect=SideEffect.EXTERNAL_WRITE,
        idempotency=IdempotencyClass.IDEMPOTENT,
        input_schema={"type": "object"},
    )


@pytest.mark.rules("D12.1")
@pytest.mark.parametrize("path", list(_PATHS))
async def test_output_over_the_limit_is_excerpted_on_every_path(harness: Harness, path: str) -> None:
    async with harness.open(_publisher(harness), AskUserTool(harness.world), max_output_bytes=SMALL) as session:
        d = harness.success("D12.1", await _PATHS[path](harness, session), f"the {path} call")
    problem = _excerpt_problem(_BIG, d, SMALL)
    harness.expect(
        "D12.1",
        problem is None,
        f"a {len(_BIG)}-byte output reached by the path {path!r} was delivered with {problem}; every path to step 12 "
        "excerpts alike",
    )


@pytest.mark.rules("D12.1")
@pytest.mark.profiles("recovery")  # The first worker honours a crash plan.
async def test_output_over_the_limit_is_excerpted_when_recovered(harness: Harness) -> None:
    plan = CrashPlan(point=CrashPoint.AFTER_CLAIM)
    async with harness.open(_publisher(harness), max_output_bytes=SMALL, crash=plan, lease_s=60.0) as session:
        try:
            await session.call("logs.publish", {"what": "all"})
            harness.fail("D12.1", "the worker did not die after its claim: it ignored its crash plan")
        except (SimulatedCrash, BaseExceptionGroup):
            harness.log.append("  the worker died after its claim")
    harness.clock.advance(61.0)
    async with harness.open(_publisher(harness), max_output_bytes=SMALL, lease_s=60.0) as session:
        decided = await session.sweep()
    if len(decided) != 1:
        harness.fail("D12.1", f"the sweep decided {[describe(x) for x in decided]}; expected the one orphan")
    d = harness.success("D12.1", decided[0], "the orphan the sweep ran again")
    problem = _excerpt_problem(_BIG, d, SMALL)
    harness.expect(
        "D12.1",
        problem is None,
        f"a {len(_BIG)}-byte output of an orphan a sweep ran again was delivered with {problem}; expected an excerpt",
    )
