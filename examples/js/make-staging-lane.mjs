// Builds a request for a coding agent's lane of N events (default 50) that a
// test or staging setup can compact: user turns, assistant turns that call a
// tool, and tool results of about 4 KiB stored as artifacts, each about the
// size a real agent's is. docs/request.md ("A lane that compacts") gives the
// outcome of each window size, as `processor request validate` reports it.
//
//   node examples/js/make-staging-lane.mjs OUT.json [--events 50] [--window 64000] [--trigger manual]
//   go run ./cmd/processor request validate OUT.json
//
// The hashes are left out: Cairn computes them (docs/request.md, "Hashes a
// producer may leave out").

import { writeFileSync } from "node:fs";

const LANE = { run_agent_id: "agent-staging", checkpoint_namespace: "root" };
const PROSE = "the cache layer reads product rows and writes them back after the admin API updates a price ".repeat(8);
const TEST_LOG = "=== RUN TestCache --- PASS (0.01s)\n".repeat(110);

/** The lane's events: user, assistant (a tool call), tool (its result), repeated. */
export function stagingEvents(n) {
  return Array.from({ length: n }, (_, i) => {
    const role = ["user", "assistant", "tool"][i % 3];
    const event = { event_id: `ev-${i + 1}`, ...LANE, chat_seq: i + 1, lane_event_ordinal: i + 1, role,
      provenance: { origin: role === "user" ? "direct_user" : "model" }, content: `${role} turn ${i + 1}: ${PROSE}` };
    if (role === "assistant") event.tool = { calls: [{ call_id: `call-${i + 1}`, name: "run_tests", arguments: { pkg: "./..." } }] };
    if (role === "tool") {
      event.tool = { call_id: `call-${i}` };
      event.content = `ok ./...\n${TEST_LOG}`;
      event.artifact_ids = [`artifact-${i + 1}`];
    }
    return event;
  });
}

/** A request for the lane, sent to a model with an input window of window tokens. */
export function stagingRequest({ events = 50, window = 64000, trigger = "manual" } = {}) {
  const lane = stagingEvents(events);
  return {
    v: 1, request_id: `req-staging-${events}-${window}-${trigger}`, trigger, thread_id: "thread-staging", ...LANE,
    run_id: "run-1", root_turn_id: "turn-1", provider_connection_id: "openai-default",
    destination_identity_hash: "a".repeat(64),
    model_profile: { context_limit_kind: "separate_input", max_input_tokens: window, max_output_tokens: 4096 },
    events: lane, active_input_event_ids: [lane[lane.length - 1].event_id], rehydration_state: {},
  };
}

const args = process.argv.slice(2);
if (args.length > 0) {
  const option = (name, fallback) => {
    const at = args.indexOf(`--${name}`);
    return at >= 0 ? args[at + 1] : fallback;
  };
  const request = stagingRequest({ events: Number(option("events", 50)), window: Number(option("window", 64000)),
    trigger: option("trigger", "manual") });
  writeFileSync(args[0], JSON.stringify(request) + "\n");
}
