"""Canonical JSON (RFC 8785, JCS) and every hash or key another implementation must reproduce.

One function, ``canonical_json``, turns a JSON value into its RFC 8785 bytes (computed with the
maintained ``rfc8785`` library; the npm ``canonicalize`` package is its counterpart elsewhere), and
every interop digest is ``sha256(canonical_json(material))`` written as 64 lower-case hex digits:

=====================  =====================================================================================
hash or key            material canonicalized
=====================  =====================================================================================
definition hash (D9)   ``{field: tool[field] for field in DEFINITION_FIELDS}`` of the tool's wire (camelCase)
                       form, an absent field as ``null`` (``definition_sha256``)
idempotency key (D10)  ``[KEY_VERSION, tenant, run_id, step_number, call_id, tool_name, tool_version,
                       arguments]``, ``tool_version`` ``null`` for a call that resolved to no tool
call hash (D12)        ``[tool_name, arguments]``: two calls are identical when their call hashes are equal
script hash (D17)      ``[SCRIPT_HASH_VERSION, script, source]``: the script reference and its source text
=====================  =====================================================================================

The vectors in ``spec/vectors/canonical-hashes.json`` pin each of them, with the canonical bytes
written out, for an implementation in any language to check itself against.

Legal input is I-JSON (RFC 7493), the values every JSON parser reads alike: ``None``, booleans,
strings of Unicode scalar values (no lone surrogate), finite numbers, lists or tuples, and dicts
with string keys. A number is its IEEE 754 double, as in JavaScript: ``1`` and ``1.0`` are one
value (``1``), ``-0.0`` is ``0``, and an integer beyond +-(2**53 - 1) is legal only when a double
holds it exactly (``2**64`` is ``18446744073709552000``). ``2**53 + 1`` is refused, not rounded: no
double equals it, so a JavaScript side would read another number than the one Python holds, and
two calls the tool sees as different would share a key. Anything else raises
``CanonicalJsonError`` naming where it sits.

Not interop, and not defined here: the digest of the rule catalog (``catalog_digest``, the bytes of
``rules.toml``), artifact digests (the bytes written), and the JSON the reference stores in its own
columns (``arguments_json``) or prints in reports and logs.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from importlib.resources import files
from typing import Any

import rfc8785

from ._errors import ConfigurationError

SAFE_INTEGER = 2**53 - 1
"""The largest integer magnitude an I-JSON number holds exactly (RFC 7493 section 2.2)."""
KEY_VERSION = "toolproof-key/2"
"""Decision 10's version tag: the first member of the key's material; a changed derivation changes it."""
SCRIPT_HASH_VERSION = "toolproof-script/1"
"""Decision 17's version tag: the first member of the script hash's material."""


class CanonicalJsonError(ConfigurationError):
    """A value has no RFC 8785 form: NaN or an infinity, an integer beyond +-(2**53 - 1), a lone surrogate,
    a non-string key, or a type JSON does not have."""

    def __init__(self, path: str, problem: str, value: object) -> None:
        self.path = path
        """Where the value sits, ``$`` being the whole value (``$.a[2]``)."""
        self.problem = problem
        """What is wrong with it, in words."""
        self.value = value
        """The offending value."""
        super().__init__(
            f"canonical JSON (RFC 8785) has no form for the value at {path}: {problem} (value={_shown(value)}); "
            "use I-JSON values only: finite numbers, integers a double holds exactly, strings without lone surrogates"
        )


def canonical_json(value: object) -> bytes:
    """The RFC 8785 canonical form of ``value``, UTF-8 encoded.

    Raises:
        CanonicalJsonError: ``value`` is not I-JSON (see the module docstring).
    """
    try:
        return rfc8785.dumps(value)  # type: ignore[arg-type]  # Checked below when the library refuses it.
    except (rfc8785.CanonicalizationError, RecursionError, UnicodeError):
        pass  # UnicodeError: the library sorts keys by their UTF-16 form, which a lone surrogate in a key lacks.
    # The library refused: find the first value it could not take, or widen integers a double holds exactly
    # (the library takes only safe integers) and try again. Only this path walks the value.
    found = _illegal(value, "$", 0)
    if found is not None:
        raise CanonicalJsonError(*found)
    return rfc8785.dumps(_widened(value))  # type: ignore[arg-type]


def canonical_sha256(value: object) -> str:
    """``sha256(canonical_json(value))`` as 64 lower-case hex digits.

    Raises:
        CanonicalJsonError: ``value`` is not I-JSON.
    """
    return hashlib.sha256(canonical_json(value)).hexdigest()


def idempotency_key(
    *,
    tenant: str,
    run_id: str,
    step_number: int,
    call_id: str,
    tool_name: str,
    tool_version: str | None,
    arguments: Mapping[str, Any],
) -> str:
    """Decision 10: the key over the version tag and the seven inputs, each its own member; never the attempt.

    Raises:
        CanonicalJsonError: the arguments are not I-JSON.
    """
    material = [KEY_VERSION, tenant, run_id, step_number, call_id, tool_name, tool_version, dict(arguments)]
    return canonical_sha256(material)


def call_hash(tool_name: str, arguments: Mapping[str, Any]) -> str:
    """Decision 12: the identity of a call within a run, the tool name and the canonical arguments.

    Raises:
        CanonicalJsonError: the arguments are not I-JSON.
    """
    return canonical_sha256([tool_name, dict(arguments)])


def script_hash(script: str, source: str) -> str:
    """Decision 17: the hash of a script, from its reference and its source text."""
    return canonical_sha256([SCRIPT_HASH_VERSION, script, source])


def canonical_vectors() -> dict[str, Any]:
    """The cross-language test vectors, ``spec/vectors/canonical-hashes.json``, parsed (its ``description``
    says how to read them)."""
    text = files(__package__).joinpath("vectors", "canonical-hashes.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


_MAX_DEPTH = 500


def _illegal(value: object, path: str, depth: int) -> tuple[str, str, object] | None:
    if depth > _MAX_DEPTH:
        return (path, f"it nests deeper than {_MAX_DEPTH} levels", "...")
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        if abs(value) > SAFE_INTEGER and not _exact_double(value):
            return (path, "no IEEE 754 double equals this integer, so JSON parsers read it differently", value)
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, "NaN and the infinities are not JSON numbers", value)
    if isinstance(value, str):
        if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
            return (path, "a lone surrogate is not a Unicode scalar value", value)
        return None
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = _illegal(item, f"{path}[{index}]", depth + 1)
            if found is not None:
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return (path, "an object key must be a string", key)
            found = _illegal(key, f"{path} (key {key!r})", depth + 1) or _illegal(item, f"{path}.{key}", depth + 1)
            if found is not None:
                return found
        return None
    return (path, f"{type(value).__name__} is not a JSON type", value)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}...({len(text)} characters)"


def _exact_double(number: int) -> bool:
    try:
        return int(float(number)) == number
    except OverflowError:
        return False


def _widened(value: object) -> object:
    # Invariant: ``value`` passed ``_illegal``, so every integer here is safe or held exactly by a double.
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return float(value) if abs(value) > SAFE_INTEGER else value
    if isinstance(value, list | tuple):
        return [_widened(item) for item in value]
    if isinstance(value, dict):
        return {key: _widened(item) for key, item in value.items()}
    return value
