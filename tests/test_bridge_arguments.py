"""The reference's bridge: a script proposing arguments no call can carry fails there, with one readable message."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolproof.fakes import EchoTool, FakeClock, World
from toolproof.reference import ReferenceImplementation
from toolproof.spec import ContextItem, InstanceConfig, ScriptRequest, TrustLabel, new_run_id

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_script_proposing_an_integer_no_double_holds_fails_at_that_ordinal(tmp_path: Path) -> None:
    world = World()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    config = InstanceConfig(store_dir=tmp_path / "store", workspace=workspace)
    request = ScriptRequest(
        run_id=new_run_id(),
        step_number=1,
        script="toolproof.fakes._scripts:unrepresentable",
        context=[ContextItem(id="user-1", trust=TrustLabel.USER, text="Order it.")],
    )
    async with ReferenceImplementation().open(config, [EchoTool(world, name="orders.place")], FakeClock()) as instance:
        run = await instance.run_script(request)
    assert run.status == "failed"
    assert run.call_ids == []
    assert run.message is not None
    assert "ordinal 1" in run.message
    assert "RFC 8785" in run.message
    assert world.effects == []
