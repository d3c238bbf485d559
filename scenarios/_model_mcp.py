"""The model judge's MCP draws: servers served from the fakes (``toolproof.fakes.mcp.ModelledServer``), their catalogs
and the changes to them, and the names a step proposes for their tools (the model's page ``mcp``).

A server's remote names are drawn from a pool where some normalize alike (D5.7: both dropped) and some only after
decision 5's normalization (so the registered name differs from the remote one: a proposed name that is the remote
one, or a look-alike of the registered one, is unknown, D5.3). Its classification is the operator's, any
combination or none (D6.1, D6.2), whatever its tools annotate; its output cap sits on either side of each result's
size in UTF-8 bytes, and each result on either side of the instance's excerpt limit (D8.8, D8.10, D12.1). A change
withdraws a tool, changes one's definition (its description, so its hash: D9.4), or adds one, mid-session.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import strategies as st

from toolproof.spec import (
    ContextItem,
    IdempotencyClass,
    McpClassification,
    ProposedCall,
    Risk,
    SideEffect,
    TrustLabel,
    mcp_tool_name,
)
from toolproof.spec.model import (
    Answer,
    ChangeCatalog,
    McpRemoteTool,
    McpServer,
    Model,
    Reopen,
    Submit,
    Workload,
)

from ._model_text import text_of

REMOTE_NAMES = ("lookup", "Fetch-Page", "2fa code", "Report", "report", "write_file", "Ｓｕｍ", "Read-Resource")
"""Remote names: plain, changed by normalization (case, punctuation, a leading digit, fullwidth letters), a pair
(``Report``, ``report``) that normalizes alike, and one that normalizes to the synthetic read tool's name (D8.1: it
never takes it; with no resource listed, D8.9, it is a tool like any other)."""
SERVER_IDS = ("docs", "ops")
SCOPES = ("scope.read", "scope.write")


@st.composite
def classifications(draw: st.DrawFn) -> McpClassification | None:
    """None a time in three (unclassified: the most restrictive, D6.2), else any operator classification (D6.1)."""
    if draw(st.integers(0, 2)) == 0:
        return None
    return McpClassification(
        side_effect=draw(st.sampled_from(list(SideEffect))),
        risk=draw(st.sampled_from(list(Risk))),
        idempotency=draw(st.sampled_from(list(IdempotencyClass))),
        required_scopes=frozenset(draw(st.lists(st.sampled_from(SCOPES), max_size=1))),
    )


@st.composite
def remote_tools(draw: st.DrawFn, name: str, limit: int, cap: int) -> McpRemoteTool:
    """A remote tool whose result is small, or around the instance's excerpt limit, or around the server's cap."""
    size = draw(st.sampled_from([2, limit - 1, limit + 1, limit * 2, cap - 1, cap, cap + 1]))
    count = draw(st.integers(1, 2))
    seed = draw(st.integers(0, 40))
    sizes = [max(1, size // count)] * count
    sizes[-1] = max(1, size - sum(sizes[:-1]))
    return McpRemoteTool(
        remote_name=name,
        description=draw(st.sampled_from(["Reads a record.", "Writes a record."])),
        read_only_hint=draw(st.sampled_from([None, True, False])),
        parts=tuple(text_of(n, seed + i) for i, n in enumerate(sizes)),
        is_error=draw(st.integers(0, 5)) == 0,
    )


@st.composite
def servers(draw: st.DrawFn, limit: int) -> tuple[McpServer, ...]:
    """One server, or two, each of one to three tools."""
    out = []
    for server_id in SERVER_IDS[: draw(st.integers(1, 2))]:
        cap = draw(st.sampled_from([limit * 2, limit * 4]))
        names = draw(st.lists(st.sampled_from(REMOTE_NAMES), min_size=1, max_size=3, unique=True))
        tools = tuple(draw(remote_tools(name, limit, cap)) for name in names)
        # Half the servers list a resource, read as small text or text around the limit or the cap (decision 8).
        size = draw(st.sampled_from([None, None, None, 3, limit + 1, cap, cap + 1]))
        resource = None if size is None else text_of(size, draw(st.integers(0, 40)))
        out.append(McpServer(server_id, tools, draw(classifications()), max_output_bytes=cap, resource=resource))
    return tuple(out)


def proposed_names(model: Model) -> list[str]:
    """Names a step may propose for the servers' tools: every registered name now or before, and a remote name as
    the server spells it where normalization changed it (unknown: a name resolves by exact equality, D5.3)."""
    names: list[str] = []
    for server_id, tools in model.current_tools.items():
        for remote in tools:
            names.append(mcp_tool_name(server_id, remote.remote_name))
            names.append(f"mcp.{server_id}.{remote.remote_name}")
        names.append(f"mcp.{server_id}.read_resource")  # Unknown where the server lists no resource (D8.9).
    names += [name for listed in model.listed.values() for name in listed]
    return sorted(set(names))


URIS = ("res://record", "res://other")


@st.composite
def read_arguments(draw: st.DrawFn) -> dict[str, Any]:
    """A synthetic read tool's arguments: a uri, now and then of another type or missing (D8.1: invalid_arguments)."""
    return draw(st.sampled_from([{"uri": URIS[0]}] * 3 + [{"uri": URIS[1]}] * 2 + [{"uri": 7}, {}]))


@st.composite
def changes(draw: st.DrawFn, model: Model, limit: int) -> ChangeCatalog:
    """A silent change of one server's catalog: a tool withdrawn, a tool's definition changed, or a tool added."""
    server = draw(st.sampled_from(sorted(model.servers.values(), key=lambda s: s.server_id)))
    listed = tuple(model.current_tools[server.server_id])
    kind = draw(st.sampled_from(["withdraw", "change", "add"]))
    if kind == "withdraw" and listed:
        gone = draw(st.sampled_from(listed))
        return ChangeCatalog(server.server_id, tuple(t for t in listed if t is not gone))
    if kind == "change" and listed:
        changed = draw(st.sampled_from(listed))
        # The description or the title alone: each is part of the definition its hash covers (decision 9).
        retitled = draw(st.booleans())
        edited = replace(
            changed,
            description=changed.description if retitled else changed.description + " Changed.",
            title=f"{changed.title or changed.remote_name} (edited)" if retitled else changed.title,
        )
        return ChangeCatalog(server.server_id, tuple(edited if t is changed else t for t in listed))
    free = [n for n in REMOTE_NAMES if n not in {t.remote_name for t in listed}]
    if not free:
        return ChangeCatalog(server.server_id, listed[1:])
    added = draw(remote_tools(draw(st.sampled_from(free)), limit, server.max_output_bytes))
    return ChangeCatalog(server.server_id, (*listed, added))


TOUR_LIMIT = 100
"""The tour's excerpt limit (the instance's max_output_bytes)."""
TOUR_CAP = 400
"""The tour's classified server's output cap: above the limit, so a result between them is excerpted, not refused."""


def _call(call_id: str, name: str, text: str = "hello") -> ProposedCall:
    return ProposedCall(call_id=call_id, tool_name=name, arguments={"text": text}, provenance={"text": ["u"]})


def _read(call_id: str, name: str) -> ProposedCall:
    return ProposedCall(call_id=call_id, tool_name=name, arguments={"uri": URIS[0]}, provenance={"uri": ["u"]})


def mcp_tour() -> Workload:
    """The mcp cell's fixed workload, whatever its budget: a WORKSPACE_WRITE server (marked before sending, D4.2) whose
    result between the limit and the cap is excerpted (D12.1), whose results at and one byte over the cap in
    four-byte text are delivered and refused (D8.8, D8.10), an isError result under the cap and one over it, a lying
    readOnlyHint (D6.1), two names
    that normalize alike (D5.7), a remote name as the server spells it and a look-alike of a pinned one (D5.3); an
    unclassified server's call held and approved (D6.2); then, mid-session, a tool withdrawn (D9.3), one changed
    (D9.4) and one added (D9.1: not in the session's pin), each proposed in the old sessions (one whose first step
    named no MCP tool: a session starts at its run's first step) and a new one, again after a restart (the pins are
    the store's)."""
    classified = McpClassification(
        side_effect=SideEffect.WORKSPACE_WRITE, risk=Risk.LOW, idempotency=IdempotencyClass.NON_IDEMPOTENT
    )
    lookup = McpRemoteTool("lookup", "Reads a record.", True, parts=("found",))
    label = McpRemoteTool("label", title="Label", parts=("a label",))
    oops = McpRemoteTool("oops", parts=("remote said: no such record",), is_error=True)
    docs = McpServer(
        "docs",
        (
            McpRemoteTool("Fetch-Page", parts=(text_of(150, 1), text_of(100, 2))),
            McpRemoteTool("edge", parts=("𝄞" * (TOUR_CAP // 4),)),
            McpRemoteTool("big", parts=("𝄞" * (TOUR_CAP // 4), "a")),
            McpRemoteTool("refused", parts=("𝄞" * (TOUR_CAP // 4), "a"), is_error=True),
            oops,
            lookup,
            label,
            McpRemoteTool("Report"),
            McpRemoteTool("report"),
        ),
        classified,
        max_output_bytes=TOUR_CAP,
        resource="𝄞" * (TOUR_CAP // 4) + "a",
    )
    reads = McpServer(
        "files",
        (McpRemoteTool("Read_Resource", parts=("not the synthetic tool",)),),
        McpClassification(side_effect=SideEffect.READ_ONLY, risk=Risk.LOW, idempotency=IdempotencyClass.IDEMPOTENT),
        resource=text_of(250, 3),
    )
    ops = McpServer("ops", (McpRemoteTool("transfer", "Moves funds.", False, parts=("moved",)),))
    user = (ContextItem(id="u", trust=TrustLabel.USER, text="item u"),)
    first = Submit(
        "m",
        1,
        (
            _call("c0", "mcp.docs.fetch_page"),
            _call("c1", "mcp.docs.edge"),
            _call("c2", "mcp.docs.big"),
            _call("c3", "mcp.docs.oops"),
            _call("c8", "mcp.docs.refused"),
            _call("c4", "mcp.docs.Fetch-Page"),
            _call("c5", "mcp.docs.report"),
            _call("c6", "MCP.DOCS.LOOKUP"),
            _call("c7", "mcp.ops.transfer"),
            _read("c9", "mcp.docs.read_resource"),
        ),
        user,
    )
    # A tool whose annotation says read-only, on a WORKSPACE_WRITE server, proposed with an untrusted argument: held
    # (D6.1: the configuration classifies it, consequential), then approved.
    untrusted = (*user, ContextItem(id="x", trust=TrustLabel.EXTERNAL_UNTRUSTED, text="item x"))
    system = (ContextItem(id="s", trust=TrustLabel.SYSTEM, text="item s"),)
    annotated = ProposedCall(
        call_id="c0", tool_name="mcp.docs.lookup", arguments={"text": "x"}, provenance={"text": ["x"]}
    )
    # ... and the synthetic read tool of that server likewise: it takes the server's classification (D6.1).
    read = ProposedCall(
        call_id="c1", tool_name="mcp.docs.read_resource", arguments={"uri": URIS[0]}, provenance={"uri": ["x"]}
    )
    held = Submit("e", 1, (annotated, read), untrusted)
    # Five identical reads in one (parallel) batch: the fifth is a loop (D14.3), as for any tool (D8.1).
    looping = Submit("r", 1, tuple(_read(f"c{i}", "mcp.files.read_resource") for i in range(5)), user)
    changed = McpRemoteTool("lookup", "Reads a record. Changed.", True, parts=("found",))
    retitled = replace(label, title="Label (pre-approved)")
    fresh = McpRemoteTool("fresh", parts=("new",))
    later = (
        _call("c0", "mcp.docs.oops"),
        _call("c1", "mcp.docs.lookup"),
        _call("c2", "mcp.docs.fresh"),
        _call("c3", "mcp.docs.fetch_page", "again"),
        _call("c4", "mcp.docs.label"),
    )
    catalog = tuple(t for t in docs.tools if t not in (oops, lookup, label))
    return Workload(
        tools=(),
        actions=(
            held,
            Answer(("e", 1, "c0"), True),
            Answer(("e", 1, "c1"), True),
            # A request of the system alone: the unclassified server's scope is granted to nobody, so still held (D6.2).
            Submit("o", 1, (ProposedCall(call_id="c0", tool_name="mcp.ops.transfer", arguments={}),), system),
            Answer(("o", 1, "c0"), False),
            first,
            Submit("p", 1, (_call("c0", "nosuch.tool"),), user),
            looping,
            # A read whose uri is no string: refused at step 2, never sent (D8.1's interpretation).
            Submit(
                "r", 2, (_read("c0", "mcp.files.read_resource").model_copy(update={"arguments": {"uri": 7}}),), user
            ),
            Answer(("m", 1, "c7"), True),
            ChangeCatalog("docs", (*catalog, changed, retitled, fresh)),
            Submit("m", 2, later, user),
            Submit("n", 1, later, user),
            Submit("p", 2, (*later[:2], later[4]), user),
            Reopen(),
            Submit("m", 3, later[:3], user),
            Submit("n", 2, later[:3], user),
        ),
        max_output_bytes=TOUR_LIMIT,
        mcp_servers=(docs, ops, reads),
    )
