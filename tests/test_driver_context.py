"""A context description the tool host cannot read is the driver's error, said in the protocol's terms."""

from __future__ import annotations

import json
from typing import Any, cast

import anyio
import httpx2
import pytest

from toolproof.driver import HttpImplementation, HttpInstance, ToolHost
from toolproof.fakes import FakeClock, World, WriteTool
from toolproof.spec import ImplementationError, ProposedCall, StepRequest, sole_exception

IDENTITY = {
    "tenant": "t",
    "run_id": "r",
    "step_number": 1,
    "call_id": "c",
    "invocation_id": "inv-1",
    "tool_name": "ticket.create",
    "tool_version": "1",
    "attempt": 1,
    "idempotency_key": "k",
}


def _member(name: str, kind: str, value: object = None, members: list[Any] | None = None) -> dict[str, Any]:
    return {"name": name, "kind": kind, "value": value, "type_name": f"js.{name}", "is_instance": False,
            "members": members or []}  # fmt: skip


def _context(identity: dict[str, Any]) -> list[dict[str, Any]]:
    signal = [_member("is_set", "callable"), _member("wait", "callable")]
    return [
        identity,
        _member("budget", "data", {"max_output_bytes": 100, "max_cost": None}),
        _member("deadline", "number", 9e9),
        _member("target", "null"),
        _member("workspace", "path", "/tmp"),
        _member("artifact_writer", "object", members=[_member("write", "callable")]),
        _member("credential_resolver", "object", members=[_member("resolve", "callable")]),
        _member("cancellation", "object", members=signal),
        _member("mark_effect_sent", "callable"),
    ]


def _run(scenario: Any) -> None:
    """``anyio.run(scenario)``, with what the loopback server's task group wraps raised as itself."""
    try:
        anyio.run(scenario)
    except BaseExceptionGroup as group:
        raise (sole_exception(group) or group) from None


OBJECT = _member("identity", "object", members=[_member(k, "string", str(v)) for k, v in IDENTITY.items()])
"""How a JavaScript driver described its identity: an object with members, as its language sees it."""


@pytest.mark.parametrize(
    ("identity", "said"),
    [
        pytest.param(
            OBJECT,
            'context.identity: described as kind "object"; the protocol describes it as kind "data", '
            "its value the components.schemas.Identity object",
            id="object",
        ),
        pytest.param(
            _member("identity", "data", {**IDENTITY, "attempt": "one"}),
            "context.identity: value.attempt: Input should be a valid integer",
            id="wrong-field",
        ),
    ],
)
def test_an_identity_the_tool_host_cannot_read_is_the_drivers_error_in_protocol_terms(
    identity: dict[str, Any], said: str
) -> None:
    """A driver hands the tool host a context whose identity is no Identity record: the submit that ran the tool
    fails as the implementation's error naming the member and what the protocol wants, never a harness traceback
    (``AttributeError: 'Identity' object has no attribute 'model_dump'``), and the tool never runs."""
    world = World()
    tool = WriteTool(world, name="ticket.create")
    host = ToolHost([tool])
    executed: list[int] = []

    async def scenario() -> None:
        host_url = "http://tool-host"
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=host.app()), timeout=30) as to_host:

            async def driver(request: httpx2.Request) -> httpx2.Response:
                # The fake driver's step 10: execute the tool through the tool host with its own description.
                wire = {"context_id": "x1", "driver_url": "http://127.0.0.1:1", "members": _context(identity)}
                body = {"tool": "ticket.create", "arguments": {"title": "t"}, "context": wire}
                answer = await to_host.post(f"{host_url}/v1/tools/execute", json=body)
                executed.append(answer.status_code)
                failed = {"status": "FAILED", "reason_code": "tool_failed", "message": "m", "retryable": False,
                          "invocation_id": "inv-1", "external_detail": None}  # fmt: skip
                return httpx2.Response(200, json={"dispositions": [failed], "memory_peak_bytes": None})

            transport = httpx2.MockTransport(driver)
            async with httpx2.AsyncClient(transport=transport, base_url="http://driver") as client:
                impl = cast(HttpImplementation, object.__new__(HttpImplementation))
                impl.url = "http://driver"
                instance = HttpInstance(impl, client, "i1", FakeClock(), dies=False, host=host)
                step = StepRequest(
                    run_id="r", step_number=1, calls=[ProposedCall(call_id="c", tool_name="ticket.create")]
                )
                await instance.submit(step)

    with pytest.raises(ImplementationError) as raised:
        _run(scenario)
    text = str(raised.value)
    assert text.startswith("the driver's description of the tool's context cannot be read: ")
    assert said in text
    assert "\n" not in text
    assert "model_dump" not in text
    assert executed == [422]  # The tool host refused the description, naming the member, and ran nothing.
    assert world.effects == []


def test_the_refusal_names_the_member_as_a_problem_field() -> None:
    host = ToolHost([WriteTool(World(), name="ticket.create")])

    async def post() -> httpx2.Response:
        host_url = "http://tool-host"
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=host.app()), timeout=30) as client:
            wire = {"context_id": "x1", "driver_url": "http://127.0.0.1:1", "members": _context(OBJECT)}
            return await client.post(f"{host_url}/v1/tools/execute", json={"tool": "ticket.create", "arguments": {},
                                                                          "context": wire})  # fmt: skip

    answer = anyio.run(post)
    problem = json.loads(answer.content)
    assert (answer.status_code, problem["type"], problem["field"]) == (
        422,
        "invalid-request",
        "context.members.identity",
    )
