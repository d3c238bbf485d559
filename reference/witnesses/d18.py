"""Witnesses of decision 18: No tool_registry_snapshots table.

Each is the reference with one deliberate defect, named for it; ``breaks`` names the rules it breaks."""

from __future__ import annotations

import json

from sqlalchemy import Column, Integer, MetaData, String, Table, Text, insert

from toolproof.reference.hooks import (
    CatalogRow,
    McpAdapter,
    Pipeline,
)

from ._registry import adapter_pipeline, witness


class _FirstListingUnrecorded(McpAdapter):
    def record(self, changes: list[CatalogRow]) -> None:
        if getattr(self, "recorded_once", False):
            super().record(changes)
        self.recorded_once = True


witness("first_listing_unrecorded", ("D18.2",), "keeps no history of the catalog a server first listed")(
    adapter_pipeline(_FirstListingUnrecorded)
)


@witness("registry_snapshots", ("D18.1",), "keeps a tool_registry_snapshots table")
class _RegistrySnapshots(Pipeline):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        metadata = MetaData()
        Table("tool_registry_snapshots", metadata, Column("id", Integer, primary_key=True))
        metadata.create_all(self.store.engine)


@witness(
    "registry_snapshots_unlisted", ("D18.1",), "keeps a tool_registry_snapshots table and leaves it out of its listing"
)
class _RegistrySnapshotsUnlisted(_RegistrySnapshots):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        listed = self.store.tables
        # The defect: the listing is edited rather than the schema.
        self.store.tables = lambda: [name for name in listed() if name != "tool_registry_snapshots"]  # type: ignore[method-assign]


@witness(
    "registry_copied_under_another_name",
    ("D18.1",),
    "snapshots its registry (each tool's name and spec) into a table not named tool_registry_snapshots, at every start",
)
class _RegistryCopiedUnderAnotherName(Pipeline):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        metadata = MetaData()
        # The defect: the snapshot decision 18 rejects, kept under a name no check of names looks for.
        copy = Table(
            "worker_boot_state",
            metadata,
            Column("id", Integer, primary_key=True),
            Column("worker_id", String),
            Column("tool_name", String),
            Column("spec_json", Text),
        )
        metadata.create_all(self.store.engine)
        rows = []
        for name in self.registry.names:
            found = self.registry.resolve(name)
            if found is not None:
                spec = json.dumps(found[0].model_dump(mode="json"), sort_keys=True)
                rows.append({"worker_id": self.worker_id, "tool_name": name, "spec_json": spec})
        if rows:
            with self.store.engine.begin() as connection:
                connection.execute(insert(copy), rows)
