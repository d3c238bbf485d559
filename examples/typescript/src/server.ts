// The driver: this pipeline behind /v1 of the driver protocol, on node:http.

import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { join } from "node:path";
import { ConfigurationError, SimulatedCrash } from "./call.js";
import type { ToolContext } from "./context.js";
import type { Defect } from "./defects.js";
import { Pipeline } from "./pipeline.js";
import { registry } from "./registry.js";
import { InvalidShape, Schemas } from "./schemas.js";
import type { Spec } from "./spec.js";
import { Store } from "./store.js";
import type {
  ApprovalAnswer,
  ArtifactUpload,
  OpenInstance,
  Problem,
  ResumeAnswer,
  ScopeQuery,
  StepRequest,
} from "./wire.js";

export const NAME = "typescript";
export const PROFILES = ["core", "recovery"] as const;
/** The harness's clock, pushed with every instance request (seconds since the epoch). */
const NOW_HEADER = "toolproof-now";
const PROTOCOL = "toolproof-driver/2";

/** A refusal: answered as an RFC 9457 problem. */
class Refused extends Error {
  constructor(
    readonly status: number,
    readonly kind: string,
    detail: string,
    readonly field: string | null = null,
  ) {
    super(detail);
  }
}

interface Hosted {
  pipeline: Pipeline;
  store: Store;
  clock: { now: number };
  dead: boolean;
}

type Json = unknown;
type Route = (request: IncomingMessage, segments: string[], body: Json) => Promise<[number, Json]>;

function send(response: ServerResponse, status: number, body: Json, type = "application/json"): void {
  if (status === 204) {
    response.writeHead(204).end();
    return;
  }
  const text = JSON.stringify(body);
  response.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(text) }).end(text);
}

function problem(status: number, kind: string, detail: string, field: string | null = null): Problem {
  return { type: kind, title: kind.replaceAll("-", " "), status, detail, field };
}

async function readBody(request: IncomingMessage): Promise<Json> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  if (chunks.length === 0) return null;
  const text = Buffer.concat(chunks).toString("utf8");
  try {
    return JSON.parse(text) as Json;
  } catch {
    throw new Refused(422, "invalid-request", "body: not JSON", "body");
  }
}

export class Driver {
  private readonly instances = new Map<string, Hosted>();
  private readonly contexts = new Map<string, ToolContext>();
  private readonly schemas: Schemas;
  readonly url: string;

  /**
   * @param supervised a supervisor starts this process again after a SIGKILL (`toolproof supervise`): only then
   *   are crash plans of mode sigkill accepted.
   * @param defect the deliberate defect `--defect` named (src/defects.ts), or null: off by default.
   */
  constructor(
    private readonly spec: Spec,
    readonly port: number,
    private readonly supervised: boolean,
    readonly defect: Defect | null = null,
  ) {
    this.schemas = new Schemas(spec.document);
    this.url = `http://127.0.0.1:${port}`;
  }

  listen(): Promise<Server> {
    const server = createServer((request, response) => {
      void this.handle(request, response);
    });
    // A step may wait on a tool for as long as its deadline: no server-side timeout cuts a request short.
    server.requestTimeout = 0;
    server.headersTimeout = 0;
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => resolve(server));
    });
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    try {
      const url = new URL(request.url ?? "/", this.url);
      // Split the raw path before decoding, so an escaped '/' stays inside its segment (a run id may hold one).
      const segments = url.pathname.split("/").slice(1).map(decodeURIComponent);
      const route = this.route(request.method ?? "GET", segments, url);
      if (route === null) {
        send(
          response,
          404,
          problem(404, "not-found", `no operation ${request.method} ${url.pathname}`),
          "application/problem+json",
        );
        return;
      }
      const body = await readBody(request);
      const [status, answer] = await route(request, segments, body);
      send(response, status, answer);
    } catch (error) {
      const p =
        error instanceof Refused
          ? problem(error.status, error.kind, error.message, error.field)
          : error instanceof InvalidShape
            ? problem(422, "invalid-request", error.message, error.field)
            : error instanceof ConfigurationError
              ? problem(422, "configuration-error", error.message)
              : error instanceof SimulatedCrash
                ? problem(409, "simulated-crash", "the instance died at its crash point")
                : problem(500, "internal-error", `${(error as Error).name}: ${(error as Error).message}`);
      send(response, p.status, p, "application/problem+json");
    }
  }

  private route(method: string, s: string[], url: URL): Route | null {
    const key = `${method} ${s.map((part, i) => (this.isParameter(s, i) ? "*" : part)).join("/")}`;
    const routes: Record<string, Route> = {
      "GET v1/info": async () => [200, { protocol: PROTOCOL, name: NAME, profiles: [...PROFILES] }],
      "GET v1/openapi.json": async () => [200, this.spec.document],
      "POST v1/instances": (r, _s, b) => this.open(r, b),
      "DELETE v1/instances/*": async (_r, p) => this.close(p[2] as string),
      "POST v1/instances/*/steps": (r, p, b) => this.submit(r, p, b, url.searchParams.get("probe")),
      "POST v1/instances/*/approvals": (r, p, b) =>
        this.on(r, p, (i) => {
          const a = this.schemas.check<ApprovalAnswer>("ApprovalAnswer", b);
          return i.resolveApproval(a.invocation_id, a.approved);
        }),
      "POST v1/instances/*/resumptions": (r, p, b) =>
        this.on(r, p, (i) => {
          const a = this.schemas.check<ResumeAnswer>("ResumeAnswer", b);
          return i.resume(a.invocation_id, a.answer);
        }),
      "POST v1/instances/*/sweeps": (r, p) => this.on(r, p, async (i) => ({ dispositions: await i.sweep() })),
      "GET v1/instances/*/runs/*/invocations": (r, p) =>
        this.on(r, p, async (i) => ({ invocations: i.invocations(p[4] as string) })),
      "GET v1/instances/*/runs/*/events": (r, p) =>
        this.on(r, p, async (i) => ({ events: i.events(p[4] as string) })),
      "GET v1/instances/*/metrics": (r, p) => this.on(r, p, async (i) => ({ metrics: i.counters() })),
      "GET v1/instances/*/tables": (r, p) => this.on(r, p, async (i) => ({ tables: i.tables() })),
      "POST v1/instances/*/scripts": (r, p) => this.on(r, p, () => notClaimed("bridge", "runs no scripts")),
      "POST v1/instances/*/runs/*/advertisement": (r, p) =>
        this.on(r, p, () => notClaimed("mcp", "has no MCP adapter")),
      "GET v1/instances/*/catalog-history": (r, p) =>
        this.on(r, p, () => notClaimed("mcp", "keeps no catalog history")),
      "POST v1/contexts/*/effect-sent": async (_r, p) => {
        this.context(p[2] as string).markEffectSent();
        return [204, null];
      },
      "POST v1/contexts/*/artifacts": async (_r, p, b) => this.artifact(p[2] as string, b),
      "POST v1/contexts/*/credentials": async (_r, p, b) => {
        const context = this.context(p[2] as string);
        const query = this.schemas.check<ScopeQuery>("ScopeQuery", b);
        return [200, { credential: context.credentialResolver.resolve(query.scope) }];
      },
    };
    return routes[key] ?? null;
  }

  /** Which path segments are parameters: the ids after instances/, runs/ and contexts/. */
  private isParameter(s: string[], i: number): boolean {
    const before = s[i - 1];
    return i >= 2 && (before === "instances" || before === "runs" || before === "contexts") && s[0] === "v1";
  }

  private hosted(request: IncomingMessage, id: string): Hosted {
    const hosted = this.instances.get(id);
    if (hosted === undefined || hosted.dead) {
      throw new Refused(404, "not-found", `no open instance ${JSON.stringify(id)}`, "instance_id");
    }
    const raw = request.headers[NOW_HEADER];
    if (typeof raw === "string") {
      const now = Number(raw);
      if (raw.trim() === "" || !Number.isFinite(now)) {
        throw new Refused(
          422,
          "invalid-request",
          `header Toolproof-Now: not a finite number`,
          "Toolproof-Now",
        );
      }
      hosted.clock.now = now;
    }
    return hosted;
  }

  private async on(
    request: IncomingMessage,
    p: string[],
    work: (i: Pipeline) => Promise<Json>,
  ): Promise<[number, Json]> {
    const hosted = this.hosted(request, p[2] as string);
    try {
      return [200, await work(hosted.pipeline)];
    } catch (error) {
      if (error instanceof SimulatedCrash) {
        hosted.dead = true; // The instance died at its crash point: nothing more is written for it.
        hosted.store.close();
      }
      throw error;
    }
  }

  private async open(request: IncomingMessage, body: Json): Promise<[number, Json]> {
    const open = this.schemas.check<OpenInstance>("OpenInstance", body);
    const config = open.config;
    if (config.store_url) {
      throw new ConfigurationError(
        "store_url: this pipeline stores in SQLite under store_dir only; give none",
      );
    }
    if (config.crash?.mode === "sigkill" && !this.supervised) {
      throw new Refused(
        422,
        "not-supported",
        "crash.mode: sigkill needs a supervisor to start this driver again; run it under toolproof supervise",
        "config.crash.mode",
      );
    }
    if ((config.mcp_servers ?? []).length > 0) {
      throw new ConfigurationError("mcp_servers: mcp is not claimed; this pipeline has no MCP adapter");
    }
    const tools = registry(this.spec, this.schemas, open.tools ?? [], this.defect);
    const raw = request.headers[NOW_HEADER];
    const id = randomUUID().replaceAll("-", "");
    const store = new Store(join(config.store_dir, "typescript.sqlite3"));
    const pushed = typeof raw === "string" ? Number(raw) : Number.NaN;
    const clock = { now: Number.isFinite(pushed) ? pushed : Date.now() / 1000 };
    const callbacks = { driverUrl: this.url, contexts: this.contexts };
    const pipeline = new Pipeline(
      this.spec,
      this.schemas,
      config,
      tools,
      store,
      () => clock.now,
      open.tool_host,
      callbacks,
    );
    this.instances.set(id, { pipeline, store, clock, dead: false });
    return [201, { instance_id: id }];
  }

  private async close(id: string): Promise<[number, Json]> {
    const hosted = this.instances.get(id);
    if (hosted === undefined)
      throw new Refused(404, "not-found", `no open instance ${JSON.stringify(id)}`, "instance_id");
    this.instances.delete(id);
    if (!hosted.dead) hosted.store.close();
    return [204, null];
  }

  private async submit(
    request: IncomingMessage,
    p: string[],
    body: Json,
    probe: string | null,
  ): Promise<[number, Json]> {
    if (probe !== null && probe !== "memory") {
      throw new Refused(
        422,
        "invalid-request",
        `probe: unknown probe ${JSON.stringify(probe)}; the only one is memory`,
        "probe",
      );
    }
    return this.on(request, p, async (i) => {
      const step = this.schemas.check<StepRequest>("StepRequest", body);
      // ?probe=memory: this driver does not measure (see PROTOCOL-NOTES.md); null says so rather than a zero.
      return { dispositions: await i.submit(step), memory_peak_bytes: null };
    });
  }

  private context(id: string): ToolContext {
    const context = this.contexts.get(id);
    if (context === undefined) {
      throw new Refused(404, "not-found", "no tool is executing under this context id", "context_id");
    }
    return context;
  }

  private async artifact(id: string, body: Json): Promise<[number, Json]> {
    const context = this.context(id);
    const upload = this.schemas.check<ArtifactUpload>("ArtifactUpload", body);
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(upload.data_base64) || upload.data_base64.length % 4 !== 0) {
      throw new Refused(422, "invalid-request", "data_base64: not base64", "data_base64");
    }
    return [200, context.artifactWriter.write(upload.name, Buffer.from(upload.data_base64, "base64"))];
  }
}

function notClaimed(profile: string, what: string): never {
  throw new ConfigurationError(`${profile} not claimed: this pipeline ${what}`);
}
