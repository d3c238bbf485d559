// Decision 12: large output is excerpted head-and-tail, never summarized, and the whole of it is an artifact.
//
// The limit is on the whole output (the UTF-8 bytes of all its parts together). Over it, the model gets the
// longest prefix that fits limit/2 bytes, one marker, and the longest suffix that fits the rest; neither cuts a
// character, and each piece keeps the envelope (label and source) of the part it comes from.

import type { Envelope, TrustLabel } from "./wire.js";

export interface Excerpt {
  envelopes: Envelope[];
  excerpted: boolean;
}

/** The marker's text: the only text an excerpt adds to the output. */
export function markerText(omitted: number, total: number): string {
  return `[… ${omitted} of ${total} bytes omitted; the whole output is in the artifact …]`;
}

function isContinuation(byte: number): boolean {
  return (byte & 0xc0) === 0x80; // UTF-8 continuation bytes are 0b10xxxxxx.
}

/** The last character boundary of `data` at or before `offset`. */
function boundaryAtOrBefore(data: Buffer, offset: number): number {
  let at = offset;
  while (at > 0 && at < data.length && isContinuation(data[at] as number)) at -= 1;
  return at;
}

/** The first character boundary of `data` at or after `offset`. */
function boundaryAtOrAfter(data: Buffer, offset: number): number {
  let at = offset;
  while (at < data.length && isContinuation(data[at] as number)) at += 1;
  return at;
}

/**
 * Excerpt `parts` to at most `limit` bytes of delivered text (the marker is extra).
 *
 * Within the limit every part is delivered whole, one envelope each. `markerSource` is the spec's
 * (x-toolproof.excerpt_marker_source); the marker is labelled SYSTEM: the platform wrote it.
 */
export function excerpt(parts: Envelope[], limit: number, markerSource: string): Excerpt {
  const sizes = parts.map((part) => Buffer.byteLength(part.text, "utf8"));
  const total = sizes.reduce((a, b) => a + b, 0);
  if (total <= limit) return { envelopes: parts, excerpted: false };
  const headBudget = Math.floor(limit / 2);
  const tailBudget = limit - headBudget;
  const head: Envelope[] = [];
  let headBytes = 0;
  for (const part of parts) {
    const data = Buffer.from(part.text, "utf8");
    const taken = boundaryAtOrBefore(data, Math.min(headBudget - headBytes, data.length));
    if (taken > 0) head.push({ ...part, text: data.subarray(0, taken).toString("utf8") });
    headBytes += taken;
    if (taken < data.length) break; // The head is a prefix: once a character does not fit, nothing after it.
  }
  const tail: Envelope[] = [];
  let tailBytes = 0;
  for (let i = parts.length - 1; i >= 0; i -= 1) {
    const part = parts[i] as Envelope;
    const data = Buffer.from(part.text, "utf8");
    const room = tailBudget - tailBytes;
    const start = boundaryAtOrAfter(data, Math.max(0, data.length - room));
    if (start < data.length) tail.unshift({ ...part, text: data.subarray(start).toString("utf8") });
    tailBytes += data.length - start;
    if (start > 0) break; // The tail is a suffix.
  }
  const marker: Envelope = {
    trust: "SYSTEM" as TrustLabel,
    source: markerSource,
    text: markerText(total - headBytes - tailBytes, total),
  };
  return { envelopes: [...head, marker, ...tail], excerpted: true };
}

/** The whole output as the artifact stores it: every part's UTF-8 bytes, in order, one part at a time. */
export function* wholeOutput(parts: Envelope[]): Iterable<Buffer> {
  for (const part of parts) yield Buffer.from(part.text, "utf8");
}
