import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { type NewRow, Store } from "../src/store.js";

function row(id: string): NewRow {
  return {
    invocation_id: id,
    tenant: "t",
    run_id: "r",
    step_number: 1,
    call_id: `c-${id}`,
    tool_name: "a.b",
    tool_version: "1",
    idempotency_key: `k-${id}`,
    call_hash: "h",
    status: "RECORDED",
    origin_trust: "USER",
    argument_trust: "USER",
    decision: "approve",
    created_at: 100,
    arguments: "{}",
  };
}

function stores(): [Store, Store] {
  const path = join(mkdtempSync(join(tmpdir(), "ts-store-")), "s.sqlite3");
  return [new Store(path), new Store(path)];
}

test("of two workers over one file, exactly one opens a recorded row's hold", () => {
  const [a, b] = stores();
  a.insert(row("1"));
  const changes = { status: "AWAITING_APPROVAL", hold_until: 400 };
  assert.equal(a.hold("1", changes, "tool_call.approval_requested"), true);
  assert.equal(b.hold("1", changes, "tool_call.approval_requested"), false);
  assert.deepEqual(
    b.events("r").map((e) => e.kind),
    ["tool_call.approval_requested"],
  );
});

test("a claim from a stale read writes nothing, not even its events", () => {
  const [a, b] = stores();
  a.insert(row("1"));
  const read = a.get("1");
  assert.ok(read);
  const take = (owner: string) => ({
    status: "RUNNING",
    attempt: 1,
    lease_owner: owner,
    lease_expires_at: 130,
  });
  assert.equal(b.claim(read, take("b"), ["tool_call.approval_resolved"], "tool_call.started"), true);
  assert.equal(a.claim(read, take("a"), ["tool_call.approval_resolved"], "tool_call.started"), false);
  assert.equal(a.get("1")?.lease_owner, "b");
  assert.equal(a.events("r").length, 2);
});

test("orphans: RUNNING past the lease, RECORDED never claimed within one; never a suspended row", () => {
  const [a] = stores();
  for (const id of ["running", "live", "recorded", "young", "suspended"]) a.insert(row(id));
  a.update("running", { status: "RUNNING", lease_expires_at: 120 });
  a.update("live", { status: "RUNNING", lease_expires_at: 200 });
  a.update("young", { created_at: 190 });
  a.update("suspended", { suspended_at: 100 });
  assert.deepEqual(
    a.orphans(150, 30).map((r) => r.invocation_id),
    ["running", "recorded"],
  );
});

test("the watermark's first mark wins", () => {
  const [a] = stores();
  a.insert(row("1"));
  a.markEffectSent("1", 101);
  a.markEffectSent("1", 202);
  assert.equal(a.get("1")?.effect_sent_at, 101);
});
