"""Publishes requests to a running Cairn (processor serve) and checks the outcomes.
Skipped unless NATS_URL names the server:

    NATS_URL=nats://127.0.0.1:4222 python3 -m unittest discover -s examples/python -p 'test_integration.py' -v
"""

import base64
import json
import os
import sys
import time
import unittest
import uuid
from datetime import datetime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cairn_canonical as cc  # noqa: E402
import nats_lite  # noqa: E402
import publish_and_wait as pw  # noqa: E402

NATS_URL = os.environ.get("NATS_URL")


@unittest.skipUnless(NATS_URL, "NATS_URL is not set")
class PublishToCairn(unittest.TestCase):
    def setUp(self):
        self.nc = nats_lite.connect(NATS_URL)
        self.addCleanup(self.nc.close)

    def test_hand_built_request_is_activated(self):
        request = pw.example_request()
        self.assertNotIn("content_hash", request["events"][0], "the first event leaves its hashes to Cairn")
        event = pw.publish_and_wait(self.nc, request)
        self.assertEqual(event["kind"], "activated", pw.describe(event))
        self.assertEqual(event["request_id"], request["request_id"])
        self.assertEqual(event["checkpoint_id"], request["request_id"])
        self.assertEqual(event["generation"], 1)
        self.assertLess(event["tokens_after"], event["tokens_before"], pw.describe(event))

        # The stream drops the resend (same Nats-Msg-Id); its outcome is the original's.
        again = self.resend_within_a_second(request)
        self.assertEqual(again, event)
        # Without Nats-Msg-Id the stream stores the resend, and the events stream
        # drops its event as a duplicate of the original's: the status service
        # answers.
        again = self.resend_within_a_second(request, msg_id=False)
        self.assertEqual(again, event)

    def test_resend_after_the_duplicate_window_gets_its_outcome(self):
        window = self.duplicate_window()
        if window > 10:
            self.skipTest("the request stream's duplicate window is %g s: run serve with --duplicate-window 5s" % window)
        request = pw.example_request()
        event = pw.publish_and_wait(self.nc, request)
        self.assertEqual(event["kind"], "activated", pw.describe(event))
        stored = datetime.fromisoformat(event["occurred_at"].replace("Z", "+00:00")).timestamp()
        # The original was stored before its outcome occurred (whole seconds,
        # rounded down: one more second covers it).
        time.sleep(max(0.0, stored + 1 + window - time.time()))
        again = self.resend_within_a_second(request)
        self.assertEqual(again, event)
        self.assertEqual(self.requests_stored(request["request_id"]), 2, "the resend was not stored again")

    def test_status_of_an_unknown_request_and_a_bad_ask(self):
        self.assertEqual(pw.status(self.nc, "never-sent-%s" % uuid.uuid4())["state"], "unknown")
        with self.assertRaisesRegex(nats_lite.NatsError, "invalid_service_request"):
            pw.status(self.nc, "")

    def resend_within_a_second(self, request, msg_id=True):
        start = time.monotonic()
        event = pw.publish_and_wait(self.nc, request, timeout=1.0, msg_id=msg_id)
        elapsed = time.monotonic() - start
        self.assertLess(elapsed, 1.0)
        sys.stderr.write("resend (Nats-Msg-Id: %s): outcome in %.1f ms ... " % (msg_id, elapsed * 1000))
        return event

    def duplicate_window(self):
        info = pw.js_api(self.nc, "STREAM.INFO.COMPACT_REQUESTS", None)
        return info["config"]["duplicate_window"] / 1e9

    def requests_stored(self, request_id):
        """How many messages of COMPACT_REQUESTS carry request_id (read by
        sequence, newest first, as a producer may)."""
        last = pw.js_api(self.nc, "STREAM.INFO.COMPACT_REQUESTS", None)["state"]["last_seq"]
        count = 0
        for seq in range(last, max(0, last - 50), -1):
            try:
                msg = pw.js_api(self.nc, "STREAM.MSG.GET.COMPACT_REQUESTS", {"seq": seq})["message"]
            except nats_lite.NatsError:
                continue
            if json.loads(base64.b64decode(msg["data"])).get("request_id") == request_id:
                count += 1
        return count

    def test_wrong_content_hash_fails_naming_the_field(self):
        request = pw.example_request()
        bad = request["events"][1]
        right = cc.content_hash(bad)
        wrong = ("1" if right[0] == "0" else "0") + right[1:]
        bad["content_hash"] = wrong
        event = pw.publish_and_wait(self.nc, request)
        self.assertEqual(event["kind"], "failed", pw.describe(event))
        self.assertEqual(event["error"]["code"], "invalid_compaction_event")
        self.assertFalse(event["error"]["retryable"])
        details = event["error"]["details"]
        self.assertEqual(details["field"], "content_hash", details)
        self.assertEqual(details["event_id"], bad["event_id"])
        self.assertEqual(details["expected"], right)
        self.assertEqual(details["received"], wrong)

    def test_publish_without_a_stream_has_no_responders(self):
        subject = "cairn.example.nostream.%s" % uuid.uuid4().hex
        try:
            self.nc.jetstream_publish(subject, b"{}", msg_id="x", timeout=5)
        except nats_lite.NatsError as e:
            if "Permissions Violation" in str(e):
                self.skipTest("this user may not publish to %s" % subject)
            self.assertIn("no responders", str(e))
        else:
            self.fail("a publish without a stream was acknowledged")


if __name__ == "__main__":
    unittest.main()
