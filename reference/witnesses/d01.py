"""Witnesses of decision 1: ToolResult: what a tool returns, and no status.

Each is the reference with one deliberate defect, named for it; ``breaks`` names the rules it breaks."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from hashlib import sha256
from pathlib import Path
from typing import Any

import anyio

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    FileArtifactWriter,
    Pipeline,
    PipelineHost,
    Resolved,
    resolved_step,
)
from toolproof.spec import (
    ArtifactRef,
    Envelope,
    Outcome,
    ReasonCode,
    Step,
    Success,
    ToolFailure,
    ToolResult,
    ToolSource,
    ToolSpec,
    TrustLabel,
)

from ._registry import witness


@witness("status_honouring", ("D1.1",), "honours a status a result claims and drops fields it does not know")
class _StatusHonouring(Pipeline):
    def parse_result(self, raw: Any) -> ToolResult | None:
        data = raw.model_dump() if hasattr(raw, "model_dump") else raw
        if not isinstance(data, Mapping):
            return None
        if data.get("status") == "DENIED":
            return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_REJECTED"))
        return ToolResult.model_validate({k: v for k, v in data.items() if k in ToolResult.model_fields})


@witness("trusts_ok_flag", ("D1.2", "D1.6"), "believes ok=true over a failure, and files every failure as tool_error")
class _TrustsOkFlag(Pipeline):
    def parse_result(self, raw: Any) -> ToolResult | None:
        found = raw.model_dump() if hasattr(raw, "model_dump") else raw
        if not isinstance(found, Mapping):  # Not a result at all: the reference's own judgement (its one defect aside).
            return super().parse_result(raw)
        data = dict(found)
        if data.get("ok"):
            data.pop("failure", None)
        elif data.get("failure"):
            data["failure"] = {"kind": "ERROR", "detail": data["failure"].get("detail")}
        return super().parse_result(data)


@witness("rejected_filed_unavailable", ("D1.2",), "files a REMOTE_REJECTED failure as remote_unavailable")
class _RejectedFiledUnavailable(Pipeline):
    def parse_result(self, raw: Any) -> ToolResult | None:
        result = super().parse_result(raw)
        if result is not None and result.failure is not None and result.failure.kind == "REMOTE_REJECTED":
            # The mistake: "the remote said no" and "the remote is down" are one bucket.
            return result.model_copy(
                update={"failure": result.failure.model_copy(update={"kind": "REMOTE_UNAVAILABLE"})}
            )
        return result


@witness("bare_not_ok_is_tool_error", ("D1.6",), "reads ok=false without a failure as a plain tool_error")
class _BareNotOkIsToolError(Pipeline):
    def parse_result(self, raw: Any) -> ToolResult | None:
        data = raw.model_dump() if hasattr(raw, "model_dump") else raw
        if isinstance(data, Mapping) and data.get("ok") is False and not data.get("failure"):
            return ToolResult(ok=False, failure=ToolFailure(kind="ERROR"))  # The mistake: a lenient default.
        return super().parse_result(raw)


async def _rejects_unstructured(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    if isinstance(s.disposition, Success) and s.disposition.structured is None:
        s.finish(ReasonCode.INVALID_TOOL_RESULT)


@witness("over_strict_results", ("D1.2",), "rejects a successful result that carries no structured output")
class _OverStrictResults(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _rejects_unstructured}


@resolved_step
async def _raises_trust(p: PipelineHost, s: CallState, r: Resolved) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    result = p.parse_result(s.raw_result)
    if isinstance(s.disposition, Success) and result is not None:
        content = [
            Envelope(trust=part.trust or result.trust or r.spec.output_trust, source=r.spec.name, text=part.text)
            for part in result.content
        ]
        s.disposition = s.disposition.model_copy(update={"content": content})


@witness("trust_raising", ("D1.3",), "takes a result's own trust label, even above the registered one")
class _TrustRaising(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _raises_trust}


@resolved_step
async def _skips_output_schema(p: PipelineHost, s: CallState, r: Resolved) -> None:
    if r.spec.output_schema is not None:
        s.resolved = replace(r, spec=r.spec.model_copy(update={"output_schema": {}}))
    await STEP_TABLE[Step.NORMALIZE](p, s)


@witness("unvalidated_structure", ("D1.4",), "delivers structured output without checking the output schema")
class _UnvalidatedStructure(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _skips_output_schema}


async def _drops_structure(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    if isinstance(s.disposition, Success):
        content = [e.model_copy(update={"source": "tool"}) for e in s.disposition.content]
        s.disposition = s.disposition.model_copy(update={"structured": None, "content": content})


@witness("drops_structure", ("D1.5",), "drops structured output and names no source on delivered content")
class _DropsStructure(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _drops_structure}


async def _structure_without_schema(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    d, resolved = s.disposition, s.resolved
    if not (isinstance(d, Outcome) and d.reason_code is ReasonCode.INVALID_TOOL_RESULT and resolved is not None):
        return
    result = p.parse_result(s.raw_result)
    spec = resolved.spec
    if result is None or result.failure is not None or result.structured is None or spec.output_schema is not None:
        return
    # The mistake: no schema, nothing to validate against, so the structure passes as it is.
    s.disposition = Success(
        invocation_id=s.invocation_id,
        content=[Envelope(trust=spec.output_trust, source=spec.name, text=part.text) for part in result.content],
        structured=result.structured,
        artifacts=list(result.artifacts),
    )


@witness("structure_without_schema_passes", ("D1.4",), "delivers structure from a tool that declares no output schema")
class _StructureWithoutSchemaPasses(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _structure_without_schema}


_excerpt = STEP_TABLE[Step.EXCERPT]


async def _excerpt_keeps_only_the_whole(p: PipelineHost, s: CallState) -> None:
    before = s.disposition
    await _excerpt(p, s)
    if s.disposition is not before and isinstance(s.disposition, Success):
        # The defect: once excerpted, "the artifact is the output", so the tool's own artifacts are dropped.
        s.disposition = s.disposition.model_copy(update={"artifacts": s.disposition.artifacts[-1:]})


@witness("excerpt_drops_tool_artifacts", ("D1.5",), "an excerpted success carries only the whole output's artifact")
class _ExcerptDropsToolArtifacts(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_keeps_only_the_whole}


class _OverwritingWriter(FileArtifactWriter):
    """Stores each artifact under its name made safe, whatever was stored under that name before."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.folder = directory
        self.stored: list[ArtifactRef] = []

    async def write(self, name: str, data: bytes) -> ArtifactRef:
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "artifact"
        self.folder.mkdir(parents=True, exist_ok=True)
        path = anyio.Path(self.folder / safe)
        await path.write_bytes(data)  # The mistake: a name written before is simply written over.
        ref = ArtifactRef(name=name, uri=(self.folder / safe).as_uri(), size=len(data), sha256=sha256(data).hexdigest())
        self.stored.append(ref)
        return ref

    def written(self) -> list[ArtifactRef]:
        return [*self.stored, *super().written()]


@witness("artifacts_overwrite_by_name", ("D1.5",), "stores a tool's artifacts by name, a later one over an earlier")
class _ArtifactsOverwriteByName(Pipeline):
    def artifact_writer(self, directory: Path) -> FileArtifactWriter:
        return _OverwritingWriter(directory)


def _alphabetical_min(*labels: TrustLabel) -> TrustLabel:
    # The defect: labels ordered as the strings they are, where EXTERNAL_UNTRUSTED < INTERNAL < OPERATOR < SYSTEM < USER.
    return TrustLabel(min(label.value for label in labels))


@resolved_step
async def _trust_compared_as_strings(p: PipelineHost, s: CallState, r: Resolved) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    result = p.parse_result(s.raw_result)
    if isinstance(s.disposition, Success) and result is not None:
        floor = r.spec.output_trust if result.trust is None else _alphabetical_min(r.spec.output_trust, result.trust)
        content = [
            Envelope(
                trust=floor if part.trust is None else _alphabetical_min(floor, part.trust),
                source=r.spec.name,
                text=part.text,
            )
            for part in result.content
        ]
        s.disposition = s.disposition.model_copy(update={"content": content})


@witness("trust_compared_as_strings", ("D1.3",), "takes the lower of two labels as the alphabetically first")
class _TrustComparedAsStrings(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _trust_compared_as_strings}


async def _whole_output_artifact_always(p: PipelineHost, s: CallState) -> None:
    await _excerpt(p, s)
    d = s.disposition
    if not isinstance(d, Success) or s.prepared is None:
        return
    if any(a.name == "full-output.txt" for a in d.artifacts):
        return
    # The defect: "every output is kept whole", so an output under the limit gets the whole-output artifact too.
    whole = "".join(e.text for e in d.content).encode()
    ref = await s.prepared.parts.artifact_writer.write("full-output.txt", whole)
    s.disposition = d.model_copy(update={"artifacts": [*d.artifacts, ref]})


@witness(
    "whole_output_artifact_always", ("D1.5",), "adds the whole output's artifact to every success, excerpted or not"
)
class _WholeOutputArtifactAlways(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _whole_output_artifact_always}


def _declared_only(value: Any, schema: Any) -> Any:
    """``value`` with every object member its schema does not declare left out, at every depth."""
    if isinstance(value, dict) and isinstance(schema, Mapping):
        declared = schema.get("properties", {})
        return {k: _declared_only(v, declared[k]) for k, v in value.items() if k in declared}
    if isinstance(value, list) and isinstance(schema, Mapping):
        return [_declared_only(item, schema.get("items", {})) for item in value]
    return value


@witness("structure_extra_members_ignored", ("D1.4",), "validates only the members the output schema declares")
class _StructureExtraMembersIgnored(Pipeline):
    def accepts_structure(self, spec: ToolSpec, result: ToolResult) -> bool:
        if result.structured is None or spec.output_schema is None:
            return super().accepts_structure(spec, result)
        # The defect: members the schema does not name "are the tool's business", so they are not validated.
        trimmed = _declared_only(result.structured, spec.output_schema)
        return super().accepts_structure(spec, result.model_copy(update={"structured": trimmed}))


async def _excerpt_without_structure(p: PipelineHost, s: CallState) -> None:
    before = s.disposition
    await STEP_TABLE[Step.EXCERPT](p, s)
    after = s.disposition
    if isinstance(before, Success) and isinstance(after, Success) and len(after.artifacts) > len(before.artifacts):
        # The defect: an output too large to deliver whole is taken to have a structure too large to deliver too.
        s.disposition = after.model_copy(update={"structured": None})


@witness("excerpt_drops_structure", ("D1.5",), "delivers an excerpted output without its validated structure")
class _ExcerptDropsStructure(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_without_structure}


async def _excerpt_leaving_out_empty_parts(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.EXCERPT](p, s)
    d = s.disposition
    if isinstance(d, Success) and any(not e.text for e in d.content):
        # The defect: a part with no text has nothing to show, so it is not delivered.
        s.disposition = d.model_copy(update={"content": [e for e in d.content if e.text]})


@witness("empty_parts_left_out", ("D1.5",), "leaves a result's empty content parts out of the delivered content")
class _EmptyPartsLeftOut(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_leaving_out_empty_parts}


@witness("device_structure_unvalidated", ("D1.4",), "delivers a DEVICE tool's structure without validating it")
class _DeviceStructureUnvalidated(Pipeline):
    def accepts_structure(self, spec: ToolSpec, result: ToolResult) -> bool:
        # The defect: a device's firmware shapes its readings, so its structure is taken as it comes.
        return spec.source is ToolSource.DEVICE or super().accepts_structure(spec, result)
