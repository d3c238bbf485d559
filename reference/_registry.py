"""The reference registry: the name grammar, reserved domains and output-trust floors (decisions 5 and 6)."""

from __future__ import annotations

from collections.abc import Sequence

from toolproof.spec import (
    RESERVED_DOMAINS,
    ConfigurationError,
    Tool,
    ToolSource,
    ToolSpec,
    TrustLabel,
    domain_of,
    is_valid_name,
)

_UNTRUSTED_SOURCES = frozenset({ToolSource.MCP, ToolSource.DEVICE, ToolSource.SANDBOX})


class Registry:
    """Registered tools by name; built once, at startup, and never changed."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self._tools: dict[str, tuple[ToolSpec, Tool]] = {}
        for tool in tools:
            spec = self.admit(tool.spec)
            if spec.name in self._tools:
                raise ConfigurationError(
                    f"tool name {spec.name!r} is registered twice (D5.4): give each tool its own name"
                )
            self._tools[spec.name] = (spec, tool)

    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        """Check a builtin's name and apply the output-trust floor of its source."""
        if not is_valid_name(spec.name):
            raise ConfigurationError(
                f"tool name {spec.name!r} does not match the grammar domain.name of [a-z][a-z0-9_]* segments (D5.1)"
            )
        if spec.source is not ToolSource.MCP and domain_of(spec.name) in RESERVED_DOMAINS:
            raise ConfigurationError(
                f"tool {spec.name!r} is a builtin in the reserved domain {domain_of(spec.name)!r} (D5.2): "
                "rename it outside mcp.* and device.*"
            )
        if spec.source in _UNTRUSTED_SOURCES and spec.output_trust is not TrustLabel.EXTERNAL_UNTRUSTED:
            # Invariant: device, sandbox and MCP output is never more trusted than EXTERNAL_UNTRUSTED.
            spec = spec.model_copy(update={"output_trust": TrustLabel.EXTERNAL_UNTRUSTED})
        return spec

    def resolve(self, name: str) -> tuple[ToolSpec, Tool] | None:
        """The registered spec and tool for ``name``, or None."""
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        """Registered names in registration order."""
        return list(self._tools)
