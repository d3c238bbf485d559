"""Decision 5, builtin part: the name grammar, reserved domains, and unknown names."""

from __future__ import annotations

import json

import pytest

from toolproof.fakes import EchoTool, WriteTool, device_tool
from toolproof.spec import MAX_NAME_LENGTH, InvocationStatus, PortViolation, ReasonCode, ToolSource

from ._harness import Harness

UNDER_THE_CAP = "t." + "a" * (MAX_NAME_LENGTH - 3)
AT_THE_CAP = "t." + "a" * (MAX_NAME_LENGTH - 2)
OVER_THE_CAP = "t." + "a" * (MAX_NAME_LENGTH - 1)

GRAMMATICAL = (
    "a.b",  # the shortest
    "files.read_text",
    "a0_.b1_9",  # digits and underscores after a segment's first letter
    "a.b.c.d",  # more than two segments
    UNDER_THE_CAP,
    AT_THE_CAP,
    "ab." * ((MAX_NAME_LENGTH - 2) // 3) + "ab",  # at the cap, in many segments
)
"""Names the grammar admits, the longest at the 128-character cap."""

OUTSIDE_THE_GRAMMAR = (
    # Shape.
    "Files.Read",
    "files.READ",
    "files",
    "files.read-all",
    "files..read",
    "1files.read",
    "_files.read",
    "files._read",
    "files.1read",
    ".files.read",
    "files.read.",
    "files read",
    "files:read",
    "files/read",
    # Length: one over the cap, and far over it.
    OVER_THE_CAP,
    "t." + "a" * 998,
    # Whitespace and control characters around or inside an otherwise grammatical name.
    "files.read_text\n",
    "files.read_text\r\n",
    "files.read_text\r",
    "\nfiles.read_text",
    "files\n.read_text",
    "files.read_text\t",
    "files.read_text ",
    " files.read_text",
    "files.read_text\x00",
    "files.read_text\u2028",
    "files.read_text\u200b",
    # Letters and digits outside ASCII, and compatibility characters NFKC folds into the grammar.
    "\uff46\uff49\uff4c\uff45\uff53.read",  # fullwidth "files"
    "\ufb01les.read",  # the "fi" ligature
    "file\u017f.read",  # long s
    "files\u2024read",  # one dot leader
    "fil\u0435s.read",  # Cyrillic ie
    "f\u0131les.read",  # dotless i
    "files.r\u00e9ad",
    "files.read\u0661",  # Arabic-Indic digit one: a decimal digit to \d, not to [0-9]
    "files.read\u00b2",
)
"""Names outside the grammar, one class of mistake each."""


def _names_it(name: str, error: object) -> bool:
    """Whether the error names ``name``, as itself or escaped (Python or JSON) where it holds control characters."""
    shown = str(error)
    return any(form in shown for form in (name, repr(name)[1:-1], json.dumps(name)[1:-1]))


async def _refuses_naming(harness: Harness, rule: str, names: tuple[str, ...] | list[str]) -> None:
    for name in names:
        error = await harness.refused(EchoTool(harness.world, name=name))
        harness.expect(rule, error is not None, f"a builtin registered as {name!r} was accepted at startup")
        harness.expect(rule, _names_it(name, error), f"the startup error for {name!r} does not name it: {error}")


@pytest.mark.rules("D5.1")
async def test_builtin_outside_the_grammar_is_a_startup_error(harness: Harness) -> None:
    await _refuses_naming(harness, "D5.1", OUTSIDE_THE_GRAMMAR)


@pytest.mark.rules("D5.1")
async def test_builtin_inside_the_grammar_registers_and_runs(harness: Harness) -> None:
    for name in GRAMMATICAL:
        error = await harness.refused(EchoTool(harness.world, name=name))
        harness.expect(
            "D5.1",
            error is None,
            f"a builtin named {name!r} ({len(name)} characters, grammatical) was refused: {error}",
        )
    async with harness.open(*(EchoTool(harness.world, name=name) for name in GRAMMATICAL)) as session:
        for name in GRAMMATICAL:
            harness.success("D5.1", await session.call(name, {"text": "t"}), f"a call to the registered {name!r}")


RESERVED_NAMES = ("mcp.files.read", "device.camera.snap")
"""One name in each reserved domain."""

CONFIGURED_SOURCES = (ToolSource.BUILTIN, ToolSource.DEVICE, ToolSource.SANDBOX)
"""Every source a tool the configuration registers can declare: only the MCP adapter's discoveries are ToolSource.MCP
(D5.2's interpretation)."""


@pytest.mark.rules("D5.2")
async def test_builtin_in_a_reserved_domain_is_a_startup_error(harness: Harness) -> None:
    await _refuses_naming(harness, "D5.2", RESERVED_NAMES)


@pytest.mark.rules("D5.2")
@pytest.mark.parametrize("source", CONFIGURED_SOURCES, ids=lambda s: s.value)
async def test_a_configured_tool_of_any_source_in_a_reserved_domain_is_a_startup_error(
    harness: Harness, source: ToolSource
) -> None:
    for name in RESERVED_NAMES:
        error = await harness.refused(device_tool(harness.world, name=name, source=source))
        harness.expect(
            "D5.2", error is not None, f"a configured {source.value}-source tool registered as {name!r} was accepted"
        )
        harness.expect("D5.2", _names_it(name, error), f"the startup error for {name!r} does not name it: {error}")


@pytest.mark.rules("D5.3")
async def test_unknown_or_ungrammatical_name_is_denied_unknown_tool(harness: Harness) -> None:
    async with harness.open(EchoTool(harness.world)) as session:
        for name in (
            "files.missing",
            "FILES.ECHO",
            "files.echo ",
            "files.echo\n",
            "\nfiles.echo",
            "files.echo\x00",
            "mcp.evil.files_echo",
            "files",
        ):
            d = harness.outcome("D5.3", await session.call(name, {"text": "t"}), f"a call to {name!r}")
            harness.expect(
                "D5.3",
                (d.status, d.reason_code) == (InvocationStatus.DENIED, ReasonCode.UNKNOWN_TOOL),
                f"a call to {name!r} was answered {d.status.value} {d.reason_code.value}",
            )
    harness.expect(
        "D5.3", harness.world.executions == [], f"an unknown name executed a tool: {harness.world.executions}"
    )


UNKNOWN_IN_A_BATCH = ("files.missing", "FILES.ECHO", "mcp.evil.files_echo")
"""Unknown names a batch may carry: unregistered, outside the grammar, in the mcp domain with no server."""

BATCHES = [(size, at) for size in (2, 3, 4) for at in range(size)]
"""(batch size, position of the unknown call): every position of batches of two to four calls."""


@pytest.mark.rules("D5.3", "D15.2")
@pytest.mark.parametrize("others", ["reads", "mixed"])
@pytest.mark.parametrize(("size", "at"), BATCHES, ids=[f"{n}-calls-unknown-at-{i}" for n, i in BATCHES])
async def test_unknown_call_in_a_batch_is_denied_alone(harness: Harness, size: int, at: int, others: str) -> None:
    """The other calls are read-only (the batch would qualify for parallelism but for the unknown one) or alternate
    a write with reads (it never qualifies)."""
    known = [EchoTool(harness.world), WriteTool(harness.world)]
    async with harness.open(*known) as session:
        for batch, unknown in enumerate(UNKNOWN_IN_A_BATCH):
            run_id = f"run-{batch}"
            names = [known[others == "mixed" and k % 2 == 0].spec.name for k in range(size - 1)]
            names.insert(at, unknown)
            calls = [
                session.proposed(n, {"text": f"{batch}-{i}"} if n == "files.echo" else {"title": f"{batch}-{i}"})
                for i, n in enumerate(names)
            ]
            before = len(harness.world.executions)
            try:
                dispositions = await session.step(calls, run_id=run_id)
            except PortViolation:
                raise
            except Exception as exc:  # The implementation gave up on the batch: that is the finding.
                harness.fail("D15.2", f"the batch {names} raised {type(exc).__name__}: {exc} instead of answering")
            by_id = {r.invocation_id: r.call_id for r in await session.rows(run_id)}
            answered = [by_id.get(d.invocation_id) for d in dispositions]
            harness.expect(
                "D15.2",
                answered == [c.call_id for c in calls],
                f"the batch {names} was answered for calls {answered}; expected {[c.call_id for c in calls]}",
            )
            d = harness.outcome("D5.3", dispositions[at], f"the call to {unknown!r} at {at} of the batch {names}")
            harness.expect(
                "D5.3",
                (d.status, d.reason_code) == (InvocationStatus.DENIED, ReasonCode.UNKNOWN_TOOL),
                f"the call to {unknown!r} at {at} of the batch {names} was answered {d.status.value} "
                f"{d.reason_code.value}",
            )
            for i, other in enumerate(dispositions):
                if i != at:
                    harness.success("D15.2", other, f"the call to {names[i]} at {i} of the batch {names}")
            ran = [e.tool_name for e in harness.world.executions[before:]]
            harness.expect(
                "D5.3",
                sorted(ran) == sorted(n for i, n in enumerate(names) if i != at),
                f"the batch {names} executed {ran}; expected each known call once and nothing for {unknown!r}",
            )


COMPATIBILITY_LOOK_ALIKES = (
    "\uff46\uff49\uff4c\uff45\uff53.echo",  # fullwidth "files"
    "\uff46iles.echo",  # one fullwidth letter
    "\ufb01les.echo",  # the "fi" ligature
    "file\u017f.echo",  # long s
    "files\u2024echo",  # one dot leader for the dot
    "files\ufe52echo",  # small full stop for the dot
    "files.\U0001d41echo",  # mathematical bold e
    "files.ech\u2092",  # subscript o
    "files.ech\u1d52",  # modifier small o
    "files.\u212fcho",  # script small e
)
"""Names outside the grammar that NFKC folds into the registered "files.echo"."""


@pytest.mark.rules("D5.3")
async def test_compatibility_look_alike_of_a_registered_name_is_denied_unknown_tool(harness: Harness) -> None:
    async with harness.open(EchoTool(harness.world)) as session:
        harness.success("D5.3", await session.call("files.echo", {"text": "t"}), "a call to the registered files.echo")
        for name in COMPATIBILITY_LOOK_ALIKES:
            d = harness.outcome("D5.3", await session.call(name, {"text": "t"}), f"a call to {name!r}")
            harness.expect(
                "D5.3",
                (d.status, d.reason_code) == (InvocationStatus.DENIED, ReasonCode.UNKNOWN_TOOL),
                f"a call to {name!r} (NFKC: files.echo) was answered {d.status.value} {d.reason_code.value}",
            )
    harness.expect(
        "D5.3",
        len(harness.world.executions) == 1,
        f"look-alikes of files.echo executed it: {len(harness.world.executions)} executions for 1 call by its name",
    )


@pytest.mark.rules("D5.4")
async def test_duplicate_name_is_a_startup_error(harness: Harness) -> None:
    first, second = EchoTool(harness.world, name="files.echo"), EchoTool(harness.world, name="files.echo")
    error = await harness.refused(first, second)
    harness.expect("D5.4", error is not None, "two tools registered as 'files.echo' were accepted")
    harness.expect("D5.4", "files.echo" in str(error), f"the startup error does not name the duplicate: {error}")
