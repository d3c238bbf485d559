import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { loadSpec, SpecError } from "../src/spec.js";

const HERE = dirname(fileURLToPath(import.meta.url)); // dist/test
const DOCUMENT = resolve(HERE, "../../../../spec/driver-openapi.json");
const MAIN = resolve(HERE, "../src/main.js");

test("the constants come from the protocol document: outcome table, thresholds, step order", () => {
  const spec = loadSpec(DOCUMENT);
  assert.equal(spec.constants.outcomes.unknown_tool.status, "DENIED");
  assert.equal(spec.constants.steps.length, 14);
  assert.equal(spec.constants.steps[0], "resolve");
  assert.ok(spec.nameGrammar.test("orders.place"));
  assert.ok(!spec.nameGrammar.test("Orders"));
});

test("a document before revision 3 is refused with one line", () => {
  const old = join(mkdtempSync(join(tmpdir(), "ts-spec-")), "old.json");
  writeFileSync(old, JSON.stringify({ info: { version: "2.2.0" }, components: { schemas: {} } }));
  assert.throws(() => loadSpec(old), SpecError);
  assert.throws(
    () => loadSpec(old),
    /^Error: --spec .*old\.json: version "2\.2\.0" is not driver protocol 2\.3/,
  );
});

for (const [args, line] of [
  [["--port", "0"], 'toolproof-typescript: error: --port "0": not a TCP port'],
  [
    ["--port", "8787", "--spec", "/no/such/file.json"],
    "toolproof-typescript: error: --spec /no/such/file.json:",
  ],
  [["--bogus"], "toolproof-typescript: error: Unknown option '--bogus'"],
] as const) {
  test(`bad input ${args.join(" ")} exits 2 with one line and no trace`, () => {
    const done = spawnSync(process.execPath, [MAIN, ...args], { encoding: "utf8" });
    assert.equal(done.status, 2);
    assert.ok(done.stderr.startsWith(line), done.stderr);
    assert.ok(!done.stderr.includes("    at "), done.stderr);
  });
}
