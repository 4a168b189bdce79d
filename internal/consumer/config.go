package consumer

import (
	"fmt"
	"time"

	"github.com/cairnhq/cairn/internal/jsrun"
	"github.com/cairnhq/cairn/internal/outbox"
	"github.com/cairnhq/cairn/internal/topology"
)

// Uncertain-attempt policies (Config.OnUncertain).
const (
	// OnUncertainRetry calls the model again once the earlier attempt's
	// deadline has passed; both attempts are recorded.
	OnUncertainRetry = "retry"
	// OnUncertainFail fails the request with provider_attempt_uncertain, for
	// deployments that must never pay for a model call twice.
	OnUncertainFail = "fail"
)

// maxAckPendingLimit bounds Config.MaxAckPending.
const maxAckPendingLimit = 65536

// AckPendingPerWorker is the default MaxAckPending per worker
// (jsrun.AckPendingPerWorker says why).
const AckPendingPerWorker = jsrun.AckPendingPerWorker

// Config tunes the processor. Every field is bounded; Validate names the
// first one out of bounds.
type Config struct {
	// Workers is how many requests this processor works on at once
	// (1..256); its pulls never ask for more messages than it has free
	// workers.
	Workers int
	// MaxAckPending bounds the requests delivered and not yet settled
	// across every processor sharing the durable consumer, counting those
	// a killed processor left behind until their AckWait ends and those
	// waiting for a delayed redelivery: 0 means AckPendingPerWorker ×
	// Workers (at most 65536), else Workers..65536. Replicas that share the
	// consumer should all set the same value, at least the sum of their
	// workers and better AckPendingPerWorker times it (each replica's start
	// sets the consumer's value). Pulls stay bounded by each processor's
	// free workers whatever its value.
	MaxAckPending int
	// CommitConcurrency bounds how many requests commit at once (check the
	// model's output, store the checkpoint, move the head, publish), admitted
	// in the order their engine runs finished: 0 means two per CPU, at most
	// Workers; else 1..Workers. Model calls are never bounded by it.
	CommitConcurrency int
	// AckWait is how long the server waits for a settle before redelivering
	// (1s..1h). While a request works, InProgress is sent every AckWait/3.
	AckWait time.Duration
	// MaxDeliver bounds deliveries of one request (2..100). A transient
	// failure on the last delivery ends in a failed event with
	// provider_unavailable.
	MaxDeliver int
	// NakBackoff is the redelivery delay after the n-th transient failure
	// (the last entry repeats); 1..32 entries of 0..1h.
	NakBackoff []time.Duration
	// OnUncertain is OnUncertainRetry or OnUncertainFail.
	OnUncertain string
	// AttemptTimeout bounds one attempt of a request, model calls included
	// (1s..6h). The ledger records it as the attempt's deadline, after which
	// a redelivery knows the earlier attempt no longer runs.
	AttemptTimeout time.Duration
	// MaxEventsObjectBytes bounds a claim-checked events object (1KiB..1GiB).
	MaxEventsObjectBytes int64
	// PullWait is how long one pull waits for messages (100ms..30s). A
	// pull sent to a consumer leader that froze is lost until it expires,
	// so it also bounds how long a processor waits on a dead leader once
	// another has been elected.
	PullWait time.Duration
	// PullGather is how long a pull may wait, while requests are backed
	// up and others wait for a commit slot, for half the workers to
	// come free, so that one pull fetches several requests
	// (jsrun.Config.Gather); 0..1s, 0 never waits. Only a processor with
	// a local summarizer waits: with a remote model, the wait would
	// delay the next model call.
	PullGather time.Duration
	// DrainTimeout bounds how long Run waits for in-flight requests after
	// its context ends before it Naks them (0..10m).
	DrainTimeout time.Duration
	// HeadAttempts bounds compare-and-swap retries of one head change (1..100).
	HeadAttempts int
	// HistoryLimit bounds how far recovery walks a lane's history (1..10000).
	HistoryLimit int
	// Stream, Durable and Subject name the request stream, its consumer and
	// the subject it filters.
	Stream, Durable, Subject string
	// Relay configures the outbox relay of the heads bucket.
	Relay outbox.RelayConfig

	// crashAt, set only by tests, is called at each commit step; returning
	// true stops the processor at that point as if it had been killed.
	crashAt func(step string) bool
}

// DefaultConfig returns the configuration Cairn runs with.
func DefaultConfig() Config {
	return Config{
		Workers:              8,
		AckWait:              10 * time.Second,
		MaxDeliver:           6,
		NakBackoff:           []time.Duration{2 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute},
		OnUncertain:          OnUncertainRetry,
		AttemptTimeout:       10 * time.Minute,
		MaxEventsObjectBytes: 64 << 20,
		PullWait:             2 * time.Second,
		PullGather:           5 * time.Millisecond,
		DrainTimeout:         30 * time.Second,
		HeadAttempts:         10,
		HistoryLimit:         256,
		Stream:               topology.StreamRequests,
		Durable:              topology.ConsumerProcessor,
		Subject:              topology.SubjectRequested,
		Relay:                outbox.DefaultRelayConfig(),
	}
}

// EffectiveMaxAckPending is MaxAckPending with its default applied.
func (c Config) EffectiveMaxAckPending() int {
	if c.MaxAckPending == 0 {
		return min(AckPendingPerWorker*c.Workers, maxAckPendingLimit)
	}
	return c.MaxAckPending
}

// EffectiveCommitConcurrency is CommitConcurrency with its default applied.
func (c Config) EffectiveCommitConcurrency() int {
	if c.CommitConcurrency == 0 {
		return defaultCommits(c.Workers)
	}
	return c.CommitConcurrency
}

// Validate reports the first field out of bounds.
func (c Config) Validate() error {
	bad := func(field, bounds string, v any) error {
		return fmt.Errorf("consumer: %s must be %s, got %v", field, bounds, v)
	}
	switch {
	case c.Workers < 1 || c.Workers > 256:
		return bad("Workers", "1..256", c.Workers)
	case c.MaxAckPending != 0 && (c.MaxAckPending < c.Workers || c.MaxAckPending > maxAckPendingLimit):
		return bad("MaxAckPending", fmt.Sprintf("0 or %d..%d", c.Workers, maxAckPendingLimit), c.MaxAckPending)
	case c.CommitConcurrency < 0 || c.CommitConcurrency > c.Workers:
		return bad("CommitConcurrency", fmt.Sprintf("0..%d (Workers)", c.Workers), c.CommitConcurrency)
	case c.AckWait < time.Second || c.AckWait > time.Hour:
		return bad("AckWait", "1s..1h", c.AckWait)
	case c.MaxDeliver < 2 || c.MaxDeliver > 100:
		return bad("MaxDeliver", "2..100", c.MaxDeliver)
	case len(c.NakBackoff) < 1 || len(c.NakBackoff) > 32:
		return bad("NakBackoff", "1..32 entries", len(c.NakBackoff))
	case c.OnUncertain != OnUncertainRetry && c.OnUncertain != OnUncertainFail:
		return bad("OnUncertain", `"retry" or "fail"`, c.OnUncertain)
	case c.AttemptTimeout < time.Second || c.AttemptTimeout > 6*time.Hour:
		return bad("AttemptTimeout", "1s..6h", c.AttemptTimeout)
	case c.MaxEventsObjectBytes < 1<<10 || c.MaxEventsObjectBytes > 1<<30:
		return bad("MaxEventsObjectBytes", "1KiB..1GiB", c.MaxEventsObjectBytes)
	case c.PullWait < 100*time.Millisecond || c.PullWait > 30*time.Second:
		return bad("PullWait", "100ms..30s", c.PullWait)
	case c.PullGather < 0 || c.PullGather > time.Second:
		return bad("PullGather", "0..1s", c.PullGather)
	case c.DrainTimeout < 0 || c.DrainTimeout > 10*time.Minute:
		return bad("DrainTimeout", "0..10m", c.DrainTimeout)
	case c.HeadAttempts < 1 || c.HeadAttempts > 100:
		return bad("HeadAttempts", "1..100", c.HeadAttempts)
	case c.HistoryLimit < 1 || c.HistoryLimit > 10000:
		return bad("HistoryLimit", "1..10000", c.HistoryLimit)
	case c.Stream == "" || c.Durable == "" || c.Subject == "":
		return fmt.Errorf("consumer: Stream, Durable and Subject must be set")
	}
	for i, d := range c.NakBackoff {
		if d < 0 || d > time.Hour {
			return bad(fmt.Sprintf("NakBackoff[%d]", i), "0..1h", d)
		}
	}
	return c.Relay.Validate()
}
