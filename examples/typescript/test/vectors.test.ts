// The cross-language vectors of spec/vectors/canonical-hashes.json, checked with this example's own
// canonicalization (npm canonicalize): the Python side checks the same file (tests/test_canonical_vectors.py).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { canonical, sha256 } from "../src/keys.js";

const HERE = dirname(fileURLToPath(import.meta.url)); // dist/test
const VECTORS = resolve(HERE, "../../../../spec/vectors/canonical-hashes.json");

interface Vector {
  name: string;
  kind: "canonical" | "definition_sha256" | "idempotency_key" | "call_hash" | "script_hash";
  input: string;
  canonical: string;
  sha256: string;
}

interface Invalid {
  name: string;
  input: string;
  why: string;
}

const file = JSON.parse(readFileSync(VECTORS, "utf8")) as { vectors: Vector[]; invalid: Invalid[] };

const DEFINITION_FIELDS = ["name", "title", "description", "inputSchema", "outputSchema", "annotations"];

/** The material each kind hashes, as the file's `materials` describes it. */
function material(kind: Vector["kind"], input: unknown): unknown {
  const o = input as Record<string, unknown>;
  switch (kind) {
    case "canonical":
      return input;
    case "definition_sha256":
      return Object.fromEntries(DEFINITION_FIELDS.map((field) => [field, o[field] ?? null]));
    case "idempotency_key":
      return [
        "toolproof-key/2",
        o.tenant,
        o.run_id,
        o.step_number,
        o.call_id,
        o.tool_name,
        o.tool_version ?? null,
        o.arguments,
      ];
    case "call_hash":
      return [o.tool_name, o.arguments];
    case "script_hash":
      return ["toolproof-script/1", o.script, o.source];
  }
}

/** A lone surrogate: with the u flag, a paired surrogate is one code point and does not match. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** What this side can see of a value RFC 8785 refuses, once JSON.parse has read it. */
function refusable(value: unknown): boolean {
  if (typeof value === "number") return !Number.isFinite(value);
  if (typeof value === "string") return LONE_SURROGATE.test(value);
  if (Array.isArray(value)) return value.some(refusable);
  if (value !== null && typeof value === "object") {
    return Object.entries(value).some(([key, member]) => LONE_SURROGATE.test(key) || refusable(member));
  }
  return false;
}

test("there are vectors of every kind", () => {
  const kinds = new Set(file.vectors.map((v) => v.kind));
  assert.deepEqual([...kinds].sort(), [
    "call_hash",
    "canonical",
    "definition_sha256",
    "idempotency_key",
    "script_hash",
  ]);
});

for (const vector of file.vectors) {
  test(`vector: ${vector.name} (${vector.kind})`, () => {
    const value = material(vector.kind, JSON.parse(vector.input));
    assert.equal(canonical(value), vector.canonical);
    assert.equal(sha256(value), vector.sha256);
  });
}

for (const entry of file.invalid) {
  test(`invalid: ${entry.name}`, () => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(entry.input);
    } catch {
      return; // Not JSON at all here (NaN): refused by the parser.
    }
    if (entry.why === "no IEEE 754 double equals it") {
      // JSON.parse rounds such an integer silently, so this side cannot see it once parsed (the file says never
      // to send one); what is checked is that the literal really has no double.
      const literal = entry.input.match(/-?\d{16,}/)?.[0] ?? "";
      assert.notEqual(BigInt(Number(literal)), BigInt(literal));
      return;
    }
    assert.ok(refusable(parsed), `${entry.input} parsed to a value this side would canonicalize`);
  });
}
