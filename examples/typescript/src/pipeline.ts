// The instance: fourteen steps, run by one loop over the spec's step list, for one call at a time; the answers
// to holds, the sweep that recovers what a dead worker left, and the reads.

import { Call, type Callbacks, ConfigurationError, Parts, type Registered } from "./call.js";
import { excerpt, execute, normalize, prepare } from "./execute.js";
import { complete, publish } from "./finish.js";
import { decide, guard, label, resolve, validate } from "./logic.js";
import { adopt, claim, hold, record } from "./persist.js";
import type { Schemas } from "./schemas.js";
import type { Spec } from "./spec.js";
import type { Store, StoredRow } from "./store.js";
import type {
  CrashPoint,
  Disposition,
  Event,
  InstanceConfig,
  InvocationRow,
  InvocationStatus,
  ProposedCall,
  StepRequest,
} from "./wire.js";

type StepFunction = (p: Parts, c: Call) => Promise<Disposition | null>;

const STEP_FUNCTIONS: Record<string, StepFunction> = {
  resolve,
  validate,
  label,
  guard,
  decide,
  record,
  hold,
  claim,
  prepare,
  execute,
  normalize,
  excerpt,
  complete,
  publish,
};

export class Pipeline {
  private readonly p: Parts;
  private readonly steps: ReadonlyMap<string, StepFunction>;

  constructor(
    spec: Spec,
    schemas: Schemas,
    config: InstanceConfig,
    tools: ReadonlyMap<string, Registered>,
    store: Store,
    now: () => number,
    toolHost: string,
    callbacks: Callbacks,
  ) {
    this.p = new Parts(spec, schemas, config, tools, store, now, toolHost, callbacks);
    // Invariant: the order is the spec's; a step the spec names and this pipeline lacks is a startup error.
    this.steps = new Map(
      spec.constants.steps.map((name) => {
        const run = STEP_FUNCTIONS[name];
        if (run === undefined) throw new Error(`the spec names a step ${name} this pipeline does not have`);
        return [name, run];
      }),
    );
  }

  // --- the loop ---------------------------------------------------------------------------------

  private async run(c: Call, start = "resolve"): Promise<Disposition> {
    const names = [...this.steps.keys()];
    for (const name of names.slice(names.indexOf(start))) {
      if (c.reason !== null && name !== "complete" && name !== "publish") continue;
      const early = await (this.steps.get(name) as StepFunction)(this.p, c);
      this.crashPoint(`after_${name}`, c); // A hold, once committed, is a boundary the worker can die at too.
      if (early !== null) return early; // Held at step 7, or answered from the record at step 8.
    }
    return c.disposition as Disposition;
  }

  /** Die here when the instance's crash plan says so (decision 4's crash points at step boundaries). */
  private crashPoint(point: string, c: Call): void {
    const plan = this.p.config.crash;
    if (!plan || plan.point !== (point as CrashPoint)) return;
    if (plan.call_id != null && plan.call_id !== c.call.call_id) return;
    this.p.die(plan.mode ?? "raise");
  }

  async submit(step: StepRequest): Promise<Disposition[]> {
    // Sequential for every batch: parallelism is allowed, never required (decision 15).
    const answers: Disposition[] = [];
    for (const call of step.calls) answers.push(await this.run(new Call(step, call)));
    return answers;
  }

  // --- answering holds --------------------------------------------------------------------------

  private reload(invocationId: string, status: InvocationStatus, suspended: boolean): Call {
    const row = this.p.store.get(invocationId);
    if (row === undefined || row.status !== status || (row.suspended_at !== null) !== suspended) {
      const what = suspended ? "suspended" : "awaiting approval";
      throw new ConfigurationError(
        `invocation_id=${JSON.stringify(invocationId)} is not ${what}; nothing to answer`,
      );
    }
    return this.fromRow(row);
  }

  /** The call a row records, continued by a worker that did not propose it. */
  private fromRow(row: StoredRow): Call {
    const call: ProposedCall = {
      call_id: row.call_id,
      tool_name: row.tool_name,
      arguments: JSON.parse(row.arguments) as Record<string, never>,
      provenance: {},
    };
    const request: StepRequest = {
      tenant: row.tenant,
      run_id: row.run_id,
      step_number: row.step_number,
      calls: [call],
      context: [],
    };
    const c = new Call(request, call);
    adopt(c, row);
    c.tool = this.p.tools.get(row.tool_name);
    c.key = row.idempotency_key;
    c.hash = row.call_hash;
    c.origin = row.origin_trust;
    c.argument = row.argument_trust;
    c.marked = row.effect_sent_at !== null;
    c.holdUntil = row.hold_until;
    if (c.tool === undefined) c.reason = "unknown_tool"; // Its tool is gone since the restart.
    return c;
  }

  async resolveApproval(invocationId: string, approved: boolean): Promise<Disposition> {
    const c = this.reload(invocationId, "AWAITING_APPROVAL", false);
    c.pending.push(this.p.event("approval_resolved"));
    if (c.holdUntil !== null && this.p.now() >= c.holdUntil) c.reason = "approval_expired";
    else if (!approved) c.reason = "approval_denied";
    return this.run(c, "claim");
  }

  async resume(invocationId: string, answer: string): Promise<Disposition> {
    const c = this.reload(invocationId, "RECORDED", true);
    c.answer = answer;
    return this.run(c, "claim");
  }

  async sweep(): Promise<Disposition[]> {
    // Approval holds past their bound, then the orphans a dead worker left; suspended control calls are excluded
    // by both predicates (they are RECORDED with the marker set, never AWAITING_APPROVAL).
    const decided: Disposition[] = [];
    const now = this.p.now();
    for (const row of this.p.store.expiredHolds("AWAITING_APPROVAL", now)) {
      const c = this.reload(row.invocation_id, "AWAITING_APPROVAL", false);
      c.pending.push(this.p.event("approval_resolved"));
      c.reason = "approval_expired";
      decided.push(await this.run(c, "complete"));
    }
    for (const row of this.p.store.orphans(now, this.p.config.lease_s ?? 30))
      decided.push(await this.recover(row));
    return decided;
  }

  /** Decide an orphan from the store alone: the watermark, never the clock, says whether it may have escaped. */
  private async recover(row: StoredRow): Promise<Disposition> {
    const c = this.fromRow(row);
    this.p.store.transaction(() => this.p.store.emit(row.invocation_id, this.p.event("recovered")));
    if (row.status === "RECORDED") return this.run(c, "hold");
    return this.run(c, "claim"); // Step 8 resolves an escaped row UNCERTAIN, and retries any other.
  }

  // --- reading back -----------------------------------------------------------------------------

  invocations(runId: string): InvocationRow[] {
    return this.p.store.rows(runId);
  }

  events(runId: string): Event[] {
    return this.p.store.events(runId);
  }

  counters(): Record<string, number> {
    return { ...this.p.metrics };
  }

  tables(): string[] {
    return this.p.store.tables();
  }
}
