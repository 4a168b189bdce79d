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

  test("a hand-built request is activated, and a resend gets the same outcome", async (t) => {
    const request = pw.exampleRequest();
    assert.equal(request.events[0].content_hash, undefined, "the first event leaves its hashes to Cairn");
    const event = await pw.publishAndWait(nc, request);
    assert.equal(event.kind, "activated", pw.describe(event));
    assert.equal(event.request_id, request.request_id);
    assert.equal(event.checkpoint_id, request.request_id);
    assert.equal(event.generation, 1);
    assert.ok(event.tokens_after < event.tokens_before, pw.describe(event));

    // The stream drops the resend (same Nats-Msg-Id); its outcome is the original's.
    assert.deepEqual(await resendWithinASecond(t, request), event);
    // Without Nats-Msg-Id the stream stores the resend, and the events stream
    // drops its event as a duplicate of the original's: the status service answers.
    assert.deepEqual(await resendWithinASecond(t, request, { msgId: false }), event);
  });

  test("a resend after the duplicate window gets its outcome", async (t) => {
    const windowMs = await pw.duplicateWindowMs(nc);
    if (windowMs > 10_000) {
      t.skip(`the request stream's duplicate window is ${windowMs} ms: run serve with --duplicate-window 5s`);
      return;
    }
    const request = pw.exampleRequest();
    const event = await pw.publishAndWait(nc, request);
    assert.equal(event.kind, "activated", pw.describe(event));
    // The original was stored before its outcome occurred (whole seconds,
    // rounded down: one more second covers it).
    const past = Date.parse(event.occurred_at) + 1_000 + windowMs;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, past - Date.now())));
    assert.deepEqual(await resendWithinASecond(t, request), event);
  });

  test("status: an unknown request, and a bad ask", async () => {
    assert.equal((await pw.status(nc, `never-sent-${Date.now()}`)).state, "unknown");
    await assert.rejects(pw.status(nc, ""), { code: "invalid_service_request" });
  });

  async function resendWithinASecond(t, request, options = {}) {
    const start = performance.now();
    const event = await pw.publishAndWait(nc, request, { timeoutMs: 1_000, ...options });
    const ms = performance.now() - start;
    assert.ok(ms < 1_000, `the resend's outcome took ${ms} ms`);
    t.diagnostic(`resend (Nats-Msg-Id: ${options.msgId !== false}): outcome in ${ms.toFixed(1)} ms`);
    return event;
  }

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
