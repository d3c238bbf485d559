import assert from "node:assert/strict";
import { test } from "node:test";
import { callHash, canonical, idempotencyKey, type KeyInputs } from "../src/keys.js";

const BASE: KeyInputs = {
  tenant: "tenant-1",
  runId: "run-1",
  stepNumber: 1,
  callId: "call-1",
  toolName: "orders.place",
  toolVersion: "1",
  arguments: { item: 1, note: "é" },
};

test("canonical JSON is RFC 8785: members sorted by UTF-16 code units, no whitespace, shortest numbers", () => {
  assert.equal(
    canonical({ b: 1, a: [1, "x"], "\u20ac": 1e21, "\ud83d\ude00": 0.5 }),
    '{"a":[1,"x"],"b":1,"€":1e+21,"😀":0.5}',
  );
});

test("every key input changes the key, each kept apart", () => {
  const key = idempotencyKey(BASE);
  const changed: Partial<KeyInputs>[] = [
    { tenant: "tenant-2" },
    { runId: "run-2" },
    { stepNumber: 2 },
    { callId: "call-2" },
    { toolName: "orders.cancel" },
    { toolVersion: "2" },
    { arguments: { item: 2, note: "é" } },
    { arguments: { item: "1", note: "é" } },
  ];
  for (const change of changed)
    assert.notEqual(idempotencyKey({ ...BASE, ...change }), key, JSON.stringify(change));
  // Kept apart: moving text from one input to the next is another key.
  assert.notEqual(idempotencyKey({ ...BASE, tenant: "tenant-1run", runId: "-1" }), key);
});

test("the key depends on the arguments' canonical form only", () => {
  assert.equal(idempotencyKey({ ...BASE, arguments: { note: "é", item: 1 } }), idempotencyKey(BASE));
  assert.notEqual(
    idempotencyKey({ ...BASE, arguments: { list: [1, 2] } }),
    idempotencyKey({ ...BASE, arguments: { list: [2, 1] } }),
  );
});

test("the call hash is the tool name and canonical arguments, nothing of the step", () => {
  assert.equal(callHash("a.b", { x: 1, y: 2 }), callHash("a.b", { y: 2, x: 1 }));
  assert.notEqual(callHash("a.b", { x: 1 }), callHash("a.c", { x: 1 }));
  assert.match(callHash("a.b", {}), /^[0-9a-f]{64}$/);
});
