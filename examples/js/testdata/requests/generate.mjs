// Writes the request corpus: one file per case, {description, expect, request}.
// Each case is a change to a base request of a 3-event lane and says what the processor does
// with it: accepted, or rejected with the error's code, details.field and
// details.rule. schema-corpus.test.mjs checks that Ajv with schemas/request.json
// agrees with every label; cmd/processor's TestRequestCorpus checks that
// `processor request validate` gives it. A case marked beyond_schema breaks a
// rule JSON Schema cannot state (hash values, the lane's order, lengths in
// UTF-8 bytes beyond ASCII): the schema accepts it and the service rejects it.
//
//   node examples/js/testdata/requests/generate.mjs
import { readdirSync, rmSync, writeFileSync } from "node:fs";

import { withHashes } from "../../cairn-canonical.mjs";

const dir = new URL("./", import.meta.url);
const base = baseRequest();

// baseRequest is a valid request of a 3-event lane, every member set.
function baseRequest() {
  const lane = { run_agent_id: "agent-coder", checkpoint_namespace: "root" };
  const events = Array.from({ length: 3 }, (_, i) => withHashes({
    event_id: `ev-${i + 1}`, ...lane, chat_seq: i + 1, lane_event_ordinal: i + 1,
    role: ["user", "assistant", "tool"][i % 3], provenance: { origin: "test" },
    content: `message ${i + 1}`, tool: null, artifact_ids: [], truncated: false, protected: false, token_count: null,
  }));
  return {
    v: 1, request_id: "req-corpus-1", trigger: "auto", thread_id: "thread-corpus", ...lane,
    run_id: "run-1", root_turn_id: "turn-1", provider_connection_id: "openai-default",
    destination_identity_hash: "a".repeat(64), parent_checkpoint_id: null,
    model_profile: { context_limit_kind: "separate_input", max_input_tokens: 40000, max_output_tokens: 16384, provider_reserved_tokens: 0 },
    requested_max_output_tokens: 0, events, active_input_event_ids: ["ev-3"], previous_semantic: null,
    rehydration_state: { workspace: { branch: "main" } }, policy: { version: 1, enabled: true }, focus: null,
    structural_pressure: false, anti_thrash: null,
  };
}

const clone = (v) => structuredClone(v);
const accepted = { valid: true };
const rejected = (code, field, rule) => ({ valid: false, code, field, rule });
const request = (field, rule) => rejected("invalid_compaction_request", field, rule);
const event = (field, rule) => rejected("invalid_compaction_event", field, rule);

const cases = [];
// add registers a case: change edits a copy of the base in place.
// text, when given, edits the case's JSON text (for what JSON.stringify
// cannot write, such as 1.0).
function add(name, description, expect, change = () => {}, text = (s) => s) {
  const r = clone(base);
  change(r);
  cases.push({ name, description, expect, request: r, text });
}
// first is the first event of r with its hashes dropped, so that a change of
// its content leaves a consistent event.
function first(r) {
  const e = r.events[0];
  delete e.content_hash;
  delete e.provenance_sha256;
  return e;
}
const hex64 = "0123456789abcdef".repeat(4);
const long = (n, c = "a") => c.repeat(n);

// Accepted.
add("valid-base", "the base request as it is", accepted);
add("valid-content-absent", "an event without content (and without its hash, which Cairn computes)", accepted, (r) => {
  delete first(r).content;
});
add("valid-content-null", "an event whose content is null", accepted, (r) => {
  first(r).content = null;
});
add("valid-hashes-absent", "every event without content_hash and provenance_sha256", accepted, (r) => {
  for (const e of r.events) delete e.content_hash, delete e.provenance_sha256;
});
add("valid-hashes-null", "every event with null content_hash and provenance_sha256", accepted, (r) => {
  for (const e of r.events) (e.content_hash = null), (e.provenance_sha256 = null);
});
add("valid-minimal", "only the required members, events without optional members", accepted, (r) => {
  for (const k of ["active_input_event_ids", "anti_thrash", "focus", "parent_checkpoint_id", "policy", "previous_semantic",
    "requested_max_output_tokens", "structural_pressure"]) delete r[k];
  r.events = r.events.map((e) => ({ event_id: e.event_id, run_agent_id: e.run_agent_id, chat_seq: e.chat_seq,
    lane_event_ordinal: e.lane_event_ordinal, checkpoint_namespace: e.checkpoint_namespace, role: e.role,
    provenance: e.provenance, content: e.content, tool: e.tool, artifact_ids: e.artifact_ids }));
});
add("valid-one-event", "a lane of one event", accepted, (r) => {
  r.events = r.events.slice(0, 1);
  delete r.active_input_event_ids;
});
add("valid-policy-empty", "an empty policy: every field takes its default", accepted, (r) => { r.policy = {}; });
add("valid-policy-null", "policy null", accepted, (r) => { r.policy = null; });
add("valid-policy-partial", "a policy with one field", accepted, (r) => { r.policy = { trigger_ratio: 0.9 }; });
add("valid-nullable-members", "every optional member that may be null is null", accepted, (r) => {
  Object.assign(r, { accounting: null, anti_thrash: null, previous_semantic: null, focus: null, scope: null, harvest: null,
    deadline_at: null, parent_checkpoint_id: null, rendered_request_bytes: null, new_tokens_since_compaction: null });
});
add("valid-event-nullables", "event members that may be null are null", accepted, (r) => {
  const e = first(r);
  Object.assign(e, { tool: null, artifact_ids: null, token_count: null });
});
add("valid-events-object", "the lane claim-checked in the Object Store (checked offline up to the events)", accepted, (r) => {
  delete r.events;
  delete r.active_input_event_ids;
  r.events_object = "lanes/agent-coder/root/2026-09-02";
});
add("valid-scope", "a scope of its own", accepted, (r) => { r.scope = { kind: "project", id: "shop" }; });
add("valid-harvest-false", "harvest false", accepted, (r) => { r.harvest = false; });
add("valid-deadline", "a deadline far ahead", accepted, (r) => { r.deadline_at = "2099-01-01T00:00:00Z"; });
add("valid-deadline-offset", "a deadline with an offset and fractional seconds", accepted, (r) => { r.deadline_at = "2099-01-01T02:00:00.5+02:00"; });
add("valid-focus", "a focus", accepted, (r) => { r.focus = "the cache invalidation bug"; });
add("valid-focus-2000", "a focus of exactly 2000 bytes", accepted, (r) => { r.focus = long(2000); });
add("valid-token-count", "an event with its own token count", accepted, (r) => { r.events[0].token_count = 12; });
add("valid-token-count-zero", "an event with token count 0", accepted, (r) => { r.events[0].token_count = 0; });
for (const trigger of ["auto", "manual", "overflow", "model_switch_preflight"]) {
  add(`valid-trigger-${trigger}`, `trigger ${trigger}`, accepted, (r) => { r.trigger = trigger; });
}
add("valid-render-openai", "render openai_chat_v1", accepted, (r) => { r.render = "openai_chat_v1"; });
add("valid-render-canonical", "render canonical_v1", accepted, (r) => { r.render = "canonical_v1"; });
add("valid-rendered-bytes", "rendered_request_bytes given", accepted, (r) => { r.rendered_request_bytes = 150000; });
add("valid-id-200", "a request_id of 200 bytes", accepted, (r) => { r.request_id = long(200); });
add("valid-id-unicode", "a request_id with non-ASCII letters", accepted, (r) => { r.request_id = "requête-ü-1"; });
add("valid-parent", "a parent checkpoint named", accepted, (r) => { r.parent_checkpoint_id = "0192b6e4-0000-7000-8000-0000000e0001"; });
add("valid-tool-arguments-string", "a tool call whose arguments are a JSON string", accepted, (r) => {
  first(r).tool = { calls: [{ call_id: "c1", name: "run_tests", arguments: "{\"pkg\":\"./...\"}" }] };
});
add("valid-tool-arguments-object", "a tool call whose arguments are an object", accepted, (r) => {
  first(r).tool = { calls: [{ call_id: "c1", name: "run_tests", arguments: { pkg: "./..." } }] };
});
add("valid-provenance-string", "provenance may be any JSON value", accepted, (r) => { first(r).provenance = "direct_user"; });
add("valid-provenance-null", "provenance null", accepted, (r) => { first(r).provenance = null; });
add("valid-accounting", "accounting with a method", accepted, (r) => { r.accounting = { method: "conservative_utf8" }; });
add("valid-accounting-categories", "accounting category bytes", accepted, (r) => { r.accounting = { category_bytes: { system: 1200, tools: 0 } }; });
add("valid-model-shared", "a shared input/output window", accepted, (r) => {
  r.model_profile = { context_limit_kind: "shared_input_output", max_context_tokens: 60000, max_output_tokens: 8000 };
});
add("valid-structural-pressure", "structural_pressure true", accepted, (r) => { r.structural_pressure = true; });
add("valid-new-tokens", "new_tokens_since_compaction given", accepted, (r) => { r.new_tokens_since_compaction = 9000; });
add("valid-rehydration-empty", "an empty rehydration state", accepted, (r) => { r.rehydration_state = {}; });
add("valid-truncated", "an event the producer cut", accepted, (r) => { first(r).truncated = true; });
add("valid-protected", "a protected event", accepted, (r) => { r.events[0].protected = true; });
add("valid-artifact-ids", "an event naming artifacts", accepted, (r) => { first(r).artifact_ids = ["art-1", "art-2"]; });

// The envelope.
add("v-missing", "no v", rejected("unsupported_version", "v", "enum"), (r) => { delete r.v; });
add("v-2", "v 2", rejected("unsupported_version", "v", "enum"), (r) => { r.v = 2; });
add("v-string", "v \"1\"", rejected("unsupported_version", "v", "enum"), (r) => { r.v = "1"; });
add("unknown-member", "a member the contract does not define", request("priority", "unknown"), (r) => { r.priority = 1; });
for (const k of ["request_id", "trigger", "thread_id", "run_id", "root_turn_id", "run_agent_id", "checkpoint_namespace",
  "provider_connection_id", "destination_identity_hash", "model_profile", "rehydration_state"]) {
  add(`missing-${k.replaceAll("_", "-")}`, `no ${k}`, request(k, "required"), (r) => { delete r[k]; });
}
add("missing-events", "neither events nor events_object", request("events", "required"), (r) => {
  delete r.events;
  delete r.active_input_event_ids;
});
add("events-and-object", "both events and events_object", request("events_object", "exclusive"), (r) => { r.events_object = "lane-1"; });
add("events-empty", "events: []", request("events", "range"), (r) => {
  r.events = [];
  delete r.active_input_event_ids;
});
add("events-null", "events: null", request("events", "type"), (r) => {
  r.events = null;
  delete r.active_input_event_ids;
});
add("events-object-type", "events is an object", request("events", "type"), (r) => {
  r.events = {};
  delete r.active_input_event_ids;
});
add("events-object-empty", "events_object \"\"", request("events_object", "name"), (r) => {
  delete r.events;
  delete r.active_input_event_ids;
  r.events_object = "";
});
add("events-object-number", "events_object 5", request("events_object", "name"), (r) => {
  delete r.events;
  delete r.active_input_event_ids;
  r.events_object = 5;
});

// Identities and names.
add("request-id-empty", "request_id \"\"", request("request_id", "name"), (r) => { r.request_id = ""; });
add("request-id-201", "a request_id of 201 bytes", request("request_id", "name"), (r) => { r.request_id = long(201); });
add("request-id-newline", "a request_id with a line feed", request("request_id", "name"), (r) => { r.request_id = "a\nb"; });
add("request-id-c1", "a request_id with a C1 control character", request("request_id", "name"), (r) => { r.request_id = "a\u0085b"; });
add("request-id-number", "request_id 5", request("request_id", "type"), (r) => { r.request_id = 5; });
add("thread-id-null", "thread_id null", request("thread_id", "type"), (r) => { r.thread_id = null; });
add("run-id-number", "run_id 7", request("run_id", "type"), (r) => { r.run_id = 7; });
add("namespace-empty", "checkpoint_namespace \"\"", request("checkpoint_namespace", "name"), (r) => {
  r.checkpoint_namespace = "";
  for (const e of r.events) e.checkpoint_namespace = "";
});
add("parent-number", "parent_checkpoint_id 5", request("parent_checkpoint_id", "type"), (r) => { r.parent_checkpoint_id = 5; });
add("parent-empty", "parent_checkpoint_id \"\"", request("parent_checkpoint_id", "name"), (r) => { r.parent_checkpoint_id = ""; });
add("trigger-enum", "trigger sometimes", request("trigger", "enum"), (r) => { r.trigger = "sometimes"; });
add("trigger-number", "trigger 1", request("trigger", "type"), (r) => { r.trigger = 1; });
add("destination-short", "a destination hash that is not 64 hex digits", request("destination_identity_hash", "pattern"), (r) => { r.destination_identity_hash = "abc"; });
add("destination-upper", "a destination hash in upper case", request("destination_identity_hash", "pattern"), (r) => { r.destination_identity_hash = hex64.toUpperCase(); });

// Events.
add("event-string", "an event that is a string", event("event", "type"), (r) => { r.events[0] = "hello"; });
add("event-unknown-field", "an event with a member the contract does not define", event("priority", "unknown"), (r) => { r.events[0].priority = 1; });
for (const k of ["event_id", "run_agent_id", "chat_seq", "lane_event_ordinal", "checkpoint_namespace", "role", "provenance"]) {
  add(`event-missing-${k.replaceAll("_", "-")}`, `an event without ${k}`, event(k, "required"), (r) => { delete first(r)[k]; });
}
add("event-id-number", "event_id 5", event("event_id", "type"), (r) => { r.events[0].event_id = 5; });
add("event-id-empty", "event_id \"\"", event("event_id", "range"), (r) => { r.events[0].event_id = ""; });
add("event-id-201", "an event_id of 201 bytes", event("event_id", "range"), (r) => { r.events[0].event_id = long(201); });
add("valid-event-id-tab", "an event_id may hold control characters (it is no name)", accepted, (r) => { r.events[0].event_id = "a\tb"; });
add("chat-seq-string", "chat_seq \"1\"", event("chat_seq", "type"), (r) => { r.events[0].chat_seq = "1"; });
add("chat-seq-float", "chat_seq 1.5", event("chat_seq", "type"), (r) => { r.events[0].chat_seq = 1.5; });
add("chat-seq-zero", "chat_seq 0", event("chat_seq", "range"), (r) => { r.events[0].chat_seq = 0; });
add("ordinal-zero", "lane_event_ordinal 0", event("lane_event_ordinal", "range"), (r) => { r.events[0].lane_event_ordinal = 0; });
add("ordinal-string", "lane_event_ordinal \"1\"", event("lane_event_ordinal", "type"), (r) => { r.events[0].lane_event_ordinal = "1"; });
add("role-enum", "role system", event("role", "enum"), (r) => { r.events[0].role = "system"; });
add("role-number", "role 1", event("role", "type"), (r) => { r.events[0].role = 1; });
add("content-number", "content 5", event("content", "type"), (r) => { first(r).content = 5; });
add("content-object", "content {}", event("content", "type"), (r) => { first(r).content = {}; });
add("content-hash-number", "content_hash 5", event("content_hash", "type"), (r) => { r.events[0].content_hash = 5; });
add("content-hash-short", "content_hash abc", event("content_hash", "pattern"), (r) => { r.events[0].content_hash = "abc"; });
add("content-hash-upper", "content_hash in upper case", event("content_hash", "pattern"), (r) => { r.events[0].content_hash = r.events[0].content_hash.toUpperCase(); });
add("content-hash-empty", "content_hash \"\"", event("content_hash", "pattern"), (r) => { r.events[0].content_hash = ""; });
add("provenance-hash-short", "provenance_sha256 abc", event("provenance_sha256", "pattern"), (r) => { r.events[0].provenance_sha256 = "abc"; });
add("provenance-hash-bool", "provenance_sha256 true", event("provenance_sha256", "type"), (r) => { r.events[0].provenance_sha256 = true; });
add("tool-string", "tool \"run_tests\"", event("tool", "type"), (r) => { first(r).tool = "run_tests"; });
add("tool-array", "tool []", event("tool", "type"), (r) => { first(r).tool = []; });
add("valid-tool-arguments-number", "a tool call whose arguments are a number (sent as its JSON text)", accepted, (r) => {
  first(r).tool = { calls: [{ call_id: "c1", name: "run_tests", arguments: 5 }] };
});
add("artifact-ids-string", "artifact_ids \"a\"", event("artifact_ids", "type"), (r) => { first(r).artifact_ids = "a"; });
add("artifact-ids-numbers", "artifact_ids [1]", event("artifact_ids", "type"), (r) => { first(r).artifact_ids = [1]; });
add("artifact-ids-129", "129 artifact ids", event("artifact_ids", "range"), (r) => {
  first(r).artifact_ids = Array.from({ length: 129 }, (_, i) => `art-${i}`);
});
add("truncated-string", "truncated \"yes\"", event("truncated", "type"), (r) => { first(r).truncated = "yes"; });
add("protected-number", "protected 1", event("protected", "type"), (r) => { r.events[0].protected = 1; });
add("token-count-string", "token_count \"5\"", event("token_count", "type"), (r) => { r.events[0].token_count = "5"; });
add("token-count-negative", "token_count -1", event("token_count", "range"), (r) => { r.events[0].token_count = -1; });

// Other members.
add("model-profile-string", "model_profile \"gpt\"", rejected("unknown_context_limit", "model_profile", "type"), (r) => { r.model_profile = "gpt"; });
add("model-profile-kind-enum", "context_limit_kind sliding", rejected("unknown_context_limit", "model_profile.context_limit_kind", "enum"), (r) => { r.model_profile.context_limit_kind = "sliding"; });
add("model-profile-input-string", "max_input_tokens \"40000\"", rejected("unknown_context_limit", "model_profile.max_input_tokens", "type"), (r) => { r.model_profile.max_input_tokens = "40000"; });
add("policy-string", "policy \"default\"", rejected("invalid_compaction_policy", "policy", "type"), (r) => { r.policy = "default"; });
add("policy-unknown", "a policy member the contract does not define", rejected("invalid_compaction_policy", "policy.speed", "unknown"), (r) => { r.policy = { speed: 1 }; });
add("policy-ratio-range", "trigger_ratio 2", rejected("invalid_compaction_policy", "policy.trigger_ratio", "range"), (r) => { r.policy = { trigger_ratio: 2 }; });
add("policy-ratio-string", "trigger_ratio \"0.9\"", rejected("invalid_compaction_policy", "policy.trigger_ratio", "type"), (r) => { r.policy = { trigger_ratio: "0.9" }; });
add("policy-version", "policy version 2", rejected("invalid_compaction_policy", "policy.version", "enum"), (r) => { r.policy = { version: 2 }; });
add("policy-mode-enum", "policy mode fast", rejected("invalid_compaction_policy", "policy.mode", "enum"), (r) => { r.policy = { mode: "fast" }; });
add("policy-tail-zero", "recent_tail_min_tokens 0", rejected("invalid_compaction_policy", "policy.recent_tail_min_tokens", "range"), (r) => { r.policy = { recent_tail_min_tokens: 0 }; });
add("rehydration-array", "rehydration_state []", rejected("invalid_rehydration_state", "rehydration_state", "type"), (r) => { r.rehydration_state = []; });
add("rehydration-null", "rehydration_state null", rejected("invalid_rehydration_state", "rehydration_state", "type"), (r) => { r.rehydration_state = null; });
add("rehydration-string", "rehydration_state \"x\"", rejected("invalid_rehydration_state", "rehydration_state", "type"), (r) => { r.rehydration_state = "x"; });
add("accounting-string", "accounting \"x\"", request("accounting", "type"), (r) => { r.accounting = "x"; });
add("valid-accounting-method-unknown", "an accounting method Cairn does not know counts as conservative_utf8", accepted, (r) => { r.accounting = { method: "tiktoken" }; });
add("accounting-unknown", "accounting with a member the contract does not define", request("accounting", "unknown"), (r) => { r.accounting = { speed: 1 }; });
add("accounting-category-negative", "a negative category", rejected("invalid_context_budget", "accounting.category_bytes.system", "range"), (r) => { r.accounting = { category_bytes: { system: -1 } }; });
add("accounting-category-string", "a category that is not a number", rejected("invalid_context_budget", "accounting.category_bytes.system", "type"), (r) => { r.accounting = { category_bytes: { system: "1" } }; });
add("accounting-reported-negative", "reported_input_tokens -1", rejected("invalid_context_budget", "accounting.reported_input_tokens", "range"), (r) => { r.accounting = { reported_input_tokens: -1 }; });
add("focus-2001", "a focus of 2001 bytes", request("focus", "range"), (r) => { r.focus = long(2001); });
add("focus-number", "focus 5", request("focus", "type"), (r) => { r.focus = 5; });
add("scope-kind-empty", "a scope with an empty kind", request("scope", "name"), (r) => { r.scope = { kind: "", id: "x" }; });
add("scope-missing-id", "a scope without id", request("scope", "type"), (r) => { r.scope = { kind: "thread" }; });
add("scope-unknown", "a scope with a member the contract does not define", request("scope", "type"), (r) => { r.scope = { kind: "thread", id: "x", team: "y" }; });
add("scope-string", "scope \"thread\"", request("scope", "type"), (r) => { r.scope = "thread"; });
add("harvest-string", "harvest \"yes\"", request("harvest", "type"), (r) => { r.harvest = "yes"; });
add("structural-pressure-number", "structural_pressure 1", request("structural_pressure", "type"), (r) => { r.structural_pressure = 1; });
add("deadline-words", "deadline_at tomorrow", request("deadline_at", "format"), (r) => { r.deadline_at = "tomorrow"; });
add("deadline-number", "deadline_at 1700000000", request("deadline_at", "format"), (r) => { r.deadline_at = 1700000000; });
add("render-enum", "render markdown", request("render", "enum"), (r) => { r.render = "markdown"; });
add("rendered-bytes-negative", "rendered_request_bytes -1", request("rendered_request_bytes", "range"), (r) => { r.rendered_request_bytes = -1; });
add("rendered-bytes-string", "rendered_request_bytes \"5\"", request("rendered_request_bytes", "type"), (r) => { r.rendered_request_bytes = "5"; });
add("max-output-negative", "requested_max_output_tokens -1", request("requested_max_output_tokens", "range"), (r) => { r.requested_max_output_tokens = -1; });
add("new-tokens-negative", "new_tokens_since_compaction -1", rejected("invalid_compaction_state", "new_tokens_since_compaction", "range"), (r) => { r.new_tokens_since_compaction = -1; });
add("active-ids-string", "active_input_event_ids \"x\"", request("active_input_event_ids", "type"), (r) => { r.active_input_event_ids = "x"; });
add("active-ids-numbers", "active_input_event_ids [5]", request("active_input_event_ids", "type"), (r) => { r.active_input_event_ids = [5]; });
add("active-ids-repeated", "an active id given twice", request("active_input_event_ids[1]", "unique"), (r) => {
  r.active_input_event_ids = ["ev-3", "ev-3"];
});
add("anti-thrash-string", "anti_thrash \"x\"", rejected("invalid_compaction_state", "anti_thrash", "type"), (r) => { r.anti_thrash = "x"; });
add("anti-thrash-negative", "a negative count in anti_thrash", rejected("invalid_compaction_state", "anti_thrash.successful_auto_compactions", "range"), (r) => {
  r.anti_thrash = { successful_auto_compactions: -1 };
});
add("previous-semantic-string", "previous_semantic \"x\"", rejected("invalid_compaction_semantic", "previous_semantic", "schema"), (r) => { r.previous_semantic = "x"; });

add("deadline-lower-t", "deadline_at with a lower-case t and z", request("deadline_at", "format"), (r) => { r.deadline_at = "2099-01-01t00:00:00z"; });
add("deadline-space", "deadline_at with a space for the T", request("deadline_at", "format"), (r) => { r.deadline_at = "2099-01-01 00:00:00Z"; });
add("deadline-no-zone", "deadline_at without a zone", request("deadline_at", "format"), (r) => { r.deadline_at = "2099-01-01T00:00:00"; });
add("thread-id-empty", "thread_id \"\"", request("thread_id", "name"), (r) => { r.thread_id = ""; });
add("root-turn-id-control", "root_turn_id with an escape character", request("root_turn_id", "name"), (r) => { r.root_turn_id = "turn\u001b1"; });
add("provider-connection-201", "a provider_connection_id of 201 bytes", request("provider_connection_id", "name"), (r) => { r.provider_connection_id = long(201); });
add("valid-model-profile-extra", "model_profile members compaction does not read are ignored", accepted, (r) => { r.model_profile.capabilities = { vision: true }; });
add("model-profile-tokenizer-number", "model_profile.tokenizer 5", rejected("unknown_context_limit", "model_profile.tokenizer", "type"), (r) => { r.model_profile.tokenizer = 5; });
add("valid-model-profile-tokenizer", "a tokenizer named", accepted, (r) => { r.model_profile.tokenizer = "o200k_base"; });
add("artifact-id-empty", "an empty artifact id", event("artifact_ids", "range"), (r) => { first(r).artifact_ids = [""]; });
add("valid-render-null", "render null", accepted, (r) => { r.render = null; });
add("valid-max-output-null", "requested_max_output_tokens null", accepted, (r) => { r.requested_max_output_tokens = null; });
add("valid-structural-pressure-null", "structural_pressure null", accepted, (r) => { r.structural_pressure = null; });
add("valid-active-ids-null", "active_input_event_ids null", accepted, (r) => { r.active_input_event_ids = null; });
add("truncated-null", "truncated null", event("truncated", "type"), (r) => { first(r).truncated = null; });
add("events-object-null", "events_object null beside events", request("events_object", "exclusive"), (r) => { r.events_object = null; });

// Beyond the schema: rules JSON Schema cannot state.
const beyond = (expect) => ({ ...expect, beyond_schema: true });
add("beyond-content-hash-mismatch", "a well-formed content_hash of other content", beyond(event("content_hash", "hash")), (r) => { r.events[0].content_hash = hex64; });
add("beyond-provenance-hash-mismatch", "a well-formed provenance_sha256 of another provenance", beyond(event("provenance_sha256", "hash")), (r) => { r.events[0].provenance_sha256 = hex64; });
add("beyond-lane-agent", "an event of another agent", beyond(request("events[1].run_agent_id", "lane")), (r) => { first(r); r.events[1].run_agent_id = "agent-other"; delete r.events[1].content_hash; delete r.events[1].provenance_sha256; });
add("beyond-lane-order", "ordinals out of order", beyond(request("events[1].lane_event_ordinal", "order")), (r) => { r.events[1].lane_event_ordinal = 1; });
add("beyond-lane-duplicate-id", "two events with one id", beyond(request("events[1].event_id", "unique")), (r) => { r.events[1].event_id = r.events[0].event_id; });
add("beyond-active-unknown", "an active id no event carries", beyond(request("active_input_event_ids[0]", "reference")), (r) => { r.active_input_event_ids = ["nobody"]; });
add("beyond-chat-seq-float", "chat_seq 1.0: JSON Schema calls it an integer, Cairn reads a float", beyond(event("chat_seq", "type")), () => {},
  (s) => s.replace('"chat_seq": 1,', '"chat_seq": 1.0,'));
add("beyond-id-bytes", "a request_id of 100 characters but 300 bytes", beyond(request("request_id", "name")), (r) => { r.request_id = long(100, "€"); });

for (const f of readdirSync(dir)) if (f.endsWith(".json")) rmSync(new URL(f, dir));
for (const c of cases) {
  const body = { description: c.description, expect: c.expect, request: c.request };
  writeFileSync(new URL(`${c.name}.json`, dir), c.text(JSON.stringify(body, null, 1)) + "\n");
}
console.log(`${cases.length} cases`);
