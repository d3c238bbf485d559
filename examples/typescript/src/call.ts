// One call's way through the steps, and what every step reads (the instance's parts).

import { randomUUID } from "node:crypto";
import type { ValidateFunction } from "ajv/dist/2020.js";
import type { ToolContext } from "./context.js";
import type { Schemas } from "./schemas.js";
import type { EventName, Spec } from "./spec.js";
import type { Decision, Store, StoredRow } from "./store.js";
import { ToolHostClient } from "./toolhost.js";
import type {
  Disposition,
  Envelope,
  InstanceConfig,
  InvocationStatus,
  Outcome,
  ProposedCall,
  ReasonCode,
  StepRequest,
  Success,
  ToolOutcome,
  ToolSpec,
  TrustLabel,
} from "./wire.js";

/** The instance died at a crash point (mode raise): the driver answers 409 simulated-crash from now on. */
export class SimulatedCrash extends Error {}

/** A request the configuration does not allow (unknown invocation, unclaimed profile): 422 configuration-error. */
export class ConfigurationError extends Error {}

export const UNTRUSTED: TrustLabel = "EXTERNAL_UNTRUSTED";
export const DENIALS = new Set<ReasonCode>([
  "policy_denied",
  "approval_denied",
  "approval_expired",
  "repeated_denial",
]);
export const TERMINAL = new Set<InvocationStatus>([
  "SUCCEEDED",
  "DENIED",
  "FAILED",
  "UNAVAILABLE",
  "UNCERTAIN",
]);

/** Where the driver can be reached by a running tool's callbacks, and where its contexts wait for them. */
export interface Callbacks {
  driverUrl: string;
  contexts: Map<string, ToolContext>;
}

export interface Registered {
  spec: ToolSpec;
  input: ValidateFunction;
  output: ValidateFunction | null;
}

/** One call's way through the steps; what a step learns, later steps read. */
export class Call {
  invocationId: string = randomUUID().replaceAll("-", "");
  tool: Registered | undefined;
  key = "";
  hash = "";
  origin: TrustLabel = UNTRUSTED; // Fail closed until step 3 says otherwise.
  argument: TrustLabel = UNTRUSTED;
  verdict: Decision = "allow";
  recorded = false;
  existing: StoredRow | undefined; // The row step 6 found for this key (a replay, a recovery): it is followed.
  pending: string[] = []; // Events emitted with the next persist step.
  holdUntil: number | null = null;
  answer: string | null = null;
  attempt = 0;
  context: ToolContext | undefined;
  marked = false;
  executed = false;
  outcome: ToolOutcome | null = null;
  timedOut = false;
  reason: ReasonCode | null = null; // Set by the step that ends the call; step 13 records it.
  detail: Envelope | null = null;
  success: Success | null = null;
  disposition: Disposition | null = null;

  constructor(
    readonly request: StepRequest,
    readonly call: ProposedCall,
  ) {}

  get args(): Record<string, unknown> {
    return (this.call.arguments ?? {}) as Record<string, unknown>;
  }
}

/** What every step reads: the instance's configuration, its store, its clock, the spec's constants. */
export class Parts {
  /** This instance as a worker: the owner of the leases it takes. */
  readonly worker = randomUUID().replaceAll("-", "");
  readonly metrics: Record<string, number>;
  readonly host: ToolHostClient;
  private readonly rank: ReadonlyMap<TrustLabel, number>;

  constructor(
    readonly spec: Spec,
    readonly schemas: Schemas,
    readonly config: InstanceConfig,
    readonly tools: ReadonlyMap<string, Registered>,
    readonly store: Store,
    readonly now: () => number,
    toolHost: string,
    readonly callbacks: Callbacks,
  ) {
    this.metrics = Object.fromEntries(spec.constants.metrics.map((m) => [m, 0]));
    this.host = new ToolHostClient(toolHost.replace(/\/+$/, ""));
    this.rank = new Map(spec.constants.trust_order.map((label, i) => [label, i]));
  }

  /** The least trusted of `labels`, by the spec's trust order; EXTERNAL_UNTRUSTED when there are none. */
  lowest(...labels: TrustLabel[]): TrustLabel {
    let low: TrustLabel | undefined;
    for (const label of labels) {
      if (low === undefined || (this.rank.get(label) ?? 0) < (this.rank.get(low) ?? 0)) low = label;
    }
    return low ?? UNTRUSTED;
  }

  event(name: EventName): string {
    return this.spec.constants.event_kinds[name];
  }

  /** The outcome the spec's table prescribes for `reason`. */
  outcome(reason: ReasonCode, invocationId: string, detail: Envelope | null = null): Outcome {
    const entry = this.spec.constants.outcomes[reason];
    return {
      status: entry.status,
      reason_code: reason,
      message: entry.message,
      retryable: entry.retryable,
      invocation_id: invocationId,
      external_detail: detail,
    };
  }

  /** Die as the crash plan says: SIGKILL this process, or end the instance (raise). */
  die(mode: string): never {
    if (mode === "sigkill") process.kill(process.pid, "SIGKILL");
    throw new SimulatedCrash("simulated crash");
  }
}
