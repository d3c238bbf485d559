"""Reading the tracer's log and judging each call, on logs written by hand (no confinement needed)."""

from __future__ import annotations

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
