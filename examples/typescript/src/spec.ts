// The protocol document, read once: the wire shapes (for validation) and the x-toolproof constants.
//
// One source of truth: the outcome table, the thresholds, the name grammar and the step order are read
// from spec/driver-openapi.json (its x-toolproof extension, protocol revision 3), never copied here.

import { readFileSync } from "node:fs";
import type { FailureKind, InvocationStatus, ReasonCode, TrustLabel } from "./wire.js";

export interface OutcomeEntry {
  status: InvocationStatus;
  message: string;
  retryable: boolean;
}

export interface RuleConstants {
  outcomes: Record<ReasonCode, OutcomeEntry>;
  failure_reasons: Record<FailureKind, ReasonCode>;
  repeated_denial_threshold: number;
  loop_threshold: number;
  name_grammar: string;
  max_name_length: number;
  reserved_domains: string[];
  steps: string[];
  crash_points: string[];
  context_members: string[];
  control_answer_argument: string;
  metrics: string[];
  event_kinds: Record<EventName, string>;
  trust_order: TrustLabel[];
  excerpt_marker_source: string;
  now_header: string;
  supervised_env: string;
}

export type EventName =
  | "requested"
  | "approval_requested"
  | "approval_resolved"
  | "suspended"
  | "started"
  | "completed"
  | "recovered";

export interface ProtocolDocument {
  info: { version: string };
  components: { schemas: Record<string, unknown> };
  "x-toolproof"?: RuleConstants;
}

/** Raised for a document this driver cannot serve: the CLI prints it as one line. */
export class SpecError extends Error {}

/** The protocol major version and the lowest revision whose document carries what this driver reads
 * (revision 3: x-toolproof names the supervision variable). */
const MAJOR = "2";
const FIRST_REVISION_WITH_CONSTANTS = 3;

export interface Spec {
  document: ProtocolDocument;
  constants: RuleConstants;
  nameGrammar: RegExp;
}

export function loadSpec(path: string): Spec {
  let document: ProtocolDocument;
  try {
    document = JSON.parse(readFileSync(path, "utf8")) as ProtocolDocument;
  } catch (error) {
    throw new SpecError(`--spec ${path}: not a readable JSON document (${(error as Error).message})`);
  }
  const [major, revision] = String(document.info?.version ?? "").split(".");
  if (major !== MAJOR || Number(revision) < FIRST_REVISION_WITH_CONSTANTS || !document["x-toolproof"]) {
    throw new SpecError(
      `--spec ${path}: version ${JSON.stringify(document.info?.version)} is not driver protocol ` +
        `${MAJOR}.${FIRST_REVISION_WITH_CONSTANTS} or later with x-toolproof; give toolproof's spec/driver-openapi.json`,
    );
  }
  const constants = document["x-toolproof"];
  return { document, constants, nameGrammar: new RegExp(constants.name_grammar, "u") };
}
