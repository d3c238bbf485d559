"""What a tool leaves running once ``execute`` has ended: its threads, its asyncio tasks, its processes.

After each execution the check waits for them to end, up to ``AFTER_RETURN_S``, and goes on observing: an effect
they leave in that time is on the trace after the execution's end. The wait ends as soon as nothing is left, so
it is a bound, not a delay: on a loaded machine a thread that acts a moment after ``execute`` returned still acts
within it, and a tool that leaves nothing running costs nothing.

What counts as the tool's: a thread started since the execution began (by the tool, or by a library on its
behalf), but not a worker of the event loop's own pools while it waits for work (anyio's, and the loop's default
executor); a task of the event loop other than the one running the execution; a process of the example's PID
namespace other than the namespace's first and the example itself (confined only: Python-level observation
refuses process starts).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable

AFTER_RETURN_S = 5.0
"""How long, at most, the check waits after an execution for what the tool left running to end."""

_POOL_PREFIXES = ("asyncio_", "toolproof-")
"""Names of threads that are not the tool's: the event loop's default executor, the harness's own."""


def _native_threads() -> set[int]:
    try:
        return {int(name) for name in os.listdir("/proc/self/task")}
    except OSError:  # not Linux: threads Python knows of
        return {thread.native_id or 0 for thread in threading.enumerate()}


def _waits_for_work(thread: threading.Thread) -> bool:
    if thread.name.startswith(_POOL_PREFIXES) or thread is threading.current_thread():
        return True
    # anyio's worker threads: a worker waiting for work sits in its pool's idle queue.
    idle = getattr(thread, "idle_workers", None)
    return idle is not None and type(thread).__module__.startswith("anyio.") and thread in idle


def _other_tasks() -> int:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return 0
    current = asyncio.current_task(loop)
    return sum(1 for task in asyncio.all_tasks(loop) if task is not current and not task.done())


def namespace_processes() -> int:
    """Processes of this PID namespace that are alive, other than its first and this one."""
    alive = 0
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, os.getpid()):
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as stat:
                state = stat.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # ended meanwhile
        alive += state not in ("Z", "X")
    return alive


class Leftovers:
    """Counts what the tool left running since ``begin``.

    ``processes`` counts the tool's processes (None: it can have none).
    """

    def __init__(self, processes: Callable[[], int] | None = None) -> None:
        self._processes = processes
        self._before: set[int] = set()

    def begin(self) -> None:
        """An execution starts: the threads alive now are not its."""
        self._before = _native_threads()

    def running(self) -> str:
        """What of the tool still runs, in words (``1 thread, 2 tasks``); "" when nothing does."""
        known = {thread.native_id: thread for thread in threading.enumerate()}
        threads = 0
        for tid in _native_threads() - self._before:
            thread = known.get(tid)
            threads += thread is None or not _waits_for_work(thread)
        counts = (
            (threads, "thread", "threads"),
            (_other_tasks(), "task", "tasks"),
            (self._processes() if self._processes else 0, "process", "processes"),
        )
        return ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in counts if n)
