"""The driver protocol's document, as a driver in another language gets it and reads it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import pytest

from toolproof.spec import MemberKind, openapi_document

ROOT = Path(__file__).resolve().parent.parent


def _operations() -> list[tuple[str, dict[str, Any]]]:
    return [(op["operationId"], op) for path in openapi_document()["paths"].values() for op in path.values()]


@pytest.mark.parametrize(("operation_id", "operation"), _operations(), ids=[op for op, _ in _operations()])
def test_every_operation_says_what_the_serving_side_does(operation_id: str, operation: dict[str, Any]) -> None:
    description = operation.get("description", "")
    assert len(description) > 40, f"{operation_id} has no description of its own"
    assert description != operation["summary"]


def _schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = openapi_document()["components"]["schemas"][name]
    return schema


def _said(name: str, field: str) -> str:
    return str(_schema(name)["properties"][field].get("description", ""))


def test_the_document_answers_what_an_implementer_had_to_guess() -> None:
    """The content envelope's source, the marker's label, the keys of targets, what a sweep returns, whether a dead
    instance takes more work, the form of Problem.type, the context's kinds, is_instance and cancellation."""
    operations = dict(_operations())
    assert "registered name" in _said("Envelope", "source")
    assert "excerpt_marker_source" in _said("Envelope", "source")
    assert "marker's label being the implementation's own" in operations["submit"]["description"]
    assert "registered tool's name" in _said("InstanceConfig", "targets")
    assert "one disposition per call the sweep decided" in operations["sweep"]["description"]
    assert "an empty list when there was nothing to do" in operations["sweep"]["description"]
    assert "the instance is dead (it takes no more work" in operations["submit"]["description"]
    assert "bare token" in _said("Problem", "type")
    kinds = _said("ContextMember", "kind")
    assert all(f"``{kind}``" in kinds for kind in get_args(MemberKind))
    assert "the very instance the harness drives" in _said("ContextMember", "is_instance")
    description = openapi_document()["info"]["description"]
    assert "``cancellation`` kind ``object`` with their callable members" in description
    assert "``is_set`` and ``wait``" in description
    assert "``config.crash`` is null" in description
    constants = openapi_document()["x-toolproof"]
    assert constants["tool_crash_points"] == ["before_watermark", "after_watermark", "after_effect"]
    assert constants["context_description_objects"] > 0
    assert "invalid-request" in constants["problem_types"]


def _toolproof(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "toolproof", "protocol", *args]
    return subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd)


@pytest.mark.slow
def test_toolproof_protocol_gives_the_document_from_any_folder(tmp_path: Path) -> None:
    where = _toolproof(cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    path = Path(where.stdout.strip())
    assert path.name == "driver-openapi.json"
    assert json.loads(path.read_text(encoding="utf-8")) == json.loads(json.dumps(openapi_document()))
    assert _toolproof("--path", cwd=tmp_path).stdout == where.stdout
    printed = _toolproof("--print", cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout) == json.loads(json.dumps(openapi_document()))
    # The checked-in file is byte for byte what --print writes: regenerate it with `toolproof protocol --print`.
    assert printed.stdout == (ROOT / "spec" / "driver-openapi.json").read_text(encoding="utf-8")
    both = _toolproof("--path", "--print", cwd=tmp_path)
    assert (both.returncode, both.stderr.strip()) == (2, "toolproof: error: --path and --print: give one of them")


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    following = text.find("\n## ", start + len(heading))
    return text[start : following if following != -1 else len(text)]


@pytest.mark.parametrize(
    ("page", "heading"),
    [("implementers.md", "## From any language: over HTTP"), ("driver-protocol.md", "## The two servers")],
)
def test_the_pages_for_another_language_speak_the_protocols_terms(page: str, heading: str) -> None:
    """No Python vocabulary where the protocol has its own terms, and no notes file as the source of truth."""
    text = _section((ROOT / "docs" / page).read_text(encoding="utf-8"), heading)
    for python in ("spec.SimulatedCrash", "spec.CONTEXT_DESCRIPTION", "cancellation.is_set()", "pydantic"):
        assert python not in text, f"{page}: {python}"
    assert "PROTOCOL-NOTES.md` lists" not in text
