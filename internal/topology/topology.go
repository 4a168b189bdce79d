// Package topology names every JetStream stream, bucket and subject Cairn uses and creates them idempotently.
package topology

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Subjects: the public contract of package events, documented in subjects.md.
const (
	SubjectRequested    = events.SubjectRequested
	SubjectActivated    = events.SubjectActivated
	SubjectSkipped      = events.SubjectSkipped
	SubjectFailed       = events.SubjectFailed
	SubjectHarvest      = events.SubjectHarvest
	SubjectFlushed      = events.SubjectFlushed
	SubjectMemoryFailed = events.SubjectMemoryFailed
)

const (
	advisoryMaxDeliver   = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES"
	advisoryTerminated   = "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED"
	defaultDuplicates    = 20 * time.Minute
	defaultDeadLetterAge = 14 * 24 * time.Hour
	defaultClaimAge      = 7 * 24 * time.Hour
)

// Streams.
const (
	StreamRequests   = events.StreamRequests
	StreamEvents     = events.StreamEvents
	StreamHarvest    = events.StreamHarvest
	StreamMemory     = events.StreamMemory
	StreamDeadLetter = "CAIRN_DEADLETTER"
)

// Key-value buckets and object stores.
const (
	BucketHeads       = "cairn_heads"
	BucketCheckpoints = "cairn_checkpoints"
	BucketLedger      = "cairn_ledger"
	BucketFacts       = "cairn_facts"
	ObjectLanes       = events.LanesBucket
	ObjectArtifacts   = "cairn_artifacts"
)

// Durable consumer names.
const (
	ConsumerProcessor = "processor"
	ConsumerHarvester = "harvester"
)

// Headers Cairn reads or writes besides Nats-Msg-Id.
const (
	HeaderTraceparent = "traceparent"
	HeaderEventKind   = "Cairn-Event-Kind"
)

// Options configures Ensure.
type Options struct {
	// Replicas is the replica count of every stream and bucket: 1 on a single
	// server, 3 on a cluster.
	Replicas int
	// Duplicates is the dedupe window of the request and event streams. It must
	// cover the longest time a producer may resend a request.
	Duplicates time.Duration
	// MaxMsgSize bounds one request message (0: the server's max payload).
	MaxMsgSize int32
	// LedgerTTL is how long a request's ledger entry is kept after its last
	// change (0: for ever). A resend after it is processed as a new
	// request, so it must exceed both the duplicate window and the longest
	// time a producer may resend; Validate asks for at least an hour.
	LedgerTTL time.Duration
	// Logger receives what Ensure reports (nil: discarded).
	Logger *slog.Logger
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// minLedgerTTL bounds LedgerTTL from below: an entry must outlive any
// delivery of its request (MaxDeliver × AckWait plus backoff).
const minLedgerTTL = time.Hour

// DefaultOptions returns the options for a single embedded server.
func DefaultOptions() Options {
	return Options{Replicas: 1, Duplicates: defaultDuplicates}
}

// Validate reports the first option out of bounds.
func (o Options) Validate() error {
	switch {
	case o.Replicas < 1 || o.Replicas > 5:
		return fmt.Errorf("topology: Replicas must be between 1 and 5, got %d", o.Replicas)
	case o.Duplicates < time.Second || o.Duplicates > 24*time.Hour:
		return fmt.Errorf("topology: Duplicates must be between 1s and 24h, got %s", o.Duplicates)
	case o.MaxMsgSize < 0:
		return fmt.Errorf("topology: MaxMsgSize must not be negative, got %d", o.MaxMsgSize)
	case o.LedgerTTL != 0 && (o.LedgerTTL < minLedgerTTL || o.LedgerTTL < o.Duplicates):
		return fmt.Errorf("topology: LedgerTTL must be 0 (keep for ever) or at least %s and the duplicate window, got %s", minLedgerTTL, o.LedgerTTL)
	}
	return nil
}

// Stores are the handles of every bucket Cairn uses.
type Stores struct {
	Heads       jetstream.KeyValue
	Checkpoints jetstream.KeyValue
	Ledger      jetstream.KeyValue
	Facts       jetstream.KeyValue
	Lanes       jetstream.ObjectStore
	Artifacts   jetstream.ObjectStore
}

// Ensure creates or updates every stream, bucket and object store, so that it
// is safe to call on each start of each replica. Retention limits an
// operator set on an existing stream or bucket (max age, bytes, messages)
// are kept where Cairn's own configuration sets none. It fails with a clear
// message when the server lacks JetStream or the account lacks permission.
//
// Every stream, bucket and object store records StoreFormat under
// FormatKey in its metadata. Before changing anything Ensure reads the
// existing ones, and refuses (code CodeUnsupportedStoreFormat) when one
// records a format newer than StoreFormat: a Cairn that cannot read what a
// newer one wrote must not run on it, nor lower its marker. A stream
// without a marker is new (or made by hand before Cairn's first start):
// Ensure marks it.
func Ensure(ctx context.Context, js jetstream.JetStream, o Options) (*Stores, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		return nil, explain("read JetStream account info", err)
	}
	streams := StreamConfigs(o)
	var s Stores
	kvs := []struct {
		dst *jetstream.KeyValue
		cfg jetstream.KeyValueConfig
	}{
		// Every bucket keeps one revision per key. A superseded head (its
		// outbox records already published) or ledger entry (the stored plan
		// with its records and checkpoint, many times the final entry) has no use
		// once the next revision is written; the lane's history is the
		// checkpoints' parent chain.
		{&s.Heads, kvConfig(BucketHeads, "active checkpoint, generation and outbox of each lane", 0, o)},
		{&s.Checkpoints, kvConfig(BucketCheckpoints, "immutable checkpoints by id", 0, o)},
		{&s.Ledger, kvConfig(BucketLedger, "content hash and attempt state of each request", o.LedgerTTL, o)},
		{&s.Facts, kvConfig(BucketFacts, "harvested facts by scope and slug", 0, o)},
	}
	objs := []struct {
		dst *jetstream.ObjectStore
		cfg jetstream.ObjectStoreConfig
	}{
		{&s.Lanes, jetstream.ObjectStoreConfig{Bucket: ObjectLanes, Description: "claim-checked request events", Storage: jetstream.FileStorage, Replicas: o.Replicas, TTL: defaultClaimAge}},
		{&s.Artifacts, jetstream.ObjectStoreConfig{Bucket: ObjectArtifacts, Description: "originals of projected tool outputs", Storage: jetstream.FileStorage, Replicas: o.Replicas}},
	}
	var names []string
	for _, cfg := range streams {
		names = append(names, cfg.Name)
	}
	for _, kv := range kvs {
		names = append(names, "KV_"+kv.cfg.Bucket)
	}
	for _, obj := range objs {
		names = append(names, "OBJ_"+obj.cfg.Bucket)
	}
	existing, err := readExisting(ctx, js, names)
	if err != nil {
		return nil, err
	}
	if err := checkFormat(names, existing); err != nil {
		return nil, err
	}
	for _, cfg := range streams {
		old := existing[cfg.Name]
		keepOperatorLimits(old, &cfg)
		cfg.Metadata = withFormat(old)
		_, err := create(ctx, "create stream "+cfg.Name, func() (jetstream.Stream, error) {
			return js.CreateOrUpdateStream(ctx, cfg)
		})
		if err != nil {
			return nil, err
		}
	}
	for _, kv := range kvs {
		old := existing["KV_"+kv.cfg.Bucket]
		keepOperatorBucketLimits(old, &kv.cfg)
		kv.cfg.Metadata = withFormat(old)
		*kv.dst, err = create(ctx, "create key-value bucket "+kv.cfg.Bucket, func() (jetstream.KeyValue, error) {
			return js.CreateOrUpdateKeyValue(ctx, kv.cfg)
		})
		if err != nil {
			return nil, err
		}
	}
	for _, obj := range objs {
		obj.cfg.Metadata = withFormat(existing["OBJ_"+obj.cfg.Bucket])
		*obj.dst, err = create(ctx, "create object store "+obj.cfg.Bucket, func() (jetstream.ObjectStore, error) {
			return js.CreateOrUpdateObjectStore(ctx, obj.cfg)
		})
		if err != nil {
			return nil, err
		}
	}
	o.logger().Debug("topology: streams and buckets ready", "store_format", StoreFormat)
	return &s, nil
}

// noPeersForPlacement is JetStream's error code for a stream it cannot place
// yet (10005, "no suitable peers for placement"): a cluster still forming,
// or one whose meta leader has not yet heard from a node that just
// started, answers it for a few seconds.
const noPeersForPlacement = 10005

// placementWait bounds how long Ensure waits for a cluster to place a stream.
const placementWait = 30 * time.Second

// whilePlacing runs create, again while the cluster answers that it has no
// peers for the placement, with growing pauses for up to placementWait (or
// until ctx ends). Any other error is returned at once.
func whilePlacing(ctx context.Context, create func() error) error {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 100*time.Millisecond, 2*time.Second, placementWait
	return backoff.Retry(func() error {
		err := create()
		var api *jetstream.APIError
		if err != nil && ctx.Err() == nil && errors.As(err, &api) && api.ErrorCode == noPeersForPlacement {
			return err
		}
		return backoff.Permanent(err)
	}, backoff.WithContext(b, ctx))
}

// create is whilePlacing for a create that returns a handle; its error is
// explained as op's.
func create[T any](ctx context.Context, op string, fn func() (T, error)) (T, error) {
	var v T
	err := whilePlacing(ctx, func() (err error) {
		v, err = fn()
		return err
	})
	if err != nil {
		return v, explain(op, err)
	}
	return v, nil
}

// readExisting returns the configuration of each named stream that exists.
func readExisting(ctx context.Context, js jetstream.JetStream, names []string) (map[string]*jetstream.StreamConfig, error) {
	existing := make(map[string]*jetstream.StreamConfig, len(names))
	for _, name := range names {
		cfg, err := existingStream(ctx, js, name)
		if err != nil {
			return nil, explain("read stream "+name, err)
		}
		if cfg != nil {
			existing[name] = cfg
		}
	}
	return existing, nil
}

// StreamConfigs returns the configuration of every stream Cairn owns. Event
// streams use limits retention so that any service can replay them from the
// start.
func StreamConfigs(o Options) []jetstream.StreamConfig {
	stream := func(name, desc string, subjects ...string) jetstream.StreamConfig {
		return jetstream.StreamConfig{
			Name:        name,
			Description: desc,
			Subjects:    subjects,
			Retention:   jetstream.LimitsPolicy,
			Storage:     jetstream.FileStorage,
			Replicas:    o.Replicas,
			Duplicates:  o.Duplicates,
			Discard:     jetstream.DiscardOld,
		}
	}
	requests := stream(StreamRequests, "compaction requests, kept for audit", SubjectRequested)
	requests.MaxMsgSize = o.MaxMsgSize
	// Every harvest job reads its request back by sequence. A direct get
	// returns the message as it is stored; the stream API's get wraps it in
	// base64 inside JSON, for the reader to decode (processor bench
	// measures what that costs serve). Any replica may answer a direct get, so readers retry a miss
	// (streamread.MsgAt).
	requests.AllowDirect = true
	// The dead-letter stream holds only what Cairn could not settle: a
	// request or job whose failed event was published is acked, and only
	// one whose outcome could not be recorded is terminated (or runs out
	// of deliveries), so an alert on this stream means work was lost.
	deadLetter := stream(StreamDeadLetter, "advisories of requests and harvest jobs Cairn could not settle",
		advisoryMaxDeliver+"."+StreamRequests+"."+ConsumerProcessor,
		advisoryTerminated+"."+StreamRequests+"."+ConsumerProcessor,
		advisoryMaxDeliver+"."+StreamHarvest+"."+ConsumerHarvester,
		advisoryTerminated+"."+StreamHarvest+"."+ConsumerHarvester,
	)
	deadLetter.MaxAge = defaultDeadLetterAge
	deadLetter.Duplicates = 0
	return []jetstream.StreamConfig{
		requests,
		stream(StreamEvents, "compaction outcomes", SubjectActivated, SubjectSkipped, SubjectFailed),
		stream(StreamHarvest, "memory harvest jobs", SubjectHarvest),
		stream(StreamMemory, "memory harvest outcomes", SubjectFlushed, SubjectMemoryFailed),
		deadLetter,
	}
}

// kvConfig is a bucket of one revision per key whose keys live for ttl
// (0: for ever).
func kvConfig(bucket, desc string, ttl time.Duration, o Options) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      bucket,
		Description: desc,
		History:     1,
		TTL:         ttl,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
	}
}

// keepOperatorLimits copies the retention limits of the existing stream
// into cfg where cfg sets none: an update must not undo the bounds an
// operator gave a stream (say with nats stream edit).
func keepOperatorLimits(existing *jetstream.StreamConfig, cfg *jetstream.StreamConfig) {
	if existing == nil {
		return
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = existing.MaxAge
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = existing.MaxBytes
	}
	if cfg.MaxMsgs <= 0 {
		cfg.MaxMsgs = existing.MaxMsgs
	}
}

// keepOperatorBucketLimits is keepOperatorLimits for a key-value bucket,
// whose TTL is its stream's max age.
func keepOperatorBucketLimits(existing *jetstream.StreamConfig, cfg *jetstream.KeyValueConfig) {
	s := jetstream.StreamConfig{MaxAge: cfg.TTL, MaxBytes: cfg.MaxBytes}
	keepOperatorLimits(existing, &s)
	cfg.TTL, cfg.MaxBytes = s.MaxAge, s.MaxBytes
}

// existingStream returns the configuration of stream name, or nil when
// there is no such stream.
func existingStream(ctx context.Context, js jetstream.JetStream, name string) (*jetstream.StreamConfig, error) {
	st, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cfg := st.CachedInfo().Config
	return &cfg, nil
}

// explain turns the server's terse refusals into messages an operator can act on.
func explain(op string, err error) error {
	switch {
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return fmt.Errorf("%s: JetStream is not enabled for this account; enable it on the server (jetstream {}) and for the account: %w", op, err)
	case errors.Is(err, nats.ErrPermissionViolation), strings.Contains(strings.ToLower(err.Error()), "permissions violation"):
		return fmt.Errorf("%s: the NATS user lacks permission; see nats.conf for the processor's permissions: %w", op, err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout), errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("%s: the server did not answer (is JetStream enabled and reachable?): %w", op, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}
