"""What the driver protocol's document says in words: each operation's description, and each field's.

The wire shapes come from the pydantic models (``_driver.py``); what a driver in another language must *do* with
them is said here, once, and rendered into the document: ``OPERATION_DESCRIPTIONS`` (one per operation id, none
empty) and the models' attribute docstrings as their properties' descriptions (``field_descriptions``). The
reference driver and the harness's tool host are the behaviour these texts state.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, Final

OPERATION_DESCRIPTIONS: Final[dict[str, str]] = {
    "info": (
        "Answers the protocol name (`toolproof-driver/2`), the name reports show (the harness adds `@HOST:PORT`; an "
        "expectations file names the driver without it) and the profiles it claims (`core` first). The harness "
        "probes it before a run and, after a SIGKILL crash plan, until the supervised driver answers again."
    ),
    "openapi": "This document, as the driver serves it (the `driver` side's operations at least).",
    "openInstance": (
        "Opens an instance over `config.store_dir` (a local path on the shared filesystem: keep the store and "
        "artifacts there) with the builtin tools' specs; each builtin executes in the harness through "
        "`tool_host` (`POST {tool_host}/v1/tools/execute`). `config.targets` maps a registered tool's name (e.g. "
        "`tickets.create`) to the target handed to that tool as its context's `target`. Two instances over one "
        "store are two workers of one pipeline: what one committed, the other reads. A configuration the driver "
        "does not accept (a reserved builtin name, a tenant stdio server, a `store_url` it cannot use) is 422 "
        "`configuration-error` naming the field; `config.crash` with mode `sigkill` from an unsupervised driver is "
        "422 `not-supported`."
    ),
    "closeInstance": (
        "Closes the instance (its store stays). Sent also for an instance that died at its crash point; answer "
        "204, or 404 when it is unknown."
    ),
    "placeScript": (
        "Places a bridge script's module (Python source) where the implementation imports scripts from. Only a "
        "driver that runs Python offers it; any other answers 404, and D17.2's edited-script cell reads "
        "not-covered."
    ),
    "submit": (
        "Runs one model step: every proposed call through the fourteen steps, answering one disposition per call "
        "in proposal order: `Success` (each content part in an envelope whose `source` is the tool's registered "
        "name, its `trust` the part's label or the spec's `output_trust`, whichever is lower; over "
        "`max_output_bytes` a head, one marker envelope whose `source` is `x-toolproof.excerpt_marker_source` and "
        "a tail, the marker's label being the implementation's own: no rule judges it), `Outcome` (the six "
        "fields, from `x-toolproof.outcomes`) or `Suspended`. With `config.crash` the instance dies at the named "
        "boundary point: mode `raise` answers 409 `simulated-crash` and the instance is dead (it takes no more "
        "work: any later request but DELETE may answer 404 or 409); mode `sigkill` kills the driver process. A "
        "crash point inside step 10 (`before_watermark`, `after_watermark`, `after_effect`) is never in "
        "`config.crash`, which is null then: the harness's tool dies there, and the driver must die with it (the "
        "tool host answers `crash`, or vanishes mid-execute under SIGKILL: see `ToolOutcome.crash`). `?probe=memory` "
        "also answers `memory_peak_bytes`."
    ),
    "resolveApproval": (
        "Answers the approval hold of `invocation_id`: approved, the call runs on from step 8 and its disposition "
        "is answered; denied, it ends DENIED (`approval_denied`). A hold past its bound (`approval_timeout_s` on "
        "the `Toolproof-Now` clock) is expired, not approved."
    ),
    "resume": (
        "Resumes the suspended control call `invocation_id` with `answer`, which reaches the tool as the "
        "argument `x-toolproof.control_answer_argument`; answers the call's disposition."
    ),
    "sweep": (
        "Maintenance now, by the `Toolproof-Now` clock: approval holds past their bound end DENIED "
        "(`approval_expired`), and orphans (RUNNING rows past their lease, recorded rows never claimed within "
        "one) are recovered from the store alone, by the watermark: unset, retried under the same key; set, "
        "NON_IDEMPOTENT, UNCERTAIN (`effect_unknown`). Suspended control calls are never swept. Answers one "
        "disposition per call the sweep decided (any order; the harness matches them by `invocation_id`), and "
        "an empty list when there was nothing to do."
    ),
    "runScript": (
        "Runs a bridge script (decision 17; Python only: a driver that does not claim `bridge` is never sent it)."
    ),
    "invocations": (
        "The run's committed rows, in creation order, read from the store. `run_id` is one path segment, "
        "percent-encoded (`run-call_id|tool` arrives as `run-call_id%7Ctool`): decode it before the lookup."
    ),
    "events": "The run's committed events, in `seq` order, read from the store; `run_id` as for the rows.",
    "advertise": (
        "Starts the run's MCP session if it has not started (pinning its catalog) and answers the pinned "
        "advertisement; `run_id` as for the rows."
    ),
    "metrics": "The counters (`x-toolproof.metrics` names them), read from the store.",
    "tables": "The store's table names (decision 18: no snapshot table of the registry).",
    "catalogHistory": "The MCP catalog history: every change seen, recorded and not applied mid-session.",
    "markEffectSent": (
        "The running tool's `mark_effect_sent`: commit `effect_sent_at` (on the `Toolproof-Now` clock) on the "
        "call's row, and answer 204 only once it is committed; the tool acts only after this answer."
    ),
    "writeArtifact": (
        "The running tool's artifact writer: store the bytes (base64 in the request) under the call, and answer "
        "the reference (`uri` a `file:` URI on the shared filesystem, its sha256 and size)."
    ),
    "resolveCredential": (
        "The running tool's credential resolver: the configured credential of `scope` when the tool's spec "
        "requires that scope, else null."
    ),
    "executeTool": (
        "Served by the harness. The driver's step 10 executes a builtin: its arguments and a description of the "
        "context the implementation built for it (`ToolContext`). Answers what the tool returned (`result`, "
        "judged at step 11 as a `ToolResult`), raised (`raised`), or that it died (`crash`: the driver dies the "
        "same way), or `cancelled` after the driver stopped waiting. A description the tool host cannot read "
        "(`identity` or `budget` not of kind `data` with the record's value) is 422 `invalid-request` naming the "
        "member in `field`, and the harness reports the driver's error."
    ),
    "cancelTool": (
        "Served by the harness. The driver's news about a running tool: its cancellation signal was set "
        "(`signal_set`: the tool's `cancellation.is_set()` answers true from now on and its `wait()` returns), "
        "and/or the driver stopped waiting for it (`stopped`: the tool's work is cancelled). Answered 204."
    ),
}
"""Each operation id of ``OPERATIONS`` → what the serving side does, in the protocol's own terms."""


def _attribute_docstrings(klass: ast.ClassDef) -> dict[str, str]:
    """The docstrings right below the annotated attributes of a class statement, each on one line."""
    found: dict[str, str] = {}
    body = klass.body
    for statement, following in zip(body, [*body[1:], None], strict=True):
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            continue
        if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant):
            text = following.value.value
            if isinstance(text, str):
                found[statement.target.id] = " ".join(text.split())
    return found


def field_descriptions() -> dict[str, dict[str, str]]:
    """Class name → its fields' docstrings, for every class ``spec`` defines (read from its modules' source)."""
    found: dict[str, dict[str, str]] = {}
    for path in sorted(Path(__file__).parent.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, _attribute_docstrings(node))
    return found


def describe_properties(schemas: dict[str, Any]) -> None:
    """Give each schema's properties the description their field's docstring says (one set already stays)."""
    described = field_descriptions()
    for name, schema in schemas.items():
        for field, text in described.get(name, {}).items():
            prop = schema.get("properties", {}).get(field) if isinstance(schema, dict) else None
            if prop is not None and "description" not in prop:
                prop["description"] = text
