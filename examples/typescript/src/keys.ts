// The idempotency key and the breaker's call hash: sha256 over RFC 8785 canonical JSON (npm canonicalize).

import { createHash } from "node:crypto";
import canonicalize from "canonicalize";

/** The key's version tag (decision 10): a change of the key's inputs gets a new tag. */
export const KEY_VERSION = "toolproof-typescript/1";

/** RFC 8785 canonical JSON of `value`; a value JSON cannot carry is a programming error here. */
export function canonical(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError("a value without a JSON form has no canonical form");
  return text;
}

export function sha256(value: unknown): string {
  return createHash("sha256").update(canonical(value), "utf8").digest("hex");
}

export interface KeyInputs {
  tenant: string;
  runId: string;
  stepNumber: number;
  callId: string;
  toolName: string;
  toolVersion: string | null;
  arguments: Record<string, unknown>;
}

/** Decision 10: a version tag and the six inputs plus tool_version, each its own array element; no attempt. */
export function idempotencyKey(k: KeyInputs): string {
  return sha256([
    KEY_VERSION,
    k.tenant,
    k.runId,
    k.stepNumber,
    k.callId,
    k.toolName,
    k.toolVersion,
    k.arguments,
  ]);
}

/** Decision 14's 'identical': the same tool name and canonical arguments. */
export function callHash(toolName: string, args: Record<string, unknown>): string {
  return sha256([toolName, args]);
}
