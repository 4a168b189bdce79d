// Checks schemas/request.json with Ajv against the request corpus
// (testdata/requests, made by its generate.mjs): Ajv must accept every
// request the processor accepts and reject every request it rejects, except
// the cases marked beyond_schema, whose rule JSON Schema cannot state and
// which the schema accepts. cmd/processor's TestRequestCorpus checks the
// processor's side of the same labels. No server is needed:
//
//   cd examples/js && npm ci && node --test schema-corpus.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const schemas = new URL("../../schemas/", import.meta.url);
const corpus = new URL("./testdata/requests/", import.meta.url);

// Ajv's default strict mode refuses unknown keywords and formats; with
// strictTypes and strictTuples it also refuses, rather than logs, a keyword
// without the type it applies to, which a team compiling in strict mode
// would see. (strictRequired stays off: the oneOf of events and
// events_object names them in required on purpose.)
function compile(file) {
  const ajv = new Ajv2020({ allErrors: true, strictTypes: true, strictTuples: true });
  addFormats(ajv);
  return ajv.compile(JSON.parse(readFileSync(new URL(file, schemas), "utf8")));
}

const validator = () => compile("request.json");

test("every schema compiles with Ajv's 2020 build in strict mode", () => {
  for (const file of readdirSync(schemas).filter((f) => f.endsWith(".json"))) {
    assert.doesNotThrow(() => compile(file), file);
  }
});

function cases() {
  return readdirSync(corpus)
    .filter((f) => f.endsWith(".json"))
    .map((f) => ({ name: f.slice(0, -5), ...JSON.parse(readFileSync(new URL(f, corpus), "utf8")) }));
}

test("the request schema agrees with the processor on every case of the corpus", () => {
  const validate = validator();
  const all = cases();
  assert.ok(all.length >= 100, `${all.length} cases, want at least 100`);
  const disagreements = [];
  for (const c of all) {
    const schemaAccepts = validate(c.request);
    const want = c.expect.valid || c.expect.beyond_schema === true;
    if (schemaAccepts !== want) {
      const why = schemaAccepts ? "accepts" : `rejects (${JSON.stringify(validate.errors.slice(0, 3))})`;
      disagreements.push(`${c.name} (${c.description}): Ajv ${why}, label ${JSON.stringify(c.expect)}`);
    }
  }
  assert.deepEqual(disagreements, [], `${disagreements.length} of ${all.length} cases disagree`);
});
