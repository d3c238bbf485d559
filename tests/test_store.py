"""The reference store's writes: SQLite's hot path, the Core path with UPDATE ... RETURNING, and without it (the path a
dialect lacking it takes)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from sqlalchemy.exc import NoResultFound

from toolproof.fakes import FakeClock
from toolproof.reference._store import DuplicateKey, InvocationTable, Store
from toolproof.reference.hooks import McpAdapter, SessionPinTable
from toolproof.spec import EventKind, InstanceConfig, InvocationStatus, TrustLabel


@pytest.fixture(params=["hot", "returning", "read-back"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened = Store.in_directory(tmp_path)
    if request.param != "hot":
        # The Core path PostgreSQL takes (SQLite's hot path on its driver connection switched off).
        assert opened._hot is not None
        opened._hot.close()
        opened._hot = None
    if request.param == "read-back":
        # What the store decided for a dialect without RETURNING or ON CONFLICT.
        opened._returning, opened._upsert = False, None
    yield opened
    opened.close()


def _recorded(store: Store, invocation_id: str = "inv-1") -> InvocationTable:
    row = InvocationTable(
        invocation_id=invocation_id,
        tenant="t",
        run_id="run-1",
        step_number=1,
        call_id="c1",
        tool_name="demo.echo",
        idempotency_key=f"key-{invocation_id}",
        call_hash="hash",
        arguments_json="{}",
        status=InvocationStatus.RECORDED.value,
        decision="ALLOW",
        origin_trust=TrustLabel.USER,
        argument_trust=TrustLabel.USER,
        created_at=1.0,
    )
    store.insert(row, [EventKind.REQUESTED])
    return row


def _claim(store: Store, owner: str | None) -> bool:
    changes = {"status": InvocationStatus.RUNNING.value, "attempt": 1, "lease_owner": "w1", "lease_expires_at": 9.0}
    return store.claim("inv-1", expect_status=InvocationStatus.RECORDED.value, expect_owner=owner, changes=changes)


def test_a_second_insert_of_the_same_key_is_a_duplicate(store: Store) -> None:
    row = _recorded(store)
    with pytest.raises(DuplicateKey):
        store.insert(row, [EventKind.REQUESTED])


def test_a_claim_applies_once_and_its_event_carries_the_new_status(store: Store) -> None:
    _recorded(store)
    assert _claim(store, None) is True
    assert _claim(store, None) is False  # The status and owner it expected are gone.
    row = store.get("inv-1")
    assert (row.status, row.attempt, row.lease_owner) == ("RUNNING", 1, "w1")
    assert [(e.kind, e.status) for e in store.events("run-1")] == [
        (EventKind.REQUESTED.value, "RECORDED"),
        (EventKind.STARTED.value, "RUNNING"),
    ]


def test_an_update_whose_expected_status_no_longer_holds_writes_nothing(store: Store) -> None:
    _recorded(store)
    changes = {"status": InvocationStatus.SUCCEEDED.value}
    assert store.update("inv-1", changes, [EventKind.COMPLETED], expect_status=InvocationStatus.RUNNING) is False
    assert store.get("inv-1").status == "RECORDED"
    assert store.update("inv-1", changes, [EventKind.COMPLETED], ["invocations"]) is True
    assert store.update("inv-1", {}, [EventKind.RECOVERED], ["invocations"]) is True
    assert [(e.kind, e.status) for e in store.events("run-1")][1:] == [
        (EventKind.COMPLETED.value, "SUCCEEDED"),
        (EventKind.RECOVERED.value, "SUCCEEDED"),
    ]
    assert store.metrics() == {"invocations": 2}


def test_writes_to_a_missing_invocation_raise(store: Store) -> None:
    with pytest.raises(NoResultFound):
        store.update("missing", {"status": "FAILED"})
    with pytest.raises(NoResultFound):
        store.update("missing", {}, expect_status=InvocationStatus.RECORDED)
    with pytest.raises(NoResultFound):
        store.mark_effect_sent("missing", 1.0)
    with pytest.raises(NoResultFound):
        store.get("missing")


def test_the_first_watermark_stands(store: Store) -> None:
    _recorded(store)
    store.mark_effect_sent("inv-1", 5.0)
    store.mark_effect_sent("inv-1", 6.0)
    assert store.get("inv-1").effect_sent_at == 5.0


def test_trust_labels_are_stored_as_their_value_and_load_as_the_enum(store: Store) -> None:
    _recorded(store)
    for row in (store.get("inv-1"), *store.invocations("run-1")):
        assert type(row.origin_trust) is TrustLabel
        assert (row.origin_trust, row.argument_trust) == (TrustLabel.USER, TrustLabel.USER)
    with store.engine.connect() as connection:
        stored = connection.exec_driver_sql("SELECT origin_trust, argument_trust FROM tool_invocations").one()
    assert tuple(stored) == ("USER", "USER")  # Plain text in the database: readable by anything.


def _pin_row(kind: str, name: str, run_id: str = "run-1") -> SessionPinTable:
    return SessionPinTable(
        run_id=run_id, kind=kind, name=name, server_id="s", definition_sha256="", body_json="{}", as_of_seq=0
    )


def _adapter(store: Store, tmp_path: Path) -> McpAdapter:
    return McpAdapter(InstanceConfig(store_dir=tmp_path, workspace=tmp_path), store, FakeClock())


def test_a_pin_drops_every_name_that_clashes_and_keeps_the_rest(store: Store, tmp_path: Path) -> None:
    adapter = _adapter(store, tmp_path)
    rows = [
        _pin_row("session", ""),
        _pin_row("tool", "mcp.s.echo"),
        _pin_row("skill", "mcp.s.prompt.get_item"),
        _pin_row("skill", "mcp.s.prompt.get_item"),
        _pin_row("skill", "mcp.s.prompt.other"),
    ]
    pinned = adapter.write_pin("run-1", rows)
    assert sorted((r.kind, r.name) for r in pinned) == [
        ("session", ""),
        ("skill", "mcp.s.prompt.other"),
        ("tool", "mcp.s.echo"),
    ]
    # A concurrent pin of the same run: the first stands, and the second reads it back.
    assert adapter.write_pin("run-1", [_pin_row("session", ""), _pin_row("tool", "mcp.s.other")]) == pinned


def test_a_pin_write_that_fails_with_no_pin_in_the_store_raises(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = _adapter(store, tmp_path)

    def refused(rows: Sequence[SessionPinTable]) -> bool:
        return False  # What the store answers when the write failed on the pin's unique key.

    monkeypatch.setattr(store, "pin", refused)
    with pytest.raises(RuntimeError, match="could not be written"):
        adapter.write_pin("run-1", [_pin_row("session", "")])
