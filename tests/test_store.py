"""The reference store's writes, with UPDATE ... RETURNING and without it (the path a dialect lacking it takes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.exc import NoResultFound

from toolproof.reference._store import DuplicateKey, InvocationTable, Store
from toolproof.spec import EventKind, InvocationStatus, TrustLabel


@pytest.fixture(params=["returning", "read-back"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened = Store.in_directory(tmp_path)
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
