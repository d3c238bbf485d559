"""Decision 1: what a tool returns, and that it cannot return a status."""

from __future__ import annotations

import hashlib
from urllib.parse import urlparse
from urllib.request import url2pathname

import anyio
import pytest

from toolproof.fakes import ClaimsStatusTool, EchoTool, FailsTool, FakeTool, ReturnsTool, World
from toolproof.spec import (
    FAILURE_REASONS,
    OUTCOME_TABLE,
    ArtifactRef,
    ContentPart,
    FailureKind,
    InvocationStatus,
    JsonObject,
    NotCovered,
    Outcome,
    ReasonCode,
    Success,
    ToolExecutionContext,
    ToolResult,
    ToolSource,
    TrustLabel,
)

from ._harness import Harness, describe


class _ResultWithStatus(ToolResult):
    """A ToolResult subclass that smuggles a status field."""

    status: str = "UNCERTAIN"


def _invalid_result(d: object) -> bool:
    return (
        isinstance(d, Outcome)
        and d.status is InvocationStatus.FAILED
        and d.reason_code is ReasonCode.INVALID_TOOL_RESULT
    )


@pytest.mark.rules("D1.1")
async def test_result_claiming_a_status_completes_failed_invalid(harness: Harness) -> None:
    tool = ClaimsStatusTool(harness.world, status="DENIED")
    async with harness.open(tool) as session:
        d = await session.call(tool.spec.name)
    harness.expect("D1.1", _invalid_result(d), f"a result claiming status DENIED was answered {d!r}")


@pytest.mark.rules("D1.1")
async def test_result_subclass_smuggling_a_status_is_invalid(harness: Harness) -> None:
    tool = ReturnsTool(harness.world, _ResultWithStatus(ok=True, content=[ContentPart(text="done")]))
    async with harness.open(tool) as session:
        d = await session.call(tool.spec.name)
    harness.expect("D1.1", _invalid_result(d), f"a ToolResult carrying status=UNCERTAIN was answered {d!r}")


@pytest.mark.rules("D1.2")
async def test_ok_result_completes_succeeded(harness: Harness) -> None:
    tool = EchoTool(harness.world)
    async with harness.open(tool) as session:
        d = await session.call(tool.spec.name, {"text": "hello"})
    harness.expect("D1.2", isinstance(d, Success), f"ok=true was answered {d!r}")


@pytest.mark.rules("D1.2")
@pytest.mark.parametrize("kind", list(FailureKind))
async def test_failure_completes_with_the_status_the_table_assigns(harness: Harness, kind: FailureKind) -> None:
    tool = FailsTool(harness.world, kind=kind.value)
    async with harness.open(tool) as session:
        d = await session.call(tool.spec.name)
    reason = FAILURE_REASONS[kind]
    status = OUTCOME_TABLE[reason].status
    harness.expect(
        "D1.2",
        isinstance(d, Outcome) and d.status is status and d.reason_code is reason,
        f"a {kind.value} failure was answered {d!r}; expected {status.value} {reason.value}",
    )


@pytest.mark.rules("D1.6")
@pytest.mark.parametrize(
    "result",
    [
        {"ok": True, "failure": {"kind": "ERROR"}, "content": [{"text": "fine"}]},
        {"ok": True, "failure": {"kind": "TRANSIENT", "detail": "retry"}},
        {"ok": False, "content": [{"text": "it did not work"}]},
        {"ok": False},
    ],
    ids=["ok-with-failure", "ok-with-transient-failure", "not-ok-with-content-no-failure", "not-ok-bare"],
)
async def test_ok_and_failure_that_disagree_are_invalid(harness: Harness, result: JsonObject) -> None:
    tool = ReturnsTool(harness.world, result)
    async with harness.open(tool) as session:
        d = await session.call(tool.spec.name)
    harness.expect("D1.6", _invalid_result(d), f"the result {result} was answered {d!r}; expected FAILED invalid")


class _LabelsTool(FakeTool):
    """Returns one part claiming SYSTEM and one lowering itself to EXTERNAL_UNTRUSTED, with a whole-result label."""

    default_name = "docs.fetch"

    def __init__(self, world: World, result_trust: TrustLabel | None) -> None:
        super().__init__(world, output_trust=TrustLabel.INTERNAL)
        self.result_trust = result_trust

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        return ToolResult(
            ok=True,
            trust=self.result_trust,
            content=[
                ContentPart(text="summary", trust=TrustLabel.SYSTEM),
                ContentPart(text="quoted page", trust=TrustLabel.EXTERNAL_UNTRUSTED),
            ],
        )


@pytest.mark.rules("D1.3")
async def test_result_cannot_raise_its_trust_label(harness: Harness) -> None:
    tool = _LabelsTool(harness.world, result_trust=TrustLabel.SYSTEM)
    async with harness.open(tool) as session:
        d = harness.success("D1.3", await session.call(tool.spec.name))
    labels = [e.trust for e in d.content]
    harness.expect(
        "D1.3",
        labels[:1] == [TrustLabel.INTERNAL],
        f"a tool registered at INTERNAL claimed SYSTEM and its output was labelled {labels[:1]}",
    )


@pytest.mark.rules("D1.3")
async def test_result_may_lower_its_trust_label(harness: Harness) -> None:
    tool = _LabelsTool(harness.world, result_trust=None)
    async with harness.open(tool) as session:
        d = harness.success("D1.3", await session.call(tool.spec.name))
    labels = [e.trust for e in d.content]
    harness.expect(
        "D1.3",
        labels == [TrustLabel.INTERNAL, TrustLabel.EXTERNAL_UNTRUSTED],
        f"parts labelled [SYSTEM claim, EXTERNAL_UNTRUSTED] by an INTERNAL tool were delivered as {labels}",
    )
    whole = _LabelsTool(harness.world, result_trust=TrustLabel.EXTERNAL_UNTRUSTED)
    async with harness.open(whole) as session:
        d = harness.success("D1.3", await session.call(whole.spec.name, step_number=2))
    labels = [e.trust for e in d.content]
    harness.expect(
        "D1.3",
        set(labels) == {TrustLabel.EXTERNAL_UNTRUSTED},
        f"a result lowering itself to EXTERNAL_UNTRUSTED was delivered as {labels}",
    )


class _ClaimsTool(FakeTool):
    """Returns two parts: one claiming ``part``, one unlabelled, under a whole-result claim of ``whole``."""

    default_name = "docs.claims"

    def __init__(self, world: World, registered: TrustLabel, whole: TrustLabel | None, part: TrustLabel) -> None:
        super().__init__(world, output_trust=registered)
        self.whole, self.part = whole, part

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        return ToolResult(
            ok=True, trust=self.whole, content=[ContentPart(text="claimed", trust=self.part), ContentPart(text="plain")]
        )


@pytest.mark.rules("D1.3")
@pytest.mark.parametrize("registered", list(TrustLabel))
async def test_every_claim_against_every_registered_label_only_lowers(harness: Harness, registered: TrustLabel) -> None:
    # Every registered label against every claim, on the whole result and on one part: the delivered label is the
    # lower by trust (SYSTEM > OPERATOR > USER > INTERNAL > EXTERNAL_UNTRUSTED), never by the label's spelling.
    wrong: list[str] = []
    step = 0
    for claim in TrustLabel:
        for where in ("whole", "part"):
            step += 1
            tool = _ClaimsTool(
                harness.world,
                registered,
                whole=claim if where == "whole" else None,
                part=claim if where == "part" else registered,
            )
            async with harness.open(tool) as session:
                d = harness.success("D1.3", await session.call(tool.spec.name, run_id=f"run-{step}"))
            floor = min(registered, claim) if where == "whole" else registered
            want = [min(floor, claim), floor]
            got = [e.trust for e in d.content]
            if got != want:
                wrong.append(
                    f"claim {claim.value} on the {where}: delivered {[g.value for g in got]}, expected "
                    f"{[w.value for w in want]}"
                )
    harness.expect(
        "D1.3",
        not wrong,
        f"a tool registered at {registered.value}: " + "; ".join(wrong) + " (a claim only lowers the label)",
    )


_COUNT_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"count": {"type": "integer"}},
    "required": ["count"],
    "additionalProperties": False,
}


@pytest.mark.rules("D1.4")
async def test_structure_that_violates_the_output_schema_is_invalid(harness: Harness) -> None:
    bad = ToolResult(ok=True, structured={"count": "many"})
    tool = ReturnsTool(harness.world, bad, name="stats.count", output_schema=_COUNT_SCHEMA)
    async with harness.open(tool) as session:
        d = await session.call(tool.spec.name)
    harness.expect("D1.4", _invalid_result(d), f"structure {{'count': 'many'}} against an integer schema gave {d!r}")


_NESTED_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "count": {"type": "integer"},
        "items": {
            "type": "array",
            "items": {"type": "object", "properties": {"id": {"type": "string"}}, "additionalProperties": False},
        },
        "meta": {"type": "object", "properties": {"page": {"type": "integer"}}, "additionalProperties": False},
    },
    "required": ["count"],
    "additionalProperties": False,
}

_NOT_VALID: dict[str, JsonObject] = {
    "wrong-type": {"count": "many"},
    "missing-required": {"items": []},
    "extra-top-level": {"count": 1, "status": "DENIED"},
    "extra-in-nested-object": {"count": 1, "meta": {"page": 1, "note": "x"}},
    "extra-in-array-item": {"count": 1, "items": [{"id": "a"}, {"id": "b", "admin": True}]},
    "wrong-type-in-array-item": {"count": 1, "items": [{"id": 7}]},
}
"""Structures the schema refuses, each in one way: a type, a required member, and an extra member at every depth."""


SOURCES = [ToolSource.BUILTIN, ToolSource.DEVICE, ToolSource.SANDBOX]
"""Every source a tool of the port can have (an MCP tool's structure is the adapter's: see D8's scenarios)."""


@pytest.mark.rules("D1.4")
@pytest.mark.parametrize("source", SOURCES, ids=[s.value for s in SOURCES])
async def test_structure_refused_by_the_schema_in_any_way_is_invalid(harness: Harness, source: ToolSource) -> None:
    # Every source alike: a device's or a sandbox's structure is validated as a builtin's is.
    tools = [
        ReturnsTool(
            harness.world,
            ToolResult(ok=True, structured=structure),
            name=f"stats.count_{i}",
            output_schema=_NESTED_SCHEMA,
            source=source,
        )
        for i, structure in enumerate([*_NOT_VALID.values(), {"count": 2, "items": [{"id": "a"}], "meta": {"page": 1}}])
    ]
    async with harness.open(*tools) as session:
        answers = [await session.call(tool.spec.name) for tool in tools]
    wrong = [f"{case}: {describe(d)}" for case, d in zip(_NOT_VALID, answers, strict=False) if not _invalid_result(d)]
    harness.expect(
        "D1.4",
        not wrong,
        f"structures the output schema refuses were delivered by a {source.value} tool: {wrong}; each must complete "
        "FAILED invalid_tool_result",
    )
    harness.expect(
        "D1.4",
        isinstance(answers[-1], Success),
        f"a structure the output schema accepts from a {source.value} tool was answered {describe(answers[-1])}; "
        "expected it delivered",
    )


@pytest.mark.rules("D1.4")
@pytest.mark.parametrize(
    "result",
    [
        ToolResult(ok=True, structured={"x": 1}),
        ToolResult(ok=True, content=[ContentPart(text="3 files")], structured={"count": 3}),
        ToolResult(ok=True, structured={}),
    ],
    ids=["structure-only", "content-and-structure", "empty-structure"],
)
@pytest.mark.parametrize("source", SOURCES, ids=[s.value for s in SOURCES])
async def test_structure_from_a_tool_without_output_schema_is_invalid(
    harness: Harness, result: ToolResult, source: ToolSource
) -> None:
    tool = ReturnsTool(harness.world, result, name="stats.count", output_schema=None, source=source)
    async with harness.open(tool) as session:
        d = await session.call(tool.spec.name)
    harness.expect(
        "D1.4",
        _invalid_result(d) and not isinstance(d, Success),
        f"a {source.value} tool with no output schema returned structure {result.structured!r} and was answered "
        f"{d!r}; structure "
        "that cannot be validated is an invalid result",
    )


@pytest.mark.rules("D1.5")
async def test_accepted_result_is_delivered_unchanged(harness: Harness) -> None:
    good = ToolResult(ok=True, content=[ContentPart(text="3 files")], structured={"count": 3})
    tool = ReturnsTool(harness.world, good, name="stats.count", output_schema=_COUNT_SCHEMA)
    async with harness.open(tool) as session:
        d = await session.call(tool.spec.name)
    harness.expect(
        "D1.5",
        isinstance(d, Success)
        and d.structured == {"count": 3}
        and [(e.text, e.source) for e in d.content] == [("3 files", "stats.count")],
        f"expected content '3 files' from stats.count and structure {{'count': 3}}, got {d!r}",
    )


_WITH_EMPTY_PARTS: dict[str, list[str]] = {
    "first": ["", "a", "b"],
    "middle": ["a", "", "b"],
    "last": ["a", "b", ""],
    "several": ["", "a", "", "", "b", ""],
    "only": [""],
    "all": ["", "", ""],
}
"""Contents with empty parts at every place, under the output limit."""


@pytest.mark.rules("D1.5")
@pytest.mark.parametrize("texts", list(_WITH_EMPTY_PARTS.values()), ids=list(_WITH_EMPTY_PARTS))
async def test_every_content_part_is_delivered_empty_ones_too(harness: Harness, texts: list[str]) -> None:
    # Content is delivered unchanged: one envelope per part, in order, an empty part's too.
    result = ToolResult(ok=True, content=[ContentPart(text=text) for text in texts])
    tool = ReturnsTool(harness.world, result, name="notes.parts")
    async with harness.open(tool) as session:
        d = await session.call(tool.spec.name)
    delivered = [(e.text, e.source) for e in d.content] if isinstance(d, Success) else describe(d)
    harness.expect(
        "D1.5",
        delivered == [(text, "notes.parts") for text in texts],
        f"a result of parts {texts} was delivered as {delivered}; every part, empty or not, keeps its envelope",
    )


class _ArtifactsTool(FakeTool):
    """Writes ``count`` artifacts of its own through the context's writer and returns them with ``parts``."""

    def __init__(self, world: World, name: str, count: int, parts: list[str]) -> None:
        super().__init__(world, name=name)
        self.count = count
        self.parts = parts

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        refs = [
            await context.artifact_writer.write(f"report-{i}.csv", f"row,{i}\n{self.spec.name},{i}\n".encode())
            for i in range(self.count)
        ]
        self.world.observations[self.spec.name] = refs
        return ToolResult(ok=True, content=[ContentPart(text=text) for text in self.parts], artifacts=refs)


_LIMIT = 100


def _artifact_cases() -> list[tuple[str, int, list[str]]]:
    """A tool's own artifacts (0 to 3) beside output under, at, just over and far over the limit, in one or two
    parts: the excerpt of decision 12 must change only the content (and add the whole output's artifact)."""
    cases = []
    for count in range(4):
        for total in (_LIMIT - 1, _LIMIT, _LIMIT + 1, 3 * _LIMIT):
            for pieces in (1, 2):
                first = total // pieces
                parts = ["x" * first, "y" * (total - first)][:pieces]
                cases.append((f"{count} artifact(s), {total} bytes in {pieces} part(s)", count, parts))
    return cases


@pytest.mark.rules("D1.5")
async def test_tool_artifacts_are_delivered_whatever_the_output_size(harness: Harness) -> None:
    cases = _artifact_cases()
    tools = [
        _ArtifactsTool(harness.world, f"reports.build_{i}", count, parts) for i, (_, count, parts) in enumerate(cases)
    ]
    wrong = []
    async with harness.open(*tools, max_output_bytes=_LIMIT) as session:
        for (what, _, parts), tool in zip(cases, tools, strict=True):
            d = harness.success("D1.5", await session.call(tool.spec.name), what)
            own: list[ArtifactRef] = harness.world.observations.get(tool.spec.name, [])
            raw = "".join(parts).encode()
            whole = (len(raw), hashlib.sha256(raw).hexdigest())
            kept = [a for a in d.artifacts if (a.size, a.sha256) != whole]
            added = len(d.artifacts) - len(kept)
            if kept != own or added != (1 if len(raw) > _LIMIT else 0):
                wrong.append(
                    f"{what}: the tool returned {[a.name for a in own]}, delivered {[a.name for a in d.artifacts]}"
                )
            for i, ref in enumerate(kept):
                problem = await harness.holds("D1.5", ref, f"row,{i}\n{tool.spec.name},{i}\n".encode())
                if problem is not None:
                    wrong.append(f"{what}: {problem}")
    harness.expect(
        "D1.5",
        not wrong,
        "the artifacts a tool returns must be delivered with its success unchanged, in order, whether or not its output "
        "is excerpted, and an excerpt adds the whole output's artifact, which an output within the limit does not "
        f"get: {wrong}",
    )


@pytest.mark.rules("D1.5")
async def test_structure_is_delivered_whatever_the_output_size(harness: Harness) -> None:
    # The same validated structure beside output under, at, just over and far over the limit, in one or two parts:
    # an excerpt changes only the content (and adds the whole output's artifact), never the structure.
    cases = []
    for total in (_LIMIT - 1, _LIMIT, _LIMIT + 1, 3 * _LIMIT):
        for pieces in (1, 2):
            first = total // pieces
            parts = ["x" * first, "y" * (total - first)][:pieces]
            cases.append((f"{total} bytes in {pieces} part(s)", parts))
    tools = [
        ReturnsTool(
            harness.world,
            ToolResult(ok=True, content=[ContentPart(text=text) for text in parts], structured={"count": n}),
            name=f"stats.count_{n}",
            output_schema=_COUNT_SCHEMA,
        )
        for n, (_, parts) in enumerate(cases)
    ]
    wrong = []
    async with harness.open(*tools, max_output_bytes=_LIMIT) as session:
        for n, ((what, _), tool) in enumerate(zip(cases, tools, strict=True)):
            d = harness.success("D1.5", await session.call(tool.spec.name), what)
            if d.structured != {"count": n}:
                wrong.append(f"{what}: structure {d.structured!r}, the tool returned {{'count': {n}}}")
    harness.expect(
        "D1.5",
        not wrong,
        "a result's validated structure must be delivered with its success unchanged, whether or not its output is "
        f"excerpted: {wrong}",
    )


class _NamedArtifactsTool(FakeTool):
    """Writes one artifact per ``(name, bytes)`` through the context's writer, then returns ``parts``."""

    def __init__(self, world: World, name: str, artifacts: list[tuple[str, bytes]], parts: list[str]) -> None:
        super().__init__(world, name=name)
        self.artifacts = artifacts
        self.parts = parts

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        refs = [await context.artifact_writer.write(name, data) for name, data in self.artifacts]
        return ToolResult(ok=True, content=[ContentPart(text=text) for text in self.parts], artifacts=refs)


# Names an implementation may also use for what it stores (the whole output of an excerpt), names written twice,
# and names that a file system would reduce to one another.
_COLLIDING = [
    ("full-output.txt", b"the tool's own full-output.txt\n"),
    ("output.txt", b"the tool's own output.txt\n"),
    ("a.txt", b"first a.txt\n"),
    ("a.txt", b"second a.txt, longer\n"),
    ("b c.txt", b"b space c\n"),
    ("b_c.txt", b"b underscore c\n"),
    ("B_C.txt", b"capital B_C\n"),
]


@pytest.mark.rules("D1.5")
@pytest.mark.parametrize("total", [_LIMIT - 1, _LIMIT + 1, 3 * _LIMIT])
async def test_every_delivered_artifact_holds_the_bytes_its_reference_names(harness: Harness, total: int) -> None:
    tool = _NamedArtifactsTool(harness.world, "reports.build", _COLLIDING, ["z" * total])
    wrong = []
    async with harness.open(tool, max_output_bytes=_LIMIT) as session:
        d = harness.success("D1.5", await session.call(tool.spec.name), f"a tool writing artifacts, {total} bytes")
        readable = [a for a in d.artifacts if a.uri.startswith("file:")]
        if not readable:
            raise NotCovered("D1.5", f"no delivered artifact has a file: URI the harness can read ({d.artifacts})")
        for ref in readable:
            path = anyio.Path(url2pathname(urlparse(ref.uri).path))
            data = await path.read_bytes() if await path.is_file() else None
            if data is None or (len(data), hashlib.sha256(data).hexdigest()) != (ref.size, ref.sha256):
                shown = "nothing" if data is None else f"{len(data)} bytes"
                wrong.append(f"{ref.name} ({ref.uri}): the reference says {ref.size} bytes, the store holds {shown}")
    harness.expect(
        "D1.5",
        not wrong,
        f"an artifact's stored bytes changed after its reference was made (names collide in the store): {wrong}",
    )
