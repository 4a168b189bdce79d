package consumer

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/cairnhq/cairn/events"

	"github.com/nats-io/nats.go"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/facts"
	"github.com/cairnhq/cairn/internal/summarize/offline"
	"github.com/cairnhq/cairn/internal/topology"
)

// The harvest job is a pointer job: the cut event ids, the scope, and the
// request's stream sequence, under the job's message id.
func TestHarvestRecord(t *testing.T) {
	req := &envelope{Correlation: events.Correlation{ThreadID: "t", RunAgentID: "a", CheckpointNamespace: "n"}}
	rec, err := harvestRecord(req, "cp", []string{"e1", "e2"}, 42, "tp")
	if err != nil {
		t.Fatal(err)
	}
	job, err := facts.DecodeJob(rec.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if rec.EventID != job.MsgID() || rec.EventID != "harvest:t:cp" || job.Scope.Kind != "thread" || job.Scope.ID != "t" {
		t.Fatalf("job identity: %s %+v", rec.EventID, job)
	}
	if job.V != facts.PointerJobVersion || job.RequestSeq != 42 || !reflect.DeepEqual(job.EntryIDs, []string{"e1", "e2"}) || job.Transcript != "" {
		t.Fatalf("job: %+v", job)
	}
	if rec.Headers["traceparent"] != "tp" {
		t.Fatalf("headers: %v", rec.Headers)
	}
}

func TestHarvestScopeFromRequest(t *testing.T) {
	req := &envelope{Correlation: events.Correlation{ThreadID: "t"}, Scope: &events.Scope{Kind: "user", ID: "u1"}}
	rec, err := harvestRecord(req, "cp", []string{"e1"}, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	job, err := facts.DecodeJob(rec.Payload)
	if err != nil || job.Scope.Kind != "user" || job.Scope.ID != "u1" {
		t.Fatalf("scope: %+v %v", job.Scope, err)
	}
}

// CutEntries reads a pointer job's cut events from the stored request, in
// lane order and original form, and fails with harvest_failed when the
// sequence names no request or another one.
func TestCutEntriesReadTheStoredRequest(t *testing.T) {
	e := singleEnv(t)
	p, err := New(testConfig(), Deps{JS: e.js, Stores: e.stores, Compactor: EngineCompactor{}, Summarizer: offline.New(offline.DefaultOptions())})
	if err != nil {
		t.Fatal(err)
	}
	body := engineBody(t, "cut-1", "cut", "", 4, nil)
	seq := e.publish(t, body, "cut-1").Sequence
	var m struct {
		Events []map[string]any `json:"events"`
	}
	mustJSON(t, body, &m)
	ctx := context.Background()
	tap := e.js.Conn() // the processor's own connection: a subscriber there sees what it sends
	var lookups, apiGets atomic.Int32
	sub, err := tap.Subscribe("$JS.API.STREAM.INFO."+topology.StreamRequests, func(*nats.Msg) { lookups.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	// Reads are direct gets, which return the stored bytes; the stream
	// API's get would wrap them in base64 inside JSON.
	apiSub, err := tap.Subscribe("$JS.API.STREAM.MSG.GET."+topology.StreamRequests, func(*nats.Msg) { apiGets.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	if err := tap.Flush(); err != nil {
		t.Fatal(err)
	}
	got, err := p.CutEntries(ctx, seq, "cut-1", []string{"cut-1-e003", "cut-1-e001"})
	if err != nil {
		t.Fatal(err)
	}
	want := []facts.Entry{
		{ID: "cut-1-e001", Role: "user", Content: m.Events[0]["content"].(string)},
		{ID: "cut-1-e003", Role: "user", Content: m.Events[2]["content"].(string)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cut entries:\n got %+v\nwant %+v", got, want)
	}
	for name, c := range map[string]struct {
		seq uint64
		id  string
	}{"another request": {seq, "cut-2"}, "no request": {seq + 100, "cut-1"}} {
		_, err := p.CutEntries(ctx, c.seq, c.id, []string{"cut-1-e001"})
		if errcode.Code(err) != errcode.HarvestFailed {
			t.Errorf("%s: %v, want harvest_failed", name, err)
		}
	}
	// The stream is looked up once, not once per job.
	if err := tap.Flush(); err != nil {
		t.Fatal(err)
	}
	_ = sub.Unsubscribe()
	_ = apiSub.Unsubscribe()
	if n := lookups.Load(); n != 1 {
		t.Errorf("%d stream lookups for 3 jobs, want 1", n)
	}
	if n := apiGets.Load(); n != 0 {
		t.Errorf("%d reads through the stream API, want direct gets only", n)
	}
}

// On a 3-node cluster, where any replica may answer a direct get and one may
// not yet hold a request the others acknowledged, each request is read back
// right after its publish was acknowledged.
func TestCutEntriesOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("3-node cluster: skipped with -short")
	}
	e := clusterEnv(t)
	p, err := New(testConfig(), Deps{JS: e.js, Stores: e.stores, Compactor: EngineCompactor{}, Summarizer: offline.New(offline.DefaultOptions())})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	var gets atomic.Int32
	tap := e.js.Conn()
	sub, err := tap.Subscribe("$JS.API.DIRECT.GET."+topology.StreamRequests, func(*nats.Msg) { gets.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	for i := range 40 {
		id := fmt.Sprintf("cl-%02d", i)
		seq := e.publish(t, engineBody(t, id, "cl", "", 4, nil), id).Sequence
		got, err := p.CutEntries(ctx, seq, id, []string{id + "-e002"})
		if err != nil || len(got) != 1 || got[0].ID != id+"-e002" {
			t.Fatalf("request %d (#%d): %+v, %v", i, seq, got, err)
		}
	}
	if err := tap.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d direct gets for 40 reads", gets.Load())
}

// A claim-checked request's cut events are read from its events object.
func TestCutEntriesReadAnEventsObject(t *testing.T) {
	e := singleEnv(t)
	p, err := New(testConfig(), Deps{JS: e.js, Stores: e.stores, Compactor: EngineCompactor{}, Summarizer: offline.New(offline.DefaultOptions())})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var m map[string]any
	mustJSON(t, engineBody(t, "obj-1", "obj", "", 3, nil), &m)
	if _, err := e.stores.Lanes.PutBytes(ctx, "lane-obj-1", mustMarshal(t, m["events"])); err != nil {
		t.Fatal(err)
	}
	first := m["events"].([]any)[0].(map[string]any)
	delete(m, "events")
	m["events_object"] = "lane-obj-1"
	seq := e.publish(t, mustMarshal(t, m), "obj-1").Sequence
	got, err := p.CutEntries(ctx, seq, "obj-1", []string{"obj-1-e001"})
	if err != nil {
		t.Fatal(err)
	}
	want := []facts.Entry{{ID: "obj-1-e001", Role: "user", Content: first["content"].(string)}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cut entries:\n got %+v\nwant %+v", got, want)
	}
}
