// Package streamread reads a JetStream stream in order through an ordered
// consumer and its long-lived message iterator, either up to the stream's
// end when the read began or forever; and one message by sequence from
// whichever replica answers (MsgAt).
//
// One iterator per consumer matters on a cluster: an ordered consumer's
// Next or Fetch creates a new server-side consumer for every call and pulls
// from it at once, before the consumer is reachable from every node, and
// the pull then fails with "no responders". The iterator creates a consumer
// once and creates a new one only after a gap, a lost heartbeat, a
// reconnect or a deleted consumer, each time resuming after the last
// sequence it returned. When that fails or stalls, as after a node loss,
// Read starts a new ordered consumer where the read left off (see Read).
package streamread

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Source is what Read needs of a JetStream client: the stream, for its last
// sequence, and ordered consumers on it. A jetstream.JetStream is one.
type Source interface {
	Stream(ctx context.Context, name string) (jetstream.Stream, error)
	OrderedConsumer(ctx context.Context, stream string, cfg jetstream.OrderedConsumerConfig) (jetstream.Consumer, error)
}

var _ Source = jetstream.JetStream(nil)

// Options selects what Read delivers.
type Options struct {
	// Stream is the stream to read.
	Stream string
	// Config is the ordered consumer's filter and start. A DeliverNewPolicy
	// start is pinned to the sequence after the stream's last one, so that a
	// consumer recreated before the first message does not skip messages
	// published in between.
	Config jetstream.OrderedConsumerConfig
	// Follow keeps reading new messages until ctx ends. Without it Read
	// returns after the last message that was in the stream when it began.
	Follow bool
}

const (
	// batch bounds how many messages the iterator buffers ahead of fn.
	batch = 64
	// heartbeat is how often an idle server-side consumer signals that it is
	// alive; two missed heartbeats make the iterator recreate the consumer,
	// e.g. after the node that held it died.
	heartbeat = 2 * time.Second
	// expiry is the lifetime of one pull request; it must exceed two
	// heartbeats.
	expiry = 10 * time.Second
	// finiteResets bounds the consumer re-creations in a row, without a
	// message between them, of a read that is not a follow, so that a read
	// of a cluster without quorum ends with an error (after about two
	// minutes) instead of waiting forever.
	finiteResets = 10
	// inactive is how long the server keeps a consumer nobody pulls from.
	// Read does not delete its consumer, because readers (the auditor role
	// in nats.conf) may not delete consumers on the event streams; the
	// server removes it this long after the read. A consumer removed while
	// fn was busy is recreated where the read left off.
	inactive = 30 * time.Second
	// infoWait bounds the stream info request of a stalled read.
	infoWait = 5 * time.Second
)

// stall is how long Read waits for a message while the stream holds
// messages it has not passed yet before it gives up on the iterator and
// starts a new consumer where the read left off. It exceeds what the
// iterator's own recovery takes when it works: a missed heartbeat (two
// heartbeats) and one consumer creation (nats.go waits up to 10 s for it).
// Tests shorten it.
var stall = 15 * time.Second

// Read calls fn for each message of the stream, in stream order, with its
// metadata, until the end (see Options.Follow), ctx ends (Read returns
// ctx.Err()) or fn returns an error (which Read returns). Nothing is
// acknowledged, and the server removes the consumer soon after the read.
//
// The iterator recovers on its own from most losses, but not in time on a
// cluster that lost a node: nats.go retries a re-creation under the same
// consumer name, waiting up to 10 s for each attempt and up to 10 s between
// them, and the cluster may have placed that name on the dead node, so
// that every retry times out or finds the consumer offline. So the
// iterator makes one attempt per re-creation, and Read starts a new
// ordered consumer, under a new name, after the last message it
// delivered, when the iterator fails or stalls (no message for a while
// although the stream holds messages the read has not passed).
func Read(ctx context.Context, js Source, o Options, fn func(jetstream.Msg, *jetstream.MsgMetadata) error) error {
	str, err := js.Stream(ctx, o.Stream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", o.Stream, err)
	}
	last := str.CachedInfo().State.LastSeq
	if !o.Follow && last == 0 {
		return nil
	}
	cfg := o.Config
	if cfg.DeliverPolicy == jetstream.DeliverNewPolicy {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, last+1
	}
	if cfg.InactiveThreshold == 0 {
		cfg.InactiveThreshold = inactive
	}
	cfg.MaxResetAttempts = 1
	r := &reader{js: js, stream: o.Stream, cfg: cfg, follow: o.Follow, end: last, streamLast: last, fn: fn}
	return r.run(ctx)
}

// reader is the state of one Read across the consumers it creates.
type reader struct {
	js     Source
	stream string
	cfg    jetstream.OrderedConsumerConfig
	follow bool
	// end is the stream's last sequence when a finite read began.
	end uint64
	fn  func(jetstream.Msg, *jetstream.MsgMetadata) error

	// next is the stream sequence after the last message delivered (0:
	// none yet), where a new consumer starts.
	next uint64
	// streamLast is the stream's last sequence when it was last read, and
	// quiet the last sequence up to which nothing is left to deliver.
	streamLast, quiet uint64
}

// errStalled reports an iterator that delivered nothing for stall while
// the stream held messages beyond the read's position.
var errStalled = errors.New("no message while the stream has moved on")

// run reads through one consumer after another until the read ends.
func (r *reader) run(ctx context.Context) error {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 250*time.Millisecond, 10*time.Second, 0
	resets := 0
	for {
		before := r.next
		err := r.session(ctx)
		var lost *lostError
		if !errors.As(err, &lost) {
			return err
		}
		if r.next != before {
			resets = 0
			b.Reset()
		}
		if resets++; !r.follow && resets > finiteResets {
			return fmt.Errorf("read %s: %w", r.stream, lost.err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(b.NextBackOff()):
		}
	}
}

// lostError is a failure of a consumer or its iterator, after which the
// read goes on through a new consumer.
type lostError struct{ err error }

func (e *lostError) Error() string { return e.err.Error() }
func (e *lostError) Unwrap() error { return e.err }

// session reads through one new ordered consumer, starting after the last
// message delivered.
func (r *reader) session(ctx context.Context) error {
	cfg := r.cfg
	if r.next > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq, cfg.OptStartTime = jetstream.DeliverByStartSequencePolicy, r.next, nil
	}
	cons, err := r.js.OrderedConsumer(ctx, r.stream, cfg)
	if err != nil {
		return fmt.Errorf("consumer on %s: %w", r.stream, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(batch), jetstream.PullExpiry(expiry), jetstream.PullHeartbeat(heartbeat))
	if err != nil {
		return r.lost(fmt.Errorf("consumer on %s: %w", r.stream, err))
	}
	if info := cons.CachedInfo(); info != nil && info.NumPending == 0 {
		// Nothing left to deliver up to the stream's end as last read.
		r.quiet = max(r.quiet, r.streamLast)
		if !r.follow {
			it.Stop()
			return nil // no message up to the end matches the filter
		}
	}
	results, quit := pump(it)
	defer func() {
		close(quit)
		// Stop waits for a re-creation under way: not in the reader.
		go it.Stop()
	}()
	timer := time.NewTimer(stall)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			if r.idle(ctx) {
				timer.Reset(stall)
				continue
			}
			return r.lost(errStalled)
		case res := <-results:
			// Checked first: with messages buffered, the iterator may
			// return one even after ctx ended, and a follower would
			// outlive its context.
			if err := ctx.Err(); err != nil {
				return err
			}
			if res.err != nil {
				return r.lost(res.err)
			}
			done, err := r.deliver(res.msg)
			if done || err != nil {
				return err
			}
			timer.Reset(stall)
		}
	}
}

// lost wraps err as a lost consumer, unless the connection is closed for
// good or the server refused the consumer (a missing stream, a bad filter):
// a new consumer would fare no better.
func (r *reader) lost(err error) error {
	var api *jetstream.APIError
	if errors.Is(err, jetstream.ErrConnectionClosed) || errors.Is(err, nats.ErrConnectionClosed) ||
		errors.As(err, &api) && (api.Code == 400 || api.Code == 404) {
		return fmt.Errorf("read %s: %w", r.stream, err)
	}
	return &lostError{err: err}
}

// deliver passes msg to fn and reports whether a finite read is done.
func (r *reader) deliver(msg jetstream.Msg) (bool, error) {
	md, err := msg.Metadata()
	if err != nil {
		return false, err
	}
	if err := r.fn(msg, md); err != nil {
		return false, err
	}
	r.next = md.Sequence.Stream + 1
	if md.NumPending == 0 {
		r.quiet = max(r.quiet, md.Sequence.Stream)
	}
	// NumPending counts the filter's messages still to come: none left
	// means the end even when the stream's last message is filtered out.
	return !r.follow && (md.Sequence.Stream >= r.end || md.NumPending == 0), nil
}

// idle reports whether a follow that received nothing for stall is merely
// waiting: the stream holds nothing past what the read has passed. A
// finite read is never idle, since the stream held messages up to its end.
func (r *reader) idle(ctx context.Context) bool {
	if !r.follow {
		return false
	}
	ictx, cancel := context.WithTimeout(ctx, infoWait)
	defer cancel()
	str, err := r.js.Stream(ictx, r.stream)
	if err != nil {
		return false
	}
	r.streamLast = str.CachedInfo().State.LastSeq
	return r.streamLast <= max(r.quiet, r.next-min(r.next, 1))
}

// result is one return of an iterator's Next.
type result struct {
	msg jetstream.Msg
	err error
}

// pump calls it.Next in a goroutine of its own, so that the reader can
// give up on an iterator that does not return, until Next fails or quit is
// closed.
func pump(it jetstream.MessagesContext) (<-chan result, chan<- struct{}) {
	results, quit := make(chan result), make(chan struct{})
	go func() {
		for {
			msg, err := it.Next()
			select {
			case results <- result{msg, err}:
			case <-quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return results, quit
}
