"""Publishes a hand-built request to a running Cairn and waits for its outcome.

    NATS_URL=nats://127.0.0.1:4222 python3 examples/python/publish_and_wait.py [--request-id ID] [--namespace NS]

It builds the request of make_request.py (ANSI escapes in a tool output, floats in
provenance) in a lane of its own, leaves out the hashes of one event (Cairn
computes them), subscribes to the outcome subjects and then publishes the
request to conversation.compact.requested with Nats-Msg-Id = request_id, and
waits for the event with this request_id (for a resend, reads it from the
COMPACT_EVENTS stream). The exit status is 0 only for
activated. Standard library only (nats_lite.py speaks NATS).
"""

import argparse
import json
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import make_request  # noqa: E402
import nats_lite  # noqa: E402

SUBJECT_REQUESTED = "conversation.compact.requested"
OUTCOME_KINDS = ("activated", "skipped", "failed")
OUTCOME_SUBJECTS = ["conversation.compact." + k for k in OUTCOME_KINDS]
EVENTS_STREAM = "COMPACT_EVENTS"


def example_request(request_id=None, namespace=None):
    """The example request in a new lane (its own namespace), with the hashes of
    the first event left out: Cairn computes a hash that is absent and verifies
    one that is present."""
    request = make_request.build_request(request_id or str(uuid.uuid4()),
                                         namespace or "py-%s" % uuid.uuid4())
    del request["events"][0]["content_hash"]
    del request["events"][0]["provenance_sha256"]
    return request


def encode(request):
    """The request as JSON text. It need not be canonical: Cairn hashes the values
    it reads, and json.dumps writes every float so that it reads back the same."""
    return json.dumps(request, ensure_ascii=False, allow_nan=False).encode("utf-8")


def publish_and_wait(nc, request, timeout=60.0):
    """Publishes request and returns its outcome event (a dict), waiting at most
    timeout seconds.

    The subscription to the outcome subjects is made before the request is
    published, so the outcome cannot be missed. A resend that the stream drops as
    a duplicate (same Nats-Msg-Id inside its window) gets no new event: the outcome
    of the original is read from the COMPACT_EVENTS stream instead."""
    deadline = time.monotonic() + timeout
    # The three subjects rather than conversation.compact.>: nats.conf lets a
    # producer subscribe to the outcomes only.
    sub = nc.subscribe(*OUTCOME_SUBJECTS)
    try:
        nc.flush()
        ack = nc.jetstream_publish(SUBJECT_REQUESTED, encode(request), msg_id=request["request_id"])
        if ack.get("duplicate"):
            nc.unsubscribe(sub)
            sub = None
            return read_outcome(nc, request["request_id"], ack, deadline)
        return _wait(nc, sub, request["request_id"], deadline)
    finally:
        if sub is not None:
            nc.unsubscribe(sub)


def read_outcome(nc, request_id, ack, deadline):
    """Reads the outcome of an already published request from COMPACT_EVENTS,
    starting at the time its request message (ack: its PubAck) was stored,
    through an ephemeral push consumer that the server removes once idle."""
    stored = js_api(nc, "STREAM.MSG.GET." + ack["stream"], {"seq": ack["seq"]})["message"]
    inbox = "_INBOX." + uuid.uuid4().hex
    sub = nc.subscribe(inbox)
    try:
        config = {"deliver_policy": "by_start_time", "opt_start_time": stored["time"],
                  "ack_policy": "none", "deliver_subject": inbox, "filter_subjects": OUTCOME_SUBJECTS,
                  "mem_storage": True, "num_replicas": 1, "inactive_threshold": 30 * 10**9}
        info = js_api(nc, "CONSUMER.CREATE." + EVENTS_STREAM, {"stream_name": EVENTS_STREAM, "config": config})
        try:
            return _wait(nc, sub, request_id, deadline)
        finally:
            js_api(nc, "CONSUMER.DELETE.%s.%s" % (EVENTS_STREAM, info["name"]), None)
    finally:
        nc.unsubscribe(sub)


def js_api(nc, api, body):
    """Calls the JetStream API ($JS.API.<api>) and returns its answer."""
    payload = b"" if body is None else json.dumps(body).encode()
    answer = json.loads(nc.request("$JS.API." + api, payload).data)
    if "error" in answer:
        raise nats_lite.NatsError("%s: %s" % (api, answer["error"]))
    return answer


def _wait(nc, sub, request_id, deadline):
    """Returns the first outcome event for request_id on subscription sub."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise nats_lite.TimeoutError("no outcome for request %s in time" % request_id)
        event = json.loads(nc.next_msg(sub, remaining).data)
        if event.get("request_id") == request_id and event.get("kind") in OUTCOME_KINDS:
            return event


def describe(event):
    """One line about an outcome event."""
    kind = event["kind"]
    if kind == "activated":
        return "activated %s generation %d: %d -> %d tokens" % (
            event["status"], event["generation"], event["tokens_before"], event["tokens_after"])
    if kind == "skipped":
        return "skipped: %s" % event["reason"]
    if kind == "failed":
        e = event["error"]
        return "failed %s: %s %s" % (e["code"], e["message"], json.dumps(e.get("details") or {}))
    return kind


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--request-id", help="request_id (default: a new UUID)")
    parser.add_argument("--namespace", help="checkpoint_namespace of the new lane (default: a new one)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the outcome")
    args = parser.parse_args()
    request = example_request(args.request_id, args.namespace)
    with nats_lite.connect(os.environ.get("NATS_URL", "nats://127.0.0.1:4222")) as nc:
        event = publish_and_wait(nc, request, args.timeout)
    print("%s: %s" % (request["request_id"], describe(event)))
    return 0 if event["kind"] == "activated" else 1


if __name__ == "__main__":
    sys.exit(main())
