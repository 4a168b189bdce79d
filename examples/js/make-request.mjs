// Builds a small Request v1 by hand, with hashes computed by cairn-canonical.mjs.
//
//   node examples/js/make-request.mjs OUT.json [--request-id ID]
//
// The lane has what trips up hand-written hashing: a tool output full of ANSI
// colour codes (control characters, escaped as \u001B), floats in provenance
// (1e-7, 1e21, 0.1 + 0.2, 1.0 and -0.0), an integer beyond 2**53, an emoji and
// U+2028 in content. Compact it offline with
// `go run ./cmd/processor compact OUT.json`, or publish it to
// conversation.compact.requested (subjects.md). It is the same request that
// examples/python/make_request.py builds.
//
// The request is written with encode(), not JSON.stringify: JSON.stringify
// cannot write a JsonFloat (1.0, -0.0) or a BigInt, and Cairn must read back
// exactly the numbers that were hashed.

import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { JsonFloat, encode, hashBytes, withHashes } from "./cairn-canonical.mjs";

const NAMESPACE = "root";
const AGENT = "agent-coder";

/** A colourful test log, long enough (over 2 048 bytes) for Cairn to project it. */
export function toolLog() {
  const lines = ["\x1b[1m$ go test ./...\x1b[0m"];
  for (let i = 1; i <= 40; i++) {
    const status = i % 10 ? "\x1b[32mok\x1b[0m  " : "\x1b[31mFAIL\x1b[0m";
    const pkg = String(i).padStart(2, "0");
    const secs = String(i * 7).padStart(3, "0");
    lines.push(`${status}\tshop/pkg${pkg}\t0.${secs}s\t\x1b[2m(coverage: ${50 + i}.${i % 10}%)\x1b[0m`);
  }
  lines.push("\x1b[31;1mFAIL\x1b[0m");
  return lines.join("\n") + "\n";
}

/** The events of the lane, with their hashes. */
export function lane(namespace = NAMESPACE) {
  const events = [
    { role: "user", provenance: { origin: "direct_user" },
      content: "Make the product cache tests pass. \u{1F600} Line\u2028separator included." },
    { role: "assistant",
      provenance: { origin: "derived", temperature: 0.7, top_p: new JsonFloat(1), cost_usd: 1e-7,
        budget_tokens: 1e21, trace_id: 9007199254740993n },
      content: null,
      tool: { calls: [{ call_id: "call_0001", name: "shell", arguments: { cmd: "go test ./...", timeout_s: 30.5 } }] } },
    { role: "tool",
      provenance: { origin: "tool", exit_code: 1, duration_s: 0.1 + 0.2, rss_mib: new JsonFloat(-0) },
      content: toolLog(),
      tool: { call_id: "call_0001", name: "shell", status: "error" },
      artifact_ids: ["0192b6e4-a000-7000-9000-00000000c001"] },
    { role: "assistant", provenance: { origin: "derived" },
      content: "pkg10, pkg20, pkg30 and pkg40 fail; they share the eviction helper. \x1b[33mFixing it.\x1b[0m" },
    { role: "user", provenance: { origin: "direct_user" }, content: "Go ahead." },
    { role: "assistant", provenance: { origin: "derived" }, content: "Fixed: the eviction helper now rounds 0.1 + 0.2 up." },
    { role: "user", provenance: { origin: "direct_user" }, content: "Thanks. Now run the linters." },
  ];
  return events.map((e, n) => {
    const i = n + 1;
    const two = String(i).padStart(2, "0");
    return withHashes({
      event_id: `0192b6e4-0000-7000-8${String(i).padStart(3, "0")}-0000c0ffee${two}`,
      run_agent_id: AGENT,
      chat_seq: i,
      lane_event_ordinal: i,
      checkpoint_namespace: namespace,
      role: e.role,
      provenance: e.provenance,
      content: e.content ?? null,
      tool: e.tool ?? null,
      artifact_ids: e.artifact_ids ?? [],
      truncated: false,
      protected: false,
      token_count: null,
    });
  });
}

/**
 * A Request v1 (subjects.md) for a new lane, trigger manual. The lane is
 * (agent-coder, namespace): a lane's first request has parent_checkpoint_id
 * null, so give each new lane its own namespace when publishing to a server.
 */
export function buildRequest(requestId = "0192b6e4-0000-7000-8000-0000c0ffee00", namespace = NAMESPACE) {
  const events = lane(namespace);
  return {
    v: 1,
    request_id: requestId,
    trigger: "manual",
    thread_id: "thread-canonical-example",
    run_id: "run-canonical-example",
    root_turn_id: "turn-1",
    run_agent_id: AGENT,
    provider_connection_id: "openai-default",
    checkpoint_namespace: namespace,
    destination_identity_hash: hashBytes("destination:thread-canonical-example"),
    parent_checkpoint_id: null,
    model_profile: { context_limit_kind: "separate_input", max_input_tokens: 40000,
      max_output_tokens: 16384, provider_reserved_tokens: 0 },
    events,
    active_input_event_ids: [events[events.length - 1].event_id],
    previous_semantic: null,
    rehydration_state: { todo: { revision: 1 }, workspace: { branch: "fix/cache", ratio: 0.5 } },
    policy: { recent_tail_min_tokens: 200, recent_tail_max_tokens: 400,
      minimum_prune_reclaim_tokens: 1000, minimum_total_reclaim_tokens: 1000 },
    focus: null,
  };
}

/** Writes the request to path as canonical JSON and returns it. */
export function makeRequest(path, requestId) {
  const request = buildRequest(requestId);
  writeFileSync(path, encode(request) + "\n");
  return request;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const at = args.indexOf("--request-id");
  const requestId = at >= 0 ? args.splice(at, 2)[1] : undefined;
  if (args.length !== 1 || (at >= 0 && !requestId)) {
    console.error("usage: node make-request.mjs OUT.json [--request-id ID]");
    process.exit(2);
  }
  makeRequest(args[0], requestId);
}
