"""What ``execute`` returned or raised, judged and described on the spot.

A confined example runs in a child process, and what a tool returns need not pickle, so an
attempt keeps only these judgements and descriptions, never the object itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema
from pydantic import BaseModel, ValidationError

from toolproof.spec import ToolResult, ToolSpec

from ._transport import REMOTE_ERROR_TEXT

_FIELDS = frozenset(ToolResult.model_fields)


def judge_result(spec: ToolSpec, raw: Any) -> list[tuple[str, str]]:
    """Rules on what ``execute`` returned: no status, a consistent ToolResult, trust only lowered, valid structure."""
    if isinstance(raw, BaseModel):
        data = raw.model_dump()
    elif isinstance(raw, Mapping):
        data = dict(raw)
    else:
        return [("D1.2", f"execute returned {type(raw).__name__}, not a ToolResult")]
    seen: list[tuple[str, str]] = []
    extra = sorted(set(map(str, data)) - _FIELDS)
    status = data.get("status", getattr(raw, "status", None) if isinstance(raw, BaseModel) else None)
    if status is not None:
        seen.append(("D1.1", f"the result claims status={status!r}; a tool cannot set the status"))
    elif extra:
        seen.append(("D1.1", f"the result carries fields ToolResult does not define: {', '.join(extra)}"))
    try:
        result = ToolResult.model_validate({k: v for k, v in data.items() if k in _FIELDS})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'result'}: {e['msg']}" for e in exc.errors(include_url=False)
        )
        return [*seen, ("D1.2", f"the result is not a valid ToolResult: {problems}")]
    ceiling = spec.output_trust
    if result.trust is not None and result.trust > ceiling:
        seen.append(("D1.3", f"the result claims trust={result.trust.value} above output_trust={ceiling.value}"))
    else:
        raised = [part.trust for part in result.content if part.trust is not None and part.trust > ceiling]
        if raised:
            seen.append(("D1.3", f"a content part claims trust={raised[0].value} above output_trust={ceiling.value}"))
    if result.structured is not None:
        if spec.output_schema is None:
            seen.append(("D1.4", "the result carries structured output but the spec declares no output_schema"))
        else:
            try:
                jsonschema.validate(result.structured, spec.output_schema)
            except jsonschema.ValidationError as exc:
                seen.append(("D1.4", f"structured output does not validate: {exc.message}"))
    return seen


def reports_ok(raw: Any) -> bool:
    """Whether the result is a ToolResult or mapping that says ok=True (the repeat is compared only then)."""
    if isinstance(raw, Mapping):
        return bool(raw.get("ok"))
    return isinstance(raw, ToolResult) and raw.ok


def narrated(raw: Any) -> str | None:
    """Where the 503's remote text appears outside ``failure.detail`` (``content[0]``, ``structured output``)."""
    marker = REMOTE_ERROR_TEXT.split(":")[0]
    data = raw.model_dump() if isinstance(raw, BaseModel) else dict(raw) if isinstance(raw, Mapping) else {}
    for index, part in enumerate(data.get("content") or []):
        text = part.get("text", "") if isinstance(part, Mapping) else str(part)
        if marker in str(text):
            return f"content[{index}]"
    if marker in json.dumps(data.get("structured"), default=str):
        return "structured output"
    return None


def describe_result(raw: Any) -> str:
    """What ``execute`` returned, as the trace shows it (never a repr with an address)."""
    if isinstance(raw, ToolResult) and type(raw) is ToolResult:
        extra = f", failure={raw.failure.kind}" if raw.failure else ""
        extra += f", trust={raw.trust.value}" if raw.trust else ""
        return f"returned ToolResult(ok={raw.ok}{extra})"
    if isinstance(raw, BaseModel):
        return f"returned {type(raw).__name__} with fields {sorted(raw.model_dump())}"
    if isinstance(raw, Mapping):
        return f"returned a {type(raw).__name__} with keys {sorted(map(str, raw))}"
    return f"returned {type(raw).__name__}"


def describe_error(exc: BaseException) -> str:
    """An exception as the trace shows it."""
    text = str(exc)
    text = text if len(text) <= 160 else text[:157] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
