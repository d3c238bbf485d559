// `node dist/src/main.js --port PORT [--spec FILE] [--defect NAME]`: serve the pipeline on 127.0.0.1:PORT until
// SIGTERM or SIGINT. Under `toolproof supervise` the document's `supervised_env` variable is set: then, and only
// then, crash plans of mode sigkill are accepted.

import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { DEFECTS, type Defect, isDefect } from "./defects.js";
import { Driver, NAME } from "./server.js";
import { loadSpec, SpecError } from "./spec.js";

const USAGE = "usage: node dist/src/main.js --port PORT [--spec FILE] [--defect NAME]";
/** The checkout's protocol document, from dist/src/ of examples/typescript. */
const DEFAULT_SPEC = resolve(dirname(fileURLToPath(import.meta.url)), "../../../../spec/driver-openapi.json");

function fail(line: string): never {
  process.stderr.write(`toolproof-typescript: error: ${line}\n${USAGE}\n`);
  process.exit(2);
}

async function main(argv: string[]): Promise<void> {
  let values: { port?: string; spec?: string; defect?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        port: { type: "string" },
        spec: { type: "string" },
        defect: { type: "string" },
        help: { type: "boolean" },
      },
    }));
  } catch (error) {
    fail((error as Error).message);
  }
  if (values.help) {
    process.stdout.write(
      `${USAGE}\n\nServe this pipeline behind toolproof's driver protocol on http://127.0.0.1:PORT.\n` +
        `--spec: the protocol document (default: ${DEFAULT_SPEC}); its x-toolproof constants are read from it.\n` +
        "Under toolproof supervise -- node ... (which starts it again after a SIGKILL) the environment variable\n" +
        "  the document names (TOOLPROOF_SUPERVISED=1) is set: only then are crash plans of mode sigkill\n" +
        "  accepted (else 422 not-supported).\n" +
        "--defect NAME: break one rule on purpose, to show an expectations file at work (off by default):\n" +
        Object.entries(DEFECTS)
          .map(([name, what]) => `  ${name}  ${what}\n`)
          .join("") +
        "Exit status 2 for bad input; 0 after SIGTERM or SIGINT.\n",
    );
    return;
  }
  const port = Number(values.port);
  if (values.port === undefined || !Number.isInteger(port) || port <= 0 || port >= 65536) {
    fail(`--port ${JSON.stringify(values.port ?? null)}: not a TCP port`);
  }
  let defect: Defect | null = null;
  if (values.defect !== undefined) {
    if (!isDefect(values.defect)) {
      fail(`--defect ${JSON.stringify(values.defect)}: not one of ${Object.keys(DEFECTS).join(", ")}`);
    }
    defect = values.defect;
  }
  let driver: Driver;
  try {
    const spec = loadSpec(values.spec ?? DEFAULT_SPEC);
    driver = new Driver(spec, port, process.env[spec.constants.supervised_env] === "1", defect);
  } catch (error) {
    if (error instanceof SpecError) fail(error.message);
    throw error;
  }
  try {
    await driver.listen();
  } catch (error) {
    fail(`--port ${port}: cannot listen on 127.0.0.1 (${(error as Error).message})`);
  }
  process.stderr.write(`serving ${NAME} at ${driver.url}\n`);
  if (defect !== null) process.stderr.write(`with the defect ${defect} on purpose: ${DEFECTS[defect]}\n`);
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => process.exit(0));
}

await main(process.argv.slice(2));
