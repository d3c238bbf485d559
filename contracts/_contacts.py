"""What a traced system call reaches beyond files: sockets of every family, other processes, programs.

- A connect or a send is judged by where it goes. The target is the recording service: bytes there are matched to
  what it received. A Unix socket named by a path (unless nothing is there) or in the abstract namespace (unless
  the tool's own listens there), a netlink protocol the network namespace does not confine (anything but
  ``NETLINK_ROUTE`` and ``NETLINK_SOCK_DIAG``), a raw or ICMP packet to another host, any other family (a
  ``vsock`` reaches the host, a ``packet`` socket the link), and a socket or pipe cut because it was opened
  before the check, are outside the workspace and the target.
- A signal (``kill``, ``killpg``, ``tkill``, ``tgkill``, ``sigqueue``, ``pidfd_send_signal``) or a pidfd is judged
  by its process: the tool's own (the example and every process or thread it started) or not. The check's PID
  namespace holds no other process than the namespace's first, so a signal elsewhere fails, and the attempt is
  what is reported.
- A program started is observed; its own calls are judged alike.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ._syscalls import Syscall, decoration, endpoints, inode, sockaddr, split_args, unquote
from ._trace import EventKind
from ._transport import Arrival, ArrivalKind

Event = tuple[EventKind, str, bool]
"""What a call left on the trace: its kind, how the report shows it, and whether it is an effect."""

_NAMESPACED_NETLINK = frozenset({"NETLINK_ROUTE", "NETLINK_SOCK_DIAG", "NETLINK_INET_DIAG"})
"""Netlink protocols whose every message stays in the check's network namespace (interface and socket queries)."""
_LOCAL_FAMILIES = frozenset({"AF_UNIX", "AF_ALG"})
_SOCKET_TAG = re.compile(r"^(?:[A-Z][A-Za-z0-9-]*|socket):\[")
_PID_DECORATION = re.compile(r"^pid:(\d+)$")
_BOUND_NETLINK = re.compile(r"^NETLINK:\[([A-Z_0-9]+):")
# name -> (index of the process or group, index of the signal)
_SIGNALS: dict[str, tuple[int, int]] = {
    "kill": (0, 1),
    "tkill": (0, 1),
    "tgkill": (0, 2),
    "rt_sigqueueinfo": (0, 1),
    "rt_tgsigqueueinfo": (0, 2),
}
SENDS = frozenset({"sendto", "sendmsg", "sendmmsg", "write", "writev", "sendfile"})
"""Calls that send when their descriptor is a socket."""
SIGNAL_CALLS = frozenset({*_SIGNALS, "pidfd_send_signal", "pidfd_open"})
"""Calls that reach another process."""


@dataclass
class Reach:
    """What the judge of contacts knows of the example (part of ``_observe.Scene``)."""

    target: str
    """``ADDRESS:PORT`` of the recording service."""
    workspace: str
    arrivals: list[Arrival]
    show: Callable[[str], str]
    cut: dict[str, str] = field(default_factory=dict)
    """Inherited sockets and pipes the example was cut from: replacement inode -> what it was."""
    init_pid: int = 0
    """The namespace's first process, by its pid in the tracer's namespace: it is not the tool's."""


class Contacts:
    """Judges the calls that reach sockets, processes and programs, one example at a time."""

    def __init__(self, reach: Reach) -> None:
        self.reach = reach
        self._reported: set[str] = set()
        self._sent: set[str] = set()
        self._families: dict[str, tuple[str, str]] = {}
        self._own: set[int] = set()
        """The tool's processes and threads by their pid in the check's PID namespace (what its calls name)."""
        self._own_outside: set[int] = set()
        """The same by their pid in the tracer's namespace (what a pidfd's decoration shows)."""
        self._tcp = {a.peer[1]: a for a in reach.arrivals if a.kind is not ArrivalKind.UDP}
        self._udp = [a for a in reach.arrivals if a.kind is ArrivalKind.UDP]
        self.attempt = 0
        """The attempt in progress: arrivals matched now belong to it."""

    def note(self, call: Syscall) -> None:
        """Keep track of the tool's own processes and of the sockets it makes."""
        if call.pid != self.reach.init_pid:
            self._own_outside.add(call.pid)
        if call.name in ("clone", "clone3", "fork", "vfork") and call.result.isdigit():
            self._own.add(int(call.result))
        elif call.name == "socket" and call.ok:
            number = inode(decoration(call.result) or "")
            if number is not None:
                self._families[number] = (call.arg(0), call.arg(2))

    def is_socket(self, arg: str) -> bool:
        """Whether a descriptor argument is a socket (``TCP:[...]``, ``NETLINK:[...]``, ``socket:[...]``)."""
        return bool(_SOCKET_TAG.match(decoration(arg) or ""))

    def cut_write(self, call: Syscall) -> list[Event]:
        """A write on a pipe cut because it was opened before the check."""
        what = decoration(call.arg(0)) or ""
        number = inode(what) if what.startswith("pipe:") else None
        if number is None or number not in self.reach.cut:
            return []
        was = self.reach.cut[number]
        return self._outside(f"wrote to {was} opened before the check: the check had cut it", f"cut:{number}")

    def _outside(self, text: str, what: str) -> list[Event]:
        if what in self._reported:
            return []
        self._reported.add(what)
        return [(EventKind.OUTSIDE, text, True)]

    # -- sockets -----------------------------------------------------------------------------------------

    def _family(self, what: str) -> str | None:
        if what.startswith(("TCP", "UDP", "RAW", "ICMP", "PING", "SCTP", "UDPLITE")):
            return "AF_INET"
        if what.startswith("UNIX"):
            return "AF_UNIX"
        if what.startswith("NETLINK"):
            return "AF_NETLINK"
        number = inode(what)
        return self._families[number][0] if number in self._families else None

    def connect(self, call: Syscall) -> list[Event]:
        """A connect: the target, a Unix socket, another address or family."""
        address = sockaddr(call.arg(1))
        if address is None:
            return []
        family, where = address
        if family == "AF_UNIX":
            return self._unix(call, where, "connect to")
        if family not in ("AF_INET", "AF_INET6"):
            return self._other_family(call, family, where)
        if where == self.reach.target:
            return []
        protocol = (endpoints(decoration(call.arg(0)) or "")[0] or "TCP").replace("v6", "")
        if where.endswith(":53"):
            return self._outside("looked a name up over DNS, which is not context.target", "dns")
        if call.error:
            text = f"tried to connect to {where} ({protocol}), which is not context.target: {call.error}, since "
            text += "nothing else is reachable in the check"
        else:
            text = f"connected to {where} ({protocol}), which is not context.target"
        return self._outside(text, where)

    def _unix(self, call: Syscall, where: str, verb: str) -> list[Event]:
        if not where:
            return []  # an unnamed socket (a socketpair's)
        abstract = where.startswith("@")
        if abstract and call.ok:
            return []  # the check's network namespace has its own abstract names: only the tool's own answer
        if not abstract and (call.error == "ENOENT" or _under(where, self.reach.workspace)):
            return []  # nothing is there on this system either, or the tool's own socket in its workspace
        kind = "the abstract Unix socket" if abstract else "the Unix socket"
        shown = where if abstract else self.reach.show(where)
        if call.ok:
            text = f"{_past(verb)} {kind} {shown!r}"
        else:
            where_not = "network namespace has no such name" if abstract else "overlay keeps the real socket away"
            text = f"tried to {verb} {kind} {shown!r}: {call.error}, since the check's {where_not}"
        return self._outside(text, f"unix:{where}")

    def _other_family(self, call: Syscall, family: str, where: str) -> list[Event]:
        if family in _LOCAL_FAMILIES:
            return []
        if family == "AF_NETLINK":
            return self._netlink(call)
        shown = f" {where}" if where else ""
        verb = "reached" if call.ok else "tried to reach"
        text = f"{verb}{shown} over {family}, a socket family the check's namespaces do not confine"
        if call.error:
            text += f" ({call.error})"
        return self._outside(text, f"{family}:{where}")

    def _netlink(self, call: Syscall) -> list[Event]:
        what = decoration(call.arg(0)) or ""
        bound = _BOUND_NETLINK.match(what)  # a bound socket's decoration names its protocol: NETLINK:[ROUTE:2]
        number = inode(what)
        protocol = f"NETLINK_{bound.group(1)}" if bound else self._families.get(number or "", ("", "?"))[1]
        protocol = protocol if protocol != "?" else "an unknown protocol"
        if protocol in _NAMESPACED_NETLINK:
            return []
        verb = "sent" if call.ok else "tried to send"
        text = f"{verb} a message to the kernel over {protocol}, which the check's network namespace does not confine"
        return self._outside(text, f"netlink:{protocol}")

    def send(self, call: Syscall) -> list[Event]:
        """A send on a socket: judged by the address it names, or the connection it is on."""
        what = decoration(call.arg(0)) or ""
        cut = inode(what)
        if cut is not None and cut in self.reach.cut:
            was = self.reach.cut[cut]
            return self._outside(f"sent on {was}, opened before the check: the check had cut it", f"cut:{cut}")
        named = (
            sockaddr(call.arg(4) if call.name == "sendto" else call.arg(1)) if call.name.startswith("send") else None
        )
        family = named[0] if named is not None else self._family(what)
        if family == "AF_UNIX":
            return self._unix(call, named[1], "send a datagram to") if named is not None else []
        if family not in (None, "AF_INET", "AF_INET6"):
            return self._other_family(call, family, named[1] if named is not None else "")
        protocol, local, remote = endpoints(what)
        destination = named[1] if named is not None else remote
        if protocol is None:
            return self._packet(call, destination)
        if destination is None or not call.ok:
            return []
        if destination != self.reach.target:
            if destination.endswith(":53"):
                return self._outside("looked a name up over DNS, which is not context.target", "dns")
            return self._outside(f"sent to {destination} ({protocol}), which is not context.target", destination)
        if protocol == "TCP":
            return self._tcp_arrival(local)
        return self._udp_arrival(local)

    def _packet(self, call: Syscall, destination: str | None) -> list[Event]:
        """A raw or ICMP packet: to the target it is bytes the service cannot receive; elsewhere it is outside."""
        if destination is None:
            return []
        host = destination.rsplit(":", 1)[0]
        kind = (decoration(call.arg(0)) or "raw").split(":", 1)[0]
        if host == self.reach.target.rsplit(":", 1)[0]:
            if not call.ok:
                return []
            return [(EventKind.NETWORK, f"a {kind} packet to the target (the service does not receive such)", True)]
        verb = "sent" if call.ok else "tried to send"
        failed = f": {call.error}, since nothing else is reachable in the check" if call.error else ""
        return self._outside(f"{verb} a {kind} packet to {host}, which is not context.target{failed}", f"ip:{host}")

    def _tcp_arrival(self, local: str | None) -> list[Event]:
        if local is None or local in self._sent:
            return []
        self._sent.add(local)
        arrival = self._tcp.pop(_port(local), None)
        if arrival is None:
            return [(EventKind.NETWORK, "bytes over TCP at the target (the service recorded none)", True)]
        arrival.attempt = self.attempt
        kind = EventKind.HTTP if arrival.kind is ArrivalKind.HTTP else EventKind.NETWORK
        return [(kind, arrival.text, arrival.effect)]

    def _udp_arrival(self, local: str | None) -> list[Event]:
        port = _port(local) if local else None
        chosen = next((a for a in self._udp if port is None or a.peer[1] == port), None)
        if chosen is None:
            return [(EventKind.NETWORK, "a UDP datagram to the target (the service recorded none)", True)]
        self._udp.remove(chosen)
        chosen.attempt = self.attempt
        return [(EventKind.NETWORK, chosen.text, True)]

    # -- processes ---------------------------------------------------------------------------------------

    def signal(self, call: Syscall) -> list[Event]:
        """A signal, or a pidfd, for a process: the tool's own, or one it did not start."""
        if call.name == "pidfd_send_signal":
            return self._pidfd_signal(call)
        if call.name == "pidfd_open":
            return self._pidfd_open(call)
        target_index, signal_index = _SIGNALS[call.name]
        sent = call.arg(signal_index)
        try:
            target = int(call.arg(target_index))
        except ValueError:
            return []
        if sent in ("0", ""):
            return []  # signal 0 only asks whether the process exists
        if call.name == "kill" and target <= 0:
            if target == 0 or -target in self._own:
                return []  # its own process group, or a group one of its processes leads
            what = "every process it may signal" if target == -1 else f"the process group {-target}"
        elif target in self._own:
            return []
        else:
            what = f"process {target}"
        return self._not_its_own(call, f"send {sent} to {what}", f"signal:{target}")

    def _not_its_own(self, call: Syscall, action: str, key: str) -> list[Event]:
        if call.ok:
            return self._outside(f"{_past(action)}, which the tool did not start", key)
        return self._outside(
            f"tried to {action}, which the tool did not start: {call.error}, since the check's PID namespace holds "
            "only the tool's own processes",
            key,
        )

    def _pidfd_open(self, call: Syscall) -> list[Event]:
        try:
            target = int(call.arg(0))
        except ValueError:
            return []
        if target in self._own:
            return []
        return self._not_its_own(call, f"open a pidfd of process {target}", f"signal:{target}")

    def _pidfd_signal(self, call: Syscall) -> list[Event]:
        sent = call.arg(1)
        if sent in ("0", ""):
            return []
        match = _PID_DECORATION.match(decoration(call.arg(0)) or "")
        if match is not None and int(match.group(1)) in self._own_outside:
            return []
        what = "a process through a pidfd" if match is None else f"process {match.group(1)} through a pidfd"
        return self._not_its_own(call, f"send {sent} to {what}", f"pidfd:{call.arg(0)}")

    def process(self, call: Syscall) -> list[Event]:
        """A program started: observed, not an effect itself."""
        if not call.ok:
            return []  # a search along PATH tries and fails before it finds the program
        argv_arg = call.arg(2) if call.name == "execveat" else call.arg(1)
        argv = [unquote(part) or part for part in split_args(argv_arg.strip()[1:-1])]
        shown = [self.reach.show(arg) if arg.startswith("/") else arg for arg in argv[:8]]
        line = " ".join(shown)
        line = line if len(line) <= 100 else line[:97] + "..."
        program = os.path.basename(argv[0]) if argv else "?"
        return [(EventKind.PROCESS, f"started the program {program!r}: {line}", False)]


def _port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _past(action: str) -> str:
    """``send SIGHUP to ...`` -> ``sent SIGHUP to ...``."""
    verb, _, rest = action.partition(" ")
    past = {"send": "sent", "open": "opened", "connect": "connected"}.get(verb, verb + "ed")
    return f"{past} {rest}"
