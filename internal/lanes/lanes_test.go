package lanes

import (
	"context"
	"errors"
	"testing"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/testenv"
)

func TestKeyRoundTrip(t *testing.T) {
	for _, l := range []Lane{
		{"agent-1", "main"},
		{"a.b/c*d>e", "名前 空間"},
		{"x", "ns.with.dots"},
	} {
		k, err := l.Key()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range k {
			if !(r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				t.Fatalf("key %q has invalid character %q", k, r)
			}
		}
		back, err := ParseKey(k)
		if err != nil || back != l {
			t.Fatalf("round trip %+v → %q → %+v %v", l, k, back, err)
		}
	}
	if _, err := (Lane{RunAgentID: "a"}).Key(); errcode.Code(err) != errcode.InvalidRequest {
		t.Fatalf("empty namespace: %v", err)
	}
	if _, err := ParseKey("nodot"); err == nil {
		t.Fatal("malformed key accepted")
	}
}

func newStore(t *testing.T) *Store {
	t.Helper()
	js := testenv.NATS(t, testenv.Options{}).JetStream(t)
	s := testenv.Stores(t, js, 1)
	return New(s.Heads, s.Checkpoints)
}

func TestAdvanceIsCompareAndSwap(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	lane := Lane{"agent", "main"}
	if h, rev, err := s.Head(ctx, lane); h != nil || rev != 0 || err != nil {
		t.Fatalf("empty lane: %v %d %v", h, rev, err)
	}
	rev1, err := s.Advance(ctx, lane, 0, &Head{Lane: lane, CheckpointID: "c1", Generation: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Advance(ctx, lane, 0, &Head{Lane: lane, CheckpointID: "other", Generation: 1}); !errors.Is(err, ErrConflict) {
		t.Fatalf("second create: %v", err)
	}
	rev2, err := s.Advance(ctx, lane, rev1, &Head{Lane: lane, CheckpointID: "c2", Generation: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Advance(ctx, lane, rev1, &Head{Lane: lane, CheckpointID: "c3", Generation: 3}); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale revision: %v", err)
	}
	h, rev, err := s.Head(ctx, lane)
	if err != nil || h.CheckpointID != "c2" || rev != rev2 {
		t.Fatalf("head %+v rev %d %v", h, rev, err)
	}
}

func TestCheckpointInsertOrVerifyAndHistory(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	c1 := &Checkpoint{ID: "c1", Hash: "h1", Generation: 1, Body: []byte(`{"id":"c1"}`)}
	c2 := &Checkpoint{ID: "c2", Hash: "h2", ParentID: "c1", ParentHash: "h1", Generation: 2, Body: []byte(`{"id":"c2"}`)}
	for _, c := range []*Checkpoint{c1, c2, c1} {
		if err := s.PutCheckpoint(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	changed := *c1
	changed.Body = []byte(`{"id":"c1","x":1}`)
	if err := s.PutCheckpoint(ctx, &changed); errcode.Code(err) != errcode.CheckpointConflict {
		t.Fatalf("different bytes: %v", err)
	}
	got, err := s.GetCheckpoint(ctx, "c2")
	if err != nil || got.ParentHash != "h1" {
		t.Fatalf("get: %+v %v", got, err)
	}
	head := &Head{CheckpointID: "c2"}
	for id, want := range map[string]bool{"c2": true, "c1": true, "c9": false} {
		if in, err := s.InHistory(ctx, head, id, 10); err != nil || in != want {
			t.Fatalf("InHistory(%s) = %v %v", id, in, err)
		}
	}
	if in, _ := s.InHistory(ctx, head, "c1", 1); in {
		t.Fatal("history walk ignored its limit")
	}
}

// ReplaceCheckpoint stores its checkpoint whatever is there: nothing, the
// same bytes, or a leftover.
func TestReplaceCheckpoint(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	c := &Checkpoint{ID: "r1", Hash: "h", Generation: 1, Body: []byte(`{"id":"r1"}`)}
	leftover := &Checkpoint{ID: "r1", Hash: "old", Generation: 1, Body: []byte(`{"id":"r1","old":true}`)}
	for _, step := range []struct {
		name   string
		before *Checkpoint
	}{{"missing", nil}, {"same", c}, {"leftover", leftover}} {
		if step.before != nil {
			if err := s.ReplaceCheckpoint(ctx, step.before); err != nil {
				t.Fatalf("%s: set up: %v", step.name, err)
			}
		}
		if err := s.ReplaceCheckpoint(ctx, c); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got, err := s.GetCheckpoint(ctx, "r1"); err != nil || got.Hash != "h" {
			t.Fatalf("%s: stored %+v, %v", step.name, got, err)
		}
	}
}
