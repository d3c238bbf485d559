"""The tool port (decision 2) and the implementation port every pipeline under test offers."""

from __future__ import annotations

import importlib.metadata
import inspect
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from functools import cache
from pathlib import Path
from typing import Any, Protocol, cast, get_type_hints, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ._crash import CrashPlan
from ._enums import Profile
from ._errors import ConfigurationError, PortViolation
from ._faults import FaultPlan
from ._limits import DEFAULT_APPROVAL_TIMEOUT_S
from ._loader import load_object
from ._mcp import Advertisement, CatalogChange, McpServerConfig
from ._types import (
    ArtifactRef,
    Budget,
    Disposition,
    Event,
    Identity,
    InvocationRow,
    JsonObject,
    ScriptRequest,
    ScriptRun,
    StepRequest,
    ToolResult,
    ToolSpec,
)

CONTEXT_MEMBERS: tuple[str, ...] = (
    "identity",
    "budget",
    "deadline",
    "target",
    "workspace",
    "artifact_writer",
    "credential_resolver",
    "cancellation",
    "mark_effect_sent",
)
"""Decision 2: exactly these, and nothing that reaches the pipeline."""

CONTROL_ANSWER_ARGUMENT = "answer"
"""The argument under which a resumed control tool receives the run's answer."""

ENTRY_POINT_GROUP = "toolproof.implementations"
"""Entry-point group under which implementations register a zero-argument factory."""


class ArtifactWriter(Protocol):
    """Stores blobs for the invocation."""

    async def write(self, name: str, data: bytes) -> ArtifactRef:
        """Store ``data`` under ``name`` and return its reference."""
        ...


class CredentialResolver(Protocol):
    """Hands a tool the credentials of the scopes its spec requires, and no others."""

    async def resolve(self, scope: str) -> str | None:
        """The credential for ``scope``, or ``None`` when the tool may not have it."""
        ...


@runtime_checkable
class Clock(Protocol):
    """The time an implementation judges holds and leases by; the harness injects a fake one."""

    def now(self) -> float:
        """Seconds since the epoch."""
        ...


class Cancellation(Protocol):
    """Tells a tool that its invocation was cancelled."""

    def is_set(self) -> bool:
        """Whether cancellation was requested."""
        ...

    async def wait(self) -> None:
        """Return once cancellation is requested."""
        ...


@runtime_checkable
class ToolExecutionContext(Protocol):
    """What a tool receives: the nine members of decision 2, and nothing else."""

    @property
    def identity(self) -> Identity:
        """Who and what this execution is."""
        ...

    @property
    def budget(self) -> Budget:
        """What the call may spend."""
        ...

    @property
    def deadline(self) -> float:
        """Absolute time (``time.time()`` seconds) by which the tool must return."""
        ...

    @property
    def target(self) -> str | None:
        """The configured target the tool acts on (a base URL, a server id), if any."""
        ...

    @property
    def workspace(self) -> Path:
        """The run's workspace directory."""
        ...

    @property
    def artifact_writer(self) -> ArtifactWriter:
        """Stores blobs."""
        ...

    @property
    def credential_resolver(self) -> CredentialResolver:
        """Resolves credentials."""
        ...

    @property
    def cancellation(self) -> Cancellation:
        """Cancellation signal."""
        ...

    async def mark_effect_sent(self) -> None:
        """Commit ``effect_sent_at`` now; call immediately before the first effect. Returns once committed."""
        ...


@runtime_checkable
class Tool(Protocol):
    """A tool: its spec and its one operation."""

    @property
    def spec(self) -> ToolSpec:
        """The registered spec."""
        ...

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        """Do the work; never decide a status."""
        ...


class InstanceConfig(BaseModel):
    """How the harness configures one instance of an implementation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    store_dir: Path
    """A fresh directory the instance keeps its store and artifacts in."""
    workspace: Path
    """The workspace directory handed to tools."""
    targets: dict[str, str] = Field(default_factory=dict)
    """A registered tool's name (``tickets.create``) -> the target handed to that tool as its context's ``target``;
    a tool without an entry gets null."""
    credentials: dict[str, str] = Field(default_factory=dict)
    """Scope -> credential the resolver may hand out."""
    max_output_bytes: int = 64 * 1024
    """Output above this is excerpted (decision 12)."""
    lease_s: float = 60.0
    """How long a claim is leased; a RUNNING or never-claimed row older than this is an orphan for the sweep."""
    approval_timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S
    """How long an approval hold waits before it expires (decision 17's bound, on the injected clock)."""
    denied_tools: list[str] = Field(default_factory=list)
    """Tool names the policy denies outright (the minimal configurable policy)."""
    max_attempts: int = Field(default=2, ge=1)
    """Executions a call may get within its step when its tool reports a TRANSIENT failure."""
    store_url: str | None = None
    """Database URL of the store (e.g. PostgreSQL for multi-worker tests); None: the implementation's default."""
    crash: CrashPlan | None = None
    """Recovery profile: die at this point (a SimulatedCrash, or SIGKILL of the worker process)."""
    fault: FaultPlan | None = None
    """Fail the store's write at this point, as the plan's kind says; the instance lives and answers ``StoreFault``."""
    mcp_servers: list[McpServerConfig] = Field(default_factory=list)
    """MCP profile: operator and tenant servers whose tools the instance registers under mcp.{server_id}."""
    egress_allowlist: list[str] = Field(default_factory=list)
    """MCP profile: hosts a tenant-configured HTTP server may be on (decision 7)."""


@runtime_checkable
class Instance(Protocol):
    """One running pipeline: submit steps, read back what it recorded."""

    async def submit(self, step: StepRequest) -> list[Disposition]:
        """Run every call of ``step`` through the pipeline; one disposition per call, in proposal order."""
        ...

    async def invocations(self, run_id: str) -> list[InvocationRow]:
        """Committed ``tool_invocations`` rows of ``run_id``, in creation order (read from the store)."""
        ...

    async def events(self, run_id: str) -> list[Event]:
        """Committed events of ``run_id`` in emission order."""
        ...

    async def metrics(self) -> dict[str, int]:
        """Current counters (Metric values)."""
        ...

    async def resolve_approval(self, invocation_id: str, approved: bool) -> Disposition:
        """Answer the approval hold of ``invocation_id``; the call continues (or is denied) through the pipeline.

        A hold past its bound resolves DENIED ``approval_expired`` whatever the answer.
        Raises ConfigurationError when the invocation is not awaiting approval.
        """
        ...

    async def resume(self, invocation_id: str, answer: str) -> Disposition:
        """Resume a suspended control call with the run's answer; it completes through the pipeline.

        The control tool executes with its arguments plus ``answer`` (CONTROL_ANSWER_ARGUMENT).
        Raises ConfigurationError when the invocation is not suspended.
        """
        ...

    async def run_script(self, request: ScriptRequest) -> ScriptRun:
        """Bridge profile: run a script in a sandbox; each of its calls re-enters the one pipeline.

        Running the same script again re-executes it from the start against recorded outcomes.
        """
        ...

    async def store_tables(self) -> list[str]:
        """Names of the tables in the implementation's store (decision 18)."""
        ...

    async def advertise(self, run_id: str) -> Advertisement:
        """MCP profile: start the session of ``run_id`` if it has not started (pinning its catalog), and
        return what it advertises. Submitting a step of a run starts its session too."""
        ...

    async def catalog_history(self) -> list[CatalogChange]:
        """MCP profile: every catalog-history entry of the store, in recording order."""
        ...

    async def sweep(self) -> list[Disposition]:
        """Run maintenance now: expire approval holds past their bound, pick up orphaned rows.

        Suspended control calls are excluded by predicate. Returns what the sweep decided.
        """
        ...


@runtime_checkable
class MeasuresExcerptMemory(Protocol):
    """Optional: an instance running outside the harness's process measures decision 12's memory itself."""

    async def submit_measuring_memory(self, step: StepRequest) -> tuple[list[Disposition], int | None]:
        """Submit ``step``; also the peak bytes allocated from its tools' results arriving to the step's end, or
        None when the implementation does not measure (decision 12's memory rule then reads not-covered)."""
        ...


@runtime_checkable
class Implementation(Protocol):
    """A pipeline under test, as the harness sees it."""

    @property
    def name(self) -> str:
        """Name shown in reports."""
        ...

    @property
    def profiles(self) -> frozenset[Profile]:
        """Profiles whose rules it claims; others report ``not-claimed``."""
        ...

    def open(
        self, config: InstanceConfig, tools: Sequence[Tool], clock: Clock
    ) -> AbstractAsyncContextManager[Instance]:
        """Start an instance with ``tools`` registered, judging time by ``clock``.

        Raises ConfigurationError to refuse the registry (e.g. a builtin in a reserved domain).
        """
        ...


_CHECKED = (
    "submit",
    "invocations",
    "events",
    "metrics",
    "resolve_approval",
    "resume",
    "run_script",
    "store_tables",
    "advertise",
    "catalog_history",
    "sweep",
)


@cache
def _answer_adapter(method: str) -> TypeAdapter[Any]:
    return TypeAdapter(get_type_hints(getattr(Instance, method))["return"])


def _where(error: ValidationError) -> str:
    first = error.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "the value itself"
    return f"{field}: {first['msg']} (got {type(first['input']).__name__})"


class _CheckedInstance:
    """An Instance whose every answer is checked against the port's types before a scenario reads it."""

    def __init__(self, inner: Instance) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if name not in _CHECKED:
            return found

        async def checked(*args: Any, **kwargs: Any) -> Any:
            answer = await found(*args, **kwargs)
            try:
                # Strict: a dict where the port says Disposition is the implementation's slip, not a Disposition.
                _answer_adapter(name).validate_python(answer, strict=True)
            except ValidationError as exc:
                raise PortViolation(f"Instance.{name} returned a wrong value at {_where(exc)}") from None
            return answer

        return checked


def checked_instance(instance: Instance) -> Instance:
    """``instance``, with every port method's answer validated against its declared type.

    A wrong answer raises ``PortViolation`` naming the method and the field (``Instance.submit
    returned a wrong value at 0: ...``). Optional methods (``submit_measuring_memory``) pass through.
    """
    checked: Any = _CheckedInstance(instance)
    return cast(Instance, checked)


def available_implementations() -> list[str]:
    """Names registered under the ``toolproof.implementations`` entry-point group."""
    return sorted({ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)})


def _implementation_or_factory(found: object) -> bool:
    return isinstance(found, Implementation) or callable(found)


def load_implementation(ref: str) -> Implementation:
    """Load an implementation by entry-point name or by ``package.module:factory`` (see ``load_object``).

    The object named is an Implementation, or a factory called with no arguments to make one (a
    class is always called: it satisfies the protocol structurally too).

    Raises:
        ConfigurationError: the name is unknown, the module does not import, the attribute is
            missing (``LoadError``), or the factory raises or does not produce an Implementation.
    """
    found = load_object(
        ref,
        expect=_implementation_or_factory,
        expected="an Implementation or a factory that makes one",
        group=ENTRY_POINT_GROUP,
        what="implementation",
        form="package.module:factory",
    )
    if isinstance(found, type) or (callable(found) and not isinstance(found, Implementation)):
        try:
            impl = found()
        except Exception as exc:  # A user's factory: its failure is bad input, shown in one line.
            problem = f"implementation {ref!r}: its factory raised {type(exc).__name__}: {exc}".splitlines()[0]
            raise ConfigurationError(problem) from exc
    else:
        impl = found
    if not isinstance(impl, Implementation):
        raise ConfigurationError(
            f"implementation {ref!r} produced {type(impl).__name__}, which lacks name, profiles or open()"
        )
    check_implementation(impl, ref)
    return impl


def check_implementation(impl: Implementation, ref: str) -> None:
    """The mistakes the protocol check cannot see, refused before anything runs.

    Raises:
        ConfigurationError: ``name`` is not a non-empty string, ``profiles`` is not a set of
            ``Profile`` members (strings are the usual slip), or ``open`` is ``async def``
            (it must return an async context manager, not a coroutine).
    """
    shown = f"implementation {ref!r}"
    name: object = impl.name
    if not isinstance(name, str) or not name:
        raise ConfigurationError(f"{shown}: name is {name!r}; it must be a non-empty string")
    profiles: object = impl.profiles
    if not isinstance(profiles, frozenset | set):
        raise ConfigurationError(
            f"{shown}: profiles is a {type(profiles).__name__}; it must be a frozenset of spec.Profile"
        )
    wrong = sorted(repr(p) for p in profiles if not isinstance(p, Profile))
    if wrong:
        raise ConfigurationError(
            f"{shown}: profiles holds {', '.join(wrong)}, not spec.Profile members;"
            f" write e.g. frozenset({{Profile.CORE}}) (the values: {', '.join(p.value for p in Profile)})"
        )
    if inspect.iscoroutinefunction(impl.open):
        raise ConfigurationError(
            f"{shown}: open() is `async def`; it must return an async context manager without awaiting"
            " (decorate an async generator with contextlib.asynccontextmanager)"
        )
