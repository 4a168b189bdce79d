package lanes

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Reads of a bucket are retried while its stream has no reachable leader or
// replica, as after the node that led it died: the server the client is on
// answers "no responders" until the new leader subscribes, or the request
// times out, for the few seconds an election takes.
const (
	// readAttempt bounds one read, so that a request whose responder died
	// does not wait for the caller's whole deadline.
	readAttempt = 5 * time.Second
	// readRetries bounds the retries of one read; it is well over an
	// election.
	readRetries = 30 * time.Second
)

// get reads key from kv, retrying transient failures with exponential
// backoff until they stop, readRetries pass or ctx ends. A missing key is
// an answer, returned at once.
func get(ctx context.Context, kv jetstream.KeyValue, key string) (jetstream.KeyValueEntry, error) {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 50*time.Millisecond, time.Second, readRetries
	var entry jetstream.KeyValueEntry
	err := backoff.Retry(func() error {
		actx, cancel := context.WithTimeout(ctx, readAttempt)
		defer cancel()
		var err error
		entry, err = kv.Get(actx, key)
		if err != nil && (ctx.Err() != nil || !transient(err)) {
			return backoff.Permanent(err)
		}
		return err
	}, backoff.WithContext(b, ctx))
	return entry, err
}

// transient reports whether a failed read may succeed when tried again: the
// request found no responder or timed out, or the cluster could not serve it
// yet. A missing key, a closed connection or a misconfiguration is not.
func transient(err error) bool {
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false
	}
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var api *jetstream.APIError
	return errors.As(err, &api) && (api.ErrorCode == clusterNotAvailable || api.ErrorCode == clusterNotLeader)
}

// JetStream error codes of a cluster that cannot serve a request for now,
// e.g. while it elects a leader.
const (
	clusterNotAvailable jetstream.ErrorCode = 10008 // "JetStream system temporarily unavailable"
	clusterNotLeader    jetstream.ErrorCode = 10009 // "JetStream cluster can not handle request"
)
