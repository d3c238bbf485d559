"""Start a fake MCP server in tens of milliseconds: a pre-imported fork server forks one real server per launch.

Importing a fake (the MCP SDK, pydantic, anyio) costs about a second of CPU, and a whole conformance run starts a fake
as a subprocess a few hundred times (every stdio and streamable HTTP cell, every restart). Here one process per harness
process imports everything once and forks a child per launch. The command an implementation runs is still a real
process that it spawns, pipes to and kills as it likes: a *launcher* (``python -I -S -c LAUNCHER``, no imports beyond
the standard library's core) that hands its own stdin, stdout and stderr to the fork server over a Unix socket and
mirrors the forked server:

- the server reads and writes the launcher's pipes, with the launcher's environment and working directory, and the
  arguments ``python -m toolproof.fakes.mcp`` would get;
- the launcher exits with the server's status, or dies of the server's signal, once the server has ended;
- SIGTERM, SIGINT or SIGHUP sent to the launcher (or its process group) is passed on to the server; a launcher
  killed outright (SIGKILL) closes its socket, and the fork server then kills the server;
- when the fork server cannot be reached (another machine, a fork server that died), the launcher becomes the plain
  ``python -m toolproof.fakes.mcp`` command (``exec``: same process), so a launch never depends on it.

The fork server itself stops, killing what it forked, when the harness process that started it closes its stdin
(exits, or is killed). ``TOOLPROOF_FAKE_FORKSERVER=0`` turns it off: every launch is then the plain command.
"""

from __future__ import annotations

import array
import atexit
import contextlib
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

SWITCH = "TOOLPROOF_FAKE_FORKSERVER"
"""Set to ``0`` to start every fake with the plain ``python -m toolproof.fakes.mcp`` command."""

READY_TIMEOUT_S = 30.0
"""How long the first launch of a process waits for its fork server to listen; past it, launches are plain."""

_HEADER = struct.Struct("!I")

LAUNCHER = r"""
import array, os, signal, socket, struct, sys
path, python, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
def plain():
    os.execv(python, [python, "-m", "toolproof.fakes.mcp", *argv])
link = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    link.connect(path)
except OSError:
    link.close()
    plain()
import json
body = json.dumps({"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
link.sendmsg([struct.pack("!I", len(body)) + body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
child = []
pending = []
def forward(number, frame):
    if child:
        try:
            os.kill(child[0], number)
        except ProcessLookupError:
            pass
    else:
        pending.append(number)
for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(number, forward)
stream = link.makefile("rb")
line = stream.readline()
if not line.startswith(b"pid "):
    sys.exit(70)
child.append(int(line.split()[1]))
os.close(0)
os.close(1)
for number in pending:
    forward(number, None)
line = stream.readline()
if not line.startswith(b"status "):
    sys.exit(70)
status = int(line.split()[1])
if os.WIFSIGNALED(status):
    number = os.WTERMSIG(status)
    signal.signal(number, signal.SIG_DFL)
    os.kill(os.getpid(), number)
os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)
"""
"""The launcher's source: standard library only, run under ``-I -S`` so it starts in a few milliseconds."""


def _receive(connection: socket.socket) -> tuple[dict[str, object], list[int]]:
    """One launch request: its JSON body and the three descriptors passed with it."""
    fds = array.array("i")
    data, ancillary, _flags, _address = connection.recvmsg(1 << 16, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
    while len(data) < _HEADER.size:
        more = connection.recv(1 << 16)
        if not more:
            raise EOFError("the launcher closed its socket mid-request")
        data += more
    (size,) = _HEADER.unpack_from(data)
    while len(data) < _HEADER.size + size:
        more = connection.recv(1 << 16)
        if not more:
            raise EOFError("the launcher closed its socket mid-request")
        data += more
    body: dict[str, object] = json.loads(data[_HEADER.size : _HEADER.size + size])
    return body, list(fds)


def _become_server(body: dict[str, object], fds: list[int], keep: list[int]) -> None:
    """In the forked child: take the launcher's descriptors, environment and directory, and serve; never returns."""
    status = 1
    try:
        for fd in keep:
            with contextlib.suppress(OSError):
                os.close(fd)
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.setpgid(0, 0)
        for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(number, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        env = body["env"]
        assert isinstance(env, dict)  # Invariant: the launcher sends dict(os.environ).
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
        os.chdir(str(body["cwd"]))
        argv = body["argv"]
        assert isinstance(argv, list)  # Invariant: the launcher sends its argument list.
        sys.argv = ["python -m toolproof.fakes.mcp", *map(str, argv)]
        from .__main__ import main

        try:
            status = main([str(a) for a in argv])
        except SystemExit as exit_:
            code = exit_.code
            status = code if isinstance(code, int) else (0 if code is None else 1)
            if code is not None and not isinstance(code, int):
                print(code, file=sys.stderr)
        except KeyboardInterrupt:
            status = 128 + signal.SIGINT
        except BaseException:  # Reported as python would, on the server's stderr: nothing may escape a fork.
            traceback.print_exc()
            status = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(status)


def serve_forever(path: str) -> None:
    """The fork server's loop: accept launches on ``path`` until stdin closes, then kill what it forked."""
    # Imported before any fork, so a forked server starts with everything loaded.
    from . import __main__ as _entry  # noqa: F401
    from . import _serve  # noqa: F401

    with contextlib.suppress(ImportError):
        import uvicorn  # noqa: F401  # serve_http's, imported lazily there

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in a terminal reaches the harness, which then closes stdin.
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(0, selectors.EVENT_READ, "parent")
    launches: dict[int, tuple[socket.socket, int]] = {}  # pidfd -> (the launcher's socket, the server's pid)
    by_socket: dict[socket.socket, int] = {}  # the launcher's socket -> pidfd, while the launcher lives
    try:
        while True:
            for key, _events in selector.select():
                what = key.data
                if what == "parent":
                    if not os.read(0, 4096):
                        return
                elif what == "accept":
                    connection, _ = listener.accept()
                    try:
                        body, fds = _receive(connection)
                    except (OSError, EOFError, ValueError):
                        connection.close()
                        continue
                    keep = [selector.fileno(), listener.fileno(), connection.fileno()]
                    keep += [s.fileno() for s in by_socket] + list(launches)
                    pid = os.fork()
                    if pid == 0:
                        _become_server(body, fds, keep)
                    for fd in fds:
                        os.close(fd)
                    pidfd = os.pidfd_open(pid)
                    launches[pidfd] = (connection, pid)
                    by_socket[connection] = pidfd
                    with contextlib.suppress(OSError):
                        connection.sendall(f"pid {pid}\n".encode())
                    selector.register(pidfd, selectors.EVENT_READ, "ended")
                    selector.register(connection, selectors.EVENT_READ, "launcher")
                elif what == "ended":
                    # One select may report a server's end and its launcher's; each is acted on once.
                    pidfd = key.fd
                    if pidfd not in launches:
                        continue
                    connection, pid = launches.pop(pidfd)
                    _, status = os.waitpid(pid, 0)
                    selector.unregister(pidfd)
                    os.close(pidfd)
                    if by_socket.pop(connection, None) is not None:
                        selector.unregister(connection)
                    with contextlib.suppress(OSError):
                        connection.sendall(f"status {status}\n".encode())
                    connection.close()
                else:  # "launcher": it wrote nothing more by design, so this is its end (it was killed).
                    launcher = key.fileobj
                    assert isinstance(launcher, socket.socket)  # Invariant: registered as such above.
                    if launcher not in by_socket:
                        continue
                    with contextlib.suppress(OSError):
                        if launcher.recv(1):
                            continue
                    pidfd = by_socket.pop(launcher)
                    selector.unregister(launcher)
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(launches[pidfd][1], signal.SIGKILL)
    finally:
        for _connection, pid in launches.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        for _connection, pid in launches.values():
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        with contextlib.suppress(OSError):
            os.unlink(path)


_SERVE = "import sys; from toolproof.fakes.mcp._forkserver import serve_forever; serve_forever(sys.argv[1])"
"""The fork server's command (``python -c _SERVE PATH``): not ``-m``, since the package imports this module first."""


class _Started:
    """This process's fork server, started at the first launch that wants it."""

    lock = threading.Lock()
    path: str | None = None
    owner: int | None = None
    process: subprocess.Popen[bytes] | None = None
    stop_registered = False


def _stop() -> None:
    process = _Started.process
    if process is None or _Started.owner != os.getpid():
        return
    with contextlib.suppress(OSError):
        assert process.stdin is not None  # Invariant: started with a stdin pipe.
        process.stdin.close()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _socket_path() -> str | None:
    """The running fork server's socket, starting it if this process has none; None when it is switched off."""
    if os.environ.get(SWITCH, "1") == "0" or not hasattr(os, "pidfd_open"):
        return None
    with _Started.lock:
        if _Started.owner == os.getpid() and _Started.path is not None:
            return _Started.path
        folder = tempfile.mkdtemp(prefix="toolproof-forkserver-")
        path = os.path.join(folder, "launch.sock")
        process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, path],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            start_new_session=True,  # Neither Ctrl-C in a terminal nor a killpg of the harness's group reaches it.
        )
        _Started.process, _Started.owner = process, os.getpid()
        if not _Started.stop_registered:
            atexit.register(_stop)
            _Started.stop_registered = True
        # Once per process, wait for it to listen (its imports take about a second); a launcher that finds no socket
        # would start the plain command instead, which is right but slow.
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not os.path.exists(path) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        _Started.path = path if os.path.exists(path) else None
        return _Started.path


def fake_command(*fake_argv: str) -> list[str]:
    """The command line that serves a fake with ``python -m toolproof.fakes.mcp`` arguments ``fake_argv``: through
    this process's fork server, or the plain command when it is switched off."""
    path = _socket_path()
    if path is None:
        return [sys.executable, "-m", "toolproof.fakes.mcp", *fake_argv]
    return [sys.executable, "-I", "-S", "-c", LAUNCHER, path, sys.executable, *fake_argv]


def served_pids() -> list[int]:
    """The servers this process's fork server has forked and that still run (empty when none is running)."""
    process = _Started.process
    if process is None or _Started.owner != os.getpid():
        return []
    try:
        with open(f"/proc/{process.pid}/task/{process.pid}/children", encoding="ascii") as listing:
            return [int(pid) for pid in listing.read().split()]
    except OSError:
        return []
