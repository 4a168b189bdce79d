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
// request_id, asks Cairn's status service (cairn.svc.status) for an outcome
// it already recorded, and otherwise follows the COMPACT_EVENTS stream until
// the outcome with this request_id arrives. The outcome is checked against
// its schema. The exit status is 0 only for activated.

import { createHash, randomUUID } from "node:crypto";
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
export const SUBJECT_STATUS = "cairn.svc.status";
export const OUTCOME_SUBJECTS = [
  "conversation.compact.activated",
  "conversation.compact.skipped",
  "conversation.compact.failed",
];

const SCHEMAS = new URL("../../schemas/", import.meta.url);

let compiled;

/** Compiles the request and outcome schemas (JSON Schema 2020-12), once. */
export function validators() {
  if (compiled) return compiled;
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  const load = (name) => ajv.compile(JSON.parse(readFileSync(new URL(`${name}.json`, SCHEMAS), "utf8")));
  compiled = { request: load("request"), activated: load("activated"), skipped: load("skipped"), failed: load("failed") };
  return compiled;
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
 * its outcome event, checked against the schema of its kind. msgId: false
 * publishes without Nats-Msg-Id.
 *
 * An outcome Cairn recorded before the publish (the original's, for a
 * resend) is answered by the status service: the events stream may have
 * dropped the resend's event as a duplicate of the original's (a resend
 * without Nats-Msg-Id, or after the request stream's duplicate window), so
 * it would never arrive. Any later outcome is read from the events stream,
 * starting at the time the request was stored, so it is not missed either.
 */
export async function publishAndWait(nc, request, { timeoutMs = 60_000, schemas = validators(), msgId = true } = {}) {
  const body = encode(request);
  // Validate what goes on the wire, read back as any JSON consumer reads it.
  check(schemas.request, JSON.parse(body), "request");

  const js = jetstream(nc);
  const ack = await js.publish(SUBJECT_REQUESTED, body, { ...(msgId ? { msgID: request.request_id } : {}), timeout: 10_000 });
  const since = await storedAt(nc, ack);
  const recorded = await recordedOutcome(nc, request.request_id, body);
  if (recorded) return checked(schemas, recorded);

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
      return checked(schemas, event);
    }
  } finally {
    clearTimeout(timer);
    messages.stop();
  }
  throw new Error(`no outcome for request ${request.request_id} within ${timeoutMs} ms`);
}

/** event, once checked against the schema of its kind. */
function checked(schemas, event) {
  const validate = schemas[event.kind];
  if (!validate) throw new Error(`outcome of unknown kind ${event.kind}`);
  check(validate, event, `${event.kind} event`);
  return event;
}

/**
 * Asks Cairn's status service what became of requestId. With body (the
 * bytes or text published), a request_id recorded with another body answers
 * state "conflict". The reply is {request_id, state, outcome}, where outcome
 * is {subject, event_id, event} once the state is activated, skipped or
 * failed. An error reply throws an Error whose code is Cairn's error code.
 */
export async function status(nc, requestId, body) {
  const query = { request_id: requestId };
  if (body !== undefined) query.content_hash = createHash("sha256").update(body).digest("hex");
  const m = await nc.request(SUBJECT_STATUS, JSON.stringify(query), { timeout: 5_000 });
  if (m.headers?.get("Nats-Service-Error-Code")) {
    const { error } = m.json();
    throw Object.assign(new Error(`${error.code}: ${error.message}`), { code: error.code, details: error.details });
  }
  return m.json();
}

/** The outcome Cairn recorded for this request and body, or null (none yet, or no service answers). */
async function recordedOutcome(nc, requestId, body) {
  try {
    return (await status(nc, requestId, body)).outcome?.event ?? null;
  } catch {
    return null;
  }
}

/** The request stream's duplicate window, in milliseconds. */
export async function duplicateWindowMs(nc) {
  const jsm = await jetstreamManager(nc);
  return (await jsm.streams.info("COMPACT_REQUESTS")).config.duplicate_window / 1e6;
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
