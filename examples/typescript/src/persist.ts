// Steps 6 to 8: each its own committed transaction; step 7 and step 8 are compare-and-sets on the row.

import { type Call, type Parts, TERMINAL } from "./call.js";
import { canonical } from "./keys.js";
import type { StoredRow } from "./store.js";
import type { Disposition, InvocationStatus, ToolSpec } from "./wire.js";

export function newRow(p: Parts, c: Call) {
  const r = c.request;
  return {
    invocation_id: c.invocationId,
    tenant: r.tenant ?? "",
    run_id: r.run_id,
    step_number: r.step_number,
    call_id: c.call.call_id,
    tool_name: c.call.tool_name,
    tool_version: c.tool?.spec.version ?? null,
    idempotency_key: c.key,
    call_hash: c.hash,
    status: "RECORDED" as InvocationStatus,
    origin_trust: c.origin,
    argument_trust: c.argument,
    decision: c.verdict,
    created_at: p.now(),
    arguments: canonical(c.args),
  };
}

export async function record(p: Parts, c: Call): Promise<null> {
  const existing = p.store.byKey(c.key);
  if (existing !== undefined) {
    adopt(c, existing); // A replay: the recorded row answers it from here on.
    return null;
  }
  p.store.transaction(() => {
    p.store.insert(newRow(p, c));
    p.store.emit(c.invocationId, p.event("requested"));
  });
  c.recorded = true;
  return null;
}

/** Continue `c` as the call `row` records: its id, its recorded decision and a resumed call's answer. */
export function adopt(c: Call, row: StoredRow): void {
  c.existing = row;
  c.invocationId = row.invocation_id;
  c.recorded = true;
  c.verdict = row.decision;
  if (row.answer !== null) c.answer = row.answer;
}

/** Step 8's and recovery's one question, answered by the watermark alone: may a dead worker's call have left
 * its mark in a way a retry would repeat? */
export function escaped(row: StoredRow, spec: ToolSpec | undefined): boolean {
  return row.effect_sent_at !== null && spec?.idempotency === "NON_IDEMPOTENT";
}

export async function hold(p: Parts, c: Call): Promise<Disposition | null> {
  const suspended = (reason: "approval" | "control"): Disposition => ({
    status: "SUSPENDED",
    invocation_id: c.invocationId,
    reason,
  });
  // A row found recorded and never held (a replay, a recovered orphan) is held here too, as its decision says:
  // the hold is a compare-and-set from that state, so of two workers exactly one opens it.
  if (c.verdict === "approve") {
    const until = p.now() + (p.config.approval_timeout_s ?? 300);
    const changes = { status: "AWAITING_APPROVAL", hold_until: until };
    if (p.store.hold(c.invocationId, changes, p.event("approval_requested"))) return suspended("approval");
  } else if (c.verdict === "suspend") {
    if (p.store.hold(c.invocationId, { suspended_at: p.now() }, p.event("suspended"))) {
      return suspended("control");
    }
  }
  const row = p.store.get(c.invocationId) as StoredRow;
  if (row.status === "AWAITING_APPROVAL") return suspended("approval");
  if (row.suspended_at !== null) return suspended("control");
  return null; // Allowed, or held and answered: step 8 dedupes, waits for or recovers it.
}

export async function claim(p: Parts, c: Call): Promise<Disposition | null> {
  const row = p.store.get(c.invocationId) as StoredRow;
  if (TERMINAL.has(row.status)) return JSON.parse(row.disposition as string) as Disposition;
  const now = p.now();
  if (row.status === "RUNNING" && (row.lease_expires_at ?? 0) > now) {
    // Running under a live lease, this worker's own included (a second submission): not ours to run.
    return p.outcome("in_progress", c.invocationId);
  }
  if (row.status === "RUNNING" && escaped(row, c.tool?.spec)) {
    c.marked = true; // A dead worker's call that may have left its mark: never retried, whoever finds it.
    c.reason = "effect_unknown";
    return null;
  }
  const attempt = row.attempt + 1;
  const changes = {
    status: "RUNNING",
    attempt,
    lease_owner: p.worker,
    lease_expires_at: now + (p.config.lease_s ?? 30),
    suspended_at: null,
    hold_until: null,
    answer: c.answer,
  };
  if (!p.store.claim(row, changes, c.pending, p.event("started"))) {
    return p.outcome("in_progress", c.invocationId); // Another worker claimed it between read and write.
  }
  c.pending = [];
  c.attempt = attempt;
  return null;
}
