"""The driver protocol: its document, the reference behind it, and fuzzing from its own OpenAPI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import pytest
import schemathesis
from helpers import free_port, served_driver
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from toolproof._run import run_suite
from toolproof.driver import HttpImplementation, ToolHost, child_command, describe_context, stand_in_context
from toolproof.reference.hooks import (
    CancellationSignal,
    ContextParts,
    ExecutionContext,
    FileArtifactWriter,
    ScopedCredentials,
)
from toolproof.spec import (
    CONTEXT_MEMBERS,
    DRIVER_PROTOCOL,
    Budget,
    ExecuteTool,
    Identity,
    InstanceConfig,
    InvocationStatus,
    Problem,
    ToolContext,
    ToolSpec,
    Verdict,
    load_catalog,
    openapi_document,
)

ROOT = Path(__file__).resolve().parent.parent
FUZZ_EXAMPLES = 150
"""Examples per operation; operations with few distinct inputs stop earlier."""
FUZZED: list[str] = []
"""One entry per generated case, so the module can state how many ran."""


def test_the_checked_in_document_is_the_generated_one() -> None:
    checked_in = json.loads((ROOT / "spec" / "driver-openapi.json").read_text())
    assert checked_in == json.loads(json.dumps(openapi_document()))


def test_the_document_carries_the_outcome_table_and_the_thresholds() -> None:
    # Revision 2: a pipeline in another language reads decision 13's table and decision 14's numbers from here.
    from toolproof.spec import LOOP_THRESHOLD, OUTCOME_TABLE, REPEATED_DENIAL_THRESHOLD, STEPS

    constants = openapi_document()["x-toolproof"]
    assert constants["outcomes"] == {
        reason.value: {"status": e.status.value, "message": e.message, "retryable": e.retryable}
        for reason, e in OUTCOME_TABLE.items()
    }
    assert (constants["loop_threshold"], constants["repeated_denial_threshold"]) == (
        LOOP_THRESHOLD,
        REPEATED_DENIAL_THRESHOLD,
    )
    assert constants["steps"] == [step.value for step in STEPS]
    assert constants["context_members"] == list(CONTEXT_MEMBERS)
    assert "ToolResult" in openapi_document()["components"]["schemas"]


def test_the_document_covers_both_servers() -> None:
    tags = {op["tags"][0] for path in openapi_document()["paths"].values() for op in path.values()}
    assert tags == {"driver", "tool-host"}
    assert "/v1/tools/execute" not in openapi_document("driver")["paths"]


@pytest.fixture(scope="module")
def driver_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The reference behind the driver protocol, alone (not supervised), as a real server process."""
    root = tmp_path_factory.mktemp("driver-root")
    with served_driver(lambda port: child_command("reference", port, root, [], supervised=False)) as url:
        yield url


@pytest.mark.slow
def test_the_driver_answers_its_info(driver_url: str) -> None:
    info = httpx2.get(f"{driver_url}/v1/info").json()
    assert info["protocol"] == DRIVER_PROTOCOL
    assert info["name"] == "reference"


@pytest.mark.slow
def test_bad_input_gets_a_problem_naming_the_field(driver_url: str) -> None:
    answer = httpx2.post(f"{driver_url}/v1/instances", json={"config": {}, "tool_host": "http://127.0.0.1:1"})
    assert answer.status_code == 422
    problem = Problem.model_validate_json(answer.content)
    assert problem.type == "invalid-request"
    assert problem.field == "config.store_dir"


@pytest.mark.slow
@pytest.mark.parametrize("module", ["json", "pytest", "toolproof"])
def test_a_script_module_may_not_take_another_modules_name(driver_url: str, module: str) -> None:
    answer = httpx2.post(f"{driver_url}/v1/scripts", json={"module": module, "source": "import sys\n"})
    assert answer.status_code == 422
    assert Problem.model_validate_json(answer.content).field == "module"


OPERATIONS = [result.ok() for result in schemathesis.openapi.from_dict(openapi_document("driver")).get_all_operations()]


def _takes_input(operation: Any) -> bool:
    # A path parameter alone has no invalid form a URL can carry: only bodies, headers and queries do.
    definition = operation.definition.raw
    outside_path = [p for p in definition.get("parameters", []) if p["in"] != "path"]
    return bool(outside_path or definition.get("requestBody"))


CELLS = [
    pytest.param(operation, mode, id=f"{operation.label}-{mode.value}")
    for operation in OPERATIONS
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    if mode is GenerationMode.POSITIVE or _takes_input(operation)
]
"""Every operation with valid input; those that take input with invalid input too."""


@pytest.mark.slow
@pytest.mark.parametrize(("operation", "mode"), CELLS)
def test_the_driver_survives_its_own_document(driver_url: str, operation: Any, mode: GenerationMode) -> None:
    """No 5xx, every answer matches the document, bad input is refused with a problem naming the field."""

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(case=operation.as_strategy(generation_mode=mode))
    def exercise(case: schemathesis.Case) -> None:
        FUZZED.append(operation.label)
        # Schema-valid input may still be refused for what it means (a store outside the driver's root,
        # a configuration the ADR forbids): that answer is a 422 problem, so acceptance is not demanded.
        response = case.call_and_validate(base_url=driver_url, excluded_checks=[positive_data_acceptance])
        if 400 <= response.status_code < 500:
            problem = Problem.model_validate_json(response.content)
            assert problem.detail
            if problem.type == "invalid-request":
                assert problem.field, problem

    exercise()


@pytest.mark.slow
def test_fuzzing_ran_at_least_a_thousand_cases() -> None:
    """Runs after the fuzzing above (pytest keeps definition order in a module)."""
    print(f"schemathesis ran {len(FUZZED)} generated cases against the reference driver")
    assert len(FUZZED) >= 1000, len(FUZZED)


@pytest.mark.slow
def test_a_path_with_a_nul_byte_is_refused_not_crashed_on(driver_url: str) -> None:
    """Found by the fuzzing: Path.resolve() raises on a NUL byte."""
    config = {"store_dir": "/tmp/a\u0000b", "workspace": "/tmp/a\u0000b"}
    answer = httpx2.post(f"{driver_url}/v1/instances", json={"config": config, "tool_host": "http://127.0.0.1:1"})
    assert answer.status_code == 422
    assert Problem.model_validate_json(answer.content).field == "config.store_dir"


SERVE_A_PIPELINE = """
import sys
from pathlib import Path

import toolproof_minimal
from toolproof.driver import DriverOptions, serve

serve(toolproof_minimal.make(), int(sys.argv[1]), DriverOptions(root=Path(sys.argv[2])))
"""
"""What a Python implementer writes to put their own pipeline behind the protocol: no entry point."""


@pytest.mark.slow
def test_a_python_pipeline_served_with_serve_gives_its_in_process_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample = ROOT / "examples" / "minimal"
    monkeypatch.syspath_prepend(str(sample))
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(sample), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-c", SERVE_A_PIPELINE, str(port), tempfile.gettempdir()]
    process = subprocess.Popen(command, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        served = HttpImplementation(url)
        assert served.name == f"minimal@127.0.0.1:{port}"
        over_http = run_suite([url], "D3,D13", tmp_path / "http").verdicts[served.name]
    finally:
        process.terminate()
        process.wait(timeout=30)
    in_process = run_suite(["toolproof_minimal:make"], "D3,D13", tmp_path / "in-process").verdicts["minimal"]
    # A rule the catalog judges in-process only (``over_http``) reads not-covered behind the driver, never pass.
    only_in_process = {rule.id for rule in load_catalog().rules if rule.over_http}
    assert {r: v for r, v in over_http.items() if r not in only_in_process} == {
        r: v for r, v in in_process.items() if r not in only_in_process
    }
    assert {over_http[r] for r in only_in_process if r in over_http} <= {Verdict.NOT_COVERED}
    assert Verdict.PASS in in_process.values()


class _Store:
    """Stands for a store handle a careless pipeline could hand over."""

    def commit(self) -> None:
        """What a tool must never reach."""


class _Leaky(ExecutionContext):
    __slots__ = ("pipeline_store",)

    def __init__(self, parts: ContextParts) -> None:
        super().__init__(parts)
        self.pipeline_store = _Store()


def _parts(tmp_path: Path) -> ContextParts:
    identity = Identity(
        tenant="t",
        run_id="r",
        step_number=1,
        call_id="c",
        invocation_id="i",
        tool_name="a.b",
        tool_version="1",
        attempt=2,
        idempotency_key="k",
    )

    async def mark() -> None:
        return None

    return ContextParts(
        identity=identity,
        budget=Budget(max_output_bytes=10),
        deadline=1234.5,
        target=None,
        workspace=tmp_path,
        artifact_writer=FileArtifactWriter(tmp_path),
        credential_resolver=ScopedCredentials(frozenset(), {}),
        cancellation=CancellationSignal(),
        mark=mark,
    )


def _stand_in(context: object, instance: object = None) -> object:
    wire = ToolContext(context_id="x", driver_url="http://127.0.0.1:1", members=describe_context(context, instance))
    request = ExecuteTool(tool="a.b", arguments={}, context=wire)
    over_json = ExecuteTool.model_validate_json(request.model_dump_json())
    return stand_in_context(over_json, httpx2.AsyncClient(), instance)


def _names(obj: object) -> list[str]:
    return sorted(name for name in dir(obj) if not name.startswith("_"))


def test_the_tool_host_builds_the_context_the_implementation_handed_over(tmp_path: Path) -> None:
    context = _stand_in(ExecutionContext(_parts(tmp_path)))
    assert _names(context) == sorted(CONTEXT_MEMBERS)
    identity = getattr(context, "identity", None)
    assert isinstance(identity, Identity)
    assert identity.attempt == 2
    assert getattr(context, "deadline", None) == 1234.5
    assert getattr(context, "workspace", None) == tmp_path
    assert _names(getattr(context, "artifact_writer", None)) == _names(FileArtifactWriter(tmp_path))


def test_a_member_the_implementation_adds_crosses_the_wire_with_its_type(tmp_path: Path) -> None:
    instance = object()
    leaky = _Leaky(_parts(tmp_path))
    context = _stand_in(leaky, instance)
    assert "pipeline_store" in _names(context)
    store = getattr(context, "pipeline_store", None)
    assert type(store).__module__ == _Store.__module__
    assert type(store).__qualname__ == _Store.__qualname__
    assert _names(store) == ["commit"]
    # A member that is the instance under test stands for the harness's own handle on it.
    object.__setattr__(leaky, "pipeline_store", instance)
    assert getattr(_stand_in(leaky, instance), "pipeline_store", None) is instance


@pytest.fixture(scope="module")
def tool_host_url() -> Iterator[str]:
    """A tool host with no tools, served on a loopback port in a thread of its own."""
    import threading

    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(ToolHost([]).app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        if server.started:
            break
        time.sleep(0.1)
    yield url
    server.should_exit = True
    thread.join(timeout=30)


HOST_CELLS = [
    pytest.param(operation, mode, id=f"{operation.label}-{mode.value}")
    for operation in (
        result.ok() for result in schemathesis.openapi.from_dict(openapi_document("tool-host")).get_all_operations()
    )
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
]
"""The tool host's operations, with valid and invalid input."""


@pytest.mark.slow
@pytest.mark.parametrize(("operation", "mode"), HOST_CELLS)
def test_the_tool_host_survives_its_own_document(tool_host_url: str, operation: Any, mode: GenerationMode) -> None:
    """The harness's half: no 5xx, every answer matches the document, bad input is a problem naming the field."""

    @settings(max_examples=FUZZ_EXAMPLES // 3, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(case=operation.as_strategy(generation_mode=mode))
    def exercise(case: schemathesis.Case) -> None:
        response = case.call_and_validate(base_url=tool_host_url, excluded_checks=[positive_data_acceptance])
        if 400 <= response.status_code < 500:
            problem = Problem.model_validate_json(response.content)
            assert problem.type == "invalid-request"
            assert problem.field, problem

    exercise()


@pytest.mark.slow
@pytest.mark.parametrize("run_id", ["a/b", "a%2Fb", "sp ace", "q?x=1", "h#f", "..", "ü/ü"])
def test_a_run_id_with_reserved_characters_reaches_its_run(
    driver_url: str, run_id: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The client sends a run id as one escaped path segment, and the server takes the whole segment back."""
    import anyio

    from toolproof.fakes import FakeClock

    # Under the driver's root, where it accepts stores.
    here = Path(tempfile.mkdtemp(dir=next(tmp_path_factory.getbasetemp().glob("driver-root*"))))

    async def read() -> tuple[int, int, str]:
        config = InstanceConfig(store_dir=here / "store", workspace=here / "workspace")
        (here / "workspace").mkdir()
        async with HttpImplementation(driver_url).open(config, [], FakeClock()) as instance:
            rows = await instance.invocations(run_id)
            events = await instance.events(run_id)
            ad = await instance.advertise(run_id)
        return len(rows), len(events), ad.run_id

    assert anyio.run(read) == (0, 0, run_id)


class _Hop:
    """One link of a chain of objects a context leads through."""

    def __init__(self, following: object) -> None:
        self.following = following


def test_an_object_the_context_leads_to_crosses_the_wire_however_deep(tmp_path: Path) -> None:
    deep = _Hop(_Hop(_Hop(_Hop(_Store()))))
    deep.following.following.following.back = deep  # type: ignore[attr-defined]  # A cycle is described once.
    leaky = _Leaky(_parts(tmp_path))
    object.__setattr__(leaky, "pipeline_store", deep)
    found = getattr(_stand_in(leaky), "pipeline_store", None)
    for _ in range(4):
        found = getattr(found, "following", None)
    assert type(found).__qualname__ == _Store.__qualname__
    assert _names(found) == ["commit"]
    third = getattr(getattr(getattr(_stand_in(leaky), "pipeline_store", None), "following", None), "following", None)
    again = getattr(getattr(third, "following", None), "back", None)
    assert type(again).__qualname__ == _Hop.__qualname__
    assert _names(again) == []  # Reached again: described by its kind and type, not by its members again.


@pytest.mark.parametrize(("answered", "read"), [(None, None), (0, 0), (1234, 1234), (True, None), ("5", None)])
def test_a_memory_probe_the_driver_does_not_measure_is_never_read_as_zero(answered: object, read: int | None) -> None:
    """``memory_peak_bytes: null`` (a driver that cannot measure) reads None, which D12.6 reports not-covered."""
    import anyio

    from toolproof.driver import HttpInstance
    from toolproof.fakes import FakeClock
    from toolproof.spec import ProposedCall, StepRequest

    def answer(request: httpx2.Request) -> httpx2.Response:
        assert request.url.params.get("probe") == "memory"
        return httpx2.Response(200, json={"dispositions": [], "memory_peak_bytes": answered})

    async def probe() -> int | None:
        transport = httpx2.MockTransport(answer)
        async with httpx2.AsyncClient(transport=transport, base_url="http://driver") as client:
            impl = cast(HttpImplementation, object.__new__(HttpImplementation))
            impl.url = "http://driver"
            instance = HttpInstance(impl, client, "i1", FakeClock(), dies=False)
            step = StepRequest(run_id="r", step_number=1, calls=[ProposedCall(call_id="c", tool_name="a.b")])
            _, peak = await instance.submit_measuring_memory(step)
        return peak

    assert anyio.run(probe) == read


def test_supervise_starts_any_command_again_after_a_sigkill_and_exits_as_it_does(tmp_path: Path) -> None:
    """``toolproof supervise -- COMMAND``: a driver in any language is restarted after a crash plan's SIGKILL."""
    marker = tmp_path / "killed-once"
    # First life: leave the marker, then die by SIGKILL; second life: exit 5 by itself.
    script = f'if [ -e "{marker}" ]; then exit 5; fi; touch "{marker}"; kill -9 $$'
    done = subprocess.run(
        [sys.executable, "-m", "toolproof", "supervise", "--", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, marker.exists()) == (5, True)
    assert "restarted after a SIGKILL crash (1)" in done.stderr


def test_supervise_of_a_program_that_does_not_exist_is_one_line_and_exit_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolproof", "supervise", "--", "no-such-driver-program"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "toolproof: error: COMMAND 'no-such-driver-program': no such program (give its path, or put it on PATH)\n"
    )


def test_supervise_tells_the_driver_it_is_supervised_through_the_environment(tmp_path: Path) -> None:
    """Revision 3: a driver in any language learns from ``TOOLPROOF_SUPERVISED`` that a SIGKILL plan is safe."""
    from toolproof.spec import SUPERVISED_ENV

    seen = tmp_path / "seen"
    script = f'printf %s "${{{SUPERVISED_ENV}:-unset}}" > "{seen}"; exit 3'
    done = subprocess.run(
        [sys.executable, "-m", "toolproof", "supervise", "--", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, seen.read_text()) == (3, "1")
    assert openapi_document()["x-toolproof"]["supervised_env"] == SUPERVISED_ENV


class _WaitsForever:
    """A harness tool that runs until it is cancelled."""

    def __init__(self) -> None:
        self.spec = ToolSpec(name="test.waits")
        self.started = anyio.Event()

    async def execute(self, arguments: dict[str, Any], context: object) -> Any:
        self.started.set()
        await anyio.sleep_forever()


@pytest.mark.parametrize("stopped", [True, False])
def test_an_execute_the_driver_stopped_is_answered_cancelled_and_is_no_outcome(stopped: bool) -> None:
    """Revision 3: after ``stopped``, the pending ``execute`` answers ``cancelled`` true (not the tool's outcome);
    a signal alone leaves the tool running, and its answer is then the tool's own."""
    tool = _WaitsForever()
    host = ToolHost([tool])
    request = ExecuteTool(
        tool="test.waits", arguments={}, context=ToolContext(context_id="k", driver_url="", members=[])
    )
    answers: list[dict[str, Any]] = []

    async def scenario() -> None:
        transport = httpx2.ASGITransport(app=host.app())
        async with httpx2.AsyncClient(transport=transport, base_url="http://host") as client:

            async def execute() -> None:
                answer = await client.post("/v1/tools/execute", json=request.model_dump(mode="json"))
                answers.append(answer.json())

            with anyio.move_on_after(2 if not stopped else 30):
                async with anyio.create_task_group() as group:
                    group.start_soon(execute)
                    await tool.started.wait()
                    news = {"signal_set": True, "stopped": stopped}
                    cancel = await client.post("/v1/contexts/k/cancel", json=news)
                    assert cancel.status_code == 204

    anyio.run(scenario)
    if stopped:
        assert len(answers) == 1
        assert answers[0]["cancelled"] is True
        assert answers[0]["raised"]
        assert answers[0]["result"] is None
        assert not answers[0]["raised"].startswith("CancelledError")
    else:
        assert answers == []  # Still running when the test gave up waiting: a signal alone stops nothing.


_OK = {"status": "SUCCEEDED", "invocation_id": "inv-1", "result": {"ok": True}}
OFF_PROTOCOL = [
    pytest.param(b"not json", "the body is not JSON", id="not-json"),
    pytest.param(
        {"dispositions": "x"}, 'dispositions: a list of dispositions (got {"dispositions": "x"})', id="no-list"
    ),
    pytest.param({"dispositions": [7]}, "dispositions.0: a disposition is an object (got 7)", id="not-object"),
    pytest.param(
        {"dispositions": [_OK, {**_OK, "status": "DONE"}]},
        "dispositions.1.status: one of "
        + ", ".join([*(status.value for status in InvocationStatus), "SUSPENDED"])
        + ' (got "DONE")',
        id="bad-status",
    ),
    pytest.param(
        {"dispositions": [{"status": "SUCCEEDED"}]},
        'dispositions.0.invocation_id: Field required (got {"status":',
        id="missing",
    ),
    pytest.param(
        {"dispositions": [{**_OK, "invocation_id": 5}]},
        "dispositions.0.invocation_id: Input should be a valid string (got 5)",
        id="wrong-type",
    ),
]


@pytest.mark.parametrize(("answer", "said"), OFF_PROTOCOL)
def test_an_answer_off_the_protocol_is_the_drivers_error_in_the_answers_terms(answer: object, said: str) -> None:
    """A driver's 2xx answer that does not match the document: one line naming the JSON path, what the document
    wants there and what came, as an ImplementationError (reported as the rule's error); no pydantic dump, no
    Python repr of an enum, no union branch names."""
    from toolproof.driver import HttpInstance
    from toolproof.fakes import FakeClock
    from toolproof.spec import ImplementationError, ProposedCall, StepRequest

    def reply(request: httpx2.Request) -> httpx2.Response:
        if isinstance(answer, bytes):
            return httpx2.Response(200, content=answer)
        return httpx2.Response(200, json=answer)

    async def submit() -> None:
        transport = httpx2.MockTransport(reply)
        async with httpx2.AsyncClient(transport=transport, base_url="http://driver") as client:
            impl = cast(HttpImplementation, object.__new__(HttpImplementation))
            impl.url = "http://driver"
            instance = HttpInstance(impl, client, "i1", FakeClock(), dies=False)
            step = StepRequest(run_id="r", step_number=1, calls=[ProposedCall(call_id="c", tool_name="a.b")])
            await instance.submit(step)

    with pytest.raises(ImplementationError) as raised:
        anyio.run(submit)
    text = str(raised.value)
    assert text.startswith("the driver's answer to POST /v1/instances/i1/steps does not match the protocol: ")
    assert said in text
    assert "\n" not in text
    for python in ("InvocationStatus.", "validation error", "function-after", "Success.", "pydantic"):
        assert python not in text


def test_an_implementation_error_is_the_rules_error_in_one_line() -> None:
    """The scenario plugin reports a driver's misbehaviour by its one line, not the harness's traceback."""
    from toolproof.scenarios._plugin import _judge
    from toolproof.spec import ImplementationError

    report = cast(pytest.TestReport, types.SimpleNamespace(skipped=False, when="call", passed=False, longreprtext="TB"))
    error = ImplementationError("the driver's answer to POST /v1/instances/i1/steps does not match the protocol: x")
    verdict, evidence, _ = _judge(report, ExceptionGroup("task group", [error]))
    assert (verdict, evidence) == (Verdict.ERROR, f"implementation error: {error}")
    assert _judge(report, RuntimeError("boom"))[:2] == (Verdict.ERROR, "RuntimeError: boom\nTB")  # The cause first.


@pytest.mark.parametrize("answer", [[], "dispositions", 7])
def test_a_memory_probe_answer_that_is_no_object_is_the_drivers_error(answer: object) -> None:
    """Read once: an answer that is not an object is refused as off the protocol, before its peak is looked for."""
    from toolproof.driver import HttpInstance
    from toolproof.fakes import FakeClock
    from toolproof.spec import ImplementationError, ProposedCall, StepRequest

    async def probe() -> None:
        transport = httpx2.MockTransport(lambda request: httpx2.Response(200, json=answer))
        async with httpx2.AsyncClient(transport=transport, base_url="http://driver") as client:
            impl = cast(HttpImplementation, object.__new__(HttpImplementation))
            impl.url = "http://driver"
            instance = HttpInstance(impl, client, "i1", FakeClock(), dies=False)
            step = StepRequest(run_id="r", step_number=1, calls=[ProposedCall(call_id="c", tool_name="a.b")])
            await instance.submit_measuring_memory(step)

    with pytest.raises(ImplementationError, match=r"steps\?probe=memory does not match the protocol: dispositions: "):
        anyio.run(probe)
