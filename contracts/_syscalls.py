"""Reading the tracer's log: one ``Syscall`` per traced system call, in the order the calls began.

The log is ``strace -f -q -yy`` output: ``PID NAME(ARGS) = RESULT``, a call another
thread interrupted split into ``<unfinished ...>`` and ``<... NAME resumed>``, every file
descriptor decorated with what it is (``3</tmp/x>``, ``5<TCP:[10.0.0.1:4000->10.0.0.2:80]>``,
``7<pipe:[123]>``). A call's place is where it began: that is when its effect may start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE = re.compile(r"^(\d+)\s+(.*)$")
_CALL = re.compile(r"^([a-z_0-9]+)\((.*)$", re.S)
_RESUMED = re.compile(r"^<\.\.\. ([a-z_0-9]+) resumed>(.*)$", re.S)
_UNFINISHED = " <unfinished ...>"
_RESULT = re.compile(r"\)\s+= (.*)$", re.S)
_ERROR = re.compile(r"^-1 ([A-Z0-9]+)")
_DECORATED = re.compile(r"^(-?\d+|AT_FDCWD)<(.*)>$", re.S)
_ENDPOINT = re.compile(r"^(?:TCP|UDP)v?6?:\[(.+?)(?:->(.+))?\]$")


@dataclass
class Syscall:
    """One traced system call."""

    index: int
    """Its place in the log: the order in which calls began."""
    pid: int
    name: str
    args: list[str]
    """Top-level arguments as strace printed them."""
    result: str = "?"
    """What it returned (``0``, ``3</tmp/x>``, ``-1 EROFS (Read-only file system)``), ``?`` when unknown."""

    @property
    def ok(self) -> bool:
        """Whether it succeeded."""
        return self.result not in ("?", "") and not self.result.startswith("-1 ")

    @property
    def error(self) -> str | None:
        """The errno name it failed with (``EROFS``), else None."""
        match = _ERROR.match(self.result)
        return match.group(1) if match else None

    def arg(self, position: int) -> str:
        """An argument, or "" when there are fewer."""
        return self.args[position] if position < len(self.args) else ""


def parse_log(text: str) -> list[Syscall]:
    """Every complete or begun call of the log, in the order the calls began."""
    calls: list[Syscall] = []
    pending: dict[int, Syscall] = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        pid, body = int(match.group(1)), match.group(2)
        if body.startswith(("---", "+++")):
            continue
        resumed = _RESUMED.match(body)
        if resumed:
            call = pending.pop(pid, None)
            if call is not None:
                rest = resumed.group(2)
                head, result = _split_result(rest)
                call.args = split_args(_joined(call.args) + head)
                call.result = result
            continue
        started = _CALL.match(body)
        if not started:
            continue
        name, rest = started.group(1), started.group(2)
        call = Syscall(len(calls), pid, name, [])
        calls.append(call)
        if rest.endswith(_UNFINISHED):
            call.args = [rest[: -len(_UNFINISHED)]]  # joined again when the call resumes
            pending[pid] = call
            continue
        head, call.result = _split_result(rest)
        call.args = split_args(head)
    for call in pending.values():
        call.args = split_args(_joined(call.args))
    return calls


def _joined(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts)


def _split_result(rest: str) -> tuple[str, str]:
    """``ARGS) = RESULT`` -> (ARGS, RESULT); the result of an exit is ``?``."""
    matches = list(_RESULT.finditer(rest))
    if not matches:
        return rest.rstrip(")"), "?"
    last = matches[-1]
    return rest[: last.start()], last.group(1).strip()


def split_args(text: str) -> list[str]:
    """Split strace's argument text at top-level commas (quotes, brackets and decorations nest)."""
    parts: list[str] = []
    depth, start, index, quoted = 0, 0, 0, False
    while index < len(text):
        char = text[index]
        if quoted:
            if char == "\\":
                index += 1
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
        elif char in "([{<":
            depth += 1
        elif char in ")]}" or (char == ">" and text[index - 1 : index] != "-"):
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
        index += 1
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return parts


def unquote(text: str) -> str | None:
    """The value of a strace string argument (``"a\\nb"``), or None if it is not one."""
    text = text.removesuffix("...")
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return None
    raw = text[1:-1]
    out = bytearray()
    index = 0
    while index < len(raw):
        char = raw[index]
        if char != "\\":
            out += char.encode("utf-8", "surrogateescape")
            index += 1
            continue
        nxt = raw[index + 1 : index + 2]
        simple = {"n": b"\n", "t": b"\t", "r": b"\r", "v": b"\v", "f": b"\f", '"': b'"', "\\": b"\\"}
        if nxt in simple:
            out += simple[nxt]
            index += 2
        elif nxt == "x":
            out.append(int(raw[index + 2 : index + 4], 16))
            index += 4
        elif nxt.isdigit():
            digits = re.match(r"[0-7]{1,3}", raw[index + 1 :])
            assert digits is not None
            out.append(int(digits.group(0), 8) & 0xFF)
            index += 1 + len(digits.group(0))
        else:
            out += nxt.encode()
            index += 2
    return out.decode("utf-8", "surrogateescape")


def decoration(arg: str) -> str | None:
    """What strace says a descriptor argument is (``/tmp/x``, ``TCP:[...]``, ``pipe:[12]``), or None."""
    match = _DECORATED.match(arg.strip())
    if not match:
        return None
    inner = match.group(2)
    # ``/dev/null<char 1:3>``: the device suffix of -yy is not part of the path.
    if inner.startswith("/") and inner.endswith(">") and "<" in inner:
        inner = inner[: inner.rindex("<")]
    return inner


def endpoints(decorated: str) -> tuple[str | None, str | None, str | None]:
    """For ``TCP:[local->remote]``: (protocol, local, remote); an unconnected ``UDP:[inode]``: (UDP, None, None)."""
    if not decorated.startswith(("TCP", "UDP")):
        return None, None, None
    protocol = "TCP" if decorated.startswith("TCP") else "UDP"
    match = _ENDPOINT.match(decorated)
    if not match:
        return protocol, None, None
    local, remote = match.group(1), match.group(2)
    if remote is None and local.isdigit():
        return protocol, None, None  # only an inode: not bound or not connected yet
    return protocol, local, remote


def inode(decorated: str) -> str | None:
    """The inode of an unconnected socket's or a pipe's decoration (``TCP:[12345]``, ``pipe:[7]`` -> the number)."""
    match = re.match(r"^(?:[A-Z][A-Za-z0-9-]*|socket|pipe):\[(\d+)\]$", decorated)
    return match.group(1) if match else None


def sockaddr(arg: str) -> tuple[str, str] | None:
    """The family and address of a sockaddr argument: (``AF_INET``, ``192.0.2.1:80``), (``AF_UNIX``, path)."""
    family = re.search(r"sa_family=(AF_[A-Z0-9]+)", arg)
    if not family:
        return None
    name = family.group(1)
    if name in ("AF_INET", "AF_INET6"):
        port = re.search(r"sin6?_port=htons\((\d+)\)", arg)
        address = re.search(r'inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"', arg)
        if not port or not address:
            return name, "?"
        host = address.group(1) or f"[{address.group(2)}]"
        return name, f"{host}:{port.group(1)}"
    if name == "AF_UNIX":
        path = re.search(r'sun_path=(@?"(?:[^"\\]|\\.)*")', arg)
        if not path:
            return name, ""
        text = path.group(1)
        abstract = text.startswith("@")
        value = unquote(text.lstrip("@")) or ""
        return name, ("@" + value) if abstract else value
    return name, ""
