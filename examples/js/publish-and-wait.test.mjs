// Publishes requests to a running Cairn (processor serve) and checks the
// outcomes. Skipped unless NATS_URL names the server:
//
//   cd examples/js && npm ci
//   NATS_URL=nats://127.0.0.1:4222 node --test publish-and-wait.test.mjs
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { contentHash } from "./cairn-canonical.mjs";

const url = process.env.NATS_URL;

describe("publish to a running Cairn", { skip: url ? false : "NATS_URL is not set" }, () => {
  // Imported here so that the vector tests run without the npm dependencies.
  let pw;
  let nc;
  before(async () => {
    pw = await import("./publish-and-wait.mjs");
    nc = await pw.connectTo(url);
  });
  after(async () => {
    await nc?.drain();
  });

  test("a hand-built request is activated, and a resend gets the same outcome", async () => {
    const request = pw.exampleRequest();
    assert.equal(request.events[0].content_hash, undefined, "the first event leaves its hashes to Cairn");
    const event = await pw.publishAndWait(nc, request);
    assert.equal(event.kind, "activated", pw.describe(event));
    assert.equal(event.request_id, request.request_id);
    assert.equal(event.checkpoint_id, request.request_id);
    assert.equal(event.generation, 1);
    assert.ok(event.tokens_after < event.tokens_before, pw.describe(event));

    // The stream drops the resend (same Nats-Msg-Id); its outcome is the original's.
    const again = await pw.publishAndWait(nc, request);
    assert.equal(again.event_id, event.event_id);
  });

  test("a wrong content_hash fails with invalid_compaction_event naming the field", async () => {
    const request = pw.exampleRequest();
    const bad = request.events[1];
    const right = contentHash(bad);
    const wrong = right.replace(/^./, (c) => (c === "0" ? "1" : "0"));
    bad.content_hash = wrong;
    const event = await pw.publishAndWait(nc, request);
    assert.equal(event.kind, "failed", pw.describe(event));
    assert.equal(event.error.code, "invalid_compaction_event");
    assert.equal(event.error.retryable, false);
    const d = event.error.details;
    assert.equal(d.field, "content_hash", JSON.stringify(d));
    assert.equal(d.event_id, bad.event_id);
    assert.equal(d.expected, right);
    assert.equal(d.received, wrong);
  });
});
