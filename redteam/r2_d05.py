"""Round 2, decision 5: the name grammar, its length cap, normalization and resolution."""

from __future__ import annotations

import re
import unicodedata

from toolproof.reference.hooks import McpAdapter, McpTool, Pipeline, ReferenceImplementation, Registry
from toolproof.spec import (
    MAX_NAME_LENGTH,
    RESERVED_DOMAINS,
    ConfigurationError,
    ReasonCode,
    Tool,
    ToolSource,
    ToolSpec,
    TrustLabel,
    domain_of,
)

from ._common import impl

_UNTRUSTED_SOURCES = frozenset({ToolSource.MCP, ToolSource.DEVICE, ToolSource.SANDBOX})
_SEGMENTS = r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+"


def _admit(spec: ToolSpec, name_ok: bool) -> ToolSpec:
    """The reference's admission with the grammar verdict supplied by the caller."""
    if not name_ok:
        raise ConfigurationError(f"tool name {spec.name!r} does not match the grammar (D5.1)")
    if spec.source is not ToolSource.MCP and domain_of(spec.name) in RESERVED_DOMAINS:
        raise ConfigurationError(f"tool {spec.name!r} is a builtin in a reserved domain (D5.2)")
    if spec.source in _UNTRUSTED_SOURCES and spec.output_trust is not TrustLabel.EXTERNAL_UNTRUSTED:
        spec = spec.model_copy(update={"output_trust": TrustLabel.EXTERNAL_UNTRUSTED})
    return spec


class _CapExclusive(Registry):
    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        # The mistake: "at most 128" written as a strict comparison, so a 128-character name is refused.
        ok = len(spec.name) < MAX_NAME_LENGTH and re.fullmatch(_SEGMENTS, spec.name) is not None
        return _admit(spec, ok)


class _CapExclusivePipeline(Pipeline):
    registry_class = _CapExclusive


def name_cap_exclusive() -> ReferenceImplementation:
    """D5 "Registry names match a fixed grammar" (cap 128 characters): the length check is ``len(name) < 128``, so
    a grammatical builtin name of exactly 128 characters is a startup error (limit refused; 127 accepted)."""
    return impl("r2-d05-name-cap-exclusive", _CapExclusivePipeline)


class _Uncapped(Registry):
    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        # The mistake: the grammar is checked, the length cap forgotten.
        return _admit(spec, re.fullmatch(_SEGMENTS, spec.name) is not None)


class _UncappedPipeline(Pipeline):
    registry_class = _Uncapped


def name_length_uncapped() -> ReferenceImplementation:
    """D5 "a fixed grammar" (cap 128 characters): only the segment grammar is checked, so a builtin name of 129 (or
    1000) grammatical characters registers instead of being a startup error."""
    return impl("r2-d05-name-length-uncapped", _UncappedPipeline)


class _DollarGrammar(Registry):
    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        # The mistake: ``re.match(r"^...$")``; Python's ``$`` also matches before a trailing newline.
        ok = len(spec.name) <= MAX_NAME_LENGTH and re.match(rf"^{_SEGMENTS}$", spec.name) is not None
        return _admit(spec, ok)


class _DollarPipeline(Pipeline):
    registry_class = _DollarGrammar


def grammar_dollar_accepts_newline() -> ReferenceImplementation:
    """D5 "a fixed grammar": the grammar is checked with ``re.match(r"^...$")``, whose ``$`` matches before a final
    newline, so a builtin named "files.read_text\\n" registers (and is resolvable under that name)."""
    return impl("r2-d05-grammar-dollar-newline", _DollarPipeline)


class _NfkcRegistry(Registry):
    def resolve(self, name: str) -> tuple[ToolSpec, Tool] | None:
        # The mistake: proposed names are NFKC-folded "like MCP names", so compatibility look-alikes resolve.
        return super().resolve(unicodedata.normalize("NFKC", name))


class _NfkcPipeline(Pipeline):
    registry_class = _NfkcRegistry


def resolve_folds_compatibility_characters() -> ReferenceImplementation:
    """D5 / Section 9.2 "Unknown tool -> Deny": a proposed builtin name is NFKC-normalized before look-up, so a
    name outside the grammar made of compatibility look-alikes (fullwidth "ｆｉｌｅｓ.read", ligature "ﬁles.read")
    resolves to the registered tool and executes instead of DENIED unknown_tool."""
    return impl("r2-d05-resolve-nfkc", _NfkcPipeline)


class _LowerFirst(McpAdapter):
    def normalize(self, remote: str) -> str:
        # The mistake: lower-case first, then NFKC (the spec pins NFKC, then lower case).
        folded = unicodedata.normalize("NFKC", remote.lower())
        segment = re.sub(r"[^a-z0-9_]+", "_", folded)
        if not segment[:1].isalpha():
            segment = "t_" + segment
        return segment[:64]


class _LowerFirstPipeline(Pipeline):
    mcp_class = _LowerFirst


def normalize_lowers_before_nfkc() -> ReferenceImplementation:
    """D5 "a deterministic normalization" (pinned as NFKC, then lower case): the remote name is lower-cased before
    NFKC, so characters whose compatibility form is upper case (mathematical bold "𝐃𝐞𝐥𝐞𝐭𝐞", "ℌ") keep it, are
    replaced by "_", and register under another name than the pinned normalization gives."""
    return impl("r2-d05-normalize-lowers-before-nfkc", _LowerFirstPipeline)


class _CapThenPrefix(McpAdapter):
    def normalize(self, remote: str) -> str:
        folded = unicodedata.normalize("NFKC", remote).lower()
        segment = re.sub(r"[^a-z0-9_]+", "_", folded)[:64]  # The mistake: cut first, prefix after.
        if not segment[:1].isalpha():
            segment = "t_" + segment
        return segment


class _CapThenPrefixPipeline(Pipeline):
    mcp_class = _CapThenPrefix


def normalize_caps_before_prefix() -> ReferenceImplementation:
    """D5 "a deterministic normalization" (cap 64 characters): the normalized segment is cut to 64 characters before
    "t_" is prefixed, so a long remote name starting with a digit or symbol registers with a 66-character segment
    (and two such names differing only in their 63rd-64th characters no longer collide as the pinned form says)."""
    return impl("r2-d05-normalize-caps-before-prefix", _CapThenPrefixPipeline)


class _LenientMcpNames(McpAdapter):
    async def resolve(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | ReasonCode:
        found = await super().resolve(run_id, name)
        parts = name.split(".", 2)
        if found is ReasonCode.UNKNOWN_TOOL and len(parts) == 3:
            # The mistake: "models copy the server's own spelling", so the last segment is normalized and retried.
            alternative = f"{parts[0]}.{parts[1]}.{self.normalize(parts[2])}"
            if alternative != name:
                return await super().resolve(run_id, alternative)
        return found


class _LenientMcpNamesPipeline(Pipeline):
    mcp_class = _LenientMcpNames


def mcp_resolve_normalizes_proposed() -> ReferenceImplementation:
    """D5 "the join that makes Section 9.2's unknown-tool row compatible with Milestone 8": a proposed
    mcp.{server}.{name} that is not pinned is normalized and looked up again, so a name outside the grammar
    (e.g. "mcp.plain.Echo" or "mcp.plain.ECHO" for the pinned "mcp.plain.echo") resolves to a pinned tool and executes instead of
    DENIED unknown_tool."""
    return impl("r2-d05-mcp-resolve-normalizes", _LenientMcpNamesPipeline)
