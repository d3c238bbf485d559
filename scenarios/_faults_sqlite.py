"""Real faults under a SQLite store: the whole cell runs in a child process whose private mount namespace puts the
cell's store directory on a file system the harness breaks at the point. The child is forked by the worker zygote
(``_worker``: the implementation imported once, the mutation gate's mutant in place), then leaves the zygote's mount
namespace for one of its own (``unshare(CLONE_NEWNS)``) and mounts the mode's file system there.

- ``sqlite-full-disk``: a size-limited tmpfs, which the harness fills. The record's write meets a disk filled
  before the submission; the watermark's, a disk the tool fills right before ``mark_effect_sent`` (and empties
  once it returned: the store comes back); the completion's, a disk the tool fills after its effect (emptied once
  the submission returned).
- ``sqlite-read-only``: an ext4 image mounted ``errors=remount-ro``, which the harness turns read-only by
  triggering an ext4 error (``/sys/fs/ext4/DEV/trigger_fs_error``), at the same three moments. Unlike ``chmod``
  (which root ignores, and which no file already open notices) or ``mount -o remount,ro`` (refused, EBUSY, while a
  file is open for writing), the file system's own read-only state fails every write, through the files the
  implementation already holds open too (SQLite's WAL and database). It stays read-only, as a real one does, until
  it is mounted again: the store is down for the instance, and is given back (unmounted and mounted again) once the
  faulty instance closed. The harness checks that it took: a file it opened for writing before must refuse a write.

The child judges the cell as ``_faults.fault_cell`` does and hands the parent its record (a JSON file); a failure is
raised again in the parent with the child's reproduction.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import subprocess
from collections.abc import Callable
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
from ._worker import Zygote

TMPFS_SIZE = "2m"
"""The size of the full disk's tmpfs: room for the cell's database, its WAL and nothing to spare once filled."""
IMAGE_SIZE = "8M"
"""The size of the read-only cells' ext4 image (sparse, in the cell's directory)."""
MOUNT_OPTIONS = "loop,errors=remount-ro"
"""How the ext4 image is mounted: an error turns it read-only, as a failing disk does."""
SQLITE_FAULT_POINTS = (FaultPoint.RECORD, FaultPoint.WATERMARK, FaultPoint.COMPLETE)
"""The writes a broken file system can be timed to: before the submission, and by the harness's tool around its
effect."""
DISK_POINTS = SQLITE_FAULT_POINTS
"""The full disk's points."""
READ_ONLY_POINTS = SQLITE_FAULT_POINTS
"""The read-only file system's points."""
_SETUP = {
    FaultMode.SQLITE_FULL_DISK: 'mount -t tmpfs -o size="$1" tmpfs "$3"',
    FaultMode.SQLITE_READ_ONLY: (
        'truncate -s "$1" "$2" && mkfs.ext4 -q -F -O ^has_journal "$2" && mount -o "$4" "$2" "$3"'
    ),
}
"""What each mode mounts on the store directory inside the namespace: $1 size, $2 image, $3 store directory, $4 the
image's mount options."""
_CLONE_NEWNS = 0x00020000
"""``unshare(2)``'s flag for a mount namespace of the caller's own (``os.CLONE_NEWNS`` from Python 3.12 on)."""


class DiskFiller:
    """Fills the store's file system with one file until it is full; empties it again."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "disk-filler"
        self.broken = 0
        self.problem = ""

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
        self.broken += 1

    def empty(self) -> None:
        """The disk has room again."""
        self.path.unlink(missing_ok=True)


def _mount_source(directory: Path) -> str:
    """The device mounted on ``directory`` in this mount namespace, e.g. ``/dev/loop3``."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[4] == str(directory):
            return fields[fields.index("-") + 2]
    raise HarnessError(f"nothing is mounted on {str(directory)!r}: the read-only cell's image was not mounted")


class ReadOnlySwitch:
    """Turns the store's ext4 file system read-only by an ext4 error, and gives it back by mounting it again."""

    def __init__(self, directory: Path, image: Path) -> None:
        self.directory, self.image = directory, image
        self.broken = 0
        self.problem = ""
        """Why the file system did not go read-only as asked; ``""`` when it did."""

    def make_read_only(self) -> None:
        """Trigger an ext4 error: ``errors=remount-ro`` turns the file system read-only at once. Called from the
        harness's tool too, so it does not raise: what went wrong is kept in ``problem`` for the cell to report."""
        probe = os.open(self.directory / "read-only-probe", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            device = Path(_mount_source(self.directory)).name
            Path(f"/sys/fs/ext4/{device}/trigger_fs_error").write_text("1")
            os.write(probe, b"x")
            os.fsync(probe)
        except OSError as exc:
            if exc.errno not in (errno.EROFS, errno.EIO):
                self.problem = f"the store's file system could not be made read-only: {exc}"
        except HarnessError as exc:
            self.problem = str(exc)
        else:
            self.problem = (
                "a file opened for writing before the store's file system went read-only still took a write: this "
                "kernel does not fail writes through open files after an ext4 error"
            )
        finally:
            os.close(probe)
        self.broken += 1

    def give_back(self) -> None:
        """Unmount the file system and mount it again (the faulty instance closed its files): writable again.

        Raises:
            HarnessError: it cannot be unmounted (a file of the store is still open) or mounted again.
        """
        for command in (
            ["umount", str(self.directory)],
            ["mount", "-o", MOUNT_OPTIONS, str(self.image), str(self.directory)],
        ):
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                problem = (done.stderr.strip().splitlines() or ["no output"])[0]
                raise HarnessError(f"the read-only store could not be given back ({' '.join(command[:1])}): {problem}")


class _BrokenMark:
    def __init__(self, context: ToolExecutionContext, breaks: Callable[[], None], mends: Callable[[], None] | None):
        self._context, self._breaks, self._mends = context, breaks, mends

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)

    async def mark_effect_sent(self) -> None:
        self._breaks()
        try:
            await self._context.mark_effect_sent()
        finally:
            if self._mends is not None:
                self._mends()


class StoreBreakingTool:
    """The target tool, breaking the store's file system right before its watermark (mended after, when ``mends``
    is given), or once its effect is made."""

    def __init__(
        self, inner: Tool, point: FaultPoint, breaks: Callable[[], None], mends: Callable[[], None] | None = None
    ) -> None:
        self._inner, self._point, self._breaks, self._mends = inner, point, breaks, mends

    @property
    def spec(self) -> ToolSpec:
        """The inner tool's spec."""
        return self._inner.spec

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        """Run the inner tool, breaking the file system at the point."""
        if self._point is FaultPoint.WATERMARK:
            broken: Any = _BrokenMark(context, self._breaks, self._mends)
            return await self._inner.execute(arguments, broken)
        result = await self._inner.execute(arguments, context)
        if self._point is FaultPoint.COMPLETE:
            self._breaks()
        return result


def unavailable(mode: FaultMode) -> str | None:
    """Why this machine cannot put a store on the mode's file system in a mount namespace, or None when it can."""
    if shutil.which("mount") is None:
        return "the mount command (util-linux) is not installed"
    if os.geteuid() != 0:
        return "mounting a file system in a mount namespace needs root here (no unprivileged user namespaces are used)"
    if mode is FaultMode.SQLITE_READ_ONLY:
        if shutil.which("mkfs.ext4") is None:
            return "mkfs.ext4 (e2fsprogs) is not installed"
        if not Path("/dev/loop-control").exists():
            return "there are no loop devices (/dev/loop-control)"
        if "ext4" not in Path("/proc/filesystems").read_text():
            return "the kernel has no ext4"
    return None


async def sqlite_fault_cell(
    harness: Harness, mode: FaultMode, point: FaultPoint, idempotency: IdempotencyClass
) -> None:
    """Run the cell in the namespace; record its cell; raise its failure here."""
    what = {FaultMode.SQLITE_FULL_DISK: "a full disk", FaultMode.SQLITE_READ_ONLY: "a read-only file system"}[mode]
    reason = unavailable(mode)
    if is_driver_url(harness.implementation_ref):
        reason = "behind the driver protocol the store is the driver process's, outside the cell's mount namespace"
    if reason is not None:
        raise NotCovered("D3.10", f"{what} under a SQLite store: {reason}")
    store = harness.directory / "store"
    store.mkdir(parents=True, exist_ok=True)
    job = json.dumps(
        {
            "impl": harness.implementation_ref,
            "directory": str(harness.directory),
            "run_id": harness.run_id,
            "mode": mode.value,
            "point": point.value,
            "idempotency": idempotency.value,
        }
    )
    size = TMPFS_SIZE if mode is FaultMode.SQLITE_FULL_DISK else IMAGE_SIZE
    image = harness.directory / "store.ext4"
    answer_file = harness.directory / "sqlite-fault-cell.json"
    request = {
        "job": job,
        "setup": [size, str(image), str(store), MOUNT_OPTIONS],
        "answer": str(answer_file),
    }
    status = Zygote.run_call(harness.implementation_ref, f"{__name__}:namespace_child", request)
    if status != 0 or not answer_file.exists():
        raise HarnessError(f"the {mode.value} cell's process ended {status} without an answer (the zygote's stderr)")
    answer = json.loads(answer_file.read_text())
    harness.log.extend(answer["log"])
    if answer["cell"] is not None:
        harness.fault_cells.append(FaultCell.model_validate(answer["cell"]))
    if answer["rule"]:
        raise ConformanceFailure(answer["rule"], answer["message"], reproduction=harness.reproduction())
    if answer["error"]:
        raise HarnessError(f"the {mode.value} cell could not judge: {answer['error']}")


def _case(job: dict[str, Any]) -> tuple[FaultCase, DiskFiller | ReadOnlySwitch]:
    mode, point = FaultMode(job["mode"]), FaultPoint(job["point"])
    store = Path(job["directory"]) / "store"
    idempotency = IdempotencyClass(job["idempotency"])
    breaker: DiskFiller | ReadOnlySwitch
    if mode is FaultMode.SQLITE_FULL_DISK:
        filler = DiskFiller(store)
        breaker = filler
        case = FaultCase(point, FaultKind.ERROR, idempotency, FaultPath.FIRST, True, mode)

        def wrap(tool: Tool) -> Tool:
            return StoreBreakingTool(tool, point, filler.fill, filler.empty)

        case.wrap, case.disarm = wrap, filler.empty
        if point is FaultPoint.RECORD:
            case.arm = filler.fill
        return case, breaker
    switch = ReadOnlySwitch(store, Path(job["directory"]) / "store.ext4")
    breaker = switch
    # A file system gone read-only stays so until it is mounted again: down for the instance.
    case = FaultCase(point, FaultKind.ERROR, idempotency, FaultPath.FIRST, False, mode)

    def wrap_read_only(tool: Tool) -> Tool:
        return StoreBreakingTool(tool, point, switch.make_read_only)

    case.wrap, case.restore = wrap_read_only, switch.give_back
    if point is FaultPoint.RECORD:
        case.arm = switch.make_read_only
    return case, breaker


async def _child(job: dict[str, Any]) -> dict[str, Any]:
    implementation = load(job["impl"])
    harness = Harness(implementation, Path(job["directory"]), job["impl"], run_id=job["run_id"])
    case, breaker = _case(job)
    rule, message, error = "", "", ""
    try:
        await fault_cell(harness, case)
        if breaker.broken == 0:
            error = "the store's file system was never broken"
    except ConformanceFailure as failure:
        rule, message = failure.rule_id, str(failure).split(": ", 1)[1].split("\nreproduction:", 1)[0]
    except Exception as exc:  # Reported to the parent, which raises it as the harness's failure.
        error = f"{type(exc).__name__}: {exc}"
    if breaker.problem:  # The harness could not break the store as asked: no verdict on the implementation.
        rule, error = "", breaker.problem
    cell = harness.fault_cells[-1].model_dump(mode="json") if harness.fault_cells else None
    return {"cell": cell, "log": harness.log, "rule": rule, "message": message, "error": error}


def _enter_namespace(mode: FaultMode, setup: list[str]) -> None:
    """Leave the zygote's mount namespace for a private one of this process's own, and mount the mode's file system on
    the store directory there (as ``unshare -m --propagation private`` and the setup script would).

    Raises:
        OSError: the kernel refused the namespace.
        subprocess.CalledProcessError: a mount or mkfs failed.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWNS) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"unshare(CLONE_NEWNS): {os.strerror(number)}")
    subprocess.run(["mount", "--make-rprivate", "/"], check=True, capture_output=True)
    subprocess.run(["sh", "-c", _SETUP[mode], "sh", *setup], check=True, capture_output=True)


def namespace_child(request: dict[str, Any]) -> None:
    """In a child the worker zygote forked: the namespace, the file system, the cell; its answer as JSON into
    ``request["answer"]`` (a harness error in it when the namespace could not be made)."""
    job: dict[str, Any] = json.loads(request["job"])
    try:
        _enter_namespace(FaultMode(job["mode"]), [str(a) for a in request["setup"]])
    except (OSError, subprocess.CalledProcessError) as exc:
        said = getattr(exc, "stderr", b"") or b""
        problem = f"{exc}" + (f": {said.decode(errors='replace').strip()}" if said else "")
        answer: dict[str, Any] = {"cell": None, "log": [], "rule": "", "message": "", "error": problem}
    else:
        answer = anyio.run(_child, job)
    Path(request["answer"]).write_text(json.dumps(answer))
