package outbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cairnhq/cairn/internal/pause"
	"github.com/cairnhq/cairn/internal/telemetry"
)

// RelayConfig bounds the relay's work.
type RelayConfig struct {
	// ClearAttempts bounds the compare-and-swap retries that remove published
	// records from a value changed concurrently (1..100).
	ClearAttempts int
	// RetryInterval is how often keys whose delivery failed are tried again
	// (10ms..1m).
	RetryInterval time.Duration
	// MaxRetryKeys bounds the set of keys waiting for a retry or for their
	// grace period; when it is full the relay rescans the whole bucket
	// instead (1..1e6).
	MaxRetryKeys int
	// Grace is how long the watch leaves a new value's records to the writer
	// that committed them (DeliverCommitted) before delivering them itself
	// (0..1m). Records a crash left behind are delivered after it.
	Grace time.Duration
	// AttemptTimeout bounds one delivery of a key by the watch or the
	// retry pass: its read, its publishes and its clear (100ms..1m). A
	// call to a server or a stream leader that froze then gives up after
	// it rather than after the client's 5 s default, and the key is tried
	// again a RetryInterval later, by when the group may have a new
	// leader.
	AttemptTimeout time.Duration
	// QueuedClears bounds the cleared values DeliverCommitted leaves to the
	// running relay instead of writing them itself (0..1e6; 0: the writer
	// always clears). When the queue is full the writer clears inline.
	QueuedClears int
	// OnPublish, when set, is called after each record's PubAck with the
	// time since its value was committed (metrics).
	OnPublish func(rec Record, lag time.Duration)
	// OnCleared, when set, is called after a value a writer committed at
	// revision committed (DeliverCommitted) was replaced by its cleared
	// form, now at revision cleared: the writer may keep the value it
	// handed over as the key's current one.
	OnCleared func(key string, committed, cleared uint64)
	// Resolve, when set, makes a record that names its checkpoint
	// (Record.CheckpointRef) whole before it is published; without it such
	// a record cannot be published.
	Resolve func(ctx context.Context, rec Record) (Record, error)
}

// DefaultRelayConfig returns the configuration Cairn runs with.
func DefaultRelayConfig() RelayConfig {
	return RelayConfig{ClearAttempts: 10, RetryInterval: time.Second, AttemptTimeout: 3 * time.Second, MaxRetryKeys: 10000, Grace: 2 * time.Second, QueuedClears: 1024}
}

// Validate names the first field out of bounds.
func (c RelayConfig) Validate() error {
	switch {
	case c.ClearAttempts < 1 || c.ClearAttempts > 100:
		return fmt.Errorf("outbox: ClearAttempts must be 1..100, got %d", c.ClearAttempts)
	case c.RetryInterval < 10*time.Millisecond || c.RetryInterval > time.Minute:
		return fmt.Errorf("outbox: RetryInterval must be 10ms..1m, got %s", c.RetryInterval)
	case c.AttemptTimeout < 100*time.Millisecond || c.AttemptTimeout > time.Minute:
		return fmt.Errorf("outbox: AttemptTimeout must be 100ms..1m, got %s", c.AttemptTimeout)
	case c.MaxRetryKeys < 1 || c.MaxRetryKeys > 1_000_000:
		return fmt.Errorf("outbox: MaxRetryKeys must be 1..1000000, got %d", c.MaxRetryKeys)
	case c.Grace < 0 || c.Grace > time.Minute:
		return fmt.Errorf("outbox: Grace must be 0..1m, got %s", c.Grace)
	case c.QueuedClears < 0 || c.QueuedClears > 1_000_000:
		return fmt.Errorf("outbox: QueuedClears must be 0..1000000, got %d", c.QueuedClears)
	}
	return nil
}

// lockStripes bounds the per-key locks: keys hash onto a fixed set of mutexes.
const lockStripes = 64

// Relay publishes the pending Records of every value in one KV bucket and
// removes them once published. Deliver may be called concurrently with Run
// and with itself; deliveries of one key are serialized.
type Relay struct {
	kv  jetstream.KeyValue
	pub Publisher
	cfg RelayConfig
	log *slog.Logger

	stripes [lockStripes]sync.Mutex

	// clears holds cleared values whose records are published, for the
	// clear loop to write; clearing says whether that loop runs (guarded by
	// mu, so nothing is queued after it stopped).
	clears   chan pendingClear
	clearing bool

	mu      sync.Mutex
	retry   map[string]struct{}
	waiting map[string]sighting      // revisions seen by the watch, in their grace period
	done    map[string]deliveredMark // key → the last revision a writer left without records
	rescan  bool
	scanned bool // a scan of every key has finished since Run started
}

// deliveredMark is the revision a writer left a key at after delivering
// its records, and when.
type deliveredMark struct {
	revision uint64
	at       time.Time
}

// sighting is a revision seen by the watch.
type sighting struct {
	revision uint64
	seen     time.Time
}

// NewRelay returns a relay over the values of kv, publishing through pub.
func NewRelay(kv jetstream.KeyValue, pub Publisher, cfg RelayConfig, log *slog.Logger) (*Relay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if kv == nil || pub == nil {
		return nil, errors.New("outbox: NewRelay needs a bucket and a publisher")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Relay{kv: kv, pub: pub, cfg: cfg, log: log, retry: map[string]struct{}{},
		waiting: map[string]sighting{}, done: map[string]deliveredMark{}, clears: make(chan pendingClear, cfg.QueuedClears)}, nil
}

// Run watches the bucket until ctx ends. On start it scans every key's
// current value and publishes the records a crash left behind; afterwards
// each new value is delivered once its grace period passed, unless its
// writer delivered it meanwhile (see DeliverCommitted). Keys whose delivery
// fails are retried every RetryInterval. Run returns nil when ctx ends.
//
// After the scan the watch carries revisions only, not values: every write
// of a lane head would otherwise be sent to every relay in full (records
// included, the largest values Cairn writes) only to learn that its writer
// had delivered it already. A revision no writer marked delivered within
// the grace period is read and delivered then.
func (r *Relay) Run(ctx context.Context) error {
	telemetry.Stage(ctx, telemetry.StageRelay, r.run)
	return nil
}

func (r *Relay) run(ctx context.Context) {
	stopClearing := r.startClearing(ctx)
	defer stopClearing()
	ticker := time.NewTicker(r.cfg.RetryInterval)
	defer ticker.Stop()
	initial := true
	for ctx.Err() == nil {
		// Updates are watched before the scan so that no write falls
		// between the two.
		w, err := r.kv.WatchAll(ctx, jetstream.UpdatesOnly(), jetstream.MetaOnly())
		if err == nil {
			if err = r.scan(ctx, initial); err != nil {
				_ = w.Stop()
			}
		}
		if err != nil {
			r.log.Warn("outbox: watch failed; retrying", "err", err)
			if !pause.For(ctx, r.cfg.RetryInterval) {
				break
			}
			continue
		}
		r.follow(ctx, w, ticker.C)
		initial = false
		_ = w.Stop()
	}
}

// scan reads every key's current value and delivers those with records:
// at once on start (a previous process left them), else after their grace
// period (a watch restarted: their writers may still be delivering them).
func (r *Relay) scan(ctx context.Context, deliverNow bool) error {
	w, err := r.kv.WatchAll(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("outbox: scan watch closed")
			}
			if e == nil {
				r.mu.Lock()
				r.scanned = true
				r.mu.Unlock()
				return nil // every current value seen
			}
			if e.Operation() != jetstream.KeyValuePut || !hasRecords(e.Value()) {
				continue
			}
			if deliverNow {
				r.deliverOrRetry(ctx, e.Key())
			} else {
				r.sight(e.Key(), e.Revision())
			}
		}
	}
}

// follow consumes a revisions-only watcher until it closes or ctx ends:
// every new revision waits for its grace period.
func (r *Relay) follow(ctx context.Context, w jetstream.KeyWatcher, tick <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			r.sight(e.Key(), e.Revision())
		case <-tick:
			r.deliverDue(ctx)
			r.retryPending(ctx)
		}
	}
}

// sight puts a new revision into its grace period, unless its writer
// delivered it already.
func (r *Relay) sight(key string, rev uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.done[key]; ok && d.revision >= rev {
		if s, ok := r.waiting[key]; ok && s.revision <= d.revision {
			delete(r.waiting, key)
		}
		if d.revision == rev {
			delete(r.done, key) // the watch reached the writer's last revision
		}
		return
	}
	if len(r.waiting) >= r.cfg.MaxRetryKeys {
		r.rescan = true
		return
	}
	if _, ok := r.waiting[key]; !ok {
		r.waiting[key] = sighting{revision: rev, seen: time.Now()}
	}
}

// deliverDue delivers the revisions whose grace period passed and whose
// writer did not deliver them, and forgets delivery marks the watch has
// had time to pass (a mark the watch saw before it was made would
// otherwise stay; without one, a late sighting costs a read).
func (r *Relay) deliverDue(ctx context.Context) {
	now := time.Now()
	var due []string
	r.mu.Lock()
	for k, s := range r.waiting {
		switch {
		case r.done[k].revision >= s.revision:
			delete(r.waiting, k)
		case now.Sub(s.seen) >= r.cfg.Grace:
			delete(r.waiting, k)
			due = append(due, k)
		}
	}
	for k, d := range r.done {
		if _, waiting := r.waiting[k]; !waiting && now.Sub(d.at) > r.cfg.Grace+r.cfg.RetryInterval {
			delete(r.done, k)
		}
	}
	r.mu.Unlock()
	r.deliverEach(ctx, due)
}

// deliverAtOnce bounds the keys one pass of the relay delivers at the same
// time.
const deliverAtOnce = 16

// deliverEach delivers keys, up to deliverAtOnce at a time (each key under
// its own lock, as Deliver takes it). One at a time, a read or publish that
// waits out its timeout (its server or the stream's leader frozen) held
// every key behind it: five such keys delayed the sixth by 25 s.
func (r *Relay) deliverEach(ctx context.Context, keys []string) {
	slots := make(chan struct{}, deliverAtOnce)
	var wg sync.WaitGroup
	for _, k := range keys {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			r.deliverOrRetry(ctx, k)
		})
	}
	wg.Wait()
}

func (r *Relay) deliverOrRetry(ctx context.Context, key string) {
	attempt, cancel := context.WithTimeout(ctx, r.cfg.AttemptTimeout)
	defer cancel()
	if err := r.Deliver(attempt, key); err != nil && ctx.Err() == nil {
		r.log.Warn("outbox: delivery failed; will retry", "key", key, "err", err)
		r.retryLater(key)
	}
}

// retryLater leaves key to the retry pass, or to a rescan when too many
// keys wait.
func (r *Relay) retryLater(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.retry) < r.cfg.MaxRetryKeys {
		r.retry[key] = struct{}{}
	} else {
		r.rescan = true
	}
}

func (r *Relay) retryPending(ctx context.Context) {
	r.mu.Lock()
	keys := make([]string, 0, len(r.retry))
	for k := range r.retry {
		keys = append(keys, k)
	}
	clear(r.retry)
	rescan := r.rescan
	r.rescan = false
	r.mu.Unlock()
	if rescan {
		if err := r.Flush(ctx); err != nil {
			r.mu.Lock()
			r.rescan = true
			r.mu.Unlock()
		}
		return
	}
	r.deliverEach(ctx, keys)
}

// Drain finishes this relay's own work before its process stops: it writes
// the queued clears and delivers the keys it knows may hold unpublished
// records (deliveries that failed, and revisions the watch saw whose grace
// period has not passed). It sweeps the whole bucket with Flush instead when
// those sets overflowed, or when Run has not finished its first scan. Reading every head on each stop would cost a read
// per lane the bucket holds, however few this process touched; records no
// running relay knows of (a crash) are found by the scan of the next start,
// and a request whose own publish failed is redelivered and publishes again.
func (r *Relay) Drain(ctx context.Context) error {
	r.clearQueued(ctx)
	r.mu.Lock()
	keys := make([]string, 0, len(r.retry)+len(r.waiting))
	for k := range r.retry {
		keys = append(keys, k)
	}
	for k := range r.waiting {
		if _, listed := r.retry[k]; !listed {
			keys = append(keys, k)
		}
	}
	clear(r.retry)
	clear(r.waiting)
	sweep := r.rescan || !r.scanned
	r.rescan = false
	r.mu.Unlock()
	if sweep {
		return r.Flush(ctx)
	}
	var errs []error
	for _, k := range keys {
		if err := r.Deliver(ctx, k); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Flush publishes the pending records of every key in the bucket: a sweep,
// for a relay that lost track of the keys it should retry. It returns the errors of the keys it could
// not finish, joined.
func (r *Relay) Flush(ctx context.Context) error {
	r.clearQueued(ctx)
	lister, err := r.kv.ListKeys(ctx)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil
		}
		return fmt.Errorf("outbox: list keys: %w", err)
	}
	defer func() { _ = lister.Stop() }()
	var errs []error
	for key := range lister.Keys() {
		if err := r.Deliver(ctx, key); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Deliver publishes the pending records of one key, in order, and then
// removes them from the value. It is a no-op for a missing key or a value
// without records. An error leaves the unpublished records in place.
func (r *Relay) Deliver(ctx context.Context, key string) error {
	lock := r.stripe(key)
	lock.Lock()
	defer lock.Unlock()
	entry, err := r.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("outbox: read %s: %w", key, err)
	}
	records, err := decodeRecords(entry.Value())
	if err != nil || len(records) == 0 {
		return err
	}
	published, err := r.publishAll(ctx, records, entry.Created())
	if err != nil {
		return err
	}
	return r.clear(ctx, key, entry.Value(), entry.Revision(), published)
}

// DeliverCommitted is Deliver for the writer that just committed a value
// at revision: it publishes records (the value's pending records, which
// the writer knows) without reading the key, then has cleared (the same
// value without those records) written by compare-and-swap on revision,
// and marks the key delivered so the watch does not repeat the work. It
// returns once every record is published: while Run is running the clear
// is queued for Run's clear loop, so the writer does not wait for it (a
// crash before it is written leaves published records that the next start
// publishes again under the same Nats-Msg-Id, which the duplicate window
// absorbs). If the value changed meanwhile the clear falls back to
// re-reading and removing the records. A failure leaves the records to the
// watch, which delivers them after its grace period.
func (r *Relay) DeliverCommitted(ctx context.Context, key string, records []Record, cleared []byte, revision uint64) error {
	lock := r.stripe(key)
	lock.Lock()
	defer lock.Unlock()
	if len(records) == 0 {
		return nil
	}
	committed := time.Now() // the writer calls this right after its commit
	published, err := r.publishAll(ctx, records, committed)
	if err != nil {
		return err
	}
	job := pendingClear{key: key, cleared: cleared, revision: revision, published: published}
	if r.queueClear(job) {
		return nil
	}
	return r.writeClear(ctx, job)
}

// pendingClear is a committed value's cleared form, written once its
// records are published.
type pendingClear struct {
	key       string
	cleared   []byte
	revision  uint64
	published map[string]bool
}

// writeClear writes job.cleared by compare-and-swap, or removes the
// published records from the key's latest value if it changed. The caller
// holds the key's stripe lock.
func (r *Relay) writeClear(ctx context.Context, job pendingClear) error {
	rev, err := r.kv.Update(ctx, job.key, job.cleared, job.revision)
	if err == nil {
		r.markDone(job.key, rev)
		if r.cfg.OnCleared != nil {
			r.cfg.OnCleared(job.key, job.revision, rev)
		}
		return nil
	}
	if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("outbox: clear %s: %w", job.key, err)
	}
	return r.clear(ctx, job.key, nil, 0, job.published)
}

// queueClear hands job to the clear loop; it reports false when the loop
// is not running or its queue is full.
func (r *Relay) queueClear(job pendingClear) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.clearing {
		return false
	}
	select {
	case r.clears <- job:
		return true
	default:
		return false
	}
}

// clearTimeout bounds the clears written after Run's context ended.
const clearTimeout = 10 * time.Second

// startClearing starts the clear loop; the returned function stops
// queueing, writes what is still queued (bounded by clearTimeout) and
// waits for the loop.
func (r *Relay) startClearing(ctx context.Context) (stop func()) {
	r.mu.Lock()
	r.clearing = true
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case job := <-r.clears:
				r.clearOne(ctx, job)
			}
		}
	}()
	return func() {
		<-done
		r.mu.Lock()
		r.clearing = false
		r.mu.Unlock()
		finish, cancel := context.WithTimeout(context.WithoutCancel(ctx), clearTimeout)
		defer cancel()
		r.clearQueued(finish)
	}
}

// clearQueued writes every queued clear without waiting for more.
func (r *Relay) clearQueued(ctx context.Context) {
	for {
		select {
		case job := <-r.clears:
			r.clearOne(ctx, job)
		default:
			return
		}
	}
}

// clearOne writes one queued clear under its key's lock; a failure leaves
// the key to the retry pass, which publishes again (absorbed by the
// duplicate window) and clears.
func (r *Relay) clearOne(ctx context.Context, job pendingClear) {
	lock := r.stripe(job.key)
	lock.Lock()
	err := r.writeClear(ctx, job)
	lock.Unlock()
	if err == nil {
		return
	}
	r.log.Warn("outbox: clearing published records failed; will retry", "key", job.key, "err", err)
	r.retryLater(job.key)
}

// clear removes the published records from key's value by
// compare-and-swap, starting from current at revision (nil: read the
// value first) and re-reading it after each conflict (a new head may have
// added records meanwhile).
func (r *Relay) clear(ctx context.Context, key string, current []byte, revision uint64, published map[string]bool) error {
	for range r.cfg.ClearAttempts {
		if current == nil {
			entry, err := r.kv.Get(ctx, key)
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("outbox: re-read %s: %w", key, err)
			}
			current, revision = entry.Value(), entry.Revision()
		}
		value, changed, err := withoutRecords(current, published)
		if err != nil {
			return err
		}
		if !changed {
			r.markDone(key, revision)
			return nil
		}
		rev, err := r.kv.Update(ctx, key, value, revision)
		if err == nil {
			r.markDone(key, rev)
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return fmt.Errorf("outbox: clear %s: %w", key, err)
		}
		current = nil
	}
	return fmt.Errorf("outbox: clear %s: still conflicting after %d attempts", key, r.cfg.ClearAttempts)
}

// publishAll publishes records, made whole (RelayConfig.Resolve), and
// returns their event ids once every PubAck arrived; on an error none is
// reported published (the records stay, and a repeat is absorbed by the
// duplicate window). Records that share a
// subject are published one after another, in order. When every record has
// a subject of its own (an activation's event and its harvest job, which go
// to different streams) there is no order to keep: they are published
// concurrently and their PubAcks awaited together.
func (r *Relay) publishAll(ctx context.Context, records []Record, committed time.Time) (map[string]bool, error) {
	records, err := r.whole(ctx, records)
	if err != nil {
		return nil, err
	}
	published := make(map[string]bool, len(records))
	if len(records) < 2 || !distinctSubjects(records) {
		for _, rec := range records {
			if err := Publish(ctx, r.pub, rec); err != nil {
				return nil, err
			}
			published[rec.EventID] = true
			r.published(rec, committed)
		}
		return published, nil
	}
	errs := make([]error, len(records))
	var wg sync.WaitGroup
	for i := range records {
		wg.Go(func() { errs[i] = Publish(ctx, r.pub, records[i]) })
	}
	wg.Wait()
	for i, rec := range records {
		if errs[i] == nil {
			r.published(rec, committed)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, rec := range records {
		published[rec.EventID] = true
	}
	return published, nil
}

// whole returns records with each one that names its checkpoint made
// whole by RelayConfig.Resolve; records is not changed.
func (r *Relay) whole(ctx context.Context, records []Record) ([]Record, error) {
	if r.cfg.Resolve == nil || !slices.ContainsFunc(records, func(rec Record) bool { return rec.CheckpointRef != "" }) {
		return records, nil
	}
	out := slices.Clone(records)
	for i, rec := range out {
		if rec.CheckpointRef == "" {
			continue
		}
		var err error
		if out[i], err = r.cfg.Resolve(ctx, rec); err != nil {
			return nil, fmt.Errorf("outbox: make %s whole: %w", rec.EventID, err)
		}
	}
	return out, nil
}

// distinctSubjects reports whether no two records share a subject.
func distinctSubjects(records []Record) bool {
	for i := range records {
		for j := range i {
			if records[i].Subject == records[j].Subject {
				return false
			}
		}
	}
	return true
}

// published reports one published record to OnPublish.
func (r *Relay) published(rec Record, committed time.Time) {
	if r.cfg.OnPublish != nil {
		r.cfg.OnPublish(rec, time.Since(committed))
	}
}

// Behind counts the keys whose records this relay knows to be unpublished
// for longer than olderThan: values past their grace period by olderThan,
// and keys whose delivery failed and waits for a retry. Readiness uses it;
// it does no I/O.
func (r *Relay) Behind(olderThan time.Duration) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.retry)
	for _, s := range r.waiting {
		if time.Since(s.seen) > r.cfg.Grace+olderThan {
			n++
		}
	}
	if r.rescan {
		n++
	}
	return n
}

// markDone records that every record up to revision of key is delivered.
func (r *Relay) markDone(key string, revision uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if revision > r.done[key].revision && (len(r.done) < r.cfg.MaxRetryKeys || r.done[key].revision > 0) {
		r.done[key] = deliveredMark{revision: revision, at: time.Now()}
	}
}

func (r *Relay) stripe(key string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return &r.stripes[h.Sum32()%lockStripes]
}

// hasRecords reports whether a value carries pending records. It walks
// the top-level members and stops at the outbox's first token, so the
// records themselves are not decoded.
func hasRecords(value []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(value))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return false
		}
		if key != Field {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return false
			}
			continue
		}
		t, err := dec.Token()
		if err != nil || t != json.Delim('[') {
			return false
		}
		return dec.More()
	}
	return false
}

func decodeRecords(value []byte) ([]Record, error) {
	var v struct {
		Outbox []Record `json:"outbox"`
	}
	if err := json.Unmarshal(value, &v); err != nil {
		return nil, fmt.Errorf("outbox: value is not a JSON object with an outbox: %w", err)
	}
	return v.Outbox, nil
}

// withoutRecords returns value with the published records removed from its
// outbox member; every other member is kept as it was.
func withoutRecords(value []byte, published map[string]bool) ([]byte, bool, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(value, &obj); err != nil {
		return nil, false, fmt.Errorf("outbox: value is not a JSON object: %w", err)
	}
	var records []Record
	if raw, ok := obj[Field]; ok && len(raw) > 0 {
		if err := json.Unmarshal(raw, &records); err != nil {
			return nil, false, fmt.Errorf("outbox: malformed outbox: %w", err)
		}
	}
	kept := make([]Record, 0, len(records))
	for _, rec := range records {
		if !published[rec.EventID] {
			kept = append(kept, rec)
		}
	}
	if len(kept) == len(records) {
		return nil, false, nil
	}
	raw, err := json.Marshal(kept)
	if err != nil {
		return nil, false, err
	}
	obj[Field] = raw
	out, err := json.Marshal(obj)
	return out, true, err
}
