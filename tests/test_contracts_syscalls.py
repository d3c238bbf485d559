"""Reading the tracer's log and judging each call, on logs written by hand (no confinement needed)."""

from __future__ import annotations

import pytest

from toolproof.contracts._observe import Observer, Scene
from toolproof.contracts._syscalls import decoration, endpoints, parse_log, sockaddr, split_args, unquote
from toolproof.contracts._trace import EventKind
from toolproof.contracts._transport import Arrival, ArrivalKind

WS = "/tmp/toolproof-contract-x/example-1/workspace"
TARGET = "192.0.2.10:8080"


def test_an_interrupted_call_keeps_its_place_and_gets_its_result_when_it_resumes() -> None:
    calls = parse_log(
        "101 connect(5<TCP:[77]>, {sa_family=AF_INET, sin_port=htons(443), "
        'sin_addr=inet_addr("10.1.2.3")}, 16 <unfinished ...>\n'
        '102 write(3</tmp/a b.txt>, "x", 1) = 1\n'
        "101 <... connect resumed>) = -1 ENETUNREACH (Network is unreachable)\n"
        "101 +++ exited with 0 +++\n"
    )
    assert [(c.pid, c.name) for c in calls] == [(101, "connect"), (102, "write")]
    assert calls[0].error == "ENETUNREACH"
    assert sockaddr(calls[0].arg(1)) == ("AF_INET", "10.1.2.3:443")
    assert decoration(calls[1].arg(0)) == "/tmp/a b.txt"


def test_arguments_split_at_top_level_commas_only() -> None:
    text = '7<TCP:[192.0.2.10:4000->192.0.2.10:8080]>, "a, \\"b\\"", {x=1, y=[2, 3]}, 0</dev/null<char 1:3>>'
    parts = split_args(text)
    assert len(parts) == 4
    assert endpoints(decoration(parts[0]) or "") == ("TCP", "192.0.2.10:4000", "192.0.2.10:8080")
    assert unquote(parts[1]) == 'a, "b"'
    assert decoration(parts[3]) == "/dev/null"


def _scene(messages: dict[int, dict[str, object]], arrivals: list[Arrival] | None = None) -> Scene:
    return Scene(
        workspace=WS,
        cwd="/work",
        target=TARGET,
        channel="pipe:[9]",
        messages=messages,
        arrivals=arrivals or [],
        show=lambda path: path.replace(WS + "/", "").replace(WS, "."),
    )


def _event(number: int) -> str:
    """The example's numbered line on its channel, as the tracer logs the write."""
    return f'100 write(4<pipe:[9]>, "{number} {{\\"type\\": \\"event\\"...", 80) = 80\n'


def test_a_native_write_before_the_watermark_comes_first_on_the_trace() -> None:
    messages = {
        1: {"type": "event", "kind": "attempt", "text": "attempt 1", "attempt": 1},
        2: {"type": "event", "kind": "mark", "text": "mark_effect_sent()", "attempt": 1},
    }
    log = (
        _event(1)
        + f'100 openat(AT_FDCWD</work>, "{WS}/native.log", O_WRONLY|O_CREAT|O_APPEND, 0666) = 3<{WS}/native.log>\n'
        + f'100 write(3<{WS}/native.log>, "native\\n", 7) = 7\n'
        + _event(2)
    )
    trace = Observer(_scene(messages)).build(parse_log(log))
    assert trace.lines() == [
        "attempt 1",
        "  1. created 'native.log' in the workspace",
        "  2. wrote 'native.log' in the workspace",
        "  3. mark_effect_sent()",
    ]
    assert [e.effect for e in trace.events()][1:] == [True, True, False]


def test_a_relative_path_follows_the_working_directory_a_started_program_changed_to() -> None:
    log = (
        "100 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 200\n"
        f'200 chdir("{WS}") = 0\n'
        '200 execve("/usr/bin/git", ["git", "init"], 0x7ffd /* 3 vars */) = 0\n'
        '200 mkdir(".git", 0755) = 0\n'
        '100 mkdir("elsewhere", 0755) = 0\n'
    )
    trace = Observer(_scene({})).build(parse_log(log))
    assert [(e.kind, e.text) for e in trace.events()] == [
        (EventKind.PROCESS, "started the program 'git': git init"),
        (EventKind.WORKSPACE, "made the directory '.git' in the workspace"),
        (EventKind.OUTSIDE, "made the directory '/work/elsewhere' outside the workspace"),
    ]


def test_bytes_to_the_target_are_what_the_service_received_and_anything_else_is_outside() -> None:
    datagram = Arrival(
        0, ArrivalKind.UDP, ("192.0.2.10", 40000), "a 5-byte UDP datagram at the target: 'hello'", True, ("UDP", "#0")
    )
    log = (
        '100 sendto(5<UDP:[77]>, "hello", 5, 0, {sa_family=AF_INET, sin_port=htons(8080), '
        'sin_addr=inet_addr("192.0.2.10")}, 16) = 5\n'
        '100 sendto(6<UDP:[78]>, "x:1|c", 5, 0, {sa_family=AF_INET, sin_port=htons(8125), '
        'sin_addr=inet_addr("10.0.0.7")}, 16) = 5\n'
        '100 connect(7<UNIX-STREAM:[79]>, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) '
        "= -1 ENOENT (No such file or directory)\n"
        '100 write(1</dev/pts/0<char 136:0>>, "log", 3) = 3\n'
    )
    trace = Observer(_scene({}, [datagram])).build(parse_log(log))
    assert [(e.kind, e.text, e.effect) for e in trace.events()] == [
        (EventKind.NETWORK, "a 5-byte UDP datagram at the target: 'hello'", True),
        (EventKind.OUTSIDE, "sent to 10.0.0.7:8125 (UDP), which is not context.target", True),
    ]


def _judged(log: str, **scene: object) -> list[tuple[EventKind, str]]:
    base = _scene({})
    for name, value in scene.items():
        setattr(base, name, value)
    return [(e.kind, e.text) for e in Observer(base).build(parse_log(log)).events()]


_OWN = (
    "100 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 2\n"  # the namespace's first process forks
    "101 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 3\n"  # the example starts a program
    "101 clone3({flags=CLONE_VM|CLONE_THREAD, ...}, 88) = 4\n"  # and a thread
)
"""The example (pid 2 in its namespace, 101 outside it) and what it started: process 3, thread 4."""


@pytest.mark.parametrize(
    "call",
    [
        "101 kill(3, SIGTERM) = 0",
        "101 kill(0, SIGHUP) = 0",
        "101 kill(-3, SIGINT) = 0",
        "101 kill(999, 0) = -1 ESRCH (No such process)",
        "101 tgkill(2, 4, SIGUSR1) = 0",
        "101 tkill(4, SIGUSR2) = 0",
        "101 rt_sigqueueinfo(3, SIGUSR1, {si_signo=SIGUSR1, si_code=SI_QUEUE}) = 0",
        "101 rt_tgsigqueueinfo(2, 4, SIGUSR1, {si_signo=SIGUSR1, si_code=SI_QUEUE}) = 0",
        "101 pidfd_open(3, 0) = 9<pid:102>",
        "101 pidfd_send_signal(9<pid:102>, SIGKILL, NULL, 0) = 0",
    ],
    ids=[
        "kill-child",
        "kill-own-group",
        "killpg-child-group",
        "probe",
        "tgkill",
        "tkill",
        "sigqueue",
        "tgsigqueue",
        "pidfd-open-child",
        "pidfd-signal-child",
    ],
)
def test_a_signal_to_the_tools_own_process_or_thread_is_no_effect(call: str) -> None:
    assert _judged(
        _OWN + '102 execve("/bin/sleep", ["sleep", "1"], 0x1 /* 0 vars */) = 0\n' + call + "\n", init_pid=100
    ) == [(EventKind.PROCESS, "started the program 'sleep': sleep 1")]


@pytest.mark.parametrize(
    ("call", "seen"),
    [
        (
            "101 kill(4242, SIGHUP) = -1 ESRCH (No such process)",
            "tried to send SIGHUP to process 4242, which the tool did not start: ESRCH, since the check's PID "
            "namespace holds only the tool's own processes",
        ),
        ("101 kill(1, SIGTERM) = 0", "sent SIGTERM to process 1, which the tool did not start"),
        (
            "101 kill(-4242, SIGUSR1) = -1 ESRCH (No such process)",
            "tried to send SIGUSR1 to the process group 4242, which the tool did not start: ESRCH, since the "
            "check's PID namespace holds only the tool's own processes",
        ),
        ("101 kill(-1, SIGKILL) = 0", "sent SIGKILL to every process it may signal, which the tool did not start"),
        (
            "101 tgkill(4242, 4243, SIGUSR2) = -1 ESRCH (No such process)",
            "tried to send SIGUSR2 to process 4242, which the tool did not start: ESRCH, since the check's PID "
            "namespace holds only the tool's own processes",
        ),
        (
            "101 tkill(4243, SIGSTOP) = -1 ESRCH (No such process)",
            "tried to send SIGSTOP to process 4243, which the tool did not start: ESRCH, since the check's PID "
            "namespace holds only the tool's own processes",
        ),
        (
            "101 rt_sigqueueinfo(4242, SIGUSR1, {si_signo=SIGUSR1, si_code=SI_QUEUE}) = -1 ESRCH (No such process)",
            "tried to send SIGUSR1 to process 4242, which the tool did not start: ESRCH, since the check's PID "
            "namespace holds only the tool's own processes",
        ),
        (
            "101 pidfd_open(4242, 0) = -1 ESRCH (No such process)",
            "tried to open a pidfd of process 4242, which the tool did not start: ESRCH, since the check's PID "
            "namespace holds only the tool's own processes",
        ),
        (
            "101 pidfd_send_signal(9<pid:100>, SIGHUP, NULL, 0) = 0",
            "sent SIGHUP to process 100 through a pidfd, which the tool did not start",
        ),
        (
            "101 pidfd_send_signal(9</dev/null<char 1:3>>, SIGHUP, NULL, 0) = -1 EBADF (Bad file descriptor)",
            "tried to send SIGHUP to a process through a pidfd, which the tool did not start: EBADF, since the "
            "check's PID namespace holds only the tool's own processes",
        ),
    ],
    ids=[
        "kill",
        "kill-first-process",
        "killpg",
        "kill-all",
        "tgkill",
        "tkill",
        "sigqueue",
        "pidfd-open",
        "pidfd-first-process",
        "pidfd-inherited",
    ],
)
def test_a_signal_to_a_process_the_tool_did_not_start_is_outside(call: str, seen: str) -> None:
    assert _judged(_OWN + call + "\n", init_pid=100) == [(EventKind.OUTSIDE, seen)]


@pytest.mark.parametrize(
    ("log", "seen"),
    [
        (
            '101 sendto(5<UNIX:[71]>, "<14>x", 5, 0, {sa_family=AF_UNIX, sun_path="/run/log.sock"}, 16) '
            "= -1 ECONNREFUSED (Connection refused)",
            "tried to send a datagram to the Unix socket '/run/log.sock': ECONNREFUSED, since the check's overlay "
            "keeps the real socket away",
        ),
        (
            '101 sendmsg(5<UNIX:[71]>, {msg_name={sa_family=AF_UNIX, sun_path=@"bus"}, msg_namelen=6, '
            'msg_iov=[{iov_base="x", iov_len=1}], msg_iovlen=1, msg_controllen=0, msg_flags=0}, 0) '
            "= -1 ECONNREFUSED (Connection refused)",
            "tried to send a datagram to the abstract Unix socket '@bus': ECONNREFUSED, since the check's network "
            "namespace has no such name",
        ),
        (
            '101 sendmmsg(5<UNIX:[71]>, [{msg_hdr={msg_name={sa_family=AF_UNIX, sun_path=@"bus"}, msg_namelen=6, '
            'msg_iov=[{iov_base="x", iov_len=1}], msg_iovlen=1, msg_controllen=0, msg_flags=0}}], 1, 0) '
            "= -1 ECONNREFUSED (Connection refused)",
            "tried to send a datagram to the abstract Unix socket '@bus': ECONNREFUSED, since the check's network "
            "namespace has no such name",
        ),
        (
            '101 connect(5<UNIX-STREAM:[71]>, {sa_family=AF_UNIX, sun_path=@"/tmp/.X11-unix/X0"}, 20) '
            "= -1 ECONNREFUSED (Connection refused)",
            "tried to connect to the abstract Unix socket '@/tmp/.X11-unix/X0': ECONNREFUSED, since the check's "
            "network namespace has no such name",
        ),
        (
            "101 socket(AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC, NETLINK_AUDIT) = 6<NETLINK:[72]>\n"
            "101 sendto(6<NETLINK:[72]>, {nlmsg_len=16, nlmsg_type=AUDIT_GET}, 16, 0, {sa_family=AF_NETLINK, "
            "nl_pid=0, nl_groups=00000000}, 12) = 16",
            "sent a message to the kernel over NETLINK_AUDIT, which the check's network namespace does not confine",
        ),
        (
            '101 sendto(6<NETLINK:[KOBJECT_UEVENT:9]>, "x", 1, 0, NULL, 0) = 1',
            "sent a message to the kernel over NETLINK_KOBJECT_UEVENT, which the check's network namespace does "
            "not confine",
        ),
        (
            '101 sendto(7<RAW:[73]>, "\\10\\0", 8, 0, {sa_family=AF_INET, sin_port=htons(0), '
            'sin_addr=inet_addr("198.51.100.7")}, 16) = -1 ENETUNREACH (Network is unreachable)',
            "tried to send a RAW packet to 198.51.100.7, which is not context.target: ENETUNREACH, since nothing "
            "else is reachable in the check",
        ),
        (
            "101 connect(9<socket:[75]>, {sa_family=AF_VSOCK, svm_cid=VMADDR_CID_HOST, svm_port=0x4d2, "
            "svm_flags=0}, 16) = -1 ECONNRESET (Connection reset by peer)",
            "tried to reach over AF_VSOCK, a socket family the check's namespaces do not confine (ECONNRESET)",
        ),
        (
            "101 socket(AF_PACKET, SOCK_RAW|SOCK_CLOEXEC, htons(0 /* ETH_P_??? */)) = 8<socket:[74]>\n"
            '101 sendto(8<socket:[74]>, "\\0\\0", 20, 0, {sa_family=AF_PACKET, sll_protocol=htons(0), '
            'sll_ifindex=if_nametoindex("lo")}, 20) = 20',
            "reached over AF_PACKET, a socket family the check's namespaces do not confine",
        ),
        (
            '101 write(12<pipe:[88]>, "job\\n", 4) = 4',
            "wrote to a pipe opened before the check: the check had cut it",
        ),
    ],
    ids=[
        "unix-path-sendto",
        "unix-abstract-sendmsg",
        "unix-abstract-sendmmsg",
        "unix-abstract-connect",
        "netlink-audit",
        "netlink-bound",
        "raw-icmp",
        "vsock",
        "packet",
        "cut-pipe",
    ],
)
def test_every_socket_family_and_send_path_outside_the_target_is_outside(log: str, seen: str) -> None:
    assert _judged(log + "\n", cut={"88": "a pipe"}) == [(EventKind.OUTSIDE, seen)]


@pytest.mark.parametrize(
    "log",
    [
        "101 socket(AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC, NETLINK_ROUTE) = 6<NETLINK:[72]>\n"
        "101 sendto(6<NETLINK:[ROUTE:2]>, {nlmsg_len=20, nlmsg_type=RTM_GETLINK}, 20, 0, {sa_family=AF_NETLINK, "
        "nl_pid=0, nl_groups=00000000}, 12) = 20",
        '101 sendto(6<NETLINK:[SOCK_DIAG:2]>, "x", 1, 0, NULL, 0) = 1',
        '101 connect(5<UNIX-STREAM:[71]>, {sa_family=AF_UNIX, sun_path=@"own"}, 6) = 0',
        f'101 connect(5<UNIX-STREAM:[71]>, {{sa_family=AF_UNIX, sun_path="{WS}/own.sock"}}, 20) = 0',
        '101 connect(5<UNIX-STREAM:[71]>, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 20) '
        "= -1 ENOENT (No such file or directory)",
        '101 sendto(9<UNIX-STREAM:[75503->75504]>, "q", 1, 0, NULL, 0) = 1',
        '101 write(12<pipe:[89]>, "x", 1) = 1',
        '101 write(3</memfd:toolproof-inherited (deleted)>, "x", 1) = 1',
        '101 connect(9<socket:[75]>, {sa_family=AF_ALG, salg_type="hash", salg_name="sha256"}, 88) = 0',
    ],
    ids=[
        "netlink-route",
        "netlink-sock-diag",
        "own-abstract",
        "own-socket-in-workspace",
        "missing-socket",
        "socketpair",
        "own-pipe",
        "memory",
        "kernel-crypto",
    ],
)
def test_the_check_s_own_namespace_and_the_tool_s_own_sockets_are_no_contact_outside(log: str) -> None:
    assert _judged(log + "\n", cut={"88": "a pipe"}) == []


def test_the_harness_s_own_calls_before_the_example_s_first_line_are_not_judged() -> None:
    messages: dict[int, dict[str, object]] = {
        1: {"type": "hello"},
        2: {"type": "event", "kind": "attempt", "text": "attempt 1", "attempt": 1},
    }
    log = (
        "101 mmap(0x7f00, 32768, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_FIXED, 7</srv/app.db-shm>, 0) = 0x7f00\n"
        + _event(1)
        + _event(2)
        + "101 mmap(NULL, 32768, PROT_READ|PROT_WRITE, MAP_SHARED, 7</srv/app.db-shm>, 0) = 0x7f80\n"
    )
    scene = _scene(messages)
    scene.harness_first = True
    trace = Observer(scene).build(parse_log(log))
    assert trace.lines() == ["attempt 1", "  1. mapped for shared writing '/srv/app.db-shm' outside the workspace"]
