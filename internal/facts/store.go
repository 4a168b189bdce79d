package facts

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/topology"
)

// Values every harvested fact carries: it comes from a
// compaction, is low-trust, and can never be pinned.
const (
	ProvenanceCompaction = "compaction"
	CompactionConfidence = 0.3
)

// Bounds of the store.
const (
	// MaxListed bounds how many facts of one scope List reads.
	MaxListed = 10000
	// maxCASAttempts bounds the read-modify-write retries of one upsert.
	maxCASAttempts = 5
)

// Fact is one stored note, the value of a cairn_facts key.
type Fact struct {
	Slug       string    `json:"slug"`
	Scope      Scope     `json:"scope"`
	Kind       Kind      `json:"kind"`
	Title      string    `json:"title"`
	Body       string    `json:"body"`
	Topics     []string  `json:"topics"`
	Provenance string    `json:"provenance"`
	Confidence float64   `json:"confidence"`
	Source     string    `json:"source"`
	Pinned     bool      `json:"pinned"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	BodySHA256 string    `json:"body_sha256"`
	// EntryID and Rule say where a harvest found the fact and why it kept
	// it (`processor facts extract`); they are not stored.
	EntryID string `json:"-"`
	Rule    string `json:"-"`
}

// Source returns a compaction fact's source: "conversation:<id>#<head>".
func Source(conversationID, headEntryID string) string {
	return "conversation:" + conversationID + "#" + headEntryID
}

// Slug returns the deterministic slug of a fact harvested at headEntryID with
// the given title: a readable prefix of the head entry id, a short hash of
// the whole head entry id, and a short hash of the title. A re-run of the
// same job therefore lands on the same keys. Slugs use [-a-z0-9] only.
func Slug(headEntryID, title string) string {
	var prefix strings.Builder
	for _, r := range strings.ToLower(headEntryID) {
		if prefix.Len() == 12 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			prefix.WriteRune(r)
		}
	}
	head := sha256.Sum256([]byte(headEntryID))
	t := sha256.Sum256([]byte(normalize(title)))
	p := prefix.String()
	if p == "" {
		p = "h"
	}
	return p + "-" + hex.EncodeToString(head[:4]) + "-" + hex.EncodeToString(t[:5])
}

// EncodeScope encodes a scope as one KV key token: base64url without padding
// of "kind", a zero byte, and "id". It is reversible and uses only characters
// KV keys allow.
func EncodeScope(s Scope) string {
	return base64.RawURLEncoding.EncodeToString([]byte(s.Kind + "\x00" + s.ID))
}

// ParseScope parses the "kind:id" form used on the command line.
func ParseScope(s string) (Scope, error) {
	kind, id, ok := strings.Cut(s, ":")
	scope := Scope{Kind: kind, ID: id}
	if !ok {
		return Scope{}, fmt.Errorf("scope %q: want kind:id", s)
	}
	if err := validateScope(scope); err != nil {
		return Scope{}, err
	}
	return scope, nil
}

// Store keeps facts in the cairn_facts KV bucket under
// "<EncodeScope(scope)>.<slug>". It is safe for concurrent use.
type Store struct {
	kv  jetstream.KeyValue
	now func() time.Time
}

// NewStore returns a Store over the facts bucket. now, when nil, is time.Now.
func NewStore(kv jetstream.KeyValue, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{kv: kv, now: now}
}

// OpenStore opens the cairn_facts bucket, which topology.Ensure creates.
func OpenStore(ctx context.Context, js jetstream.JetStream) (*Store, error) {
	kv, err := js.KeyValue(ctx, topology.BucketFacts)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "open the facts bucket "+topology.BucketFacts, err)
	}
	return NewStore(kv, nil), nil
}

func key(scope Scope, slug string) string { return EncodeScope(scope) + "." + slug }

// Get returns the fact with the given slug, or (nil, nil) when there is none.
func (s *Store) Get(ctx context.Context, scope Scope, slug string) (*Fact, error) {
	f, _, err := s.get(ctx, key(scope, slug))
	return f, err
}

func (s *Store) get(ctx context.Context, k string) (*Fact, uint64, error) {
	e, err := s.kv.Get(ctx, k)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, errcode.Wrap(errcode.Internal, "read fact "+k, err)
	}
	f, err := decodeFact(e)
	if err != nil {
		return nil, 0, err
	}
	return &f, e.Revision(), nil
}

func decodeFact(e jetstream.KeyValueEntry) (Fact, error) {
	var f Fact
	if err := json.Unmarshal(e.Value(), &f); err != nil {
		return Fact{}, errcode.Wrap(errcode.Internal, "decode fact "+e.Key(), err)
	}
	return f, nil
}

// Upsert stores f under its scope and slug. A fact already stored there keeps
// its CreatedAt; UpdatedAt is set to now. Concurrent upserts of one key are
// serialized by compare-and-swap, retried a bounded number of times. It
// returns the fact as stored.
func (s *Store) Upsert(ctx context.Context, f Fact) (Fact, error) {
	return s.upsert(ctx, f, nil)
}

// upsert is Upsert. When known is set, it is what a read of the key just
// returned (a zero revision: no fact), and the first attempt writes on it
// without reading the key again; a stale known fails the compare-and-swap,
// and the next attempt reads.
func (s *Store) upsert(ctx context.Context, f Fact, known *stored) (Fact, error) {
	k := key(f.Scope, f.Slug)
	for attempt := 1; ; attempt++ {
		var old *Fact
		var rev uint64
		if known != nil {
			old, rev, known = known.fact(), known.rev, nil
		} else {
			var err error
			if old, rev, err = s.get(ctx, k); err != nil {
				return Fact{}, err
			}
		}
		now := s.now().UTC()
		f.UpdatedAt, f.CreatedAt = now, now
		if old != nil {
			f.CreatedAt = old.CreatedAt
		}
		data, err := json.Marshal(f)
		if err != nil {
			return Fact{}, errcode.Wrap(errcode.Internal, "encode fact", err)
		}
		if old == nil {
			_, err = s.kv.Create(ctx, k, data)
		} else {
			_, err = s.kv.Update(ctx, k, data, rev)
		}
		if err == nil {
			return f, nil
		}
		conflict := errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists)
		if !conflict || attempt == maxCASAttempts {
			return Fact{}, errcode.Wrap(errcode.Internal, "store fact "+k, err)
		}
	}
}

// List returns the facts of scope, newest (by UpdatedAt) first, at most
// MaxListed of them.
func (s *Store) List(ctx context.Context, scope Scope) ([]Fact, error) {
	found, err := s.watchScope(ctx, scope)
	if err != nil {
		return nil, err
	}
	out := make([]Fact, len(found))
	for i, st := range found {
		out[i] = st.Fact
	}
	return out, nil
}

// stored is a fact as read, with its revision; a zero revision is a key
// that holds no fact.
type stored struct {
	Fact
	rev uint64
}

func (st *stored) fact() *Fact {
	if st.rev == 0 {
		return nil
	}
	return &st.Fact
}

// watchScope reads the stored facts of scope, at most MaxListed, newest (by
// UpdatedAt) first. One watcher delivers the last value of every key of the
// scope, deleted keys skipped: reading the keys and then getting each would
// cost a round trip per fact, and a long conversation's scope holds
// thousands.
func (s *Store) watchScope(ctx context.Context, scope Scope) ([]stored, error) {
	w, err := s.kv.WatchFiltered(ctx, []string{EncodeScope(scope) + ".*"}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, "list facts", err)
	}
	defer func() { _ = w.Stop() }()
	var out []stored
	for len(out) < MaxListed {
		var e jetstream.KeyValueEntry
		select {
		case <-ctx.Done():
			return nil, errcode.Wrap(errcode.Internal, "list facts", ctx.Err())
		case e = <-w.Updates():
		}
		if e == nil { // the values stored when the watch began are all read
			break
		}
		f, err := decodeFact(e)
		if err != nil {
			return nil, err
		}
		out = append(out, stored{Fact: f, rev: e.Revision()})
	}
	if err := ctx.Err(); err != nil { // the watcher closes its updates when ctx ends
		return nil, errcode.Wrap(errcode.Internal, "list facts", err)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].UpdatedAt.Equal(out[j].UpdatedAt) {
			return out[i].UpdatedAt.After(out[j].UpdatedAt)
		}
		return out[i].Slug < out[j].Slug
	})
	return out, nil
}
