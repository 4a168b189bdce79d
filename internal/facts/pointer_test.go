package facts

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/topology"
)

// requestsOf reads cut entries from an in-memory table of requests, keyed
// by stream sequence, as the processor reads them from COMPACT_REQUESTS.
type requestsOf map[uint64][]Entry

func (r requestsOf) CutEntries(_ context.Context, seq uint64, _ string, ids []string) ([]Entry, error) {
	all, ok := r[seq]
	if !ok {
		return nil, errcode.WithDetails(errcode.HarvestFailed, "no such request", map[string]any{"request_seq": seq})
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var out []Entry
	for _, e := range all {
		if want[e.ID] {
			out = append(out, e)
		}
	}
	return out, nil
}

// A pointer job harvests what the transcript job of the same cut would:
// the worker renders the transcript from the entries its request gives.
func TestWorkerExpandsAPointerJob(t *testing.T) {
	full := sampleJob()
	entries := []Entry{
		{ID: "e1", Role: "user", Content: "Remember that the staging database is read-only.\nThanks!"},
		{ID: "e2", Role: "assistant", Content: "I will never write to staging, I promise."},
		{ID: "e3", Role: "user", Content: "以后提交代码之前必须先运行 make lint 检查一下。"},
		{ID: "e4", Role: "user", Content: "ok, what is next?"},
		{ID: "e5", Role: "user", Content: "Remember that this one was retained, not cut."},
	}
	e := newEnv(t)
	cfg := e.testConfig(t)
	cfg.Requests = requestsOf{7: entries}
	e.startWorker(t, cfg)
	job := BuildPointerJob(full.ConversationID, full.HeadEntryID, full.Scope, full.EntryIDs, 7)
	e.publishJob(t, job, "")
	msgs := e.waitEvents(t, 1)
	if msgs[0].Subject != topology.SubjectFlushed {
		t.Fatalf("event on %s: %s", msgs[0].Subject, msgs[0].Data)
	}
	got := decodeFlushed(t, msgs[0].Data)
	var bodies []string
	for _, f := range got.Facts {
		bodies = append(bodies, f.Body)
	}
	want := []string{"Remember that the staging database is read-only.", "以后提交代码之前必须先运行 make lint 检查一下。"}
	if !reflect.DeepEqual(bodies, want) {
		t.Fatalf("facts of the pointer job: %q, want %q", bodies, want)
	}
}

// A pointer job whose request cannot be read, or that reaches a worker
// with no reader of requests, ends in memory.failed harvest_failed.
func TestPointerJobWithoutItsRequestFails(t *testing.T) {
	for name, reader := range map[string]RequestReader{"no reader": nil, "request gone": requestsOf{}} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			cfg := e.testConfig(t)
			cfg.Requests = reader
			cfg.Retry = cfg.Retry[:1]
			e.startWorker(t, cfg)
			e.publishJob(t, BuildPointerJob("c", "h", Scope{Kind: "thread", ID: "c"}, []string{"e1"}, 3), "")
			msgs := e.waitEvents(t, 1)
			var ev events.MemoryFailed
			if err := json.Unmarshal(msgs[0].Data, &ev); err != nil {
				t.Fatal(err)
			}
			if msgs[0].Subject != topology.SubjectMemoryFailed || ev.Error.Code != errcode.HarvestFailed {
				t.Fatalf("event on %s: %+v", msgs[0].Subject, ev)
			}
		})
	}
}

// Version 2 jobs carry request_seq and no transcript; version 1 jobs the
// other way round.
func TestPointerJobValidation(t *testing.T) {
	ok := BuildPointerJob("c", "h", Scope{Kind: "thread", ID: "c"}, []string{"e1"}, 3)
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	noSeq, withText, v1WithSeq := ok, ok, sampleJob()
	noSeq.RequestSeq = 0
	withText.Transcript = "user: hi"
	v1WithSeq.RequestSeq = 3
	for name, j := range map[string]Job{"no request_seq": noSeq, "transcript": withText, "v1 with request_seq": v1WithSeq} {
		if errcode.Code(j.Validate()) != errcode.InvalidRequest {
			t.Errorf("%s: %v, want invalid_compaction_request", name, j.Validate())
		}
	}
}
