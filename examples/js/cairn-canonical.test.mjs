// Checks cairn-canonical.mjs against Cairn's test vectors:
//   node --test examples/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as cc from "./cairn-canonical.mjs";

const doc = JSON.parse(readFileSync(new URL("../../canonical/testdata/vectors.json", import.meta.url), "utf8"));

function input(v) {
  return "input_hex" in v ? Buffer.from(v.input_hex, "hex") : Buffer.from(v.input, "utf8");
}

// checkVector returns undefined if the vector passes, else what went wrong.
function checkVector(v) {
  let got;
  try {
    got = cc.canonicalize(input(v));
  } catch (e) {
    if (!(e instanceof cc.CanonicalError)) return `raised ${e}`;
    const kind = e instanceof cc.DuplicateKeyError ? "duplicate_key" : "invalid_json";
    if (v.error === kind) return undefined;
    return v.error ? `error ${kind}, want ${v.error}` : `rejected: ${e.message}`;
  }
  if (v.error) return `accepted as ${got.slice(0, 80)}; want error ${v.error}`;
  if (got !== v.canonical) return `encoded ${got.slice(0, 200)}, want ${v.canonical.slice(0, 200)}`;
  if (cc.hashBytes(got) !== v.sha256) return `hash ${cc.hashBytes(got)}, want ${v.sha256}`;
  return undefined;
}

function failures(list, check) {
  const out = [];
  for (const v of list) {
    let problem;
    try {
      problem = check(v);
    } catch (e) {
      problem = `raised ${e}`;
    }
    if (problem !== undefined) out.push(`${v.name}: ${problem}`);
  }
  return out;
}

test(`${doc.vectors.length} encoding vectors`, () => {
  assert.ok(doc.vectors.length > 200);
  assert.deepEqual(failures(doc.vectors, checkVector), []);
});

test(`${doc.events.length} event hash vectors`, () => {
  assert.deepEqual(failures(doc.events, (v) => {
    const event = cc.parse(v.event);
    assert.equal(cc.encode(cc.contentPayload(event)), v.content_payload);
    assert.equal(cc.contentHash(event), v.content_hash);
    assert.equal(cc.encode(event.provenance), v.provenance);
    assert.equal(cc.provenanceSha256(event), v.provenance_sha256);
  }), []);
});

test(`${doc.checkpoints.length} checkpoint hash vectors`, () => {
  assert.deepEqual(failures(doc.checkpoints, (v) => {
    assert.equal(cc.checkpointHash(cc.parse(v.checkpoint)), v.checkpoint_hash);
  }), []);
});

test("native values encode as Cairn reads their JSON.stringify text", () => {
  const value = { f: 1e-7, g: 1e21, h: 2.0, i: 2, z: -0, one: new cc.JsonFloat(1), big: 9007199254740993n, s: "\x1b[0m", t: [true, null] };
  assert.equal(cc.encode(value),
    '{"big":9007199254740993,"f":1.0e-7,"g":1.0e21,"h":2,"i":2,"one":1.0,"s":"\\u001B[0m","t":[true,null],"z":0}');
  const { one, big, ...plain } = value;
  assert.equal(cc.encode(plain), cc.canonicalize(JSON.stringify(plain)));
  for (const bad of [NaN, Infinity, undefined, new Date(0), new Map(), "\ud800", { a: () => 1 }]) {
    assert.throws(() => cc.encode(bad), cc.CanonicalError);
  }
  let deep = [];
  for (let i = 0; i < cc.MAX_DEPTH; i++) deep = [deep];
  cc.encode(deep);
  assert.throws(() => cc.encode([deep]), cc.CanonicalError);
});

test("keys sort by UTF-8 bytes, not UTF-16 code units", () => {
  const keys = ["\u{1F600}", "\uE000", "\uFFFF", "a"];
  assert.equal(cc.encode(Object.fromEntries(keys.map((k) => [k, 0]))), '{"a":0,"\uE000":0,"\uFFFF":0,"\u{1F600}":0}');
});
