import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { dirname, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { ConfigurationError } from "../src/call.js";
import { DEFECTS, isDefect } from "../src/defects.js";
import { registry } from "../src/registry.js";
import { Schemas } from "../src/schemas.js";
import { loadSpec } from "../src/spec.js";
import type { ToolSpec } from "../src/wire.js";

const HERE = dirname(fileURLToPath(import.meta.url)); // dist/test
const DOCUMENT = resolve(HERE, "../../../../spec/driver-openapi.json");
const MAIN = resolve(HERE, "../src/main.js");

/** Two tools under one name, told apart by their version. */
const TWINS = [
  { name: "files.echo", version: "1" },
  { name: "files.echo", version: "2" },
] as ToolSpec[];

function register(defect: "duplicate-names" | null): Map<string, { spec: ToolSpec }> {
  const spec = loadSpec(DOCUMENT);
  return registry(spec, new Schemas(spec.document), TWINS, defect);
}

test("without a defect, a name registered twice is refused naming it", () => {
  assert.throws(() => register(null), ConfigurationError);
  assert.throws(() => register(null), /name="files\.echo"/);
});

test("under duplicate-names, the later of two tools of one name replaces the earlier", () => {
  const found = register("duplicate-names");
  assert.equal(found.size, 1);
  assert.equal(found.get("files.echo")?.spec.version, "2");
});

test("the defects are named, each with the one rule it breaks", () => {
  assert.deepEqual(Object.keys(DEFECTS), ["duplicate-names"]);
  assert.match(DEFECTS["duplicate-names"], /^D5\.4: /);
  assert.ok(isDefect("duplicate-names"));
  assert.ok(!isDefect("toString"));
});

test("an unknown --defect exits 2 with one line naming the known ones", () => {
  const args = [MAIN, "--port", "8787", "--defect", "bogus"];
  const done = spawnSync(process.execPath, args, { encoding: "utf8" });
  assert.equal(done.status, 2);
  assert.ok(
    done.stderr.startsWith('toolproof-typescript: error: --defect "bogus": not one of duplicate-names\n'),
    done.stderr,
  );
});

test("--help lists each defect", () => {
  const done = spawnSync(process.execPath, [MAIN, "--help"], { encoding: "utf8" });
  assert.equal(done.status, 0);
  assert.ok(done.stdout.includes(`  duplicate-names  ${DEFECTS["duplicate-names"]}\n`), done.stdout);
});
