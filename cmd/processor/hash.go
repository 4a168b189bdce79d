package main

import (
	"context"
	"maps"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
)

func init() {
	register(command{name: "hash", summary: "print the canonical JSON and hash of a value, or the hashes of events", run: runHash})
}

// eventHashes is what `hash --events` prints for one event: the hashes
// Cairn computes, and whether the ones the event carries match them.
type eventHashes struct {
	Index            int    `json:"index"`
	EventID          any    `json:"event_id"`
	ContentHash      string `json:"content_hash"`
	ProvenanceSHA256 string `json:"provenance_sha256"`
	// Matches is false when the event carries a hash that differs.
	Matches bool `json:"matches"`
}

func runHash(_ context.Context, args []string, io stdio) int {
	fs := newFlagSet("hash", "hash [flags] [FILE]\n\nReads one JSON value (FILE, or stdin when FILE is absent or -) and prints its\ncanonical encoding and SHA-256. With --events the value is an event, a list of\nevents or a request, and each event's content_hash and provenance_sha256 are\nprinted as Cairn computes them. Exit 1 when the value is not canonical JSON or a\ncarried hash does not match.", io)
	events := fs.Bool("events", false, "print the hashes of each event (of a request's \"events\", a list, or one event)")
	if ok, code := parseFlags(fs, args, nil); !ok {
		return code
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return 2
	}
	data, err := readRequest(fs.Arg(0), io.in)
	if err != nil {
		return usageError(io, "processor hash: %v", err)
	}
	v, err := canonical.Decode(data)
	if err != nil {
		return fail(io, errcode.Wrap(errcode.InvalidRequest, "the input is not canonical JSON: "+err.Error(), err))
	}
	if !*events {
		enc, err := canonical.Encode(v)
		if err != nil {
			return fail(io, errcode.Wrap(errcode.InvalidRequest, err.Error(), err))
		}
		printJSON(io.out, map[string]string{"canonical": string(enc), "sha256": canonical.HashBytes(enc)})
		return 0
	}
	code := 0
	for i, raw := range eventsOf(v) {
		h, err := hashEvent(i, raw)
		if err != nil {
			return fail(io, err)
		}
		if !h.Matches {
			code = 1
		}
		printJSON(io.out, h)
	}
	return code
}

// eventsOf returns a request's events, a list's items, or the value itself.
func eventsOf(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case map[string]any:
		if list, ok := x["events"].([]any); ok {
			return list
		}
	}
	return []any{v}
}

// hashEvent lets the engine compute both hashes of one event, as it does
// for an event that leaves them out, and compares them with those carried.
func hashEvent(i int, raw any) (eventHashes, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return eventHashes{}, errcode.WithDetails(errcode.InvalidEvent, "event must be a map", map[string]any{"index": i})
	}
	bare := maps.Clone(m)
	delete(bare, "content_hash")
	delete(bare, "provenance_sha256")
	e, err := events.DecodeEvent(bare)
	if err != nil {
		if ee := errcode.As(err); ee != nil {
			ee.Details["index"] = i
		}
		return eventHashes{}, err
	}
	h := eventHashes{Index: i, EventID: m["event_id"], ContentHash: e.ContentHash, ProvenanceSHA256: e.ProvenanceSHA256, Matches: true}
	for field, want := range map[string]string{"content_hash": e.ContentHash, "provenance_sha256": e.ProvenanceSHA256} {
		if got, present := m[field]; present && got != nil && got != want {
			h.Matches = false
		}
	}
	return h, nil
}
