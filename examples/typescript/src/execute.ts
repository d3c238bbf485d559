// Steps 9 to 12: the context, the tool under its deadline through the tool host, the result judged, excerpted.

import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { type Call, type Parts, type Registered, SimulatedCrash, UNTRUSTED } from "./call.js";
import {
  ArtifactWriter,
  type Budget,
  Cancellation,
  CredentialResolver,
  describe,
  type ToolContext,
} from "./context.js";
import { excerpt as cut, wholeOutput } from "./excerpt.js";
import { ToolHostGone } from "./toolhost.js";
import type { ToolResult } from "./wire.js";

export async function prepare(p: Parts, c: Call): Promise<null> {
  const spec = (c.tool as Registered).spec;
  const r = c.request;
  const required = new Set(spec.required_scopes ?? []);
  const granted = new Map(
    Object.entries(p.config.credentials ?? {}).filter(([scope]) => required.has(scope)),
  );
  const budget: Budget = { max_output_bytes: p.config.max_output_bytes ?? 0, max_cost: null };
  c.context = {
    identity: {
      tenant: r.tenant ?? "",
      run_id: r.run_id,
      step_number: r.step_number,
      call_id: c.call.call_id,
      invocation_id: c.invocationId,
      tool_name: spec.name,
      tool_version: spec.version ?? "1",
      attempt: c.attempt,
      idempotency_key: c.key,
    },
    budget,
    deadline: Date.now() / 1000 + (spec.deadline_s ?? 30),
    target: p.config.targets?.[spec.name] ?? null,
    workspace: p.config.workspace,
    artifactWriter: new ArtifactWriter(join(p.config.store_dir, "artifacts", c.invocationId)),
    credentialResolver: new CredentialResolver(granted),
    cancellation: new Cancellation(),
    markEffectSent: () => {
      // A synchronous commit: the watermark is durable when the callback's answer is sent.
      p.store.markEffectSent(c.invocationId, p.now());
      c.marked = true;
    },
  };
  return null;
}

export async function execute(p: Parts, c: Call): Promise<null> {
  const spec = (c.tool as Registered).spec;
  for (;;) {
    await attempt(p, c);
    // A TRANSIENT failure gets another execution in this step, under the same key, unless it may have acted.
    const result = c.outcome?.result as Partial<ToolResult> | null | undefined;
    const transient = !c.timedOut && c.outcome?.raised == null && result?.failure?.kind === "TRANSIENT";
    const unsafe = c.marked && spec.idempotency === "NON_IDEMPOTENT";
    if (!transient || unsafe || c.attempt >= (p.config.max_attempts ?? 1)) return null;
    c.attempt += 1;
    p.store.transaction(() => p.store.update(c.invocationId, { attempt: c.attempt }));
    await prepare(p, c);
  }
}

export async function attempt(p: Parts, c: Call): Promise<void> {
  const spec = (c.tool as Registered).spec;
  const context = c.context as ToolContext;
  const args: Record<string, unknown> = { ...c.args };
  if (c.answer !== null) args[p.spec.constants.control_answer_argument] = c.answer;
  c.executed = true;
  c.outcome = null;
  c.timedOut = false;
  const contextId = randomUUID().replaceAll("-", "");
  const abort = new AbortController();
  const deadlineMs = Math.max(0, (spec.deadline_s ?? 30) * 1000);
  const timer = setTimeout(() => {
    c.timedOut = true;
    context.cancellation.fire(); // The signal is set before the tool is abandoned, so it sees why.
    void p.host.cancel(contextId, { signal_set: true, stopped: true });
    abort.abort();
  }, deadlineMs);
  p.callbacks.contexts.set(contextId, context);
  try {
    const execution = {
      tool: spec.name,
      arguments: args,
      contextId,
      driverUrl: p.callbacks.driverUrl,
      members: describe(context),
    };
    c.outcome = await p.host.execute(execution, abort.signal);
  } catch (error) {
    // The harness worker holding the tool vanished (a SIGKILL crash point there): this call's worker dies
    // with it, writing nothing more; the row stays as it is for recovery to judge.
    if (error instanceof ToolHostGone) throw new SimulatedCrash(error.message);
    if (!c.timedOut) throw error;
  } finally {
    clearTimeout(timer);
    p.callbacks.contexts.delete(contextId);
  }
  // An answer the tool host marks cancelled came after our stop: it is no outcome (protocol revision 3).
  if (c.timedOut || c.outcome?.cancelled) c.outcome = null;
  if (c.outcome?.crash) p.die(c.outcome.crash); // The harness's tool died at a crash point: so do we.
}

export async function normalize(p: Parts, c: Call): Promise<null> {
  const spec = (c.tool as Registered).spec;
  if (c.timedOut || c.outcome === null || c.outcome.raised != null) {
    if (c.marked && spec.idempotency === "NON_IDEMPOTENT") c.reason = "effect_unknown";
    else c.reason = c.timedOut ? "deadline_exceeded" : "tool_crashed";
    return null;
  }
  let result: ToolResult;
  try {
    result = p.schemas.check<ToolResult>("ToolResult", c.outcome.result);
  } catch {
    c.reason = "invalid_tool_result";
    return null;
  }
  if (result.ok === (result.failure != null)) {
    c.reason = "invalid_tool_result"; // ok and failure disagree.
    return null;
  }
  if (result.failure != null) {
    c.reason = p.spec.constants.failure_reasons[result.failure.kind ?? "ERROR"];
    if (result.failure.detail != null)
      c.detail = { trust: UNTRUSTED, source: "remote", text: result.failure.detail };
    return null;
  }
  const structured = result.structured ?? null;
  if (structured !== null && (c.tool?.output == null || !c.tool.output(structured))) {
    c.reason = "invalid_tool_result";
    return null;
  }
  // A result may only lower its label; device, sandbox and MCP output is never above EXTERNAL_UNTRUSTED.
  const ceiling = (spec.source ?? "BUILTIN") === "BUILTIN" ? (spec.output_trust ?? "INTERNAL") : UNTRUSTED;
  const whole = result.trust ? p.lowest(ceiling, result.trust) : ceiling;
  c.success = {
    status: "SUCCEEDED",
    invocation_id: c.invocationId,
    content: (result.content ?? []).map((part) => ({
      trust: part.trust ? p.lowest(whole, part.trust) : whole,
      source: spec.name,
      text: part.text,
    })),
    structured,
    artifacts: result.artifacts ?? [],
  };
  return null;
}

export async function excerpt(p: Parts, c: Call): Promise<null> {
  if (c.success === null || c.context === undefined) return null;
  const parts = c.success.content ?? [];
  const limit = p.config.max_output_bytes ?? 0;
  const excerpted = cut(parts, limit, p.spec.constants.excerpt_marker_source);
  if (!excerpted.excerpted) return null;
  // The whole output, every part in order, goes through the call's own artifact writer.
  const whole = c.context.artifactWriter.writeChunks("output.txt", wholeOutput(parts));
  c.success = {
    ...c.success,
    content: excerpted.envelopes,
    artifacts: [...(c.success.artifacts ?? []), whole],
  };
  return null;
}
