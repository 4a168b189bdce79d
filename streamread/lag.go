package streamread

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// LagWaits are the pauses between reads of something the store says is not
// there. A read by sequence or key from a stream that allows direct gets
// (every KV and Object Store bucket, and COMPACT_REQUESTS) may be answered
// by a replica that has not yet applied a write the leader acknowledged, so
// "not found" is final only once it has persisted for about 2 s; a truly
// missing message fails that much later.
var LagWaits = []time.Duration{
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond,
	400 * time.Millisecond, 600 * time.Millisecond, 600 * time.Millisecond,
}

// WhileNotFound calls read until it returns anything but an error that is
// notFound, pausing LagWaits between calls, and returns the last result; or
// ctx's error if ctx ends during a pause.
func WhileNotFound(ctx context.Context, notFound error, read func() error) error {
	err := read()
	for _, wait := range LagWaits {
		if !errors.Is(err, notFound) {
			return err
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
		err = read()
	}
	return err
}

// MsgAt reads the message at seq from stream, reading again while a replica
// says it is not there (WhileNotFound). It returns jetstream.ErrMsgNotFound
// only for a message that stayed missing.
func MsgAt(ctx context.Context, stream jetstream.Stream, seq uint64) (*jetstream.RawStreamMsg, error) {
	var msg *jetstream.RawStreamMsg
	err := WhileNotFound(ctx, jetstream.ErrMsgNotFound, func() error {
		var err error
		msg, err = stream.GetMsg(ctx, seq)
		return err
	})
	return msg, err
}
