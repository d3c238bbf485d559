// What a tool receives: the nine members of decision 2, and no way back into the pipeline.
//
// The tool itself runs in the harness, so the context crosses the wire twice: described member for member
// (ContextMember) with each execution, and reached back through /v1/contexts/{id}/... when the tool calls
// one of its callables. Nothing here holds the store, the registry or the instance; `markEffectSent` is a
// closure over one invocation's watermark.

import { createHash } from "node:crypto";
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { ArtifactRef, ContextMember, Identity } from "./wire.js";

/** The type names a description gives, as this language spells them (package, a dot, the type). */
const PACKAGE = "toolproof-typescript-example";

export class ArtifactWriter {
  private count = 0;

  constructor(private readonly directory: string) {}

  /** Never outside the invocation's folder, and a file of its own: a name written twice keeps both. */
  write(name: string, data: Buffer): ArtifactRef {
    return this.writeChunks(name, [data]);
  }

  /** One artifact from `chunks`, written and hashed one chunk at a time (no whole copy is built). */
  writeChunks(name: string, chunks: Iterable<Buffer>): ArtifactRef {
    this.count += 1;
    const safe = name.replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "_");
    const path = join(this.directory, `${this.count}-${safe}`);
    mkdirSync(this.directory, { recursive: true });
    writeFileSync(path, Buffer.alloc(0));
    const hash = createHash("sha256");
    let size = 0;
    for (const chunk of chunks) {
      appendFileSync(path, chunk);
      hash.update(chunk);
      size += chunk.length;
    }
    return { name, uri: pathToFileURL(path).href, size, sha256: hash.digest("hex") };
  }
}

export class CredentialResolver {
  constructor(private readonly granted: ReadonlyMap<string, string>) {}

  resolve(scope: string): string | null {
    return this.granted.get(scope) ?? null;
  }
}

/** The pipeline's cancellation signal, read-only for the tool: set once, never cleared. */
export class Cancellation {
  private set = false;
  private readonly waiters: (() => void)[] = [];

  isSet(): boolean {
    return this.set;
  }

  /** Called by the pipeline only. */
  fire(): void {
    if (this.set) return;
    this.set = true;
    for (const wake of this.waiters.splice(0)) wake();
  }

  wait(): Promise<void> {
    return this.set ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }
}

export interface Budget {
  max_output_bytes: number;
  max_cost: number | null;
}

/** Decision 2's nine members. */
export interface ToolContext {
  identity: Identity;
  budget: Budget;
  deadline: number;
  target: string | null;
  workspace: string;
  artifactWriter: ArtifactWriter;
  credentialResolver: CredentialResolver;
  cancellation: Cancellation;
  markEffectSent: () => void;
}

function scalar(name: string, value: string | number | boolean | null): ContextMember {
  const kind = value === null ? "null" : typeof value === "string" ? "string" : typeof value;
  const typeName = value === null ? "null" : typeof value;
  return {
    name,
    kind: kind as ContextMember["kind"],
    value,
    type_name: typeName,
    is_instance: false,
    members: [],
  };
}

function record(name: string, type: string, value: Record<string, string | number | boolean | null>) {
  const members = Object.entries(value).map(([field, v]) => scalar(field, v));
  return { name, kind: "data", value, type_name: `${PACKAGE}.${type}`, is_instance: false, members } as const;
}

function callable(name: string, type: string): ContextMember {
  return {
    name,
    kind: "callable",
    value: null,
    type_name: `${PACKAGE}.${type}`,
    is_instance: false,
    members: [],
  };
}

function object(name: string, type: string, members: ContextMember[]): ContextMember {
  return { name, kind: "object", value: null, type_name: `${PACKAGE}.${type}`, is_instance: false, members };
}

/** The context as the wire describes it: the nine members, by the names decision 2 gives them. */
export function describe(context: ToolContext): ContextMember[] {
  return [
    record("identity", "Identity", { ...context.identity }),
    record("budget", "Budget", { ...context.budget }),
    scalar("deadline", context.deadline),
    scalar("target", context.target),
    { ...scalar("workspace", context.workspace), kind: "path", type_name: `${PACKAGE}.Path` },
    object("artifact_writer", "ArtifactWriter", [callable("write", "ArtifactWriter.write")]),
    object("credential_resolver", "CredentialResolver", [callable("resolve", "CredentialResolver.resolve")]),
    object("cancellation", "Cancellation", [
      callable("is_set", "Cancellation.isSet"),
      callable("wait", "Cancellation.wait"),
    ]),
    callable("mark_effect_sent", "ToolContext.markEffectSent"),
  ];
}
