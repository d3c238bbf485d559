// The store: one SQLite file (better-sqlite3) with the invocation rows and their events.
//
// better-sqlite3 is synchronous, so a transaction() block never spans an await: each persist step is one
// committed transaction, durable before the next step begins, and none is open while a tool runs.

import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import type { Event, InvocationRow, InvocationStatus, ReasonCode, TrustLabel } from "./wire.js";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS tool_invocations (
    invocation_id   TEXT PRIMARY KEY,
    tenant          TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    step_number     INTEGER NOT NULL,
    call_id         TEXT NOT NULL,
    tool_name       TEXT NOT NULL,
    tool_version    TEXT,
    attempt         INTEGER NOT NULL DEFAULT 0,
    idempotency_key TEXT NOT NULL UNIQUE,
    call_hash       TEXT NOT NULL,            -- tool name + canonical arguments: the breaker's 'identical'
    status          TEXT NOT NULL,
    reason_code     TEXT,
    origin_trust    TEXT NOT NULL,
    argument_trust  TEXT NOT NULL,
    effect_sent_at  REAL,                     -- the watermark
    suspended_at    REAL,                     -- the control tools' nullable marker
    hold_until      REAL,                     -- approval holds: when they expire (the harness's clock)
    answer          TEXT,                     -- a resumed control call's answer, kept for its recovery
    decision        TEXT NOT NULL,            -- step 5's verdict: allow, approve or suspend (step 7 follows it)
    lease_owner     TEXT,                     -- the worker (instance) running it
    lease_expires_at REAL,                    -- when another worker may take it over (the harness's clock)
    created_at      REAL NOT NULL,            -- a row recorded and never claimed within a lease is an orphan
    arguments       TEXT NOT NULL,
    disposition     TEXT                      -- what step 13 returned, for replays answered at step 8
);
CREATE INDEX IF NOT EXISTS tool_invocations_breaker ON tool_invocations (run_id, call_hash);
CREATE TABLE IF NOT EXISTS tool_events (
    seq           INTEGER PRIMARY KEY,
    run_id        TEXT NOT NULL,
    invocation_id TEXT NOT NULL,
    kind          TEXT NOT NULL,
    status        TEXT,
    reason_code   TEXT
);
`;

/** One row as stored. */
export interface StoredRow {
  invocation_id: string;
  tenant: string;
  run_id: string;
  step_number: number;
  call_id: string;
  tool_name: string;
  tool_version: string | null;
  attempt: number;
  idempotency_key: string;
  call_hash: string;
  status: InvocationStatus;
  reason_code: ReasonCode | null;
  origin_trust: TrustLabel;
  argument_trust: TrustLabel;
  effect_sent_at: number | null;
  suspended_at: number | null;
  hold_until: number | null;
  answer: string | null;
  decision: Decision;
  lease_owner: string | null;
  lease_expires_at: number | null;
  created_at: number;
  arguments: string;
  disposition: string | null;
}

/** Step 5's verdict, recorded so that a worker finding the row follows it (decision 4's recovery). */
export type Decision = "allow" | "approve" | "suspend";

export type NewRow = Omit<
  StoredRow,
  | "attempt"
  | "reason_code"
  | "effect_sent_at"
  | "suspended_at"
  | "hold_until"
  | "answer"
  | "disposition"
  | "lease_owner"
  | "lease_expires_at"
>;

type Column = keyof StoredRow;

export class Store {
  private readonly db: Database.Database;

  constructor(path: string) {
    mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("busy_timeout = 10000");
    this.db.exec(SCHEMA);
  }

  close(): void {
    this.db.close();
  }

  /** Commit what `work` writes as one transaction, or nothing if it throws. BEGIN IMMEDIATE: a worker in another
   * process waits for the write lock before it reads, so a read-then-write in `work` is a compare-and-set. */
  transaction(work: () => void): void {
    this.db.transaction(work).immediate();
  }

  insert(row: NewRow): void {
    const names = Object.keys(row);
    const marks = names.map((name) => `@${name}`).join(", ");
    this.db.prepare(`INSERT INTO tool_invocations (${names.join(", ")}) VALUES (${marks})`).run(row);
  }

  update(invocationId: string, columns: Partial<Record<Column, string | number | null>>): void {
    const names = Object.keys(columns);
    const assignments = names.map((name) => `${name} = @${name}`).join(", ");
    this.db
      .prepare(`UPDATE tool_invocations SET ${assignments} WHERE invocation_id = @invocation_id__`)
      .run({ ...columns, invocation_id__: invocationId });
  }

  /** Apply `columns` only if the row is still RECORDED and never held: of two workers, one opens the hold. */
  hold(
    invocationId: string,
    columns: Partial<Record<Column, string | number | null>>,
    event: string,
  ): boolean {
    let held = false;
    this.transaction(() => {
      const now = this.get(invocationId);
      if (now?.status !== "RECORDED" || now.suspended_at !== null) return;
      this.update(invocationId, columns);
      this.emit(invocationId, event);
      held = true;
    });
    return held;
  }

  /** Compare-and-set the lease: take the row only if its status and owner are still as read (with the
   * `pending` events first, then `started`); false, writing nothing, when another worker changed it. */
  claim(
    row: Pick<StoredRow, "invocation_id" | "status" | "lease_owner">,
    columns: Partial<Record<Column, string | number | null>>,
    pending: string[],
    started: string,
  ): boolean {
    let claimed = false;
    this.transaction(() => {
      const now = this.db
        .prepare("SELECT status, lease_owner FROM tool_invocations WHERE invocation_id = ?")
        .get(row.invocation_id) as Pick<StoredRow, "status" | "lease_owner"> | undefined;
      if (now?.status !== row.status || now.lease_owner !== row.lease_owner) return;
      this.emit(row.invocation_id, ...pending);
      this.update(row.invocation_id, columns);
      this.emit(row.invocation_id, started);
      claimed = true;
    });
    return claimed;
  }

  /** Events copy classification from the row as it is now: ids, status, reason. Never payload. */
  emit(invocationId: string, ...kinds: string[]): void {
    const insert = this.db.prepare(
      "INSERT INTO tool_events (run_id, invocation_id, kind, status, reason_code) " +
        "SELECT run_id, invocation_id, ?, status, reason_code FROM tool_invocations WHERE invocation_id = ?",
    );
    for (const kind of kinds) insert.run(kind, invocationId);
  }

  /** Commit the watermark; the first mark wins. */
  markEffectSent(invocationId: string, at: number): void {
    this.db
      .prepare(
        "UPDATE tool_invocations SET effect_sent_at = ? WHERE invocation_id = ? AND effect_sent_at IS NULL",
      )
      .run(at, invocationId);
  }

  get(invocationId: string): StoredRow | undefined {
    return this.db.prepare("SELECT * FROM tool_invocations WHERE invocation_id = ?").get(invocationId) as
      | StoredRow
      | undefined;
  }

  byKey(key: string): StoredRow | undefined {
    return this.db.prepare("SELECT * FROM tool_invocations WHERE idempotency_key = ?").get(key) as
      | StoredRow
      | undefined;
  }

  /** Earlier rows of the same call in the run; a replay (same key) is not a new proposal. */
  identical(runId: string, callHash: string, key: string): Pick<StoredRow, "status" | "reason_code">[] {
    return this.db
      .prepare(
        "SELECT status, reason_code FROM tool_invocations " +
          "WHERE run_id = ? AND call_hash = ? AND idempotency_key <> ?",
      )
      .all(runId, callHash, key) as Pick<StoredRow, "status" | "reason_code">[];
  }

  /** Rows a dead worker left: RUNNING past its lease, or RECORDED and never claimed within one; never suspended. */
  orphans(now: number, leaseS: number): StoredRow[] {
    return this.db
      .prepare(
        "SELECT * FROM tool_invocations WHERE suspended_at IS NULL AND (" +
          "(status = 'RUNNING' AND lease_expires_at < ?) OR (status = 'RECORDED' AND created_at < ?)) ORDER BY rowid",
      )
      .all(now, now - leaseS) as StoredRow[];
  }

  expiredHolds(status: InvocationStatus, now: number): StoredRow[] {
    return this.db
      .prepare("SELECT * FROM tool_invocations WHERE status = ? AND hold_until <= ? ORDER BY rowid")
      .all(status, now) as StoredRow[];
  }

  rows(runId: string): InvocationRow[] {
    const found = this.db
      .prepare("SELECT * FROM tool_invocations WHERE run_id = ? ORDER BY rowid")
      .all(runId) as StoredRow[];
    return found.map((r) => ({
      invocation_id: r.invocation_id,
      tenant: r.tenant,
      run_id: r.run_id,
      step_number: r.step_number,
      call_id: r.call_id,
      tool_name: r.tool_name,
      tool_version: r.tool_version,
      attempt: r.attempt,
      idempotency_key: r.idempotency_key,
      status: r.status,
      reason_code: r.reason_code,
      origin_trust: r.origin_trust,
      argument_trust: r.argument_trust,
      effect_sent_at: r.effect_sent_at,
      suspended: r.suspended_at !== null,
      arguments: JSON.parse(r.arguments) as Record<string, unknown>,
    }));
  }

  events(runId: string): Event[] {
    return this.db
      .prepare(
        "SELECT seq, kind, run_id, invocation_id, status, reason_code FROM tool_events WHERE run_id = ? ORDER BY seq",
      )
      .all(runId) as Event[];
  }

  tables(): string[] {
    const found = this.db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all() as { name: string }[];
    return found.map((r) => r.name);
  }
}
