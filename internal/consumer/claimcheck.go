package consumer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/streamread"
	"github.com/nats-io/nats.go/jetstream"
)

// maxEvents is the contract's bound on a request's events (subjects.md,
// Request v1).
const maxEvents = 10000

// laneEvents are a request's events: the list decoded with an inline
// request, or the bytes of its events object (which the engine decodes).
type laneEvents struct {
	list []any
	raw  json.RawMessage
}

// loadEvents returns the request's events: inline, or streamed from the
// cairn_lanes object named by events_object. The object's recorded size is
// checked before any byte is read, the read itself is capped, and the
// array's length is checked before the engine decodes its elements.
func (p *Processor) loadEvents(ctx context.Context, req *envelope) (laneEvents, error) {
	var n int
	var lane laneEvents
	if req.EventsObject == nil {
		list, ok := req.Events.([]any)
		if !ok {
			return laneEvents{}, errcode.WithDetails(errcode.InvalidRequest, "events must be an array",
				map[string]any{"field": "events", "rule": "type", "expected": "array"})
		}
		n, lane.list = len(list), list
	} else {
		raw, err := p.readEventsObject(ctx, *req.EventsObject)
		if err != nil {
			return laneEvents{}, err
		}
		if n, err = countArray(raw, maxEvents); err != nil {
			e := errcode.Wrap(errcode.InvalidRequest, "events must be an array", err)
			return laneEvents{}, e.With("field", "events_object").With("rule", "type").With("expected", "array")
		}
		lane.raw = raw
	}
	if n == 0 || n > maxEvents {
		return laneEvents{}, errcode.WithDetails(errcode.InvalidRequest, "compaction event sequence is empty or oversized",
			map[string]any{"field": "events", "rule": "range", "count": n, "min": 1, "max": maxEvents})
	}
	return lane, nil
}

// countArray counts the elements of the JSON array raw, stopping once the
// count exceeds limit (it then returns limit+1). Elements are skipped, not
// decoded; the engine decodes them later.
func countArray(raw []byte, limit int) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	t, err := dec.Token()
	if err != nil {
		return 0, err
	}
	if t != json.Delim('[') {
		return 0, errors.New("not an array")
	}
	n := 0
	for dec.More() {
		if n++; n > limit {
			return n, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return 0, err
		}
	}
	_, err = dec.Token()
	return n, err
}

func (p *Processor) readEventsObject(ctx context.Context, name string) (json.RawMessage, error) {
	missing := func(err error) error {
		return errcode.WithDetails(errcode.EventsObjectMissing, "events_object does not name a stored object",
			map[string]any{"field": "events_object", "rule": "reference", "events_object": name, "cause": err.Error()})
	}
	if name == "" {
		return nil, missing(errors.New("empty name"))
	}
	var data []byte
	err := streamread.WhileNotFound(ctx, jetstream.ErrObjectNotFound, func() error {
		var err error
		data, err = p.fetchEventsObject(ctx, name)
		return err
	})
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, missing(err)
	}
	return data, err
}

// fetchEventsObject reads the object once: its recorded size is checked
// before any byte is read, and the read is capped.
func (p *Processor) fetchEventsObject(ctx context.Context, name string) ([]byte, error) {
	// An object of many megabytes may take longer than one call's timeout.
	ctx, cancel := withAttemptBound(ctx)
	defer cancel()
	store := p.stores.Lanes
	info, err := store.GetInfo(ctx, name)
	if err != nil {
		return nil, err
	}
	limit := p.cfg.MaxEventsObjectBytes
	if int64(info.Size) > limit {
		return nil, tooLarge(name, int64(info.Size), limit)
	}
	obj, err := store.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = obj.Close() }()
	data, err := io.ReadAll(io.LimitReader(obj, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(name, int64(len(data)), limit)
	}
	return data, nil
}

func tooLarge(name string, size, limit int64) error {
	return errcode.WithDetails(errcode.PayloadTooLarge, "events_object exceeds the size limit",
		map[string]any{"field": "events_object", "rule": "range", "events_object": name, "bytes": size, "limit": limit})
}
