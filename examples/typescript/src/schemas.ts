// JSON Schema validation (ajv, draft 2020-12): the protocol's own shapes, and the tools' input and output schemas.

import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import type { ProtocolDocument } from "./spec.js";

const DOCUMENT_ID = "toolproof-driver";
// Formats are not asserted, as Python's jsonschema does not by default: the tools' schemas are the harness's.
const OPTIONS = { strict: false, validateFormats: false, allErrors: false } as const;

/** A body that is not the shape the protocol says: one line naming the field. */
export class InvalidShape extends Error {
  constructor(
    readonly field: string,
    detail: string,
  ) {
    super(`${field}: ${detail}`);
  }
}

function where(error: ErrorObject): string {
  const path = error.instancePath.split("/").filter(Boolean).join(".");
  const missing = error.keyword === "required" ? String(error.params.missingProperty) : "";
  const extra = error.keyword === "additionalProperties" ? String(error.params.additionalProperty) : "";
  return [path, missing || extra].filter(Boolean).join(".") || "body";
}

export class Schemas {
  private readonly ajv: Ajv2020;
  private readonly wire = new Map<string, ValidateFunction>();

  constructor(document: ProtocolDocument) {
    this.ajv = new Ajv2020(OPTIONS);
    this.ajv.addSchema({ $id: DOCUMENT_ID, components: document.components });
  }

  /** Check `value` against the protocol's schema `name`, or throw InvalidShape naming the first wrong field. */
  check<T>(name: string, value: unknown): T {
    let validate = this.wire.get(name);
    if (validate === undefined) {
      validate = this.ajv.getSchema(`${DOCUMENT_ID}#/components/schemas/${name}`);
      if (validate === undefined) throw new Error(`the protocol document has no schema ${name}`);
      this.wire.set(name, validate);
    }
    if (!validate(value)) {
      const first = validate.errors?.[0];
      throw first
        ? new InvalidShape(where(first), first.message ?? "invalid")
        : new InvalidShape("body", "invalid");
    }
    return value as T;
  }

  /** A tool's own schema, compiled on its own (two tools may reuse one $id); throws when it is invalid. */
  compile(schema: Record<string, unknown>): ValidateFunction {
    return new Ajv2020(OPTIONS).compile(schema);
  }
}
