"""Witnesses of decision 4 (in-process), 5 (builtin names) and 6 (device and sandbox trust)."""

from __future__ import annotations

from collections.abc import Sequence

from toolproof.reference._pipeline import CallState, Pipeline
from toolproof.reference._registry import Registry
from toolproof.spec import ConfigurationError, InvocationStatus, Metric, ReasonCode, Tool, ToolSpec

from ._registry import witness

# -- D4 -------------------------------------------------------------------------------------


@witness("lazy_watermark", ("D4.1",), "remembers the watermark in memory and writes it only at step 13")
class _LazyWatermark(Pipeline):
    async def mark_effect(self, s: CallState) -> None:
        s.marked = True

    async def step_complete(self, s: CallState) -> None:
        if s.marked and s.recorded and not s.leave_row:
            self.store.mark_effect_sent(s.invocation_id, self.clock.now())
        await super().step_complete(s)


@witness("exceptions_are_failures", ("D4.2",), "answers every exception and overrun FAILED, watermark or not")
class _ExceptionsAreFailures(Pipeline):
    async def step_normalize(self, s: CallState) -> None:
        if s.error is not None or s.timed_out:
            s.finish(ReasonCode.TOOL_ERROR)
            return
        await super().step_normalize(s)


@witness("no_unmarked_flag", ("D4.10",), "never raises the production flag for an unmarked consequential call")
class _NoUnmarkedFlag(Pipeline):
    def _unmarked(self, s: CallState) -> bool:
        return False


@witness("no_uncertain_metric", ("D4.11",), "does not count UNCERTAIN resolutions")
class _NoUncertainMetric(Pipeline):
    def metrics_for(self, s: CallState, status: InvocationStatus) -> list[str]:
        return [m for m in super().metrics_for(s, status) if m != Metric.UNCERTAIN.value]


# -- D5 -------------------------------------------------------------------------------------


class _LaxNames(Registry):
    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        return spec


@witness("lax_names", ("D5.1", "D5.2"), "registers any name, reserved domains included")
class _LaxNamesPipeline(Pipeline):
    registry_class = _LaxNames


class _ReservedOpen(Registry):
    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        try:
            return Registry.admit(spec)
        except ConfigurationError as exc:
            if "reserved domain" in str(exc):
                return spec
            raise


@witness("reserved_domains_open", ("D5.2",), "lets builtins into the mcp and device domains")
class _ReservedDomainsOpen(Pipeline):
    registry_class = _ReservedOpen


class _CaseFolding(Registry):
    def resolve(self, name: str) -> tuple[ToolSpec, Tool] | None:
        return super().resolve(name.strip().lower())


@witness("case_folding_lookup", ("D5.3",), "resolves names case-insensitively and ignores surrounding blanks")
class _CaseFoldingLookup(Pipeline):
    registry_class = _CaseFolding


class _LastWins(Registry):
    def __init__(self, tools: Sequence[Tool]) -> None:
        unique = {tool.spec.name: tool for tool in tools}
        super().__init__(list(unique.values()))


@witness("last_registration_wins", ("D5.4",), "lets a second registration of a name replace the first")
class _LastRegistrationWins(Pipeline):
    registry_class = _LastWins


# -- D6 -------------------------------------------------------------------------------------


class _NoFloors(Registry):
    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        Registry.admit(spec)
        return spec  # Keeps the declared output trust of device and sandbox tools.


@witness("trusts_declared_device_trust", ("D6.4",), "keeps the output trust a device or sandbox tool declares")
class _TrustsDeclaredDeviceTrust(Pipeline):
    registry_class = _NoFloors
