"""Publishes requests to a running Cairn (processor serve) and checks the outcomes.
Skipped unless NATS_URL names the server:

    NATS_URL=nats://127.0.0.1:4222 python3 -m unittest discover -s examples/python -p 'test_integration.py' -v
"""

import os
import sys
import unittest
import uuid

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
        again = pw.publish_and_wait(self.nc, request)
        self.assertEqual(again["event_id"], event["event_id"])

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
