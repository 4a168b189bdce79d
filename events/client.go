package events

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/streamread"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NewInputEvent returns an event with provenance_sha256 and content_hash
// computed from its fields, so that Cairn accepts it. It fails when
// provenance or tool is not JSON that Cairn can hash.
func NewInputEvent(e InputEvent) (InputEvent, error) {
	prov, err := canonical.Hash(toPlain(e.Provenance))
	if err != nil {
		return e, fmt.Errorf("events: provenance: %w", err)
	}
	e.ProvenanceSHA256 = prov
	content, err := ContentHash(e.Content, e.Tool, e.ArtifactIDs, e.Truncated)
	if err != nil {
		return e, err
	}
	e.ContentHash = content
	return e, nil
}

// ContentHash is the content_hash of an event: the canonical hash of
// {"artifact_ids","content","tool","truncated"}. A tool holding typed Go
// values (structs, typed slices) is hashed as the JSON encoding/json
// writes for it.
func ContentHash(content *string, tool map[string]any, artifactIDs []string, truncated bool) (string, error) {
	sum, err := contentSum(content, tool, artifactIDs, truncated)
	if errors.Is(err, errToolNotCanonical) && tool != nil {
		plain, _ := toPlain(tool).(map[string]any)
		sum, err = contentSum(content, plain, artifactIDs, truncated)
	}
	if err != nil {
		return "", fmt.Errorf("events: content: %w", err)
	}
	return string(sum[:]), nil
}

// toPlain round-trips a value through encoding/json so that typed Go values
// (structs, typed slices) become the plain JSON values canonical hashing
// accepts. Numbers stay exact as json.Number.
func toPlain(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	plain, err := canonical.Decode(b)
	if err != nil {
		return v
	}
	return plain
}

// StreamLookup looks a stream up by name, for its messages and state.
type StreamLookup interface {
	Stream(ctx context.Context, name string) (jetstream.Stream, error)
}

// Publisher is what Publish and PublishRaw need: publishing a message with
// options, and the requests stream, to compare a duplicate's body with the
// one stored. A jetstream.JetStream is one; a wrapper or a test double can
// stand in for it.
type Publisher interface {
	PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
	StreamLookup
}

// Reader is what Follow and WaitOutcome need: the stream, for its last
// sequence, and an ordered consumer on it. A jetstream.JetStream is one.
type Reader interface {
	StreamLookup
	OrderedConsumer(ctx context.Context, stream string, cfg jetstream.OrderedConsumerConfig) (jetstream.Consumer, error)
}

// A jetstream.JetStream plays every role.
var (
	_ Publisher    = jetstream.JetStream(nil)
	_ Reader       = jetstream.JetStream(nil)
	_ StreamLookup = jetstream.JetStream(nil)
)

// Publish sends a request with Nats-Msg-Id = request_id, so that a resend
// inside the stream's duplicate window is dropped, and waits for the stream's
// acknowledgement. A traceparent, when not empty, is carried as a header.
func Publish(ctx context.Context, js Publisher, r Request, traceparent string) (*jetstream.PubAck, error) {
	if r.V == 0 {
		r.V = Version
	}
	if r.RequestID == "" {
		return nil, errors.New("events: request_id is required")
	}
	body, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("events: encode request: %w", err)
	}
	return PublishRaw(ctx, js, r.RequestID, body, traceparent)
}

// PublishRaw sends an already encoded request body.
//
// A resend inside the duplicate window is dropped by the stream and
// acknowledged with Duplicate set. When the body stored under that
// request_id differs from body, PublishRaw returns the ack with an error of
// code request_id_conflict (ConflictError): the stream kept the first body,
// and its outcome is not this one's. Cairn reports the same conflict with a
// failed event when the resend arrives after the window.
func PublishRaw(ctx context.Context, js Publisher, requestID string, body []byte, traceparent string) (*jetstream.PubAck, error) {
	msg := nats.NewMsg(SubjectRequested)
	msg.Data = body
	if traceparent != "" {
		msg.Header.Set("traceparent", traceparent)
	}
	ack, err := js.PublishMsg(ctx, msg, jetstream.WithMsgID(requestID))
	if err != nil {
		return nil, fmt.Errorf("events: publish request %s: %w", requestID, err)
	}
	if ack.Duplicate {
		return ack, checkSameBody(ctx, js, ack, requestID, body)
	}
	return ack, nil
}

// ConflictError reports a request_id already used with another body.
type ConflictError struct {
	RequestID string
	// Sequence is the stream sequence of the body stored first.
	Sequence uint64
}

// Code is the error code, request_id_conflict.
func (e *ConflictError) Code() string { return CodeRequestIDConflict }

// Unwrap gives the typed error Cairn's other failures carry, so
// errors.As finds its code and details.
func (e *ConflictError) Unwrap() error {
	return errcode.WithDetails(CodeRequestIDConflict, "request_id was used before with a different body",
		map[string]any{"request_id": e.RequestID, "stream_sequence": e.Sequence})
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s: request_id %q was used before with a different body (stored as %s #%d); send a new request_id",
		CodeRequestIDConflict, e.RequestID, StreamRequests, e.Sequence)
}

// checkSameBody compares body with the one the stream kept under the
// duplicate's sequence.
func checkSameBody(ctx context.Context, js StreamLookup, ack *jetstream.PubAck, requestID string, body []byte) error {
	stored, err := storedMsg(ctx, js, ack)
	if err != nil {
		return fmt.Errorf("events: read the stored request %s: %w", requestID, err)
	}
	if !bytes.Equal(stored.Data, body) {
		return &ConflictError{RequestID: requestID, Sequence: ack.Sequence}
	}
	return nil
}

// Event is one decoded message of an event stream. Exactly one of the typed
// fields is set, according to Kind.
type Event struct {
	Subject string
	// Sequence is the event's sequence in its stream; 0 for an outcome
	// WaitOutcome had from the status service.
	Sequence uint64
	Kind     string
	Raw      json.RawMessage

	Activated     *Activated
	Skipped       *Skipped
	Failed        *Failed
	MemoryFlushed *MemoryFlushed
	MemoryFailed  *MemoryFailed
}

// RequestID returns the request the event answers, or "" for memory events.
func (e Event) RequestID() string {
	switch {
	case e.Activated != nil:
		return e.Activated.RequestID
	case e.Skipped != nil:
		return e.Skipped.RequestID
	case e.Failed != nil:
		return e.Failed.RequestID
	}
	return ""
}

// Decode decodes one event message by its subject.
func Decode(subject string, data []byte) (Event, error) {
	ev := Event{Subject: subject, Raw: append(json.RawMessage(nil), data...)}
	var target any
	switch subject {
	case SubjectActivated:
		ev.Activated, target = &Activated{}, &ev.Activated
	case SubjectSkipped:
		ev.Skipped, target = &Skipped{}, &ev.Skipped
	case SubjectFailed:
		ev.Failed, target = &Failed{}, &ev.Failed
	case SubjectFlushed:
		ev.MemoryFlushed, target = &MemoryFlushed{}, &ev.MemoryFlushed
	case SubjectMemoryFailed:
		ev.MemoryFailed, target = &MemoryFailed{}, &ev.MemoryFailed
	default:
		return ev, fmt.Errorf("events: %q is not an event subject", subject)
	}
	if err := json.Unmarshal(data, target); err != nil {
		return ev, fmt.Errorf("events: decode %s: %w", subject, err)
	}
	var kind struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(data, &kind)
	ev.Kind = kind.Kind
	return ev, nil
}

// FollowOptions selects what Follow delivers.
type FollowOptions struct {
	// Stream is StreamEvents (default) or StreamMemory.
	Stream string
	// Subjects filters by subject; empty means all of the stream's subjects.
	Subjects []string
	// StartSeq replays from this stream sequence; StartTime from this time;
	// neither means only new events.
	StartSeq  uint64
	StartTime *time.Time
	// FromStart replays the stream from its first message.
	FromStart bool
}

// Follow calls fn for each event of the stream, in stream order, until ctx
// ends (Follow returns ctx.Err()) or fn returns an error (which Follow
// returns). It reads through one ordered consumer and one long-lived
// iterator: nothing is acknowledged, the server removes the consumer soon
// after, and when the consumer is lost (a server restart, a new stream
// leader, a reconnect) a new one resumes after the last event delivered, so
// no event is repeated or skipped.
func Follow(ctx context.Context, js Reader, o FollowOptions, fn func(Event) error) error {
	stream := o.Stream
	if stream == "" {
		stream = StreamEvents
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: o.Subjects, DeliverPolicy: jetstream.DeliverNewPolicy}
	switch {
	case o.StartSeq > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, o.StartSeq
	case o.StartTime != nil:
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, o.StartTime
	case o.FromStart:
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	}
	// The errors of fn and of decoding reach the caller as they are; only
	// the reader's own are wrapped.
	var own error
	err := streamread.Read(ctx, js, streamread.Options{Stream: stream, Config: cfg, Follow: true}, func(msg jetstream.Msg, md *jetstream.MsgMetadata) error {
		ev, err := Decode(msg.Subject(), msg.Data())
		if err == nil {
			ev.Sequence = md.Sequence.Stream
			err = fn(ev)
		}
		own = err
		return err
	})
	if err == nil || own != nil || ctx.Err() != nil {
		return err
	}
	return fmt.Errorf("events: follow %s: %w", stream, err)
}

// errFound stops the read once the awaited event arrived.
var errFound = errors.New("found")

// outcomeSubjects are the subjects of a request's terminal events.
var outcomeSubjects = []string{SubjectActivated, SubjectSkipped, SubjectFailed}

// WaitOutcome returns the terminal event (activated, skipped or failed) of a
// request, replaying the events stream from since (a time just before the
// request was first published; see PublishedAt) so that an outcome published
// before the call is not missed.
//
// Meanwhile it asks Cairn's status service (SubjectStatus) once, when js
// has a connection to ask on (a jetstream.JetStream has): an outcome Cairn
// recorded before the ask is its answer. That is the outcome of a resend
// that the events stream dropped as a duplicate of the original's event (a
// resend without Nats-Msg-Id, or after the request stream's duplicate
// window), which no replay from since would show. Any later outcome is
// published after since, so the stream read gets it. Give WithBody to have
// a request_id recorded with another body ignored rather than answered.
//
// The server delivers only outcome events stored from since on; of each, only
// the leading fields are read for its request_id, and only the awaited one is
// decoded in full, so a busy stream costs little per call.
func WaitOutcome(ctx context.Context, js Reader, requestID string, since time.Time, opts ...WaitOption) (Event, error) {
	var o waitOptions
	for _, opt := range opts {
		opt(&o)
	}
	readCtx, stopRead := context.WithCancel(ctx)
	defer stopRead()
	recorded := make(chan Event, 1)
	if nc := connOf(js); nc != nil {
		go func() {
			if ev, ok := recordedOutcome(readCtx, nc, StatusQuery{RequestID: requestID, ContentHash: o.contentHash}); ok {
				recorded <- ev
				stopRead()
			}
		}()
	}
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: outcomeSubjects,
		DeliverPolicy:  jetstream.DeliverByStartTimePolicy,
		OptStartTime:   &since,
	}
	var found Event
	var decodeErr error
	err := streamread.Read(readCtx, js, streamread.Options{Stream: StreamEvents, Config: cfg, Follow: true}, func(msg jetstream.Msg, md *jetstream.MsgMetadata) error {
		envelopes.Add(1)
		if id, ok := envelopeRequestID(msg.Data()); !ok || id != requestID {
			return nil
		}
		decodes.Add(1)
		found, decodeErr = Decode(msg.Subject(), msg.Data())
		if decodeErr != nil {
			return decodeErr
		}
		found.Sequence = md.Sequence.Stream
		return errFound
	})
	switch {
	case errors.Is(err, errFound):
		return found, nil
	case decodeErr != nil:
		return Event{}, err
	}
	select {
	case ev := <-recorded:
		return ev, nil
	default:
	}
	if ctx.Err() != nil {
		return Event{}, err
	}
	return Event{}, fmt.Errorf("events: wait for %s: %w", requestID, err)
}

// WaitOption tunes WaitOutcome.
type WaitOption func(*waitOptions)

type waitOptions struct{ contentHash string }

// WithBody names the body the awaited request was published with, so that
// the status service answers only for a request_id recorded with it.
func WithBody(body []byte) WaitOption {
	sum := sha256.Sum256(body)
	return func(o *waitOptions) { o.contentHash = hex.EncodeToString(sum[:]) }
}

// connOf is the connection js publishes on, when it tells.
func connOf(js Reader) *nats.Conn {
	if c, ok := js.(interface{ Conn() *nats.Conn }); ok {
		return c.Conn()
	}
	return nil
}

// recordedOutcome asks the status service for a request's recorded
// outcome; ok is false when there is none yet, or no answer.
func recordedOutcome(ctx context.Context, nc *nats.Conn, q StatusQuery) (Event, bool) {
	ctx, cancel := context.WithTimeout(ctx, statusAskTimeout)
	defer cancel()
	reply, err := Status(ctx, nc, q)
	if err != nil || !reply.Terminal() {
		return Event{}, false
	}
	ev, err := reply.Event()
	return ev, err == nil
}

// statusAskTimeout bounds WaitOutcome's ask of the status service, which
// answers in milliseconds when it runs.
const statusAskTimeout = 5 * time.Second

// Counters of WaitOutcome's work, read by the tests.
var envelopes, decodes atomic.Int64

// envelopeRequestID reads the top-level fields of an event up to its
// request_id, which Cairn writes among the first, without decoding the rest
// (an activated event carries the whole checkpoint). ok is false for an
// event that is not an object or has no string request_id.
func envelopeRequestID(data []byte) (id string, ok bool) {
	d := json.NewDecoder(bytes.NewReader(data))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	for d.More() {
		key, err := d.Token()
		if err != nil {
			return "", false
		}
		if key == "request_id" {
			err := d.Decode(&id)
			return id, err == nil
		}
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}

// PublishedAt returns when the request message acknowledged by ack was first
// stored. For a resend that the stream dropped as a duplicate this is the
// time of the original, after which its outcome was published.
func PublishedAt(ctx context.Context, js StreamLookup, ack *jetstream.PubAck) (time.Time, error) {
	msg, err := storedMsg(ctx, js, ack)
	if err != nil {
		return time.Time{}, err
	}
	return msg.Time, nil
}

// storedMsg reads the message ack acknowledged. A replica that has not yet
// stored it may answer first, so a miss is read again for a while
// (streamread.MsgAt).
func storedMsg(ctx context.Context, js StreamLookup, ack *jetstream.PubAck) (*jetstream.RawStreamMsg, error) {
	str, err := js.Stream(ctx, ack.Stream)
	if err != nil {
		return nil, err
	}
	msg, err := streamread.MsgAt(ctx, str, ack.Sequence)
	if info := str.CachedInfo(); err != nil && info != nil && info.Config.AllowDirect && isTimeout(err) {
		// A read the connection may not publish has no answer: say which
		// permission that takes.
		return nil, fmt.Errorf("%w (a direct get: allow publishing to $JS.API.DIRECT.GET.%s)", err, ack.Stream)
	}
	return msg, err
}

func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}
