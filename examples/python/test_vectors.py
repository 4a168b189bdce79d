"""Checks cairn_canonical.py against Cairn's test vectors.

    python3 examples/python/test_vectors.py      (prints "N passed, 0 failed")
    python3 -m unittest discover -s examples/python
"""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cairn_canonical as cc  # noqa: E402

VECTORS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "..", "..", "canonical", "testdata", "vectors.json")


def load_vectors():
    with open(VECTORS, "rb") as f:
        return json.loads(f.read().decode("utf-8"))


def vector_input(v):
    if "input_hex" in v:
        return bytes.fromhex(v["input_hex"])
    return v["input"].encode("utf-8")


def check_vector(v):
    """Returns None if the vector passes, else what went wrong."""
    data = vector_input(v)
    if "error" in v:
        try:
            got = cc.canonicalize(data)
        except cc.DuplicateKeyError:
            kind = "duplicate_key"
        except cc.CanonicalError:
            kind = "invalid_json"
        else:
            return "accepted, encoded as %r; want error %s" % (got[:80], v["error"])
        return None if kind == v["error"] else "error %s, want %s" % (kind, v["error"])
    try:
        got = cc.canonicalize(data)
    except cc.CanonicalError as e:
        return "rejected: %s" % e
    if got != v["canonical"].encode("utf-8"):
        return "encoded %r, want %r" % (got[:200], v["canonical"][:200])
    if cc.hash_bytes(got) != v["sha256"]:
        return "hash %s, want %s" % (cc.hash_bytes(got), v["sha256"])
    return None


def check_event(v):
    event = cc.loads(v["event"])
    for got, want, what in [
        (cc.encode(cc.content_payload(event)).decode("utf-8"), v["content_payload"], "content payload"),
        (cc.content_hash(event), v["content_hash"], "content_hash"),
        (cc.encode(event["provenance"]).decode("utf-8"), v["provenance"], "provenance"),
        (cc.provenance_sha256(event), v["provenance_sha256"], "provenance_sha256"),
    ]:
        if got != want:
            return "%s %r, want %r" % (what, got, want)
    return None


def check_checkpoint(v):
    got = cc.checkpoint_hash(cc.loads(v["checkpoint"]))
    return None if got == v["checkpoint_hash"] else "checkpoint_hash %s, want %s" % (got, v["checkpoint_hash"])


def all_checks():
    doc = load_vectors()
    for v in doc["vectors"]:
        yield "vector: " + v["name"], check_vector, v
    for v in doc["events"]:
        yield "event: " + v["name"], check_event, v
    for v in doc["checkpoints"]:
        yield "checkpoint: " + v["name"], check_checkpoint, v


class VectorTest(unittest.TestCase):
    def test_vectors(self):
        n = 0
        for name, check, v in all_checks():
            n += 1
            with self.subTest(name):
                problem = check(v)
                self.assertIsNone(problem, problem)
        self.assertGreater(n, 200)

    def test_native_values(self):
        # Values built in Python encode as Go encodes the JSON text json.dumps
        # writes for them.
        value = {"f": 1e-07, "g": 1e21, "h": 2.0, "i": 2, "s": "\x1b[0m", "n": None, "t": (True, False)}
        self.assertEqual(cc.encode(value),
                         b'{"f":1.0e-7,"g":1.0e21,"h":2.0,"i":2,"n":null,"s":"\\u001B[0m","t":[true,false]}')
        self.assertEqual(cc.encode(value), cc.canonicalize(json.dumps(value)))
        for bad in [float("nan"), float("inf"), {1: 2}, "\ud800", {"a": set()}]:
            with self.assertRaises(cc.CanonicalError):
                cc.encode(bad)
        deep = []
        for _ in range(cc.MAX_DEPTH):
            deep = [deep]
        cc.encode(deep)
        with self.assertRaises(cc.CanonicalError):
            cc.encode([deep])


def main():
    passed = failed = 0
    for name, check, v in all_checks():
        try:
            problem = check(v)
        except Exception as e:  # a crash is a failure of that vector
            problem = "raised %r" % e
        if problem is None:
            passed += 1
        else:
            failed += 1
            print("FAIL %s: %s" % (name, problem))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
