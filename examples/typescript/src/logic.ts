// Steps 1 to 5: logic only; nothing here touches the store's rows or the world (step 4 only reads).

import { type Call, DENIALS, type Parts, type Registered, UNTRUSTED } from "./call.js";
import { callHash, idempotencyKey } from "./keys.js";
import type { TrustLabel } from "./wire.js";

export async function resolve(p: Parts, c: Call): Promise<null> {
  const name = c.call.tool_name;
  const valid = name.length <= p.spec.constants.max_name_length && p.spec.nameGrammar.test(name);
  c.tool = valid ? p.tools.get(name) : undefined;
  const r = c.request;
  c.key = idempotencyKey({
    tenant: r.tenant ?? "",
    runId: r.run_id,
    stepNumber: r.step_number,
    callId: c.call.call_id,
    toolName: name,
    toolVersion: c.tool?.spec.version ?? null,
    arguments: c.args,
  });
  c.hash = callHash(name, c.args);
  if (c.tool === undefined) c.reason = "unknown_tool";
  return null;
}

export async function validate(_p: Parts, c: Call): Promise<null> {
  if (!(c.tool as Registered).input(c.args)) c.reason = "invalid_arguments";
  return null;
}

export async function label(p: Parts, c: Call): Promise<null> {
  const context = c.request.context ?? [];
  // An id names every item that bears it: a contributor counts as the lowest of their labels.
  const trust = new Map<string, TrustLabel>();
  for (const item of context) {
    const seen = trust.get(item.id);
    trust.set(item.id, seen === undefined ? item.trust : p.lowest(seen, item.trust));
  }
  c.origin = p.lowest(...context.map((item) => item.trust));
  // Provenance is carried, never inferred: an unknown argument or contributor is untrusted.
  const provenance = (c.call.provenance ?? {}) as Record<string, string[]>;
  const perArgument = Object.keys(c.args).map((name) =>
    p.lowest(...(provenance[name] ?? []).map((id) => trust.get(id) ?? UNTRUSTED)),
  );
  c.argument = perArgument.length > 0 ? p.lowest(...perArgument) : c.origin;
  return null;
}

export async function guard(p: Parts, c: Call): Promise<null> {
  const prior = p.store.identical(c.request.run_id, c.hash, c.key);
  const denials = prior.filter(
    (r) => r.status === "DENIED" && r.reason_code !== null && DENIALS.has(r.reason_code),
  ).length;
  const k = p.spec.constants;
  if (prior.some((r) => r.status === "UNCERTAIN")) c.reason = "prior_uncertain";
  else if (denials >= k.repeated_denial_threshold - 1) c.reason = "repeated_denial";
  else if (prior.length >= k.loop_threshold - 1) c.reason = "loop_detected";
  return null;
}

export async function decide(p: Parts, c: Call): Promise<null> {
  const spec = (c.tool as Registered).spec;
  const granted = Object.keys(p.config.credentials ?? {});
  const consequential = (spec.side_effect ?? "READ_ONLY") !== "READ_ONLY";
  if ((p.config.denied_tools ?? []).includes(spec.name)) c.reason = "policy_denied";
  else if (spec.kind === "CONTROL") c.verdict = "suspend";
  else if (
    consequential &&
    (c.origin === UNTRUSTED ||
      c.argument === UNTRUSTED ||
      !(spec.required_scopes ?? []).every((s) => granted.includes(s)))
  )
    c.verdict = "approve";
  return null;
}
