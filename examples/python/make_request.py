"""Builds a small Request v1 by hand, with hashes computed by cairn_canonical.py.

    python3 examples/python/make_request.py OUT.json [--request-id ID]

The lane has what trips up hand-written hashing: a tool output full of ANSI colour
codes (control characters, escaped as \\u001B), floats in provenance (1e-07, 1e+21,
0.1 + 0.2), an integer beyond 2**53, an emoji and U+2028 in content. Compact it
offline with `go run ./cmd/processor compact OUT.json`, or publish it to
conversation.compact.requested (subjects.md). examples/js/make-request.mjs builds the
same request.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cairn_canonical as cc  # noqa: E402

NAMESPACE = "root"
AGENT = "agent-coder"


def tool_log():
    """A colourful test log, long enough (over 2 048 bytes) for Cairn to project it."""
    lines = ["\x1b[1m$ go test ./...\x1b[0m"]
    for i in range(1, 41):
        status = "\x1b[32mok\x1b[0m  " if i % 10 else "\x1b[31mFAIL\x1b[0m"
        lines.append("%s\tshop/pkg%02d\t0.%03ds\t\x1b[2m(coverage: %d.%d%%)\x1b[0m" % (status, i, i * 7, 50 + i, i % 10))
    lines.append("\x1b[31;1mFAIL\x1b[0m")
    return "\n".join(lines) + "\n"


def lane(namespace=NAMESPACE):
    """The events of the lane, with their hashes."""
    events = [
        dict(role="user", provenance={"origin": "direct_user"},
             content="Make the product cache tests pass. \U0001F600 Line\u2028separator included."),
        dict(role="assistant",
             provenance={"origin": "derived", "temperature": 0.7, "top_p": 1.0, "cost_usd": 1e-07,
                         "budget_tokens": 1e+21, "trace_id": 9007199254740993},
             content=None,
             tool={"calls": [{"call_id": "call_0001", "name": "shell",
                              "arguments": {"cmd": "go test ./...", "timeout_s": 30.5}}]}),
        dict(role="tool",
             provenance={"origin": "tool", "exit_code": 1, "duration_s": 0.1 + 0.2, "rss_mib": -0.0},
             content=tool_log(),
             tool={"call_id": "call_0001", "name": "shell", "status": "error"},
             artifact_ids=["0192b6e4-a000-7000-9000-00000000c001"]),
        dict(role="assistant", provenance={"origin": "derived"},
             content="pkg10, pkg20, pkg30 and pkg40 fail; they share the eviction helper. \x1b[33mFixing it.\x1b[0m"),
        dict(role="user", provenance={"origin": "direct_user"}, content="Go ahead."),
        dict(role="assistant", provenance={"origin": "derived"}, content="Fixed: the eviction helper now rounds 0.1 + 0.2 up."),
        dict(role="user", provenance={"origin": "direct_user"}, content="Thanks. Now run the linters."),
    ]
    out = []
    for i, e in enumerate(events, start=1):
        event = {
            "event_id": "0192b6e4-0000-7000-8%03d-0000c0ffee%02d" % (i, i),
            "run_agent_id": AGENT,
            "chat_seq": i,
            "lane_event_ordinal": i,
            "checkpoint_namespace": namespace,
            "role": e["role"],
            "provenance": e["provenance"],
            "content": e.get("content"),
            "tool": e.get("tool"),
            "artifact_ids": e.get("artifact_ids", []),
            "truncated": False,
            "protected": False,
            "token_count": None,
        }
        out.append(cc.with_hashes(event))
    return out


def build_request(request_id="0192b6e4-0000-7000-8000-0000c0ffee00", namespace=NAMESPACE):
    """A Request v1 (subjects.md) for a new lane, trigger manual. The lane is
    (agent-coder, namespace): a lane's first request has parent_checkpoint_id None,
    so give each new lane its own namespace when publishing to a server."""
    events = lane(namespace)
    return {
        "v": 1,
        "request_id": request_id,
        "trigger": "manual",
        "thread_id": "thread-canonical-example",
        "run_id": "run-canonical-example",
        "root_turn_id": "turn-1",
        "run_agent_id": AGENT,
        "provider_connection_id": "openai-default",
        "checkpoint_namespace": namespace,
        "destination_identity_hash": cc.hash_bytes(b"destination:thread-canonical-example"),
        "parent_checkpoint_id": None,
        "model_profile": {"context_limit_kind": "separate_input", "max_input_tokens": 40000,
                          "max_output_tokens": 16384, "provider_reserved_tokens": 0},
        "events": events,
        "active_input_event_ids": [events[-1]["event_id"]],
        "previous_semantic": None,
        "rehydration_state": {"todo": {"revision": 1}, "workspace": {"branch": "fix/cache", "ratio": 0.5}},
        "policy": {"recent_tail_min_tokens": 200, "recent_tail_max_tokens": 400,
                   "minimum_prune_reclaim_tokens": 1000, "minimum_total_reclaim_tokens": 1000},
        "focus": None,
    }


def make_request(path, request_id=None):
    """Writes the request to path as JSON and returns it. The file need not be
    canonical: Cairn parses it and hashes the values, so any faithful JSON writer
    will do (json.dumps writes 1e-07, which Cairn reads as the same float)."""
    request = build_request() if request_id is None else build_request(request_id)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(request, f, ensure_ascii=False, indent=2, allow_nan=False)
        f.write("\n")
    return request


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="file to write the request to")
    parser.add_argument("--request-id", help="request_id (default: a fixed example id)")
    args = parser.parse_args()
    make_request(args.out, args.request_id)


if __name__ == "__main__":
    main()
