"""A confined example: the check's side and the example's side of the channel between them.

The example process (see ``_confine``) runs the same attempt loop as an example in a
thread, but reports its events as numbered lines on a pipe. Each line is one ``write`` the
tracer logs among the tool's own calls, which is how the watermark is ordered against every
effect at the operating-system boundary. The check reads the lines as they come (to release
held answers at a deadline, and to kill an example that will not stop), then builds the
trace from the tracer's log (``_observe``) and what the recording service received.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from toolproof.spec import ConfigurationError, HarnessError, JsonObject, Tool, ToolSpec

from ._attempts import AttemptPlan, AttemptRun, run_attempts
from ._confine import Layout, launch, stop
from ._example import GRACE_S, ExampleRun
from ._inherited import repoint_inherited
from ._leftovers import Leftovers, namespace_processes
from ._observe import Observer, Scene
from ._result import describe_error
from ._syscalls import parse_log
from ._trace import EventKind, Trace
from ._transport import TransportMode, service_state
from ._view import aspects_since
from ._world import ContractWorld, show_path, snapshot, under


class _Channel:
    """The example's end: numbered JSON lines, one ``write`` each where the pipe takes it whole."""

    def __init__(self, fd: int, workspace: Path) -> None:
        self.fd = fd
        self.workspace = workspace
        self._number = 0
        self._attempt = 0
        self._deadline = 0.0
        self._leftovers = Leftovers(namespace_processes)

    def send(self, payload: dict[str, Any]) -> None:
        self._number += 1
        data = f"{self._number} {json.dumps(payload, sort_keys=True)}\n".encode()
        while data:
            data = data[os.write(self.fd, data) :]

    # -- AttemptHost -------------------------------------------------------------------------------

    def begin(self, number: int, deadline: float) -> None:
        self._attempt, self._deadline = number, deadline
        self._leftovers.begin()

    def running(self) -> str:
        return self._leftovers.running()

    def event(self, kind: EventKind, text: str) -> None:
        self.send(
            {"type": "event", "kind": kind.value, "text": text, "attempt": self._attempt, "deadline": self._deadline}
        )

    async def settle(self) -> None:
        return None  # the tracer orders everything: nothing to wait for

    def deadline_passed(self) -> None:
        self.send({"type": "release"})

    async def finish(self, attempt: AttemptRun) -> None:
        attempt.workspace_after = snapshot(self.workspace)
        self.send({"type": "attempt", "run": attempt.to_json()})


_warmed: list[bool] = []


def _warm_up() -> None:
    """Run an event loop once here, so a forked example does not import its backend under the tracer."""

    async def nothing() -> None:
        return None

    if not _warmed:
        thread = threading.Thread(target=anyio.run, args=(nothing,), name="toolproof-warm-up")
        thread.start()
        thread.join()
        _warmed.append(True)


def run_confined(
    factory: Callable[[], Tool],
    spec: ToolSpec,
    world: ContractWorld,
    arguments: JsonObject,
    attempts: int,
    mode: TransportMode,
    limit: float,
    hold_s: float,
    stall: bool,
    label: str,
) -> ExampleRun:
    """Run one example confined and build its trace from what the system saw."""
    assert world.net is not None
    _warm_up()
    folder = world.example_dir()
    workspace = folder / "workspace"
    recorder = world.recorder
    recorder.begin(Trace(), mode, hold_s)
    log = folder / "trace.log"
    trace_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.set_inheritable(trace_fd, True)
    read_fd, write_fd = os.pipe()
    channel_inode = os.fstat(write_fd).st_ino
    layout = Layout(folder, workspace, world.net.fd, trace_fd, folder / "changes.json")
    plan = AttemptPlan(arguments, attempts, limit, recorder.target, workspace, stall, label)
    cwd = os.getcwd()
    root = str(world.root)

    def example() -> int:
        channel = _Channel(write_fd, workspace)
        with contextlib.suppress(ValueError, OSError):
            signal.set_wakeup_fd(-1)  # the check's event loop may have set it: its socket is cut below
        inherited = repoint_inherited({write_fd}, lambda path: under(path, root))
        streams = [_target(1), _target(2)]
        channel.send({"type": "hello", "cut": inherited.cut, "baselines": inherited.baselines, "streams": streams})
        try:
            tool = factory()
        except Exception as exc:
            channel.send({"type": "factory", "text": f"{type(exc).__name__}: {exc}"})
            return 0
        into: list[AttemptRun] = []
        try:
            anyio.run(run_attempts, tool, spec, plan, channel, into)
        except BaseException as exc:
            channel.send({"type": "error", "text": describe_error(exc)})
            return 0
        channel.send({"type": "done"})
        return 0

    try:
        pid = launch(layout, example, [read_fd])
    finally:
        os.close(write_fd)
        os.close(trace_fd)
    try:
        messages, abandoned = _follow(read_fd, recorder.release, lambda: stop(layout))
    finally:
        os.close(read_fd)
        os.waitpid(pid, 0)
        arrivals = recorder.end()
    failure = _failure(messages, layout)
    if failure is not None:
        raise failure
    hello = next(m for m in messages.values() if m["type"] == "hello")
    changes = _kept_changes(json.loads(layout.changes.read_text(encoding="utf-8")), hello["baselines"])
    changes = [{**change, "path": show_path(change["path"], world.root, workspace)} for change in changes]
    scene = Scene(
        workspace=str(workspace),
        cwd=cwd,
        target=recorder.target.removeprefix("http://"),
        channel=f"pipe:[{channel_inode}]",
        messages=messages,
        arrivals=arrivals,
        show=lambda path: show_path(path, world.root, workspace),
        std_streams={s for s in hello["streams"] if s},
        cut=hello["cut"],
        init_pid=int(layout.init_pid.read_text(encoding="ascii")),
        harness_first=True,
    )
    trace = Observer(scene).build(parse_log(log.read_text(encoding="utf-8", errors="replace")))
    run = ExampleRun(arguments, trace, confined=True, changes=changes)
    run.abandoned = abandoned
    if abandoned:
        trace.add(EventKind.END, f"still running {GRACE_S}s after its deadline: killed")
    run.attempts = _attempts(messages, trace)
    for attempt in run.attempts:
        mine = sorted((a for a in arrivals if a.attempt == attempt.number), key=lambda a: a.index)
        attempt.keys = [a.key for a in mine if a.key]
        attempt.service_after = service_state([a for a in arrivals if 0 < a.attempt <= attempt.number])
    run.stray_keys = sorted({a.stray_key for a in arrivals if a.stray_key})
    return run


def _kept_changes(changes: list[dict[str, Any]], baselines: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The overlay's changes the tool made.

    Reopening an inherited file for writing (or mapping it for shared writing) copies it into the overlay whether
    or not the tool writes it, and the real file may go on changing under that copy: such a file is compared with
    its state when it was reopened, not with the real one.
    """
    kept = []
    for change in changes:
        baseline = baselines.get(change["path"])
        state = change.pop("state", None)
        if baseline is not None and change["change"] == "changed":
            change["aspects"] = aspects_since(baseline, state)
            if not change["aspects"]:
                continue
        kept.append(change)
    return kept


def _target(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def _follow(
    read_fd: int, release: Callable[[], None], kill: Callable[[], None]
) -> tuple[dict[int, dict[str, Any]], bool]:
    """Read the example's lines until it ends; kill it once it overstays a deadline by the grace period."""
    messages: dict[int, dict[str, Any]] = {}
    buffer = b""
    deadline = float("inf")
    started = False
    abandoned = False
    while True:
        ready = select.select([read_fd], [], [], 0.02)[0]
        if ready:
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                number, _, body = line.decode("utf-8", "replace").partition(" ")
                message = json.loads(body)
                messages[int(number)] = message
                if message["type"] == "hello":
                    started = True
                elif message["type"] == "release":
                    release()
                elif message["type"] == "event":
                    deadline = float(message["deadline"]) if message["kind"] != EventKind.END else float("inf")
        if not abandoned and started and time.time() > deadline + GRACE_S:
            abandoned = True
            kill()
    return messages, abandoned


def _failure(messages: dict[int, dict[str, Any]], layout: Layout) -> Exception | None:
    for message in messages.values():
        if message["type"] == "factory":
            return ConfigurationError(f"the tool factory raised {message['text']} on a later call")
        if message["type"] == "error":
            return HarnessError(f"the contract harness failed in a confined example: {message['text']}")
    try:
        changes = json.loads(layout.changes.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        changes = {"error": "its supervisor wrote no account of the overlay"}
    fallback = "; observation='python' (--observation python) checks without confinement"
    if isinstance(changes, dict):
        return HarnessError(f"the confined example could not run: {changes['error']}{fallback}")
    if not any(m["type"] == "hello" for m in messages.values()):
        return HarnessError(f"the confined example never started (see the check's standard error){fallback}")
    return None


def _attempts(messages: dict[int, dict[str, Any]], trace: Trace) -> list[AttemptRun]:
    """Attempts as the example reported them; one it never finished (it was killed) from its trace."""
    done = {
        run.number: run for run in (AttemptRun.from_json(m["run"]) for m in messages.values() if m["type"] == "attempt")
    }
    found: dict[int, AttemptRun] = {}
    for event in trace.events():
        if event.attempt > 0 and event.attempt not in found:
            found[event.attempt] = done.get(event.attempt, AttemptRun(event.attempt))
        if event.kind is EventKind.CANCEL and event.attempt not in done:
            found[event.attempt].cancelled = True
    return [found[number] for number in sorted(found)]
