"""Every hostile fake MCP server, in both eras and over every transport it has, against the reference.

Open, advertise, and submit a call of each of the server's tools plus one builtin call: whatever the
server does, only ``spec.McpOpenError`` at open or dispositions may come out; never an exception of
the MCP SDK, pydantic, anyio or a bare task group, nor a ConfigurationError without the server's answer.

The default run sweeps every fake in memory and, over its own transports, every fake whose fault only a process
has; the other fakes over stdio and streamable HTTP are in the over-HTTP tier (``nox -s transport``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from toolproof.fakes import EchoTool, FakeClock, World
from toolproof.fakes.mcp import SERVERS, http_server, stdio_command
from toolproof.reference import ReferenceImplementation
from toolproof.spec import (
    ConfigurationError,
    ContextItem,
    Disposition,
    IdempotencyClass,
    InstanceConfig,
    McpClassification,
    McpOpenError,
    McpServerConfig,
    McpTransport,
    ProposedCall,
    Risk,
    SideEffect,
    StepRequest,
    ToolproofError,
    TrustLabel,
    new_run_id,
)

pytestmark = pytest.mark.anyio

ERAS = ("legacy", "2026-07-28")
READ = McpClassification(side_effect=SideEffect.READ_ONLY, risk=Risk.LOW, idempotency=IdempotencyClass.IDEMPOTENT)
USER_ITEM = ContextItem(id="user-1", trust=TrustLabel.USER, text="Please do what I asked.")
CALL_TIMEOUT_S = 3.0
"""Short, so a server that never answers costs this much per request (a bound, not a timing claim)."""

CELLS = [(name, era, transport) for name, fake in SERVERS.items() for era in ERAS for transport in fake.transports]
"""(fake, era, transport): every cell the sweep runs."""


@contextlib.asynccontextmanager
async def _server(name: str, era: str, transport: str) -> AsyncIterator[McpServerConfig]:
    common: dict[str, Any] = {"server_id": "swept", "classification": READ, "protocol": era}
    common["call_timeout_s"] = CALL_TIMEOUT_S
    if transport == "memory":
        yield McpServerConfig(transport=McpTransport.MEMORY, server=SERVERS[name](), **common)
    elif transport == "stdio":
        yield McpServerConfig(transport=McpTransport.STDIO, command=stdio_command(name), **common)
    else:
        async with http_server(name) as url:
            yield McpServerConfig(transport=McpTransport.HTTP, url=url, **common)


def _raw(exc: BaseException) -> bool:
    """Whether ``exc`` is not one of spec's typed errors (a raw SDK, pydantic or anyio exception, or a group)."""
    return not isinstance(exc, ToolproofError)


async def _sweep(name: str, era: str, transport: str, directory: Path) -> list[str]:
    """The raw exceptions one cell let out, each as ``where: Type: text``."""
    raw: list[str] = []
    world = World()
    workspace = directory / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    config_fields: dict[str, Any] = {"store_dir": directory / "store", "workspace": workspace}
    async with _server(name, era, transport) as server:
        config = InstanceConfig(mcp_servers=[server], **config_fields)
        try:
            async with ReferenceImplementation().open(config, [EchoTool(world)], FakeClock()) as instance:
                run = new_run_id()
                try:
                    advertisement = await instance.advertise(run)
                except Exception as exc:  # The finding, when raw.
                    raw.append(f"advertise: {type(exc).__name__}: {exc}"[:300])
                    return raw
                names = [t.name for t in advertisement.tools] + ["files.echo"]
                for number, tool in enumerate(names, start=1):
                    call = ProposedCall(
                        call_id=f"call-{number}",
                        tool_name=tool,
                        arguments={"text": "x"},
                        provenance={"text": ["user-1"]},
                    )
                    step = StepRequest(run_id=run, step_number=number, calls=[call], context=[USER_ITEM])
                    try:
                        dispositions: list[Disposition] = await instance.submit(step)
                        assert len(dispositions) == 1
                    except Exception as exc:  # The finding, when raw.
                        if _raw(exc):
                            raw.append(f"submit {tool}: {type(exc).__name__}: {exc}"[:300])
        except McpOpenError:
            pass  # Refused at open with the typed error naming server, era, answer and cause: contained.
        except ConfigurationError as exc:  # Typed, but not what a server's failure at open must be (D7.7).
            raw.append(f"open: opaque {type(exc).__name__}: {exc}"[:300])
        except BaseException as exc:  # The finding, when raw (a group included).
            if not isinstance(exc, Exception):
                raise
            raw.append(f"open: {type(exc).__name__}: {exc}"[:300])
    return raw


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _id(cell: tuple[str, str, str]) -> str:
    return "-".join(cell)


@pytest.mark.parametrize("cell", [c for c in CELLS if c[2] == "memory"], ids=_id)
async def test_no_raw_exception_escapes_in_memory(cell: tuple[str, str, str], tmp_path: Path) -> None:
    assert await _sweep(*cell, tmp_path) == []


def _subprocess_only(name: str) -> bool:
    """Whether the fake's fault exists only in a process of its own (it exits, or writes to its stdout)."""
    return "memory" not in SERVERS[name].transports


@pytest.mark.slow
@pytest.mark.parametrize("cell", [c for c in CELLS if c[2] != "memory" and _subprocess_only(c[0])], ids=_id)
async def test_no_raw_exception_escapes_from_a_fault_only_a_process_has(
    cell: tuple[str, str, str], tmp_path: Path
) -> None:
    assert await _sweep(*cell, tmp_path) == []


@pytest.mark.slow
@pytest.mark.transport_matrix
@pytest.mark.parametrize("cell", [c for c in CELLS if c[2] != "memory" and not _subprocess_only(c[0])], ids=_id)
async def test_no_raw_exception_escapes_over_a_subprocess(cell: tuple[str, str, str], tmp_path: Path) -> None:
    """The faults the in-memory cells already sweep, again over stdio and streamable HTTP: in the over-HTTP tier
    (``nox -s transport``), since a process per cell costs most of a default run's MCP time."""
    assert await _sweep(*cell, tmp_path) == []


def test_the_sweep_covers_every_fake_in_both_eras() -> None:
    swept = {(name, era) for name, era, _ in CELLS}
    assert swept == {(name, era) for name in SERVERS for era in ERAS}
    assert all(fake.transports for fake in SERVERS.values())
