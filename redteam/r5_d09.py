"""Round 5, decision 9 (D9.2): every tools/list_changed recorded once, including one sent right at connect."""

from __future__ import annotations

import anyio.abc

from toolproof.reference.hooks import Link, McpAdapter, ReferenceImplementation

from ._r5 import adapter_impl


def notices_before_listing_ignored() -> ReferenceImplementation:
    """D9.2: a notice that arrives before the adapter has listed the server is not recorded.

    The mistake: "nothing was listed yet, so nothing changed": notified() returns while link.known is False, which
    loses the notice a server sends right at connect (and one sent after a reconnect, before the relisting).
    Exposing input: EarlyNoticeServer, both eras.
    """

    class Adapter(McpAdapter):
        async def notified(self, link: Link) -> None:
            if link.known:
                await super().notified(link)

    return adapter_impl("notices_before_listing_ignored", Adapter)


def notices_coalesced_per_instant() -> ReferenceImplementation:
    """D9.2: notices of one server at the same instance-clock instant are recorded once (a debounce).

    The mistake: the adapter remembers in memory when it last recorded a notice per server and drops another at the
    same clock reading. The instance clock of a test (or a coarse one) does not move during a burst, so a burst of
    notices is one entry. Exposing input: ListChangedFloodServer's `flood`, or two `grow` calls without a clock
    advance.
    """

    class Adapter(McpAdapter):
        async def notified(self, link: Link) -> None:
            seen: dict[str, float] = self.__dict__.setdefault("noticed_at", {})
            now = self.clock.now()
            if seen.get(link.config.server_id) == now:
                return
            seen[link.config.server_id] = now
            await super().notified(link)

    return adapter_impl("notices_coalesced_per_instant", Adapter)


def listen_events_recorded_too() -> ReferenceImplementation:
    """D9.2: on 2026-07-28 a listen event is recorded by the listen loop as well as by the message handler.

    The mistake: the listen loop records each event it drains, not knowing the SDK tees it to the message handler,
    so every 2026-07-28 notice is counted twice; the handshake era is right. Exposing input: one tools/list_changed
    from a 2026-07-28 server.
    """

    class Adapter(McpAdapter):
        async def _listen(self, link: Link, *, task_status: anyio.abc.TaskStatus[None]) -> None:
            started = False
            try:
                async with link.client.listen(tools_list_changed=True) as subscription:
                    task_status.started()
                    started = True
                    async for _ in subscription:
                        await self.notified(link)
            except Exception:
                if not started:
                    task_status.started()

    return adapter_impl("listen_events_recorded_too", Adapter)


def unadvertised_notices_ignored() -> ReferenceImplementation:
    """D9.2: a tools/list_changed from a server that did not advertise tools.listChanged is not recorded.

    The mistake: "a server that did not advertise the capability cannot send the notice; ignore it as noise", so
    RugPullServer's unadvertised notice is lost. Exposing input: a server sending tools/list_changed without
    advertising listChanged.
    """

    class Adapter(McpAdapter):
        async def notified(self, link: Link) -> None:
            tools = link.client.server_capabilities.tools
            if tools is not None and tools.list_changed:
                await super().notified(link)

    return adapter_impl("unadvertised_notices_ignored", Adapter)


def notice_repins_sessions() -> ReferenceImplementation:
    """D9.2: a tools/list_changed drops the pins of the sessions that advertise the server, so they repin.

    The mistake: "the notice says our advertisement is stale": notified() records the notice and forgets the pin of
    every run with a tool of that server, so a running session's next step advertises the new catalog. Exposing
    input: GrowingCatalogServer's `grow` (or RugPullServer's `transfer`) in a running session, then advertise again.
    """

    class Adapter(McpAdapter):
        async def notified(self, link: Link) -> None:
            await super().notified(link)
            from sqlalchemy import text

            with self.store.engine.connect() as connection:
                runs = connection.execute(
                    text("SELECT DISTINCT run_id FROM mcp_session_pins WHERE server_id = :s"),
                    {"s": link.config.server_id},
                ).scalars()
                stale = list(runs)
            for run_id in stale:
                self.store.unpin(run_id)

    return adapter_impl("notice_repins_sessions", Adapter)
