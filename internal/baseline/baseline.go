// Package baseline is the yardstick Cairn's processor is measured against:
// a loop that does only the JetStream work one request needs, with the
// sizes the processor writes, on Cairn's own streams and buckets. Both the
// fair benchmark (internal/consumer) and `processor bench --baseline` run
// this one loop, so that their figures compare the same thing.
package baseline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/nats-io/nats.go/jetstream"
)

// Sizes are the mean sizes, as stored, of what the processor wrote for a
// request: the lane head without its outbox records, the checkpoint and the
// activated event.
type Sizes struct {
	Head       int `json:"head_bytes"`
	Checkpoint int `json:"checkpoint_bytes"`
	Activated  int `json:"activated_bytes"`
}

// ReadSizes reads the mean stored sizes from the streams of a processor run
// that activated every request. The heads bucket keeps one revision per
// lane, the cleared head, which is what the baseline writes.
func ReadSizes(ctx context.Context, js jetstream.JetStream) (Sizes, error) {
	var s Sizes
	var err error
	for _, x := range []struct {
		stream string
		size   *int
	}{
		{"KV_" + topology.BucketHeads, &s.Head},
		{"KV_" + topology.BucketCheckpoints, &s.Checkpoint},
		{topology.StreamEvents, &s.Activated},
	} {
		if *x.size, err = meanStoredSize(ctx, js, x.stream); err != nil {
			return Sizes{}, err
		}
	}
	return s, nil
}

// meanStoredSize is the mean size of the messages stream holds.
func meanStoredSize(ctx context.Context, js jetstream.JetStream, stream string) (int, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, fmt.Errorf("baseline: sizes: %w", err)
	}
	st := s.CachedInfo().State
	if st.Msgs == 0 {
		return 0, fmt.Errorf("baseline: sizes: stream %s is empty", stream)
	}
	return int(st.Bytes / st.Msgs), nil
}

// Options configure a Loop.
type Options struct {
	// Workers is how many requests the loop handles at once.
	Workers int
	Sizes   Sizes
	// HeadKey is the heads-bucket key of the lane of request id (the
	// request's Nats-Msg-Id): the loop reads no body, so the caller, who
	// made the ids, says which lane each one names.
	HeadKey func(requestID string) string
}

// Loop consumes Cairn's request stream and, for each request, reads the
// lane head, inserts the checkpoint, writes the head by compare-and-swap
// (a create on a new lane), publishes the activated event with its
// Nats-Msg-Id, and acks.
type Loop struct {
	js             jetstream.JetStream
	stores         *topology.Stores
	o              Options
	head, cp, done []byte
	stop           func()

	mu   sync.Mutex
	errs []error
}

// Start ensures Cairn's streams and buckets on js and starts consuming.
func Start(ctx context.Context, js jetstream.JetStream, o Options) (*Loop, error) {
	if o.Workers < 1 || o.HeadKey == nil {
		return nil, errors.New("baseline: Workers ≥ 1 and HeadKey are required")
	}
	stores, err := topology.Ensure(ctx, js, topology.DefaultOptions())
	if err != nil {
		return nil, err
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, topology.StreamRequests, jetstream.ConsumerConfig{Durable: "base", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: o.Workers})
	if err != nil {
		return nil, err
	}
	l := &Loop{
		js: js, stores: stores, o: o,
		head: bytes.Repeat([]byte("h"), o.Sizes.Head), cp: bytes.Repeat([]byte("c"), o.Sizes.Checkpoint), done: bytes.Repeat([]byte("a"), o.Sizes.Activated),
	}
	if l.stop, err = FanOut(cons, o.Workers, l.work); err != nil {
		return nil, err
	}
	return l, nil
}

// Prime gives the lane of request id a head and its checkpoint before the
// loop meets the request: a second activation, on an existing head.
func (l *Loop) Prime(ctx context.Context, requestID, checkpointID string) error {
	if _, err := l.stores.Checkpoints.Create(ctx, checkpointID, l.cp); err != nil {
		return err
	}
	_, err := l.stores.Heads.Create(ctx, l.o.HeadKey(requestID), l.head)
	return err
}

// Stop stops pulling, waits for the requests in flight, and returns the
// errors the loop met (at most a few, and how many there were).
func (l *Loop) Stop() error {
	l.stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(l.errs...)
}

// maxErrors bounds the errors Stop reports: one broken server fails
// every request the same way.
const maxErrors = 5

func (l *Loop) fail(err error) {
	if err == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) < maxErrors {
		l.errs = append(l.errs, err)
	}
}

func (l *Loop) work(m jetstream.Msg) {
	ctx := context.Background()
	id := m.Headers().Get(jetstream.MsgIDHeader)
	k := l.o.HeadKey(id)
	rev := uint64(0)
	if en, err := l.stores.Heads.Get(ctx, k); err == nil {
		rev = en.Revision()
	}
	_, err := l.stores.Checkpoints.Create(ctx, id, l.cp)
	l.fail(err)
	if rev == 0 {
		_, err = l.stores.Heads.Create(ctx, k, l.head)
	} else {
		_, err = l.stores.Heads.Update(ctx, k, l.head, rev)
	}
	l.fail(err)
	_, err = l.js.Publish(ctx, topology.SubjectActivated, l.done, jetstream.WithMsgID(id+":"+events.KindActivated))
	l.fail(err)
	_ = m.Ack()
}

// FanOut runs work on each message of cons, at most workers at once, like
// the processor's pull loop, until the returned stop: it stops pulling and
// waits for the work in flight (its last PubAck may still be on its way),
// so call it before the server goes away. (A Consume started and stopped
// first would leave its pull request on the server: messages delivered to
// it wait out AckWait, stalling a loop for 30 s now and then.)
func FanOut(cons jetstream.Consumer, workers int, work func(jetstream.Msg)) (stop func(), err error) {
	it, err := cons.Messages(jetstream.PullMaxMessages(workers))
	if err != nil {
		return nil, err
	}
	slots := make(chan struct{}, workers)
	pulled := make(chan struct{})
	go func() {
		defer close(pulled)
		for {
			m, err := it.Next()
			if err != nil {
				return
			}
			slots <- struct{}{}
			go func() { defer func() { <-slots }(); work(m) }()
		}
	}()
	return func() {
		it.Stop()
		<-pulled
		for range workers {
			slots <- struct{}{}
		}
	}, nil
}

// Median is the middle value of xs (the mean of the two middle ones for an
// even count): the headline of alternating runs, whose single pairs vary
// too much on a shared machine to be read one by one.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
