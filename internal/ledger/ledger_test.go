package ledger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnhq/cairn/testenv"
)

func TestPutIsCompareAndSwap(t *testing.T) {
	js := testenv.NATS(t, testenv.Options{}).JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := testenv.Stores(t, js, 1)
	l := New(s.Ledger)
	if e, rev, err := l.Get(ctx, "req/1 with spaces"); e != nil || rev != 0 || err != nil {
		t.Fatalf("absent: %v %d %v", e, rev, err)
	}
	e := &Entry{RequestID: "req/1 with spaces", ContentHash: ContentHash([]byte("body")), State: Started}
	rev, err := l.Put(ctx, e, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Put(ctx, e, 0); !errors.Is(err, ErrConflict) {
		t.Fatalf("second create: %v", err)
	}
	e.State = SummaryRequested
	now := time.Now()
	e.AddAttempt(now, now.Add(time.Minute))
	rev2, err := l.Put(ctx, e, rev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Put(ctx, e, rev); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale revision: %v", err)
	}
	got, gotRev, err := l.Get(ctx, e.RequestID)
	if err != nil || gotRev != rev2 || got.State != SummaryRequested || got.OpenAttempt() == nil || got.OpenAttempt().N != 1 {
		t.Fatalf("get: %+v %d %v", got, gotRev, err)
	}
}

func TestAttemptsAreBounded(t *testing.T) {
	var e Entry
	now := time.Now()
	for range maxAttempts + 5 {
		e.AddAttempt(now, now)
	}
	if len(e.Attempts) != maxAttempts || e.Attempts[len(e.Attempts)-1].N != maxAttempts+5 {
		t.Fatalf("attempts %d, last %d", len(e.Attempts), e.Attempts[len(e.Attempts)-1].N)
	}
	e.Attempts[len(e.Attempts)-1].Done = true
	if e.OpenAttempt() != nil {
		t.Fatal("finished attempt reported open")
	}
}

func TestContentHashIsOfRawBytes(t *testing.T) {
	if ContentHash([]byte(`{"a":1}`)) == ContentHash([]byte(`{"a": 1}`)) {
		t.Fatal("content hash normalised the body; it must compare raw bytes")
	}
}
