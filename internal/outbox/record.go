// Package outbox publishes the events recorded with a lane-head change.
//
// A state change that must announce itself writes Records into the same KV
// value it changes (the lane head), in the same compare-and-swap. A Relay
// then publishes every pending Record with Nats-Msg-Id = EventID, waits for
// the PubAck, and only then removes the Record from the value with a second
// compare-and-swap. An event therefore exists if and only if its change
// committed, and a crash between the two steps only delays the event: the
// next relay finds the Record and publishes it again under the same id, which
// the event stream's duplicate window absorbs.
package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/cairnhq/cairn/internal/rawjson"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Field is the member of a KV value (a JSON object) that holds its pending
// Records. The relay reads and rewrites only this member.
const Field = "outbox"

// Record is one event waiting to be published.
type Record struct {
	// Subject is where the event is published.
	Subject string `json:"subject"`
	// EventID is deterministic for the change that produced it; it is sent as
	// Nats-Msg-Id so that republishing is idempotent.
	EventID string `json:"event_id"`
	// Headers are extra message headers, such as traceparent.
	Headers map[string]string `json:"headers,omitempty"`
	// Payload is the event body.
	Payload json.RawMessage `json:"payload"`
	// CheckpointRef, on an activated event as Cairn stores it, names the
	// checkpoint record that holds the event's checkpoint; Payload is then
	// the event with a null checkpoint, and the record is made whole (see
	// package lanes) before it is published. A checkpoint's bytes are so
	// stored once, in its record.
	CheckpointRef string `json:"checkpoint_ref,omitempty"`
}

// AppendRecords appends records as json.Marshal encodes the slice (nil is
// null), without json.Marshal's re-scan of the payloads. It is lanes.Head's
// encoder for its outbox (see Head.Encode there, and its test, which holds
// these bytes to json.Marshal on random values of every field).
func AppendRecords(dst []byte, records []Record) ([]byte, error) {
	if records == nil {
		return append(dst, "null"...), nil
	}
	dst = append(dst, '[')
	for i, r := range records {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = r.appendJSON(dst); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

func (r Record) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"subject":`...)
	dst = rawjson.AppendString(dst, r.Subject)
	dst = append(dst, `,"event_id":`...)
	dst = rawjson.AppendString(dst, r.EventID)
	if len(r.Headers) > 0 {
		dst = append(dst, `,"headers":{`...)
		for i, k := range slices.Sorted(maps.Keys(r.Headers)) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(rawjson.AppendString(dst, k), ':')
			dst = rawjson.AppendString(dst, r.Headers[k])
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `,"payload":`...)
	dst, err := rawjson.AppendRaw(dst, r.Payload)
	if err != nil {
		return dst, fmt.Errorf("outbox: encode record %s: %w", r.EventID, err)
	}
	if r.CheckpointRef != "" {
		dst = append(dst, `,"checkpoint_ref":`...)
		dst = rawjson.AppendString(dst, r.CheckpointRef)
	}
	return append(dst, '}'), nil
}

// Validate reports whether the record can be published.
func (r Record) Validate() error {
	switch {
	case r.Subject == "":
		return errors.New("outbox: record has no subject")
	case r.EventID == "":
		return errors.New("outbox: record has no event id")
	case len(r.Payload) == 0:
		return errors.New("outbox: record has no payload")
	case r.CheckpointRef != "":
		return fmt.Errorf("outbox: record %s lacks checkpoint %s: make it whole before publishing", r.EventID, r.CheckpointRef)
	}
	return nil
}

// Publisher is the part of jetstream.JetStream the outbox uses.
type Publisher interface {
	PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
}

var _ Publisher = (jetstream.JetStream)(nil)

// Publish sends one record with Nats-Msg-Id = EventID and waits for the
// stream's PubAck. A PubAck flagged as a duplicate is success: the event is
// already in the stream.
func Publish(ctx context.Context, p Publisher, r Record) error {
	if err := r.Validate(); err != nil {
		return err
	}
	msg := nats.NewMsg(r.Subject)
	msg.Data = r.Payload
	for k, v := range r.Headers {
		msg.Header.Set(k, v)
	}
	if _, err := p.PublishMsg(ctx, msg, jetstream.WithMsgID(r.EventID)); err != nil {
		return fmt.Errorf("outbox: publish %s %s: %w", r.Subject, r.EventID, err)
	}
	return nil
}
