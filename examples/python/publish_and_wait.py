"""Publishes a hand-built request to a running Cairn and waits for its outcome.

    NATS_URL=nats://127.0.0.1:4222 python3 examples/python/publish_and_wait.py [--request-id ID] [--namespace NS]

It builds the request of make_request.py (ANSI escapes in a tool output, floats in
provenance) in a lane of its own, leaves out the hashes of one event (Cairn
computes them), subscribes to conversation.compact.> and then publishes the
request to conversation.compact.requested with Nats-Msg-Id = request_id, and
waits for the event with this request_id. The exit status is 0 only for
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
OUTCOMES = "conversation.compact.>"
OUTCOME_KINDS = ("activated", "skipped", "failed")


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

    The subscription is made before the request is published, so the outcome
    cannot be missed; a core subscription sees only events published while it
    exists. A resend that the stream drops as a duplicate (same Nats-Msg-Id inside
    its window) gets no new event: its outcome was published for the original, and
    is read from the COMPACT_EVENTS stream (the JavaScript example does that)."""
    sid = nc.subscribe(OUTCOMES)
    try:
        nc.flush()
        ack = nc.jetstream_publish(SUBJECT_REQUESTED, encode(request), msg_id=request["request_id"])
        if ack.get("duplicate"):
            raise nats_lite.NatsError("request %s was published before (stream sequence %s): "
                                      "its outcome is in COMPACT_EVENTS" % (request["request_id"], ack["seq"]))
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise nats_lite.TimeoutError("no outcome for request %s within %.0f s"
                                             % (request["request_id"], timeout))
            msg = nc.next_msg(sid, remaining)
            event = json.loads(msg.data)
            if event.get("request_id") == request["request_id"] and event.get("kind") in OUTCOME_KINDS:
                return event
    finally:
        nc.unsubscribe(sid)


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
