"""The reference's cancellation signal follows the call's deadline scope: set from the moment the deadline fires,
before the tool sees its cancellation, and a wait on it ends at the deadline even inside a shielded scope."""

from __future__ import annotations

import anyio
import pytest

from toolproof.reference.hooks import CancellationSignal

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_signal_is_unset_until_the_deadline_and_set_when_the_tool_sees_its_cancellation() -> None:
    signal = CancellationSignal()
    seen: list[bool] = []
    with anyio.CancelScope(deadline=anyio.current_time() + 0.05) as scope:
        signal.follow(scope)
        seen.append(signal.is_set())
        try:
            await anyio.sleep_forever()
        finally:
            seen.append(signal.is_set())
    assert seen == [False, True]
    assert scope.cancelled_caught


async def test_a_shielded_wait_on_the_signal_ends_at_the_deadline() -> None:
    signal = CancellationSignal()
    with anyio.fail_after(5), anyio.CancelScope(deadline=anyio.current_time() + 0.05) as scope:
        signal.follow(scope)
        with anyio.CancelScope(shield=True):
            await signal.wait()
        assert signal.is_set()


async def test_set_by_the_pipeline_and_unfollowed_it_is_an_event() -> None:
    signal = CancellationSignal()
    assert not signal.is_set()
    signal.set()
    assert signal.is_set()
    with anyio.fail_after(5):
        await signal.wait()


async def test_a_scope_that_ends_before_its_deadline_leaves_the_signal_unset() -> None:
    signal = CancellationSignal()
    with anyio.CancelScope(deadline=anyio.current_time() + 30) as scope:
        signal.follow(scope)
        await anyio.lowlevel.checkpoint()
    assert not signal.is_set()
