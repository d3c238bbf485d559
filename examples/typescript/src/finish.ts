// Steps 13 and 14: the terminal row with its disposition in one transaction, then the counters.

import { type Call, type Parts, TERMINAL } from "./call.js";
import { newRow } from "./persist.js";
import type { Disposition, InvocationStatus, Success } from "./wire.js";

export async function complete(p: Parts, c: Call): Promise<Disposition | null> {
  if (!c.recorded) {
    const existing = p.store.byKey(c.key);
    if (existing !== undefined) {
      // A replay of a refused call.
      c.invocationId = existing.invocation_id;
      c.recorded = true;
      if (TERMINAL.has(existing.status)) return JSON.parse(existing.disposition as string) as Disposition;
    }
  }
  const disposition: Disposition =
    c.reason === null ? (c.success as Success) : p.outcome(c.reason, c.invocationId, c.detail);
  c.disposition = disposition;
  p.store.transaction(() => {
    if (!c.recorded) {
      // Refused before step 6: recorded here, so every proposal leaves a row.
      p.store.insert(newRow(p, c));
      p.store.emit(c.invocationId, p.event("requested"));
    }
    p.store.emit(c.invocationId, ...c.pending);
    p.store.update(c.invocationId, {
      status: disposition.status as InvocationStatus,
      reason_code: c.reason,
      disposition: JSON.stringify(disposition),
    });
    p.store.emit(c.invocationId, p.event("completed"));
  });
  c.pending = [];
  return null;
}

export async function publish(p: Parts, c: Call): Promise<null> {
  const [invocations, uncertain, unmarked] = p.spec.constants.metrics as [string, string, string];
  p.metrics[invocations] = (p.metrics[invocations] ?? 0) + 1;
  if (c.disposition?.status === "UNCERTAIN") p.metrics[uncertain] = (p.metrics[uncertain] ?? 0) + 1;
  const spec = c.tool?.spec;
  const owesWatermark =
    spec !== undefined &&
    (spec.side_effect ?? "READ_ONLY") !== "READ_ONLY" &&
    spec.idempotency !== "IDEMPOTENT";
  if (c.executed && owesWatermark && !c.marked) {
    p.metrics[unmarked] = (p.metrics[unmarked] ?? 0) + 1; // The production flag.
  }
  return null;
}
