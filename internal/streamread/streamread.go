// Package streamread reads a JetStream stream in order through one ordered
// consumer and one long-lived message iterator, either up to the stream's
// end when the read began or forever.
//
// One iterator per read matters on a cluster: an ordered consumer's Next or
// Fetch creates a new server-side consumer for every call and pulls from it
// at once, before the consumer is reachable from every node, and the pull
// then fails with "no responders". The iterator creates a consumer once and
// creates a new one only after a gap, a lost heartbeat, a reconnect or a
// deleted consumer, each time resuming after the last sequence it returned.
package streamread

import (
	"context"
	"fmt"
	"time"

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
	// finiteResets bounds the consumer re-creations of a read that is not a
	// follow, so that a read of a cluster without quorum ends with an error
	// (about a minute and a half of backoff) instead of waiting forever.
	finiteResets = 10
	// inactive is how long the server keeps a consumer nobody pulls from.
	// Read does not delete its consumer, because readers (the auditor role
	// in nats.conf) may not delete consumers on the event streams; the
	// server removes it this long after the read. A consumer removed while
	// fn was busy is recreated where the read left off.
	inactive = 30 * time.Second
)

// Read calls fn for each message of the stream, in stream order, with its
// metadata, until the end (see Options.Follow), ctx ends (Read returns
// ctx.Err()) or fn returns an error (which Read returns). Nothing is
// acknowledged, and the server removes the consumer soon after the read.
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
	if !o.Follow && cfg.MaxResetAttempts == 0 {
		cfg.MaxResetAttempts = finiteResets
	}
	cons, err := js.OrderedConsumer(ctx, o.Stream, cfg)
	if err != nil {
		return fmt.Errorf("consumer on %s: %w", o.Stream, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(batch), jetstream.PullExpiry(expiry), jetstream.PullHeartbeat(heartbeat))
	if err != nil {
		return fmt.Errorf("read %s: %w", o.Stream, err)
	}
	defer it.Stop()
	// A consumer re-creation does not watch ctx; stopping the iterator ends it.
	defer context.AfterFunc(ctx, it.Stop)()
	if !o.Follow {
		if info := cons.CachedInfo(); info != nil && info.NumPending == 0 {
			return nil // no message up to the end matches the filter
		}
	}
	return loop(ctx, it, o.Follow, last, fn)
}

// loop reads the iterator until the end, ctx or fn stops it.
func loop(ctx context.Context, it jetstream.MessagesContext, follow bool, last uint64, fn func(jetstream.Msg, *jetstream.MsgMetadata) error) error {
	for {
		// Checked first: with messages buffered, Next may return one even
		// after ctx ended, and a follower would outlive its context.
		if err := ctx.Err(); err != nil {
			return err
		}
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		md, err := msg.Metadata()
		if err != nil {
			return err
		}
		if err := fn(msg, md); err != nil {
			return err
		}
		// NumPending counts the filter's messages still to come: none left
		// means the end even when the stream's last message is filtered out.
		if !follow && (md.Sequence.Stream >= last || md.NumPending == 0) {
			return nil
		}
	}
}
