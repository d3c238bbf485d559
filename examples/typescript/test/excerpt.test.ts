import assert from "node:assert/strict";
import { test } from "node:test";
import { excerpt, markerText, wholeOutput } from "../src/excerpt.js";
import type { Envelope } from "../src/wire.js";

const MARKER = "toolproof.excerpt";

function part(text: string, trust: Envelope["trust"] = "INTERNAL", source = "t.tool"): Envelope {
  return { trust, source, text };
}

test("output at the limit is delivered whole, every part in its own envelope", () => {
  const parts = [part("abc"), part("", "USER"), part("de", "EXTERNAL_UNTRUSTED")];
  const cut = excerpt(parts, 5, MARKER);
  assert.equal(cut.excerpted, false);
  assert.deepEqual(cut.envelopes, parts);
});

test("over the limit: a byte-exact head, one marker, a byte-exact tail, labels kept", () => {
  const parts = [part("HEAD-aaaaaaaaaa", "USER"), part("bbbbbbbbbb-TAIL", "EXTERNAL_UNTRUSTED")];
  const cut = excerpt(parts, 10, MARKER);
  assert.equal(cut.excerpted, true);
  assert.deepEqual(cut.envelopes, [
    part("HEAD-", "USER"),
    { trust: "SYSTEM", source: MARKER, text: markerText(20, 30) },
    part("-TAIL", "EXTERNAL_UNTRUSTED"),
  ]);
});

test("a cut never splits a character: head and tail shrink to UTF-8 boundaries", () => {
  const cut = excerpt([part("ééééé€€€€€")], 7, MARKER); // 10 + 15 bytes; head budget 3, tail budget 4
  const texts = cut.envelopes.map((e) => e.text);
  assert.equal(texts[0], "é");
  assert.equal(texts[2], "€");
  assert.ok(!texts.join("").includes("\ufffd"));
});

test("the whole output is every part's bytes, in order", () => {
  const parts = [part("ab"), part("€")];
  assert.deepEqual(Buffer.concat([...wholeOutput(parts)]), Buffer.from("ab€", "utf8"));
});
