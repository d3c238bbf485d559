"""A call refused before step 3 (resolve, validate) still records the labels its request carried, not defaults a
reader would take for a judgement (docs/assumptions.md: "Labels on a row refused before step 3")."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolproof.fakes import EchoTool, FakeClock, World
from toolproof.reference import ReferenceImplementation
from toolproof.spec import ContextItem, InstanceConfig, Outcome, ProposedCall, ReasonCode, StepRequest, TrustLabel

pytestmark = pytest.mark.anyio

USER = ContextItem(id="user-1", trust=TrustLabel.USER, text="Echo my note.")
SYSTEM = ContextItem(id="sys-1", trust=TrustLabel.SYSTEM, text="You are an agent.")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize(
    ("tool_name", "arguments", "reason"),
    [
        ("files.no_such_tool", {"text": "hi"}, ReasonCode.UNKNOWN_TOOL),
        ("files.echo", {"text": 42}, ReasonCode.INVALID_ARGUMENTS),
    ],
    ids=["refused at resolve", "refused at validate"],
)
async def test_a_row_refused_before_labelling_records_the_requests_labels(
    tmp_path: Path, tool_name: str, arguments: dict[str, object], reason: ReasonCode
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    config = InstanceConfig(store_dir=tmp_path / "store", workspace=workspace)
    tool = EchoTool(World(), input_schema={"type": "object", "properties": {"text": {"type": "string"}}})
    call = ProposedCall(call_id="c1", tool_name=tool_name, arguments=arguments, provenance={"text": ["user-1"]})
    request = StepRequest(run_id="run-1", step_number=0, calls=[call], context=[SYSTEM, USER])
    async with ReferenceImplementation().open(config, [tool], FakeClock()) as instance:
        [answer] = await instance.submit(request)
        assert isinstance(answer, Outcome), answer
        assert answer.reason_code is reason, answer
        [row] = await instance.invocations("run-1")
    assert (row.origin_trust, row.argument_trust) == (TrustLabel.USER, TrustLabel.USER)
