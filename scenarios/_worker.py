"""Worker processes that really die: a pre-imported zygote forks one child per job.

A job opens the implementation under test in the child, runs a step (or recovers and
replays one) and writes the dispositions to a file. A crash plan in ``sigkill`` mode makes
the implementation, or the harness's tool, SIGKILL the child at its crash point; the
zygote reports how the child ended. Forking from a single-threaded zygote that imported
everything once keeps a real kill at tens of milliseconds instead of a second.

Run as ``python -m toolproof.scenarios._worker``: one JSON job per stdin line, one JSON
report per stdout line. A line may instead name a function to call in the child with a JSON payload
(``Zygote.run_call``), for a cell that needs a process of its own (a SQLite store on a file system the
harness breaks, in a mount namespace of the child's own: ``_faults_sqlite``).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Literal, cast

import anyio
from pydantic import BaseModel, ConfigDict, TypeAdapter

from toolproof.driver import install_mutant_from_environment, load
from toolproof.fakes import FakeClock, World
from toolproof.spec import Disposition, HarnessError, InstanceConfig, StepRequest, Tool, load_object

DISPOSITIONS: TypeAdapter[list[Disposition]] = TypeAdapter(list[Disposition])

Action = Literal["submit", "recover", "replay", "approve", "resume"]
"""What a worker life does: ``submit`` the step; ``recover``: sweep, then replay the step; ``replay`` the step
without a sweep; ``approve`` the hold of ``invocation_id``; ``resume`` it with ``answer``."""


class ToolRecipe(BaseModel):
    """How to build a fake tool in another process."""

    model_config = ConfigDict(frozen=True)

    factory: str
    """``package.module:Class`` of a fake taking ``world`` first."""
    options: dict[str, Any]
    """Its other arguments (JSON)."""

    def build(self, world: World) -> Tool:
        """The tool, recording into ``world``."""
        factory = load_object(self.factory, expect=callable, what="tool factory", form="package.module:Class")
        tool: Tool = cast(Callable[..., Tool], factory)(world, **self.options)
        return tool


class WorkerJob(BaseModel):
    """One life of one worker."""

    model_config = ConfigDict(frozen=True)

    impl: str
    """Implementation reference (entry-point name or module:factory)."""
    config: InstanceConfig
    """Its configuration, crash plan included."""
    tools: list[ToolRecipe]
    """The tools to register."""
    ledger: Path
    """The world's ledger file."""
    clock: float
    """What the injected clock reads."""
    action: Action
    """What the life does (see ``Action``)."""
    step: StepRequest
    """The step."""
    result: Path
    """Where the dispositions go."""
    invocation_id: str = ""
    """The call an ``approve`` or ``resume`` life answers."""
    answer: str = ""
    """The run's answer a ``resume`` life gives."""


async def run_job(job: WorkerJob) -> list[Disposition]:
    """Run ``job`` here; a crash plan may end it (SimulatedCrash, or this process's death)."""
    world = World(ledger=job.ledger)
    clock = FakeClock(job.clock)
    implementation = load(job.impl)
    async with implementation.open(job.config, [r.build(world) for r in job.tools], clock) as instance:
        if job.action == "approve":
            dispositions = [await instance.resolve_approval(job.invocation_id, True)]
        elif job.action == "resume":
            dispositions = [await instance.resume(job.invocation_id, job.answer)]
        else:
            if job.action == "recover":
                await instance.sweep()
            dispositions = await instance.submit(job.step)
    job.result.write_bytes(DISPOSITIONS.dump_json(dispositions))
    return dispositions


class Zygote:
    """The harness's handles on zygote processes: one per implementation, started on first use."""

    _lock = threading.Lock()
    _processes: ClassVar[dict[str, subprocess.Popen[str]]] = {}

    @classmethod
    def run(cls, job: WorkerJob) -> int:
        """Run ``job`` in a fresh child; returns its exit status (negative: killed by that signal)."""
        return cls._fork(job.impl, job.model_dump_json())

    @classmethod
    def run_call(cls, impl: str, call: str, payload: dict[str, Any]) -> int:
        """Call ``call`` (``package.module:function``) with ``payload`` (JSON) in a fresh child of ``impl``'s zygote,
        for a cell that needs a process of its own with the implementation already imported; returns its exit status
        as ``run`` does (the function returning: 0)."""
        return cls._fork(impl, json.dumps({"call": call, "payload": payload}))

    @classmethod
    def _fork(cls, impl: str, line: str) -> int:
        with cls._lock:
            process = cls._processes.get(impl)
            if process is None or process.poll() is not None:
                process = subprocess.Popen(
                    [sys.executable, "-m", "toolproof.scenarios._worker", impl],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                if not cls._processes:
                    atexit.register(cls.stop)
                cls._processes[impl] = process
            assert process.stdin is not None
            assert process.stdout is not None
            process.stdin.write(line + "\n")
            process.stdin.flush()
            answer = process.stdout.readline()
        if not answer:
            raise HarnessError("the worker zygote died; see its stderr")
        report = json.loads(answer)
        if "error" in report:
            raise HarnessError(f"the worker zygote could not run a job: {report['error']}")
        status: int = report["status"]
        return status

    @classmethod
    def stop(cls) -> None:
        """End every zygote (closing its stdin ends its loop)."""
        for process in cls._processes.values():
            if process.stdin is not None:
                process.stdin.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        cls._processes.clear()


def _child(line: str) -> None:
    try:
        request = json.loads(line)
        if "call" in request:
            function = load_object(request["call"], expect=callable, what="worker call", form="package.module:function")
            cast(Callable[[dict[str, Any]], None], function)(request["payload"])
        else:
            anyio.run(run_job, WorkerJob.model_validate_json(line))
    except BaseException as exc:  # The child reports and exits; nothing may escape a forked child.
        sys.stderr.write(f"worker job failed: {type(exc).__name__}: {exc}\n")
        os._exit(3)
    os._exit(0)


def main() -> None:
    """Zygote loop: fork a child per job line, report its end."""
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            pid = os.fork()
        except OSError as exc:
            print(json.dumps({"error": str(exc)}), flush=True)
            continue
        if pid == 0:
            _child(line)
        _, raw = os.waitpid(pid, 0)
        status = -os.WTERMSIG(raw) if os.WIFSIGNALED(raw) else os.WEXITSTATUS(raw)
        print(json.dumps({"status": status}), flush=True)


SIGKILLED = -signal.SIGKILL
"""Exit status of a child that died by SIGKILL."""

if __name__ == "__main__":
    # The mutation gate's mutant (TOOLPROOF_MUTANT), in place of its module before the implementation is imported.
    install_mutant_from_environment()
    # Import the implementation (and with it everything a child needs) once, before any fork.
    load(sys.argv[1])
    main()
