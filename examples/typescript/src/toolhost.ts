// The harness's tool host, as this driver calls it: execute a tool, and tell it about cancellation.

import type { ContextMember, ToolCancellation, ToolOutcome } from "./wire.js";

/** The tool host did not answer the protocol (its process is gone, or it answered nonsense). */
export class ToolHostGone extends Error {}

export interface Execution {
  tool: string;
  arguments: Record<string, unknown>;
  contextId: string;
  driverUrl: string;
  members: ContextMember[];
}

export class ToolHostClient {
  constructor(private readonly base: string) {}

  /** `POST {tool_host}/v1/tools/execute`; `abort` stops waiting (the deadline). */
  async execute(run: Execution, abort: AbortSignal): Promise<ToolOutcome> {
    const body = {
      tool: run.tool,
      arguments: run.arguments,
      context: { context_id: run.contextId, driver_url: run.driverUrl, members: run.members },
    };
    let response: Response;
    try {
      response = await fetch(`${this.base}/v1/tools/execute`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: abort,
      });
    } catch (error) {
      if (abort.aborted) throw error;
      throw new ToolHostGone(`the tool host at ${this.base} stopped answering: ${(error as Error).message}`);
    }
    const text = await response.text();
    if (!response.ok) {
      throw new ToolHostGone(`the tool host answered ${response.status}: ${text.slice(0, 300)}`);
    }
    return JSON.parse(text) as ToolOutcome;
  }

  /** `POST {tool_host}/v1/contexts/{id}/cancel`; a lost message is not retried (the tool is being abandoned). */
  async cancel(contextId: string, news: ToolCancellation): Promise<void> {
    try {
      await fetch(`${this.base}/v1/contexts/${encodeURIComponent(contextId)}/cancel`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(news),
        signal: AbortSignal.timeout(5000),
      });
    } catch {
      // The host is gone or slow: the deadline already decided the call's fate.
    }
  }
}
