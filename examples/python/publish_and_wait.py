"""Publishes a hand-built request to a running Cairn and waits for its outcome.

    NATS_URL=nats://127.0.0.1:4222 python3 examples/python/publish_and_wait.py [--request-id ID] [--namespace NS]

It builds the request of make_request.py (ANSI escapes in a tool output, floats in
provenance) in a lane of its own, leaves out the hashes of one event (Cairn
computes them), subscribes to the outcome subjects and then publishes the
request to conversation.compact.requested with Nats-Msg-Id = request_id, asks
Cairn's status service (cairn.svc.status) for an outcome it already recorded,
and otherwise waits for the event with this request_id. The exit status is 0
only for activated. Standard library only (nats_lite.py speaks NATS).
"""

import argparse
import hashlib
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
SUBJECT_STATUS = "cairn.svc.status"


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


def publish_and_wait(nc, request, timeout=60.0, msg_id=True):
    """Publishes request and returns its outcome event (a dict), waiting at most
    timeout seconds. msg_id=False publishes without Nats-Msg-Id.

    The subscription to the outcome subjects is made before the request is
    published, so no outcome published afterwards can be missed. An outcome
    Cairn recorded before, the original's for a resend, is answered by the
    status service: the events stream may have dropped the resend's event as a
    duplicate of the original's (a resend without Nats-Msg-Id, or after the
    request stream's duplicate window), so it would never arrive. Without the
    service (an older Cairn) a resend the stream dropped reads the original's
    outcome from the COMPACT_EVENTS stream."""
    deadline = time.monotonic() + timeout
    body = encode(request)
    # The three subjects rather than conversation.compact.>: nats.conf lets a
    # producer subscribe to the outcomes only.
    sub = nc.subscribe(*OUTCOME_SUBJECTS)
    try:
        nc.flush()
        ack = nc.jetstream_publish(SUBJECT_REQUESTED, body, msg_id=request["request_id"] if msg_id else None)
        recorded = recorded_outcome(nc, request["request_id"], body)
        if recorded is not None:
            return recorded
        if ack.get("duplicate") and not has_status_service(nc):
            nc.unsubscribe(sub)
            sub = None
            return read_outcome(nc, request["request_id"], ack, deadline)
        return _wait(nc, sub, request["request_id"], deadline)
    finally:
        if sub is not None:
            nc.unsubscribe(sub)


def status(nc, request_id, body=None, timeout=5.0):
    """Asks Cairn's status service what became of request_id. With body (the bytes
    published), a request_id recorded with another body answers state
    "conflict". Returns the reply: {"request_id", "state", "outcome"}, where
    outcome is {"subject", "event_id", "event"} once the state is activated,
    skipped or failed. An error reply raises NatsError with its code."""
    query = {"request_id": request_id}
    if body is not None:
        query["content_hash"] = hashlib.sha256(body).hexdigest()
    msg = nc.request(SUBJECT_STATUS, json.dumps(query).encode(), timeout=timeout)
    if "Nats-Service-Error-Code" in msg.headers:
        error = json.loads(msg.data)["error"]
        raise nats_lite.NatsError("%s: %s %s" % (error["code"], error["message"], json.dumps(error["details"])))
    return json.loads(msg.data)


def recorded_outcome(nc, request_id, body):
    """The outcome Cairn recorded for this request and body, or None (none yet,
    or no status service answers)."""
    try:
        reply = status(nc, request_id, body)
    except nats_lite.NatsError:
        return None
    outcome = reply.get("outcome")
    return outcome["event"] if outcome else None


def has_status_service(nc):
    """Whether a Cairn status service answers on this connection."""
    try:
        status(nc, "probe-" + uuid.uuid4().hex)
        return True
    except nats_lite.NatsError:
        return False


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
