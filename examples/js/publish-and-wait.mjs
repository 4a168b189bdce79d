// Publishes a hand-built request to a running Cairn and waits for its outcome,
// as a JavaScript or TypeScript service would:
//
//   cd examples/js && npm ci
//   NATS_URL=nats://127.0.0.1:4222 node publish-and-wait.mjs [--request-id ID] [--namespace NS]
//
// It builds the request of make-request.mjs (ANSI escapes in a tool output,
// floats in provenance) in a lane of its own, leaves out the hashes of one
// event (Cairn computes them), checks the request against schemas/request.json,
// publishes it to conversation.compact.requested with Nats-Msg-Id =
// request_id, and follows the COMPACT_EVENTS stream until the outcome with
// this request_id arrives. The outcome is checked against its schema. The
// exit status is 0 only for activated.

import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { connect } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { encode } from "./cairn-canonical.mjs";
import { buildRequest } from "./make-request.mjs";

export const SUBJECT_REQUESTED = "conversation.compact.requested";
export const EVENTS_STREAM = "COMPACT_EVENTS";
export const OUTCOME_SUBJECTS = [
  "conversation.compact.activated",
  "conversation.compact.skipped",
  "conversation.compact.failed",
];

const SCHEMAS = new URL("../../schemas/", import.meta.url);

/** Compiles the request and outcome schemas (JSON Schema 2020-12). */
export function validators() {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  const load = (name) => ajv.compile(JSON.parse(readFileSync(new URL(`${name}.json`, SCHEMAS), "utf8")));
  return { request: load("request"), activated: load("activated"), skipped: load("skipped"), failed: load("failed") };
}

/** Throws unless value passes the compiled schema validate. */
export function check(validate, value, what) {
  if (!validate(value)) {
    const errors = validate.errors.map((e) => `${e.instancePath || "/"} ${e.message}`).join("; ");
    throw new Error(`${what} does not match its schema: ${errors}`);
  }
}

/**
 * The example request in a new lane (its own namespace), with the hashes of
 * the first event left out: Cairn computes a hash that is absent and verifies
 * one that is present.
 */
export function exampleRequest(requestId = randomUUID(), namespace = `js-${randomUUID()}`) {
  const request = buildRequest(requestId, namespace);
  delete request.events[0].content_hash;
  delete request.events[0].provenance_sha256;
  return request;
}

/**
 * Publishes request (checked against schemas/request.json first) and returns
 * its outcome event, checked against the schema of its kind. The outcome is
 * read from the events stream starting at the time the request was stored,
 * so an outcome published before we start reading (or the outcome of the
 * original, for a resend the stream dropped as a duplicate) is not missed.
 */
export async function publishAndWait(nc, request, { timeoutMs = 60_000, schemas = validators() } = {}) {
  const body = encode(request);
  // Validate what goes on the wire, read back as any JSON consumer reads it.
  check(schemas.request, JSON.parse(body), "request");

  const js = jetstream(nc);
  const ack = await js.publish(SUBJECT_REQUESTED, body, { msgID: request.request_id, timeout: 10_000 });
  const since = await storedAt(nc, ack);

  const consumer = await js.consumers.get(EVENTS_STREAM, {
    filter_subjects: OUTCOME_SUBJECTS,
    deliver_policy: DeliverPolicy.StartTime,
    opt_start_time: since.toISOString(),
  });
  const messages = await consumer.consume();
  const timer = setTimeout(() => messages.stop(), timeoutMs);
  try {
    for await (const m of messages) {
      const event = m.json();
      if (event.request_id !== request.request_id) continue;
      const validate = schemas[event.kind];
      if (!validate) throw new Error(`outcome of unknown kind ${event.kind}`);
      check(validate, event, `${event.kind} event`);
      return event;
    }
  } finally {
    clearTimeout(timer);
    messages.stop();
  }
  throw new Error(`no outcome for request ${request.request_id} within ${timeoutMs} ms`);
}

/** When the request message acknowledged by ack was first stored (server clock). */
async function storedAt(nc, ack) {
  const jsm = await jetstreamManager(nc);
  const stored = await jsm.streams.getMessage(ack.stream, { seq: ack.seq });
  if (!stored) throw new Error(`request message ${ack.stream}/${ack.seq} not found`);
  return stored.time;
}

/**
 * Connects to a NATS URL; credentials in it (nats://user:password@host:4222)
 * are passed as user and pass, which the client does not take from the URL.
 */
export async function connectTo(url = "nats://127.0.0.1:4222") {
  const u = new URL(url.includes("://") ? url : `nats://${url}`);
  const auth = u.username ? { user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) } : {};
  u.username = "";
  u.password = "";
  return connect({ servers: u.toString(), ...auth });
}

/** One line about an outcome event. */
export function describe(event) {
  switch (event.kind) {
    case "activated":
      return `activated ${event.status} generation ${event.generation}: ${event.tokens_before} -> ${event.tokens_after} tokens`;
    case "skipped":
      return `skipped: ${event.reason}`;
    case "failed":
      return `failed ${event.error.code}: ${event.error.message} ${JSON.stringify(event.error.details ?? {})}`;
  }
  return event.kind;
}

async function main(args) {
  const opt = (name) => {
    const at = args.indexOf(name);
    return at >= 0 ? args[at + 1] : undefined;
  };
  const nc = await connectTo(process.env.NATS_URL);
  try {
    const request = exampleRequest(opt("--request-id"), opt("--namespace"));
    const event = await publishAndWait(nc, request);
    console.log(`${request.request_id}: ${describe(event)}`);
    return event.kind === "activated" ? 0 : 1;
  } finally {
    await nc.drain();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      console.error(err.message ?? err);
      process.exit(1);
    },
  );
}
