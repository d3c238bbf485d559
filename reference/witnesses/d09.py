"""Witnesses of decision 9: Catalog changes are recorded, not applied mid-session.

Each is the reference with one deliberate defect, named for it; ``breaks`` names the rules it breaks."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar

import mcp_types as types

from toolproof.reference.hooks import (
    CatalogRow,
    Link,
    McpAdapter,
    McpTool,
    Pipeline,
    RemoteTool,
    Store,
    wire,
)
from toolproof.spec import (
    DEFINITION_FIELDS,
    READ_RESOURCE,
    Advertisement,
    CatalogChangeKind,
    Clock,
    Disposition,
    IdempotencyClass,
    InstanceConfig,
    JsonObject,
    ReasonCode,
    SideEffect,
    StepRequest,
    ToolExecutionContext,
    ToolResult,
    ToolSpec,
    definition_sha256,
    replay_history,
)

from ._registry import adapter_pipeline, witness


class _SchemaOnlyHash(McpAdapter):
    def definition_hash(self, tool: types.Tool, definition: Mapping[str, Any] | None = None) -> str:
        return definition_sha256({"inputSchema": wire(tool).get("inputSchema")})


witness("schema_only_hash", ("D9.1",), "pins a hash of the input schema alone, not the full definition")(
    adapter_pipeline(_SchemaOnlyHash)
)


class _SortKeysHash(McpAdapter):
    def definition_hash(self, tool: types.Tool, definition: Mapping[str, Any] | None = None) -> str:
        # The defect: Python's sort_keys JSON, not RFC 8785: keys in code-point order, floats as repr writes them.
        dumped = wire(tool) if definition is None else definition
        picked = {field: dumped.get(field) for field in DEFINITION_FIELDS}
        text = json.dumps(picked, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()


witness(
    "sort_keys_definition_hash",
    ("D9.1",),
    "hashes tool definitions as Python sort_keys JSON, not RFC 8785 (floats, non-BMP key order differ)",
)(adapter_pipeline(_SortKeysHash))


class _AppliesListChanged(McpAdapter):
    def __init__(self, config: InstanceConfig, store: Store, clock: Clock) -> None:
        super().__init__(config, store, clock)
        self.sessions: set[str] = set()

    async def advertise(self, run_id: str) -> Advertisement:
        self.sessions.add(run_id)
        return await super().advertise(run_id)

    async def notified(self, link: Link) -> None:
        await super().notified(link)
        for run_id in self.sessions:
            self.store.unpin(run_id)  # The next look re-pins from the current catalog.


witness("list_changed_applied", ("D9.2",), "re-pins every session when a server sends tools/list_changed")(
    adapter_pipeline(_AppliesListChanged)
)


class _CallsWithdrawn(McpAdapter):
    async def resolve(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | ReasonCode:
        found = await super().resolve(run_id, name)
        if found is ReasonCode.TOOL_WITHDRAWN:
            return self.pinned(run_id, name) or found
        return found


witness("withdrawn_tool_called", ("D9.3",), "still calls a pinned tool its server withdrew")(
    adapter_pipeline(_CallsWithdrawn)
)


class _CallsChanged(McpAdapter):
    async def resolve(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | ReasonCode:
        found = await super().resolve(run_id, name)
        if found is ReasonCode.TOOL_DEFINITION_CHANGED:
            return self.pinned(run_id, name) or found
        return found


witness("changed_tool_called", ("D9.4",), "calls a tool whose definition changed under its pinned definition")(
    adapter_pipeline(_CallsChanged)
)


class _ForgetsSilentChanges(McpAdapter):
    def record(self, changes: list[CatalogRow]) -> None:
        super().record([c for c in changes if c.kind != CatalogChangeKind.CHANGED.value])


witness("silent_change_unrecorded", ("D9.5",), "records changes it is told about, not changes it lists")(
    adapter_pipeline(_ForgetsSilentChanges)
)


class _PinsOnce(McpAdapter):
    async def advertise(self, run_id: str) -> Advertisement:
        first = getattr(self, "first_run", None)
        if first is None:
            self.first_run = run_id
            return await super().advertise(run_id)
        ad = await super().advertise(first)
        return ad.model_copy(update={"run_id": run_id})


witness("one_pin_per_instance", ("D9.6",), "gives every session the catalog the first session pinned")(
    adapter_pipeline(_PinsOnce)
)


class _FirstPage:
    """A client whose tools/list stops at the first page."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def list_tools(self, cursor: str | None = None, **options: Any) -> types.ListToolsResult:
        page: types.ListToolsResult = await self.client.list_tools(**options)
        return page.model_copy(update={"next_cursor": None})  # The defect: next_cursor ignored.

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


class _FirstPageOnly(McpAdapter):
    async def refresh(self, link: Link) -> None:
        client = link.client
        link.client = _FirstPage(client)  # type: ignore[assignment]  # a stand-in with the one method refresh uses
        try:
            await super().refresh(link)
        finally:
            link.client = client


@witness(
    "catalog_first_page",
    ("D9.1", "D9.3", "D9.6", "D18.2"),
    "lists a server's catalog from the first page of tools/list only",
)
class _CatalogFirstPage(Pipeline):
    mcp_class = _FirstPageOnly


class _PinsByRange(McpAdapter):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        exact = self.store.pins
        seen: list[str] = []

        def pins(run_id: str) -> list[Any]:
            rows = exact(run_id)
            if rows:
                seen.append(run_id)
                return rows
            # The mistake: a session with no pin of its own reads the next one at or after its id (a range query).
            later = sorted(r for r in seen if r >= run_id)
            return exact(later[0]) if later else []

        self.store.pins = pins  # type: ignore[method-assign]


@witness("pins_read_by_range", ("D9.6",), "a new session whose run id sorts before a pinned one's reads that pin")
class _PinsReadByRange(Pipeline):
    mcp_class = _PinsByRange


class _ReplaysTwoRecords(McpAdapter):
    async def refresh(self, link: Link) -> None:
        if not link.known:
            history = [c for c in self.history() if c.server_id == link.config.server_id]
            if history:
                # The mistake: history[1] for history[-1] (a one-record history has only its first).
                last = history[min(1, len(history) - 1)].seq
                previous = replay_history(history, up_to_seq=last)
                link.catalog = {n: RemoteTool(n, None, sha, {}) for n, sha in previous.items()}
                link.known = True
        await super().refresh(link)


@witness(
    "fresh_adapter_replays_two_records",
    ("D9.5",),
    "a fresh adapter rebuilds a server's last catalog from its history's first two records, not all of them",
)
class _FreshAdapterReplaysTwoRecords(Pipeline):
    mcp_class = _ReplaysTwoRecords


class _NeverRelists(McpAdapter):
    def reusable(self, link: Link, spec: ToolSpec) -> bool:
        # The defect: once a server is listed, every call runs on that listing, a consequential one included.
        return not link.lost and link.listed_at is not None


witness(
    "listing_reused_for_writes",
    ("D9.4",),
    "never lists a server again after its first listing, so a silently changed tool is called by a consequential call",
)(adapter_pipeline(_NeverRelists))


class _AgelessReads(McpAdapter):
    def reusable(self, link: Link, spec: ToolSpec) -> bool:
        # The defect: a read reuses any listing not invalidated by a notice, however old.
        read = spec.side_effect is SideEffect.READ_ONLY and spec.idempotency is IdempotencyClass.IDEMPOTENT
        return read and not link.lost and link.listed_at is not None


witness(
    "listing_max_age_ignored",
    ("D9.4",),
    "lets an idempotent read reuse a listing past listing_max_age_s, so a silent change is never caught by reads",
)(adapter_pipeline(_AgelessReads))


class _NoticeKeepsListing(McpAdapter):
    def invalidate(self, link: Link) -> None:
        # The defect: tools/list_changed is recorded, but the listing before it stays fresh.
        return None


witness(
    "list_changed_not_invalidating",
    ("D9.4",),
    "records tools/list_changed but keeps reusing the listing from before it for idempotent reads",
)(adapter_pipeline(_NoticeKeepsListing))


class _LosesEarlyNotice(McpAdapter):
    async def notified(self, link: Link) -> None:
        if not link.known:
            # The defect: a notice that comes before the adapter has listed the server's catalog (while it is
            # still setting the connection up) has nothing to be recorded against, so it is dropped.
            return
        await super().notified(link)


witness(
    "early_notice_lost",
    ("D9.2",),
    "drops a tools/list_changed that arrives before the adapter first listed the server's catalog",
)(adapter_pipeline(_LosesEarlyNotice))


class _ListenNoticeTwice(McpAdapter):
    async def notified(self, link: Link) -> None:
        await super().notified(link)
        if link.config.protocol != "legacy":
            # The defect: a 2026-07-28 notice is recorded from the listen stream and again from the message
            # handler the SDK tees it to.
            await super().notified(link)


witness(
    "listen_notice_twice",
    ("D9.2",),
    "records each tools/list_changed of a 2026-07-28 connection twice (from the listen stream and its tee)",
)(adapter_pipeline(_ListenNoticeTwice))


class _Counted(McpTool):
    def __init__(self, adapter: _BusyIgnoresNotices, inner: McpTool) -> None:
        super().__init__(adapter, inner.link, None, inner.spec)
        self.inner = inner
        self.busy = adapter.busy

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        server = self.link.config.server_id
        self.busy[server] = self.busy.get(server, 0) + 1
        try:
            return await self.inner.execute(arguments, context)
        finally:
            self.busy[server] -= 1


class _BusyIgnoresNotices(McpAdapter):
    def __init__(self, config: InstanceConfig, store: Store, clock: Clock) -> None:
        super().__init__(config, store, clock)
        self.busy: dict[str, int] = {}
        """Server id -> its calls in flight."""

    def pinned(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | None:
        found = super().pinned(run_id, name)
        if found is None:
            return None
        spec, tool = found
        return spec, _Counted(self, tool)

    async def notified(self, link: Link) -> None:
        if self.busy.get(link.config.server_id, 0):
            # The defect: a notice that arrives while a call to its server is in flight is taken for that call's
            # own chatter and dropped.
            return
        await super().notified(link)


witness(
    "notices_dropped_during_call",
    ("D9.2",),
    "drops the tools/list_changed a server sends while one of its calls is in flight",
)(type("_BusyIgnoresNoticesPipeline", (Pipeline,), {"mcp_class": _BusyIgnoresNotices}))


class _SchemaOnlyAtCall(McpAdapter):
    async def resolve(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | ReasonCode:
        found = await super().resolve(run_id, name)
        if found is not ReasonCode.TOOL_DEFINITION_CHANGED:
            return found
        # The defect: at call time only the input schema is compared with the pin, so a tool whose description or
        # annotations changed (a poisoned description) is still called under the definition the session pinned.
        pinned = self.pinned(run_id, name)
        if pinned is None:
            return found
        spec, tool = pinned
        current = tool.link.catalog[name].definition
        return pinned if current.get("inputSchema") == spec.input_schema else found


witness(
    "drift_judged_by_input_schema",
    ("D9.4",),
    "judges a pinned tool changed at call time by its input schema alone, so a silently changed description is called",
)(type("_SchemaOnlyAtCallPipeline", (Pipeline,), {"mcp_class": _SchemaOnlyAtCall}))


class _NoticesDebounced(McpAdapter):
    def __init__(self, config: InstanceConfig, store: Store, clock: Clock) -> None:
        super().__init__(config, store, clock)
        self.last_notice: dict[str, float] = {}

    async def notified(self, link: Link) -> None:
        server_id, now = link.config.server_id, self.clock.now()
        if self.last_notice.get(server_id) == now:
            # The defect: a debounce on the instance clock: notices of one server at one clock reading are one.
            return
        self.last_notice[server_id] = now
        await super().notified(link)


witness(
    "notices_debounced_per_instant",
    ("D9.2",),
    "records one tools/list_changed per server and instance-clock reading, so a burst on a still clock is one entry",
)(adapter_pipeline(_NoticesDebounced))


def _ttls_s(pages: Sequence[types.ListToolsResult]) -> list[float]:
    """The ttlMs each page sent, in seconds (a handshake-era page sends none)."""
    return [page.ttl_ms / 1000.0 for page in pages if "ttl_ms" in page.model_fields_set]


def _idempotent_read(spec: ToolSpec) -> bool:
    return spec.side_effect is SideEffect.READ_ONLY and spec.idempotency is IdempotencyClass.IDEMPOTENT


class _TtlCoversEveryCall(McpAdapter):
    def reusable(self, link: Link, spec: ToolSpec) -> bool:
        if link.config.protocol == "legacy" or link.lost or link.listed_at is None:
            return super().reusable(link, spec)
        # The defect: a server that says how long its list stays good is taken at its word for every call,
        # consequential ones included, as if the ttl were a promise not to change.
        return self.clock.now() - link.listed_at < link.fresh_for


witness(
    "ttl_covers_every_call",
    ("D9.4",),
    "lets a call of any classification run on a listing younger than a 2026-07-28 server's ttlMs, so a write calls "
    "a tool changed since",
)(adapter_pipeline(_TtlCoversEveryCall))


class _LongerAgeWins(McpAdapter):
    def fresh_for(self, link: Link, pages: Sequence[types.ListToolsResult]) -> float:
        ttls = _ttls_s(pages)
        # The defect: the operator's age and the server's ttl are both read as "may reuse for this long", and the
        # more generous one is kept, so a ttlMs above listing_max_age_s stretches it.
        return max(link.config.listing_max_age_s, min(ttls)) if ttls else link.config.listing_max_age_s


witness(
    "ttl_lengthens_max_age",
    ("D9.4", "D9.5"),
    "keeps a listing fresh for the longer of listing_max_age_s and the server's ttlMs, so reads run on a listing "
    "past its max age under a long ttlMs, and past the ttlMs under a short one",
)(adapter_pipeline(_LongerAgeWins))


class _TtlInSeconds(McpAdapter):
    def fresh_for(self, link: Link, pages: Sequence[types.ListToolsResult]) -> float:
        ttls = [float(page.ttl_ms) for page in pages if "ttl_ms" in page.model_fields_set]
        # The defect is the unit: ttlMs is milliseconds, taken here as seconds, so 5000 (five seconds) shortens a
        # 30 s max age to nothing and the listing stays fresh for the whole age.
        return min([link.config.listing_max_age_s, *ttls])


witness(
    "ttl_read_as_seconds",
    ("D9.4", "D9.5"),
    "reads ttlMs as seconds, so a listing the server called stale after five seconds is reused for the whole max age",
)(adapter_pipeline(_TtlInSeconds))


class _FirstPageTtl(McpAdapter):
    def fresh_for(self, link: Link, pages: Sequence[types.ListToolsResult]) -> float:
        # The defect: the first page's ttlMs is read as the whole listing's, not the shortest of its pages.
        return min([link.config.listing_max_age_s, *_ttls_s(pages[:1])])


witness(
    "ttl_of_first_page",
    ("D9.4", "D9.5"),
    "takes a paginated listing's ttlMs from its first page, so a shorter ttlMs on a later page is ignored",
)(adapter_pipeline(_FirstPageTtl))


class _NoticeForgetsTimeOnly(McpAdapter):
    def invalidate(self, link: Link) -> None:
        # The defect: a notice only forgets when the last listing was made; the listing in flight, which began
        # before the notice, stamps its own time when it ends and is reused as fresh.
        link.listed_at = None


witness(
    "inflight_listing_outlives_notice",
    ("D9.4",),
    "lets a listing that was in flight when a tools/list_changed arrived be reused afterwards as fresh",
)(adapter_pipeline(_NoticeForgetsTimeOnly))


class _ListingOutlivesConnection(McpAdapter):
    async def lose(self, link: Link) -> None:
        listed_at = link.listed_at
        await super().lose(link)
        # The defect: a listing's freshness is its age alone, so losing the connection leaves it in place.
        link.listed_at = listed_at

    def reusable(self, link: Link, spec: ToolSpec) -> bool:
        if not _idempotent_read(spec) or link.listed_at is None:
            return False
        return self.clock.now() - link.listed_at < link.fresh_for


witness(
    "lost_connection_keeps_listing",
    ("D9.4",),
    "lets an idempotent read reuse the listing of a lost connection, so inside the max age it never reconnects nor "
    "sees what the restarted server changed",
)(adapter_pipeline(_ListingOutlivesConnection))


def _without(definition: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in definition.items() if k != key}


class _EditIgnored(McpAdapter):
    ignored: ClassVar[str]
    """The wire field whose change alone is not taken for a change."""

    def register(self, link: Link, tools: Sequence[types.Tool]) -> tuple[dict[str, RemoteTool], set[str]]:
        registered, dropped = super().register(link, tools)
        for name, entry in registered.items():
            before = link.catalog.get(name)
            if before is None or not before.definition or before.sha256 == entry.sha256:
                continue
            if _without(before.definition, self.ignored) == _without(entry.definition, self.ignored):
                # The defect: an edit of this field alone keeps the hash the tool had, so it is neither recorded
                # nor answered as a change.
                registered[name] = replace(entry, sha256=before.sha256)
        return registered, dropped


class _TitleEditIgnored(_EditIgnored):
    ignored = "title"


class _OutputSchemaEditIgnored(_EditIgnored):
    ignored = "outputSchema"


witness(
    "title_edit_not_a_change",
    ("D9.4", "D9.5"),
    "takes a tool whose title alone changed for unchanged (the title is for display), so it is called and the "
    "change is never recorded",
)(adapter_pipeline(_TitleEditIgnored))


witness(
    "output_schema_edit_not_a_change",
    ("D9.4", "D9.5"),
    "takes a tool whose output schema alone changed for unchanged (only its input is checked before a call), so "
    "it is called and the change is never recorded",
)(adapter_pipeline(_OutputSchemaEditIgnored))


class _PreviewingAdapter(McpAdapter):
    async def advertise(self, run_id: str) -> Advertisement:
        started = not self.links or self.store.pinned_once(run_id)
        ad = await super().advertise(run_id)
        if not started:
            # The defect: advertising a run that has submitted nothing is a preview; its session starts, and pins
            # from whatever the catalogs are by then, at its first step.
            self.store.unpin(run_id)
        return ad

    async def start(self, run_id: str) -> None:
        if self.links and not self.store.pinned_once(run_id):
            await super().advertise(run_id)


@witness(
    "advertise_previews_without_pinning",
    ("D9.1",),
    "answers advertise for a run that has not submitted a step from the current catalogs without starting its session",
)
class _AdvertisePreviewsWithoutPinning(Pipeline):
    mcp_class = _PreviewingAdapter


@witness(
    "session_starts_at_first_mcp_step",
    ("D9.1",),
    "starts a run's session only at a step that names an MCP tool, not at the run's first step",
)
class _SessionStartsAtFirstMcpStep(Pipeline):
    async def run_step(self, step: StepRequest) -> list[Disposition]:
        if self.mcp is None or any(c.tool_name.startswith("mcp.") for c in step.calls):
            return await super().run_step(step)
        # The defect: a step naming no MCP tool has no use for the session, so it does not start it.
        return [await self.run_call(step, call) for call in step.calls]


class _ResourceReadOnPinnedListing(McpAdapter):
    def reusable(self, link: Link, spec: ToolSpec) -> bool:
        if spec.name == link.prefix + READ_RESOURCE:
            # The defect: "the synthetic read tool is the adapter's own and cannot change", so a read runs on the last
            # listing whatever the server's classification and the listing's age.
            return link.listed_at is not None and not link.lost
        return super().reusable(link, spec)


witness(
    "resource_read_never_relisted",
    ("D9.3",),
    "runs every call of the synthetic read_resource tool on the last listing, so once the server withdraws its "
    "resources mid-session the read is still sent instead of being answered tool_withdrawn",
)(adapter_pipeline(_ResourceReadOnPinnedListing))


class _LossSparesListingInFlight(McpAdapter):
    async def lose(self, link: Link) -> None:
        generation = link.generation
        await super().lose(link)
        # The defect: a loss drops the last listing only ("nothing listed since"), so a listing still in flight
        # when the loss is found is kept as fresh once it ends, though it began on the lost connection.
        link.generation = generation


witness(
    "listing_in_flight_survives_loss",
    ("D9.4",),
    "keeps a listing that was in flight when the connection was lost as fresh once it ends, so after a reconnect "
    "whose listing failed an idempotent read runs on a catalog from before the loss",
)(adapter_pipeline(_LossSparesListingInFlight))


class _FreshListingUnchecked(McpAdapter):
    async def resolve(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | ReasonCode:
        await self.start(run_id)
        found = self.pinned(run_id, name)
        if found is None or not self.reusable(found[1].link, found[0]):
            return await super().resolve(run_id, name)
        # The defect: a listing still fresh is taken for the one the session pinned, so only a withdrawal is looked
        # for; a definition another session's listing found changed since is called under this session's pin.
        return found if name in found[1].link.catalog else ReasonCode.TOOL_WITHDRAWN


witness(
    "fresh_listing_skips_pin_check",
    ("D9.4",),
    "lets an idempotent read on a fresh listing skip comparing the tool with the session's pin, so a change another "
    "session's listing found is still called",
)(adapter_pipeline(_FreshListingUnchecked))


class _PinsCachedByName(McpAdapter):
    def __init__(self, config: InstanceConfig, store: Store, clock: Clock) -> None:
        super().__init__(config, store, clock)
        self.resolved: dict[str, tuple[ToolSpec, McpTool]] = {}
        """Registered name -> the pinned spec and tool first read for it, by whichever session."""

    def pinned(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | None:
        # The defect: a pin read once is cached by the tool's name alone, so every later session resolves the
        # definition the first session to call the tool pinned, not its own.
        if name not in self.resolved:
            found = super().pinned(run_id, name)
            if found is None:
                return None
            self.resolved[name] = found
        return self.resolved[name]


witness(
    "pin_cache_shared_by_sessions",
    ("D9.6", "D9.1", "D9.4", "D8.9"),
    "caches a resolved pin by the tool's name across sessions, so a session calls the definition another session "
    "pinned, not its own: a session started after a change is answered it changed, once the later session resolves "
    "first (after a restart) the earlier ones run the changed definition, and a session without the read tool "
    "resolves another session's",
)(adapter_pipeline(_PinsCachedByName))


class _ListingErrorCallsPinned(McpAdapter):
    async def resolve(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | ReasonCode:
        found = await super().resolve(run_id, name)
        if found is not ReasonCode.REMOTE_UNAVAILABLE:
            return found
        pinned = self.pinned(run_id, name)
        # The defect: a listing the server answered with an error, its connection still up, is no reason to hold the
        # call back, so the pinned tool is called without its catalog having been checked.
        return pinned if pinned is not None and not pinned[1].link.lost else found


witness(
    "listing_error_calls_anyway",
    ("D9.4", "D7.5"),
    "calls a pinned tool whose server answered the listing before it with an error while still connected, so a "
    "consequential call runs unchecked",
)(adapter_pipeline(_ListingErrorCallsPinned))
