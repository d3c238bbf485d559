"""``check_tool`` and ``assert_conforms``: the tool-author contract as plain functions."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import hypothesis
import jsonschema
from hypothesis import HealthCheck, Phase, Verbosity, find, given, reporting
from hypothesis import configuration as hypothesis_configuration
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument, NoSuchExample, Unsatisfiable

from toolproof.spec import ConfigurationError, ContractViolation, IdempotencyClass, JsonObject, Tool, ToolSpec

from ._arguments import arguments_strategy
from ._confine import confinement_unavailable
from ._example import PROBE_DEADLINE_S, probe_deadline_s
from ._execute import Runner
from ._findings import CONTRACT_RULES, ContractReport, Finding, sort_findings
from ._judge import judge_deadline_probe, judge_example, judge_reads_only, judge_remote_probe, owes_watermark, repeats
from ._leftovers import AFTER_RETURN_S
from ._options import CheckOptions, KeyCarrier, Observation
from ._transport import TransportMode
from ._world import ContractWorld

PYTHON_BLIND_SPOTS = (
    "writes by native code outside the workspace (C extensions, ctypes, memory maps)",
    "writes through file handles and connections opened before the check",
    "what a started process does (process starts are refused)",
    "signals sent other than with os.kill and os.killpg",
)
"""What Python-level observation cannot see: every partial verdict names them."""

DEFAULT_SETTINGS = hypothesis.settings(
    max_examples=20,
    derandomize=True,
    database=None,
    deadline=None,
    verbosity=Verbosity.quiet,
    suppress_health_check=list(HealthCheck),
    report_multiple_bugs=False,
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
)
"""Hypothesis settings of a check: 20 examples, derandomized, no example database, quiet, no explain phase."""


class _Violation(Exception):
    """Raised inside hypothesis so it shrinks the arguments of one new finding."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.rule_id)
        self.finding = finding


def load_tool(factory: object) -> Tool:
    """Call ``factory`` once and check that it makes a Tool.

    Raises:
        ConfigurationError: ``factory`` is not a zero-argument callable returning a Tool.
    """
    name = getattr(factory, "__qualname__", type(factory).__name__)
    if isinstance(factory, Tool) and not isinstance(factory, type):
        raise ConfigurationError(
            f"factory {name!r} is a Tool instance, not a factory: pass its class or `lambda: tool`"
        )
    if not callable(factory):
        raise ConfigurationError(f"factory {name!r} is not callable: pass a zero-argument callable that returns a Tool")
    try:
        tool = factory()
    except Exception as exc:
        raise ConfigurationError(f"factory {name!r} raised {one_line(exc)}") from exc
    if not isinstance(tool, Tool):
        raise ConfigurationError(
            f"factory {name!r} returned {type(tool).__name__}, which is not a Tool: "
            "it needs a `spec` (ToolSpec) and `async def execute(arguments, context)`"
        )
    if not isinstance(tool.spec, ToolSpec):
        raise ConfigurationError(
            f"factory {name!r} made a tool whose spec is {type(tool.spec).__name__}, not a ToolSpec"
        )
    if not inspect.iscoroutinefunction(tool.execute):
        raise ConfigurationError(f"factory {name!r} made a tool whose execute is not `async def`")
    return tool


def one_line(exc: BaseException) -> str:
    """``Type: first line of the message``: an error as a one-line message shows it."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def check_tool(
    factory: Callable[[], Any],
    *,
    settings: hypothesis.settings | None = None,
    key_in: str | KeyCarrier | None = None,
    requests_act: bool = False,
    strict: bool = False,
    observation: str | Observation = Observation.AUTO,
) -> ContractReport:
    """Run the tool-author contract against the tools ``factory`` makes, and report every violated rule.

    Each example runs in a fresh workspace with a recording service as ``context.target``
    (HTTP, any other TCP stream, UDP), a credential resolver, a cancellation signal and a
    deadline. Where the system allows it (Linux, root or the capabilities namespaces need,
    ``strace``), the example runs confined in a child process and its effects are observed at
    the operating-system boundary: whatever library, native code or started process made
    them. Elsewhere they are observed at the Python level and the verdict says the
    observation was partial. Arguments come from the input schema (hypothesis,
    derandomized); a finding carries the smallest arguments that show it and their trace.
    Findings are returned, never raised (see ``assert_conforms``).

    Args:
        factory: A zero-argument callable returning a Tool (e.g. the tool's class); it is
            called once per example, so each example starts from a fresh tool.
        settings: Hypothesis settings to use instead of ``DEFAULT_SETTINGS`` (e.g. more
            examples); ``deadline`` is always None, since the contract enforces the tool's
            own, and ``database`` is always None, so a check is the same every time.
        key_in: Where the tool's requests carry ``context.identity.idempotency_key`` for the
            service to deduplicate on: ``header:NAME`` (default ``header:Idempotency-Key``),
            ``body:FIELD.PATH`` (JSON body) or ``query:NAME``.
        requests_act: The tool's requests act even with a safe method (a GET webhook): every
            request is then an effect.
        strict: A warning (no observable effect) or a partial observation fails the check.
        observation: ``auto`` (confine when possible), ``os`` (confine or raise), ``python``.

    Raises:
        ConfigurationError: ``factory`` does not make a Tool, its input schema admits no
            arguments the generator can produce, a declaration is malformed, or ``os``
            observation was asked for where confinement is unavailable.
    """
    __tracebackhide__ = True
    options = _options(key_in, requests_act, strict, observation)
    with _hypothesis_storage():
        return _check(factory, settings, options)


def _check(factory: Callable[[], Any], settings: hypothesis.settings | None, options: CheckOptions) -> ContractReport:
    __tracebackhide__ = True
    spec = load_tool(factory).spec
    chosen = hypothesis.settings(settings or DEFAULT_SETTINGS, deadline=None, database=None, report_multiple_bugs=False)
    try:
        strategy, notes = arguments_strategy(spec.input_schema)
    except jsonschema.SchemaError as exc:
        raise ConfigurationError(
            f"tool {spec.name!r}: input_schema is not a valid JSON Schema: {exc.message}"
        ) from None
    minimal = _minimal_arguments(spec, strategy, chosen)
    why_not = (
        confinement_unavailable()
        if options.observation is not Observation.PYTHON
        else "observation='python' was asked for"
    )
    if why_not is not None and options.observation is Observation.OS:
        raise ConfigurationError(f"observation='os' needs confinement, which is unavailable here: {why_not}")
    world = ContractWorld(options, confined=why_not is None)
    try:
        runner = Runner(factory, spec, world, options)
        findings = _search(runner, strategy, chosen)
        deadline_run = runner.run(
            minimal,
            mode=TransportMode.HOLD,
            deadline_s=probe_deadline_s(),
            stall=True,
            label=f"deadline probe: {PROBE_DEADLINE_S}s deadline times the load factor, the context and the transport stall",
        )
        findings += judge_deadline_probe(spec, deadline_run)
        remote_run = runner.run(minimal, mode=TransportMode.FAIL, label="remote-failure probe: the service answers 503")
        findings += judge_remote_probe(spec, remote_run)
        if (
            spec.idempotency is IdempotencyClass.NON_IDEMPOTENT
            and spec.consequential
            and runner.effects_seen == 0
            and runner.marks_seen == 0
            and runner.reads_only is not None
        ):
            findings += judge_reads_only(spec, runner.reads_only)
    finally:
        world.close()
    found = sort_findings(findings)
    warnings: list[str] = []
    if spec.consequential and runner.effects_seen == 0 and not found:
        unjudged = (
            "no example left an observable effect on the workspace or the target, nor tried to leave one "
            "elsewhere, so the watermark order and the declared side effect could not be judged"
        )
        if runner.reads_only is not None:
            unjudged += (
                " (its requests used safe methods, counted as reads: if they act, declare requests_act=True "
                "or --requests-act)"
            )
        (warnings if owes_watermark(spec) else notes).append(unjudged)
    if runner.left_running:
        warnings.append(
            f"work the tool left running ({runner.left_running[0]}) was still running {AFTER_RETURN_S}s after "
            f"execute ended, in {len(runner.left_running)} run(s), so an effect it made later was not observed (D3.9)"
        )
    if runner.deadlines_reached:
        notes.append(f"{runner.deadlines_reached} example(s) ran into their deadline and were cancelled")
    partial = None
    if why_not is not None:
        partial = f"observed at the Python level only ({why_not}): {_listed(PYTHON_BLIND_SPOTS)} are not observed"
    return ContractReport(
        tool=spec.name,
        side_effect=spec.side_effect.value,
        idempotency=spec.idempotency.value,
        findings=found,
        notes=notes,
        observation="python" if why_not is not None else "os",
        partial=partial,
        warnings=warnings,
        strict=options.strict,
        passed=not found and not (options.strict and (warnings or partial)),
    )


@contextmanager
def _hypothesis_storage() -> Iterator[None]:
    """Keep hypothesis's caches out of the working directory: in the user's cache folder, unless configured."""
    configured = getattr(hypothesis_configuration, "__hypothesis_home_directory", None)
    if configured is not None or os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        yield
        return
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "toolproof" / "hypothesis"
    hypothesis_configuration.set_hypothesis_home_dir(cache)
    try:
        yield
    finally:
        hypothesis_configuration.set_hypothesis_home_dir(None)


def _listed(items: tuple[str, ...]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else items[0]


def _options(
    key_in: str | KeyCarrier | None, requests_act: bool, strict: bool, observation: str | Observation
) -> CheckOptions:
    try:
        chosen = Observation(observation)
    except ValueError:
        raise ConfigurationError(
            f"observation={observation!r} is not one of {', '.join(repr(o.value) for o in Observation)}"
        ) from None
    carrier = KeyCarrier.parse(key_in) if isinstance(key_in, str) else key_in
    if carrier is None:
        return CheckOptions(chosen, requests_act=requests_act, strict=strict)
    return CheckOptions(chosen, carrier, requests_act, strict)


def assert_conforms(factory: Callable[[], Any], **options: Any) -> ContractReport:
    """``check_tool`` (same keyword options), raising ContractViolation (naming every finding) when it fails.

    Returns:
        The passing report.

    Raises:
        ContractViolation: with the first finding's rule ID and the whole report as its message.
        ConfigurationError: as ``check_tool``.
    """
    __tracebackhide__ = True
    report = check_tool(factory, **options)
    if not report.passed:
        rule_id = report.findings[0].rule_id if report.findings else "strict"
        raise ContractViolation(rule_id, report.render())
    return report


def _minimal_arguments(
    spec: ToolSpec, strategy: st.SearchStrategy[JsonObject], chosen: hypothesis.settings
) -> JsonObject:
    try:
        with reporting.with_reporter(_silent):
            return find(strategy, lambda _: True, settings=hypothesis.settings(chosen, max_examples=1000))
    except (NoSuchExample, Unsatisfiable, InvalidArgument) as exc:
        reason = f" ({exc})" if isinstance(exc, InvalidArgument) else ""
        raise ConfigurationError(
            f"tool {spec.name!r}: the generator could not produce arguments valid under its input_schema{reason}"
        ) from None


def _search(runner: Runner, strategy: st.SearchStrategy[JsonObject], chosen: hypothesis.settings) -> list[Finding]:
    """Find, and shrink, one example per violated rule: each round looks only for rules not yet found."""
    spec = runner.spec
    attempts = 2 if repeats(spec) else 1
    found: dict[str, Finding] = {}

    def example(arguments: JsonObject) -> None:
        run = runner.run(arguments, attempts=attempts)
        new = [f for f in judge_example(spec, run, runner.options) if f.rule_id not in found]
        if new:
            raise _Violation(sort_findings(new)[0])

    for _ in range(len(CONTRACT_RULES) + 1):
        test = chosen(given(strategy)(example))
        try:
            with reporting.with_reporter(_silent):
                test()
        except _Violation as violation:
            found[violation.finding.rule_id] = violation.finding
        except BaseExceptionGroup as group:  # hypothesis reports a flaky failure as a group
            inner = _first_violation(group)
            if inner is None:
                raise
            found[inner.finding.rule_id] = inner.finding
        else:
            break
    return list(found.values())


def _first_violation(group: BaseExceptionGroup[BaseException]) -> _Violation | None:
    for exc in group.exceptions:
        if isinstance(exc, _Violation):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            inner = _first_violation(exc)
            if inner is not None:
                return inner
    return None


def _silent(text: object) -> None:
    """Hypothesis's own report is replaced by the contract's findings."""
