// The registry: name -> tool, refusing at startup what decision 5 forbids.

import type { ValidateFunction } from "ajv/dist/2020.js";
import { ConfigurationError, type Registered } from "./call.js";
import type { Defect } from "./defects.js";
import type { Schemas } from "./schemas.js";
import type { Spec } from "./spec.js";
import type { ToolSpec } from "./wire.js";

/**
 * Name -> tool, refusing what decision 5 forbids at startup.
 *
 * @param defect `duplicate-names` (src/defects.ts): a name registered twice is not refused, the later tool
 *   replaces the earlier, and D5.4 fails. Off (null) unless the driver was started with it.
 */
export function registry(
  spec: Spec,
  schemas: Schemas,
  tools: ToolSpec[],
  defect: Defect | null = null,
): Map<string, Registered> {
  const found = new Map<string, Registered>();
  const k = spec.constants;
  for (const tool of tools) {
    const name = tool.name;
    const quoted = JSON.stringify(name);
    if (name.length > k.max_name_length || !spec.nameGrammar.test(name)) {
      throw new ConfigurationError(
        `tool name=${quoted} does not match domain.name (the spec's name_grammar); rename it`,
      );
    }
    const domain = name.split(".", 1)[0] as string;
    if ((tool.source ?? "BUILTIN") === "BUILTIN" && k.reserved_domains.includes(domain)) {
      throw new ConfigurationError(
        `builtin name=${quoted} is in a reserved domain ${JSON.stringify(k.reserved_domains)}; rename it`,
      );
    }
    if (found.has(name) && defect !== "duplicate-names")
      throw new ConfigurationError(`two tools are registered as name=${quoted}; register each name once`);
    let input: ValidateFunction;
    let output: ValidateFunction | null = null;
    try {
      input = schemas.compile((tool.input_schema ?? { type: "object" }) as Record<string, unknown>);
      if (tool.output_schema) output = schemas.compile(tool.output_schema as Record<string, unknown>);
    } catch (error) {
      throw new ConfigurationError(`tool name=${quoted} has an invalid schema: ${(error as Error).message}`);
    }
    found.set(name, { spec: tool, input, output });
  }
  return found;
}
