"""The instrumented world of one check: a workspace per example, the recording service, the gate.

Under Python-level observation effects are judged here, never from the tool's word: the
service numbers what it receives, the gate numbers writes in the workspace and refuses
everything outside it and the target, and the workspace is snapshotted (paths and sha256)
at every watermark and at the end, which catches a change the gate could not see. Under
confinement only the workspace, the service and the network namespace it listens in come
from here; the observation is ``_confined``'s.
"""

from __future__ import annotations

import errno
import hashlib
import ipaddress
import os
import shutil
import signal as signals
import socket
import stat
import tempfile
from pathlib import Path

from toolproof.spec import HarnessError

from ._confine import NetNamespace
from ._endpoints import serve
from ._options import CheckOptions
from ._trace import EventKind, Trace
from ._transport import Recorder, TransportMode

Snapshot = dict[str, str]
"""Workspace path (relative, ``/``-separated) -> sha256 of the file, or ``dir/``."""

_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


def snapshot(workspace: Path) -> Snapshot:
    """Every file and directory under ``workspace`` with its content digest."""
    found: Snapshot = {}
    for directory, dirs, files in os.walk(workspace):
        base = Path(directory).relative_to(workspace)
        for name in dirs:
            found[(base / name).as_posix() + "/"] = "dir/"
        for name in files:
            found[(base / name).as_posix()] = _digest(Path(directory) / name)
    return found


def _digest(path: Path) -> str:
    # Never follow a link or open a FIFO: a snapshot must not block, nor read outside the workspace.
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            return f"link:{os.readlink(path)}"
        if not stat.S_ISREG(info.st_mode):
            return f"special:{stat.S_IFMT(info.st_mode)}"
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def describe_change(before: Snapshot, after: Snapshot) -> str:
    """What changed between two snapshots, e.g. ``created 'a.txt'; changed 'log.txt'``."""
    parts = [f"created {p!r}" for p in sorted(after.keys() - before.keys())]
    parts += [f"changed {p!r}" for p in sorted(after.keys() & before.keys()) if after[p] != before[p]]
    parts += [f"removed {p!r}" for p in sorted(before.keys() - after.keys())]
    return "; ".join(parts) or "nothing"


class ExampleWorld:
    """The world one example runs in; it is also the gate's watch while the tool executes."""

    def __init__(self, root: Path, workspace: Path, recorder: Recorder, trace: Trace) -> None:
        self.root = root
        self.workspace = workspace
        self.recorder = recorder
        self.trace = trace
        self.outside: list[str] = []
        """Operations the gate refused, as the report shows them."""
        self._last = snapshot(workspace)
        self._writes_since_checkpoint = 0

    # -- the gate's watch ------------------------------------------------------------------

    def file_write(self, op: str, path: str) -> None:
        """A write: inside the workspace it is an effect; elsewhere it is refused."""
        if _under(path, str(self.workspace)):
            if op == "open the SQLite database":
                return  # it may only read: what it changes, the snapshot at the next mark or end sees
            self._writes_since_checkpoint += 1
            self.trace.add(EventKind.WORKSPACE, f"{op} {self.show(path)!r} in the workspace", effect=True)
            return
        if path == os.devnull or "__pycache__" in Path(path).parts:
            return  # the interpreter caching bytecode is not the tool's effect
        self._refuse(f"{op} {self.show(path)!r} outside the workspace")

    def connect(self, op: str, host: str, port: int | None) -> None:
        """A connect: only the recorded transport is reachable."""
        if op == "name lookup" and (_is_address(host) or host == socket.gethostname()):
            return  # a literal address needs no lookup, and the machine's own name is local: its connect is judged
        if host in _LOOPBACK_NAMES and port in (None, 0, self.recorder.port):
            if op == "connect" and host == self.recorder.address[0]:
                self.recorder.note_connect()
            return
        where = host if port is None else f"{host}:{port}"
        self._refuse(f"{op} {where}, which is not context.target")

    def process(self, op: str, what: str) -> None:
        """A process start: without confinement its effects cannot be observed, so it is refused (not a finding)."""
        text = f"{op} {Path(what).name!r}: refused, since what a process does cannot be observed without confinement"
        self.trace.add(EventKind.PROCESS, text)
        raise PermissionError(errno.EACCES, f"toolproof contract check refused: {op} {Path(what).name!r}")

    def signal(self, op: str, pid: int, number: int) -> None:
        """A signal: every process but the check's runs outside it (process starts are refused), so it is refused."""
        if number == 0:
            return  # signal 0 only asks whether the process exists
        try:
            name = signals.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        self._refuse(f"send {name} to the {op} {pid}, which the tool did not start")

    def _refuse(self, text: str) -> None:
        self.outside.append(text)
        self.trace.add(EventKind.OUTSIDE, f"{text}: refused")
        raise PermissionError(errno.EACCES, f"toolproof contract check refused: {text}")

    # -- snapshots ---------------------------------------------------------------------------

    def checkpoint(self) -> Snapshot:
        """Snapshot the workspace; a change the gate did not see becomes an effect event now."""
        current = snapshot(self.workspace)
        if current != self._last and self._writes_since_checkpoint == 0:
            change = describe_change(self._last, current)
            self.trace.add(EventKind.WORKSPACE, f"workspace changed unseen by the gate: {change}", effect=True)
        self._last, self._writes_since_checkpoint = current, 0
        return current

    def show(self, path: str) -> str:
        """A path as the report shows it (see ``show_path``)."""
        return show_path(path, self.root, self.workspace)


def show_path(path: str, root: Path, workspace: Path) -> str:
    """A path as the report shows it: relative to the workspace when it is near, never machine-specific."""
    if _under(path, str(root)):
        return os.path.relpath(path, workspace)
    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if home != "/" and _under(path, home) else path


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def under(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or inside it (textually)."""
    return _under(path, directory)


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


class ContractWorld:
    """Owns the temporary root and the recording service of one check.

    With ``confined``, the service listens in a private network namespace at a fixed address
    (``NetNamespace.TARGET``), the only address a confined example can reach; otherwise on
    a free loopback port of this process's network.
    """

    def __init__(self, options: CheckOptions | None = None, *, confined: bool = False) -> None:
        options = options or CheckOptions()
        self.root = Path(os.path.realpath(tempfile.mkdtemp(prefix="toolproof-contract-")))
        self.net: NetNamespace | None = None
        try:
            if confined:
                self.net = NetNamespace()
                tcp, udp = self.net.sockets()
                target = self.net.target
            else:
                tcp, udp = _loopback_sockets()
                target = f"http://127.0.0.1:{tcp.getsockname()[1]}"
            self.recorder = Recorder(tcp, udp, target=target, key_in=options.key_in, requests_act=options.requests_act)
            self._stop_serving = serve(self.recorder, tcp, udp)
        except BaseException:
            if self.net is not None:
                self.net.close()
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        self._examples = 0

    def example_dir(self) -> Path:
        """A fresh example folder holding an empty ``workspace``."""
        self._examples += 1
        folder = self.root / f"example-{self._examples}"
        try:
            (folder / "workspace").mkdir(parents=True)
        except OSError as exc:
            raise HarnessError(f"cannot create the example workspace {folder}: {exc}") from exc
        return folder

    def example(self, mode: TransportMode = TransportMode.ANSWER, hold_s: float = 1.0) -> ExampleWorld:
        """A fresh workspace and trace; the transport starts recording onto it."""
        workspace = self.example_dir() / "workspace"
        trace = Trace()
        self.recorder.begin(trace, mode, hold_s)
        return ExampleWorld(self.root, workspace, self.recorder, trace)

    def close(self) -> None:
        """Stop the transport and remove every workspace."""
        self.recorder.close()
        self._stop_serving()
        if self.net is not None:
            self.net.close()
        shutil.rmtree(self.root, ignore_errors=True)


def _loopback_sockets() -> tuple[socket.socket, socket.socket]:
    """A TCP listener and a UDP socket on one free loopback port."""
    for _ in range(20):
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.bind(("127.0.0.1", 0))
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            udp.bind(("127.0.0.1", tcp.getsockname()[1]))
        except OSError:
            tcp.close()
            udp.close()
            continue
        return tcp, udp
    raise HarnessError("no loopback port is free for both TCP and UDP")
