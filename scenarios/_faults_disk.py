"""A full disk under a SQLite store: the whole cell runs in a child process whose private mount namespace puts the
cell's store directory on a size-limited tmpfs, and the harness's tool fills that tmpfs at the point.

The record's write meets a disk filled before the submission; the watermark's, a disk the tool fills right before
``mark_effect_sent`` (and empties once it returned: the store comes back); the completion's, a disk the tool fills
after its effect (emptied once the submission returned). The child judges the cell as ``_faults.fault_cell`` does
and hands the parent its record; a failure is raised again in the parent with the child's reproduction.

Run as ``python -m toolproof.scenarios._faults_disk JOB`` (inside the namespace, the tmpfs mounted).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio

from toolproof.driver import is_driver_url, load
from toolproof.spec import (
    ConformanceFailure,
    FaultCell,
    FaultKind,
    FaultMode,
    FaultPath,
    FaultPoint,
    HarnessError,
    IdempotencyClass,
    JsonObject,
    NotCovered,
    Tool,
    ToolExecutionContext,
    ToolResult,
    ToolSpec,
)

from ._faults import FaultCase, fault_cell
from ._harness import Harness

TMPFS_SIZE = "2m"
"""The size of the store's tmpfs: room for the cell's database, its WAL and nothing to spare once filled."""
DISK_POINTS = (FaultPoint.RECORD, FaultPoint.WATERMARK, FaultPoint.COMPLETE)
"""The writes a full disk can be timed to: before the submission, and by the harness's tool around its effect."""


class DiskFiller:
    """Fills the store's file system with one file until it is full; empties it again."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "disk-filler"
        self.filled = 0

    def fill(self) -> None:
        """Write until the file system refuses (ENOSPC), down to its last block: unbuffered, so nothing is left to
        be written when the file is closed."""
        descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for size in (1 << 16, 1 << 12, 1 << 9):
                chunk = b"\0" * size
                try:
                    while True:
                        os.write(descriptor, chunk)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
        finally:
            os.close(descriptor)
        self.filled += 1

    def empty(self) -> None:
        """The disk has room again."""
        self.path.unlink(missing_ok=True)


class _FilledMark:
    def __init__(self, context: ToolExecutionContext, filler: DiskFiller) -> None:
        self._context, self._filler = context, filler

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)

    async def mark_effect_sent(self) -> None:
        self._filler.fill()
        try:
            await self._context.mark_effect_sent()
        finally:
            self._filler.empty()


class DiskFillingTool:
    """The target tool, filling the disk around its watermark, or once its effect is made."""

    def __init__(self, inner: Tool, filler: DiskFiller, point: FaultPoint) -> None:
        self._inner, self._filler, self._point = inner, filler, point

    @property
    def spec(self) -> ToolSpec:
        """The inner tool's spec."""
        return self._inner.spec

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        """Run the inner tool, filling the disk at the point."""
        if self._point is FaultPoint.WATERMARK:
            filled: Any = _FilledMark(context, self._filler)
            return await self._inner.execute(arguments, filled)
        result = await self._inner.execute(arguments, context)
        if self._point is FaultPoint.COMPLETE:
            self._filler.fill()
        return result


def unavailable() -> str | None:
    """Why this machine cannot put a store on a tmpfs in a mount namespace, or None when it can."""
    if shutil.which("unshare") is None:
        return "the unshare command (util-linux) is not installed"
    if os.geteuid() != 0:
        return "mounting a tmpfs in a mount namespace needs root here (no unprivileged user namespaces are used)"
    return None


async def full_disk_cell(harness: Harness, point: FaultPoint, idempotency: IdempotencyClass) -> None:
    """Run the cell in the namespace; record its cell; raise its failure here."""
    reason = unavailable()
    if is_driver_url(harness.implementation_ref):
        reason = "behind the driver protocol the store is the driver process's, outside the cell's mount namespace"
    if reason is not None:
        raise NotCovered("D3.10", f"a full disk under a SQLite store: {reason}")
    store = harness.directory / "store"
    store.mkdir(parents=True, exist_ok=True)
    job = json.dumps(
        {
            "impl": harness.implementation_ref,
            "directory": str(harness.directory),
            "run_id": harness.run_id,
            "point": point.value,
            "idempotency": idempotency.value,
        }
    )
    script = 'mount -t tmpfs -o size="$1" tmpfs "$2" && exec "$3" -m toolproof.scenarios._faults_disk "$4"'
    command = ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh"]
    command += [TMPFS_SIZE, str(store), sys.executable, job]
    done = await anyio.run_process(command, check=False)
    lines = done.stdout.decode().strip().splitlines()
    if done.returncode != 0 or not lines:
        problem = (done.stderr.decode().strip().splitlines() or ["no output"])[-1]
        raise HarnessError(f"the full-disk cell's process ended {done.returncode}: {problem}")
    answer = json.loads(lines[-1])
    harness.log.extend(answer["log"])
    if answer["cell"] is not None:
        harness.fault_cells.append(FaultCell.model_validate(answer["cell"]))
    if answer["rule"]:
        raise ConformanceFailure(answer["rule"], answer["message"], reproduction=harness.reproduction())
    if answer["error"]:
        raise HarnessError(f"the full-disk cell could not judge: {answer['error']}")


async def _child(job: dict[str, Any]) -> dict[str, Any]:
    implementation = load(job["impl"])
    harness = Harness(implementation, Path(job["directory"]), job["impl"], run_id=job["run_id"])
    point = FaultPoint(job["point"])
    filler = DiskFiller(Path(job["directory"]) / "store")
    case = FaultCase(
        point, FaultKind.ERROR, IdempotencyClass(job["idempotency"]), FaultPath.FIRST, True, FaultMode.SQLITE_FULL_DISK
    )

    def wrap(tool: Tool) -> Tool:
        return DiskFillingTool(tool, filler, point)

    case.wrap, case.disarm = wrap, filler.empty
    if point is FaultPoint.RECORD:
        case.arm = filler.fill
    rule, message, error = "", "", ""
    try:
        await fault_cell(harness, case)
        if filler.filled == 0:
            error = "the disk was never filled"
    except ConformanceFailure as failure:
        rule, message = failure.rule_id, str(failure).split(": ", 1)[1].split("\nreproduction:", 1)[0]
    except Exception as exc:  # Reported to the parent, which raises it as the harness's failure.
        error = f"{type(exc).__name__}: {exc}"
    cell = harness.fault_cells[-1].model_dump(mode="json") if harness.fault_cells else None
    return {"cell": cell, "log": harness.log, "rule": rule, "message": message, "error": error}


if __name__ == "__main__":
    answer = anyio.run(_child, json.loads(sys.argv[1]))
    print(json.dumps(answer), flush=True)
