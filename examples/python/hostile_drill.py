"""Sends a corpus of bad requests to a running Cairn and checks that each ends in
exactly one stored outcome, quickly, and that a good request is still served.

    NATS_URL=nats://127.0.0.1:4222 python3 examples/python/hostile_drill.py [--json]

This is what an operator would do with the nats CLI, from Python alone: it publishes
every case of corpus() at once to conversation.compact.requested (malformed JSON,
wrong types and out-of-range values for each field, oversized names and ids, a huge
Nats-Msg-Id, unknown fields with enormous names, bad hashes, passed deadlines, a
missing claim-checked object, ...), then a valid request behind them, and reads the
COMPACT_EVENTS stream. It prints:

- cases: how many bad requests were sent;
- typed: how many got exactly one stored outcome whose error code is one of Cairn's
  (subjects.md, "Error codes") and whose details, when they name a rule, name one of
  subjects.md's "Rules" and the field it applies to;
- silent: how many got no stored outcome (must be 0);
- doubled: how many got more than one (must be 0);
- slowest: the longest time from publish to a case's outcome;
- good_request: the time the valid request sent behind the corpus took to activate.

The exit status is 0 only when every case got exactly one typed outcome and the good
request activated. Standard library only (nats_lite.py speaks NATS).
"""

import argparse
import base64
import datetime
import hashlib
import json
import os
import re
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import make_request  # noqa: E402
import nats_lite  # noqa: E402
import publish_and_wait as pw  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SUBJECTS_MD = os.path.join(HERE, "..", "..", "subjects.md")


def section_tokens(title):
    """The first-column tokens of the table in subjects.md's section of that title."""
    with open(SUBJECTS_MD, encoding="utf-8") as f:
        text = f.read()
    section = text.split("\n## " + title + "\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([a-z_]+)` \|", section, re.M))


def known_codes():
    """The error codes of subjects.md's table."""
    return section_tokens("Error codes")


def known_rules():
    """The details.rule values of subjects.md's Rules table."""
    return section_tokens("Rules")


def well_typed(event, codes, rules):
    """One outcome with a documented code, whose failure, when it names a
    rule, names a documented one and the field it applies to."""
    if outcome_codes(event) not in codes:
        return False
    details = event.get("error", {}).get("details") or {}
    if "rule" not in details:
        return True
    return details["rule"] in rules and "field" in details


class Case:
    """One bad message: its body (bytes), the Nats-Msg-Id it is sent with (None for
    none) and the ids its failed event may carry as request_id."""

    def __init__(self, name, body, msg_id):
        self.name, self.body, self.msg_id = name, body, msg_id
        digest = hashlib.sha256(body).hexdigest()
        self.ids = {"msg-" + digest[:32]}
        if msg_id is not None:
            self.ids.add(msg_id)
        try:
            rid = json.loads(body).get("request_id")
            if isinstance(rid, str):
                self.ids.add(rid)
        except (ValueError, AttributeError):
            pass
        self.outcomes = []  # (event, time stored)
        self.stored_at = None  # when the request stream stored the case


def corpus(tag):
    """The bad requests, each distinct and in a lane of its own."""
    cases = []
    counter = [0]

    def base():
        counter[0] += 1
        rid = "%s-%03d" % (tag, counter[0])
        return make_request.build_request(rid, "%s-ns-%03d" % (tag, counter[0]))

    def add(name, request, msg_id="same"):
        body = request if isinstance(request, bytes) else pw.encode(request)
        if msg_id == "same":
            try:
                msg_id = json.loads(body)["request_id"]
            except (ValueError, KeyError, TypeError):
                msg_id = None
            if not isinstance(msg_id, str) or not msg_id or len(msg_id) > 200:
                msg_id = None
        cases.append(Case(name, body, msg_id))

    def mutate(name, change, msg_id="same"):
        r = base()
        change(r)
        add(name, r, msg_id)

    # Not a request at all.
    for i, raw in enumerate([b"", b"{", b"[]", b"null", b"1", b'"text"', b"\xff\xfe{}", b"\xef\xbb\xbf{}",
                             b'{"v":1} trailing', b'{"v":NaN}', b'{"v":1,"v":1}']):
        add("not a request #%d" % i, raw + (b" " * i), msg_id="%s-raw-%02d" % (tag, i))
    # The version.
    for v in [None, "1", 2, 0, 1.5, True]:
        mutate("v=%r" % (v,), lambda r, v=v: r.pop("v") if v is None else r.__setitem__("v", v))
    # Every required string field: missing, wrong type, empty, too long, control character.
    for field in ["request_id", "trigger", "thread_id", "run_id", "root_turn_id", "run_agent_id",
                  "provider_connection_id", "checkpoint_namespace", "destination_identity_hash"]:
        mutate(field + " missing", lambda r, f=field: r.pop(f))
        mutate(field + " a number", lambda r, f=field: r.__setitem__(f, 5))
        mutate(field + " empty", lambda r, f=field: r.__setitem__(f, ""))
        mutate(field + " 4 KiB", lambda r, f=field: r.__setitem__(f, "n" * 4096))
        mutate(field + " control character", lambda r, f=field: r.__setitem__(f, tag + "\x07" + f))
    # The events.
    mutate("events and events_object", lambda r: r.__setitem__("events_object", "obj"))
    mutate("neither events nor events_object", lambda r: r.pop("events"))
    mutate("events empty", lambda r: r.__setitem__("events", []))
    mutate("events an object", lambda r: r.__setitem__("events", {"a": 1}))
    mutate("event content_hash wrong", lambda r: r["events"][0].__setitem__("content_hash", "0" * 64))
    mutate("event provenance_sha256 wrong", lambda r: r["events"][1].__setitem__("provenance_sha256", "f" * 64))
    mutate("event role unknown", lambda r: r["events"][0].__setitem__("role", "system"))
    mutate("event role missing", lambda r: r["events"][0].pop("role"))
    mutate("event ids repeat", lambda r: r["events"][1].__setitem__("event_id", r["events"][0]["event_id"]))
    mutate("chat_seq zero", lambda r: r["events"][0].__setitem__("chat_seq", 0))
    mutate("lane ordinals out of order", lambda r: r["events"][2].__setitem__("lane_event_ordinal", 1))
    mutate("event content a number", lambda r: r["events"][0].__setitem__("content", 7))
    mutate("event in another lane", lambda r: r["events"][0].__setitem__("checkpoint_namespace", "other"))
    mutate("event unknown field", lambda r: r["events"][0].__setitem__("colour", "red"))
    mutate("active input id unknown", lambda r: r.__setitem__("active_input_event_ids", ["nope"]))
    mutate("events_object of 4 KiB", lambda r: (r.pop("events"), r.__setitem__("events_object", "n" * 4096)))
    mutate("events_object missing", lambda r: (r.pop("events"), r.__setitem__("events_object", tag + "-absent")))
    # Policy, profile, rehydration state and the other objects.
    mutate("policy unknown field", lambda r: r["policy"].__setitem__("trigger_ratioo", 0.5))
    mutate("policy trigger_ratio 1.5", lambda r: r["policy"].__setitem__("trigger_ratio", 1.5))
    mutate("policy negative tail", lambda r: r["policy"].__setitem__("recent_tail_min_tokens", -1))
    mutate("policy a string", lambda r: r.__setitem__("policy", "default"))
    mutate("policy mode native", lambda r: r["policy"].__setitem__("mode", "native"))
    mutate("model_profile missing", lambda r: r.pop("model_profile"))
    mutate("model_profile empty", lambda r: r.__setitem__("model_profile", {}))
    mutate("max_input_tokens negative", lambda r: r["model_profile"].__setitem__("max_input_tokens", -5))
    mutate("rehydration_state an array", lambda r: r.__setitem__("rehydration_state", [1]))
    mutate("rehydration_state 1 MB", lambda r: r.__setitem__("rehydration_state", {"blob": "x" * 1_000_000}))
    mutate("previous_semantic malformed", lambda r: r.__setitem__("previous_semantic", {"objective": 3}))
    mutate("parent on a new lane", lambda r: r.__setitem__("parent_checkpoint_id", "no-such-checkpoint"))
    mutate("scope a string", lambda r: r.__setitem__("scope", "x"))
    mutate("scope kind empty", lambda r: r.__setitem__("scope", {"kind": "", "id": "y"}))
    mutate("harvest a string", lambda r: r.__setitem__("harvest", "yes"))
    mutate("focus 3 000 bytes", lambda r: r.__setitem__("focus", "f" * 3000))
    mutate("render unknown", lambda r: r.__setitem__("render", "xml"))
    mutate("deadline passed", lambda r: r.__setitem__("deadline_at", "2001-01-01T00:00:00Z"))
    mutate("deadline not a time", lambda r: r.__setitem__("deadline_at", "yesterday"))
    mutate("rendered_request_bytes negative", lambda r: r.__setitem__("rendered_request_bytes", -1))
    mutate("requested_max_output_tokens a string", lambda r: r.__setitem__("requested_max_output_tokens", "lots"))
    mutate("nothing to compact", lambda r: (r.__setitem__("events", r["events"][:2]),
                                            r.__setitem__("active_input_event_ids", [r["events"][1]["event_id"]])))
    # Unknown fields that a naive echo would blow up.
    mutate("unknown field", lambda r: r.__setitem__("colour", "red"))
    mutate("unknown field named '<' x 300 000", lambda r: r.__setitem__("<" * 300000, 1))
    mutate("unknown field named U+2028 x 200 000", lambda r: r.__setitem__("\u2028" * 200000, 1))
    mutate("8 000 unknown fields", lambda r: r.update({"f%04d" % i: i for i in range(8000)}))
    # Message ids.
    mutate("Nats-Msg-Id of 65 480 bytes", lambda r: None, msg_id=tag + "m" * (65480 - len(tag)))
    mutate("Nats-Msg-Id differs from request_id", lambda r: None, msg_id=tag + "-other-id")
    mutate("no Nats-Msg-Id and a 4 KiB request_id", lambda r: r.__setitem__("request_id", "r" * 4096), msg_id=None)
    return cases


def outcome_codes(event):
    if event.get("kind") == "failed":
        return event.get("error", {}).get("code")
    return event.get("kind")


def stream_last_seq(nc):
    return pw.js_api(nc, "STREAM.INFO." + pw.EVENTS_STREAM, None)["state"]["last_seq"]


def stored_message(nc, stream, seq):
    """The message at seq in stream as (its body, the time the server stored it in
    seconds), or None when there is none."""
    answer = json.loads(nc.request("$JS.API.STREAM.MSG.GET." + stream, json.dumps({"seq": seq}).encode()).data)
    if "message" not in answer:
        return None
    message = answer["message"]
    return base64.b64decode(message.get("data", "")), server_time(message["time"])


def server_time(text):
    """Seconds since the epoch of an RFC 3339 time with up to nine fraction digits."""
    whole, _, rest = text.rstrip("Z").partition(".")
    stamp = datetime.datetime.fromisoformat(whole).replace(tzinfo=datetime.timezone.utc).timestamp()
    return stamp + (float("0." + rest) if rest else 0.0)


def drill(nc, timeout=60.0, settle=3.0):
    """Runs the corpus and returns the figures as a dict. Latencies are measured
    between the times the server stored each request and its outcome, so they do
    not depend on how fast this script reads."""
    tag = "drill-" + uuid.uuid4().hex[:8]
    cases = corpus(tag)
    by_id = {i: c for c in cases for i in c.ids}
    start = stream_last_seq(nc)
    for c in cases:
        # A PubAck says the stream stored the case: from then on, Cairn owes it an outcome.
        ack = nc.jetstream_publish(pw.SUBJECT_REQUESTED, c.body, msg_id=c.msg_id)
        if ack.get("duplicate"):
            raise nats_lite.NatsError("case %r was dropped as a duplicate: the corpus must differ per run" % c.name)
        c.stored_at = stored_message(nc, ack["stream"], ack["seq"])[1]
    good = pw.example_request(tag + "-good", tag + "-good-ns")
    good_ack = nc.jetstream_publish(pw.SUBJECT_REQUESTED, pw.encode(good), msg_id=good["request_id"])
    good_stored = stored_message(nc, good_ack["stream"], good_ack["seq"])[1]
    good_outcome = None
    # Read COMPACT_EVENTS until every case and the good request have an outcome,
    # then until it stays quiet for settle seconds: a double would come after.
    seq, deadline, quiet_until = start + 1, time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        got = stored_message(nc, pw.EVENTS_STREAM, seq) if seq <= stream_last_seq(nc) else None
        if got is None:
            done = good_outcome is not None and all(c.outcomes for c in cases)
            if done and quiet_until is None:
                quiet_until = time.monotonic() + settle
            if quiet_until is not None and time.monotonic() >= quiet_until:
                break
            nc.flush()
            continue
        seq += 1
        quiet_until = None
        event, at = json.loads(got[0]), got[1]
        if event.get("request_id") == good["request_id"]:
            good_outcome = (event, at)
        elif event.get("request_id") in by_id:
            by_id[event["request_id"]].outcomes.append((event, at))
    codes, rules = known_codes() | {"activated", "skipped"}, known_rules()
    typed = [c for c in cases if len(c.outcomes) == 1 and well_typed(c.outcomes[0][0], codes, rules)]
    latency = {c.name: round(c.outcomes[0][1] - c.stored_at, 3) for c in cases if c.outcomes}
    return {
        "cases": len(cases),
        "typed": len(typed),
        "silent": sum(1 for c in cases if not c.outcomes),
        "doubled": sum(1 for c in cases if len(c.outcomes) > 1),
        "slowest_s": max(latency.values()) if latency else None,
        "good_request": None if good_outcome is None else {
            "outcome": good_outcome[0].get("kind"), "seconds": round(good_outcome[1] - good_stored, 3)},
        "by_case": [{"case": c.name, "outcomes": [outcome_codes(e) for e, _ in c.outcomes],
                     "seconds": latency.get(c.name)} for c in cases],
    }


def passed(figures):
    good = figures["good_request"]
    return (figures["typed"] == figures["cases"] and figures["silent"] == 0 and figures["doubled"] == 0
            and good is not None and good["outcome"] == "activated")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the outcomes")
    args = parser.parse_args()
    with nats_lite.connect(os.environ.get("NATS_URL", "nats://127.0.0.1:4222")) as nc:
        figures = drill(nc, args.timeout)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for row in figures["by_case"]:
            print("%-45s %-32s %s s" % (row["case"], ", ".join(row["outcomes"]) or "NO OUTCOME", row["seconds"]))
        print("cases %(cases)d, typed %(typed)d, silent %(silent)d, doubled %(doubled)d, slowest %(slowest_s)s s"
              % figures)
        print("good request behind them: %s" % json.dumps(figures["good_request"]))
    return 0 if passed(figures) else 1


if __name__ == "__main__":
    sys.exit(main())
