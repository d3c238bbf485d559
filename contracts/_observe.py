"""From the tracer's log to the example's trace: what each system call did to the world.

A confined example's own events (attempt headers, the watermark, cancellation, the end)
travel on a pipe, and each is one ``write`` the tracer logs among the tool's calls, so
the log orders them against everything else. Every other call is judged by what it
touched: a write, a metadata change or a new file in the workspace is an effect; outside
the workspace (and off the pseudo files a process may always use) it is an effect outside,
kept from the real system by the overlay. Sockets, signals and programs are ``_contacts``'s
to judge: bytes to the target are matched to what the recording service received (an HTTP
request is an effect unless its method is safe and the tool does not declare that its
requests act; any other bytes are); a connect, send or signal anywhere else is outside; a
program started is observed, and its calls are judged alike.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._contacts import SENDS, SIGNAL_CALLS, Contacts, Event, Reach
from ._syscalls import Syscall, decoration, unquote
from ._trace import EventKind, Trace
from ._transport import Arrival

_MESSAGE = re.compile(r'^"(\d+) ')
_IGNORED_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom")
_IGNORED_TREES = ("/dev/pts", "/dev/fd", "/proc/self", "/proc/thread-self")
_MEMORY = "/memfd:"
"""A memfd's name: memory, never a file of the system (an inherited nameless file becomes one)."""
_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")

# name -> (index of the directory descriptor or None, index of the path, verb)
_PATH_CALLS: dict[str, tuple[int | None, int, str]] = {
    "unlink": (None, 0, "removed"),
    "unlinkat": (0, 1, "removed"),
    "rmdir": (None, 0, "removed the directory"),
    "mkdir": (None, 0, "made the directory"),
    "mkdirat": (0, 1, "made the directory"),
    "mknod": (None, 0, "made the node"),
    "mknodat": (0, 1, "made the node"),
    "truncate": (None, 0, "truncated"),
    "chmod": (None, 0, "changed the mode of"),
    "fchmodat": (0, 1, "changed the mode of"),
    "chown": (None, 0, "changed the owner of"),
    "lchown": (None, 0, "changed the owner of"),
    "fchownat": (0, 1, "changed the owner of"),
    "utime": (None, 0, "changed the times of"),
    "utimes": (None, 0, "changed the times of"),
    "futimesat": (0, 1, "changed the times of"),
    "utimensat": (0, 1, "changed the times of"),
    "setxattr": (None, 0, "changed an extended attribute of"),
    "lsetxattr": (None, 0, "changed an extended attribute of"),
    "removexattr": (None, 0, "changed an extended attribute of"),
    "lremovexattr": (None, 0, "changed an extended attribute of"),
    "link": (None, 1, "linked"),
    "linkat": (2, 3, "linked"),
    "symlink": (None, 1, "made the symbolic link"),
    "symlinkat": (1, 2, "made the symbolic link"),
}
# name -> (index of the descriptor written, verb)
_FD_CALLS: dict[str, tuple[int, str]] = {
    "write": (0, "wrote"),
    "pwrite64": (0, "wrote"),
    "writev": (0, "wrote"),
    "pwritev": (0, "wrote"),
    "pwritev2": (0, "wrote"),
    "sendfile": (0, "wrote"),
    "copy_file_range": (2, "wrote"),
    "ftruncate": (0, "truncated"),
    "fallocate": (0, "allocated space in"),
    "fchmod": (0, "changed the mode of"),
    "fchown": (0, "changed the owner of"),
    "fsetxattr": (0, "changed an extended attribute of"),
    "fremovexattr": (0, "changed an extended attribute of"),
}


@dataclass
class Scene:
    """What the observer knows of the example."""

    workspace: str
    cwd: str
    target: str
    """``ADDRESS:PORT`` of the recording service."""
    channel: str
    """The decoration of the example's event pipe (``pipe:[123]``)."""
    messages: dict[int, dict[str, Any]]
    """The example's own events by number."""
    arrivals: list[Arrival]
    show: Callable[[str], str]
    std_streams: set[str] = field(default_factory=set)
    """What the example's standard output and error are: writes there are not effects."""
    cut: dict[str, str] = field(default_factory=dict)
    """Inherited sockets and pipes the example was cut from: replacement inode -> what it was."""
    existed: Callable[[str], bool] = os.path.lexists
    """Whether a path outside the workspace existed before the example (the overlay leaves the real one as it was)."""
    init_pid: int = 0
    """The pid, in the tracer's namespace, of the PID namespace's first process (not the tool's)."""
    harness_first: bool = False
    """The calls before the example's first line are the harness's own (pointing what it inherited at the view)."""


class Observer:
    """Builds the example's trace from the tracer's log."""

    def __init__(self, scene: Scene) -> None:
        self.scene = scene
        self.trace = Trace()
        self._emitted = 0
        self._last_text: str | None = None
        self._known: set[str] = set()
        self._gone: set[str] = set()
        self._cwd: dict[int, str] = {}
        self._pid = 0
        self.contacts = Contacts(
            Reach(scene.target, scene.workspace, scene.arrivals, scene.show, scene.cut, scene.init_pid)
        )

    def build(self, calls: list[Syscall]) -> Trace:
        """The trace: the example's events and every observed effect, in the order the calls began.

        With ``Scene.harness_first``, calls before the example's first line are not judged.
        """
        started = not self.scene.harness_first
        for call in calls:
            number = self._message_number(call)
            if number is not None:
                started = True
                self._emit_messages(number)
                continue
            events = self._classify(call)
            for kind, text, effect in events if started else []:
                self._add(kind, text, effect)
        self._emit_messages(max(self.scene.messages, default=0))
        return self.trace

    # -- the example's own events --------------------------------------------------------------

    def _message_number(self, call: Syscall) -> int | None:
        if call.name != "write" or decoration(call.arg(0)) != self.scene.channel:
            return None
        match = _MESSAGE.match(call.arg(1))
        return int(match.group(1)) if match else None

    def _emit_messages(self, upto: int) -> None:
        while self._emitted < upto:
            self._emitted += 1
            message = self.scene.messages.get(self._emitted)
            if message is None or message.get("type") != "event":
                continue
            kind = EventKind(message["kind"])
            if kind is EventKind.ATTEMPT:
                self.trace.attempt = self.contacts.attempt = int(message["attempt"])
            self._last_text = None
            self.trace.add(kind, str(message["text"]))

    def _add(self, kind: EventKind, text: str, effect: bool) -> None:
        if text == self._last_text and kind is not EventKind.NETWORK:
            return  # one event for a run of identical calls (a loop of writes to one file); every datagram counts
        self._last_text = text
        self.trace.add(kind, text, effect=effect)

    # -- judging one call ------------------------------------------------------------------------

    def _follow_cwd(self, call: Syscall) -> None:
        """Keep each process's working directory: relative paths of calls that are not ``*at`` need it."""
        self._pid = call.pid
        for arg in call.args:
            if arg.startswith("AT_FDCWD<"):
                self._cwd[call.pid] = decoration(arg) or self.scene.cwd
        if not call.ok:
            return
        if call.name in ("clone", "clone3", "fork", "vfork") and call.result.isdigit():
            self._cwd[int(call.result)] = self._cwd.get(call.pid, self.scene.cwd)
        elif call.name == "chdir":
            path = self._path("AT_FDCWD", call.arg(0))
            if path is not None:
                self._cwd[call.pid] = path
        elif call.name == "fchdir":
            self._cwd[call.pid] = decoration(call.arg(0)) or self._cwd.get(call.pid, self.scene.cwd)

    def _classify(self, call: Syscall) -> list[Event]:
        self._follow_cwd(call)
        self.contacts.note(call)
        name = call.name
        if name in ("execve", "execveat"):
            return self.contacts.process(call)
        if name == "connect":
            return self.contacts.connect(call)
        if name in SIGNAL_CALLS:
            return self.contacts.signal(call)
        if name in SENDS and self.contacts.is_socket(call.arg(0)):
            return self.contacts.send(call)
        if name in ("write", "writev") and (decoration(call.arg(0)) or "").startswith("pipe:"):
            return self.contacts.cut_write(call)
        if name in ("open", "openat", "openat2", "creat"):
            return self._open(call)
        if name in ("rename", "renameat", "renameat2"):
            return self._rename(call)
        if name == "mmap":
            return self._mmap(call)
        if name in _PATH_CALLS:
            dir_index, path_index, verb = _PATH_CALLS[name]
            path_arg = call.arg(path_index)
            if name == "utimensat" and path_arg == "NULL":
                return self._fd_effect(call, 0, verb)
            path = self._path(call.arg(dir_index) if dir_index is not None else "AT_FDCWD", path_arg)
            if path is None:
                return []
            if call.ok:
                if verb.startswith("removed"):
                    self._known.discard(path)
                    self._gone.add(path)
                elif verb.startswith("made") or verb == "linked":
                    self._known.add(path)
            return self._file(call, path, verb)
        if name in _FD_CALLS:
            index, verb = _FD_CALLS[name]
            return self._fd_effect(call, index, verb)
        return []

    def _where(self, path: str) -> str:
        if _under(path, self.scene.workspace):
            return "in the workspace"
        if path in _IGNORED_FILES or any(_under(path, tree) for tree in _IGNORED_TREES):
            return ""
        if "__pycache__" in path.split("/") or path.startswith(_MEMORY):
            return ""  # an interpreter caching bytecode is not the tool's effect, nor is memory
        return "outside the workspace"

    def _file(self, call: Syscall, path: str, verb: str) -> list[Event]:
        where = self._where(path)
        if not where:
            return []
        shown = self.scene.show(path)
        if where == "in the workspace":
            return [(EventKind.WORKSPACE, f"{verb} {shown!r} in the workspace", True)] if call.ok else []
        if call.ok:
            return [(EventKind.OUTSIDE, f"{verb} {shown!r} outside the workspace", True)]
        if call.error == "EROFS":
            return [(EventKind.OUTSIDE, f"tried to {_infinitive(verb)} {shown!r} outside the workspace", True)]
        return []

    def _fd_effect(self, call: Syscall, index: int, verb: str) -> list[Event]:
        what = decoration(call.arg(index))
        if what is None or not what.startswith("/") or what in self.scene.std_streams:
            return []
        return self._file(call, os.path.normpath(what.removesuffix(" (deleted)")), verb)

    def _path(self, dir_arg: str, path_arg: str) -> str | None:
        path = unquote(path_arg)
        if path is None:
            return None
        if not path.startswith("/"):
            base = decoration(dir_arg) if dir_arg != "AT_FDCWD" else None
            path = os.path.join(base or self._cwd.get(self._pid, self.scene.cwd), path)
        return os.path.normpath(path)

    def _open(self, call: Syscall) -> list[Event]:
        if call.name == "creat":
            dir_arg, path_arg, flags = "AT_FDCWD", call.arg(0), "O_CREAT|O_WRONLY|O_TRUNC"
        elif call.name == "open":
            dir_arg, path_arg, flags = "AT_FDCWD", call.arg(0), call.arg(1)
        else:
            dir_arg, path_arg, flags = call.arg(0), call.arg(1), call.arg(2)
        if not any(flag in flags for flag in _WRITE_FLAGS):
            return []
        opened = decoration(call.result) if call.ok else None
        path = os.path.normpath(opened) if opened and opened.startswith("/") else self._path(dir_arg, path_arg)
        if path is None:
            return []
        inside = _under(path, self.scene.workspace)
        existed = path in self._known or (not inside and path not in self._gone and self.scene.existed(path))
        self._known.add(path)
        if not call.ok:
            return self._file(call, path, "opened for writing") if call.error == "EROFS" else []
        if "O_TRUNC" in flags:
            return self._file(call, path, "truncated" if existed else "created")
        if "O_CREAT" in flags and not existed:
            return self._file(call, path, "created")
        return []

    def _rename(self, call: Syscall) -> list[Event]:
        if call.name == "rename":
            old, new = self._path("AT_FDCWD", call.arg(0)), self._path("AT_FDCWD", call.arg(1))
        else:
            old, new = self._path(call.arg(0), call.arg(1)), self._path(call.arg(2), call.arg(3))
        if old is None or new is None:
            return []
        if call.ok:
            self._known.discard(old)
            self._known.add(new)
        for path in (new, old):
            if self._where(path) == "outside the workspace":
                return self._file(call, path, "renamed")
        return self._file(call, new, f"renamed {self.scene.show(old)!r} to")

    def _mmap(self, call: Syscall) -> list[Event]:
        if "PROT_WRITE" not in call.arg(2) or "MAP_SHARED" not in call.arg(3):
            return []
        return self._fd_effect(call, 4, "mapped for shared writing")


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _infinitive(verb: str) -> str:
    words = verb.split(" ", 1)
    base = {
        "wrote": "write",
        "made": "make",
        "removed": "remove",
        "changed": "change",
        "truncated": "truncate",
        "linked": "link",
        "opened": "open",
        "created": "create",
        "renamed": "rename",
        "allocated": "allocate",
        "mapped": "map",
    }.get(words[0], words[0])
    return " ".join([base, *words[1:]])
