package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/summarize/offline"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const waitLong = 30 * time.Second

// env is one JetStream deployment under test.
type env struct {
	t        testing.TB
	js       jetstream.JetStream
	stores   *topology.Stores
	stepDown func() // moves the requests stream's leader (cluster only)
	// realEngine runs the processor with EngineCompactor and the offline
	// summarizer, and builds requests the engine accepts.
	realEngine bool
}

func singleEnv(t testing.TB) *env {
	srv := testenv.NATS(t, testenv.Options{})
	return newEnv(t, srv.JetStream(t), 1)
}

func clusterEnv(t testing.TB) *env {
	c := testenv.Cluster(t, 3, testenv.Options{})
	js := c.JetStream(t)
	e := newEnv(t, js, 3)
	e.stepDown = func() { c.StepDownStreamLeader(t, topology.StreamRequests) }
	return e
}

func newEnv(t testing.TB, js jetstream.JetStream, replicas int) *env {
	t.Helper()
	return &env{t: t, js: js, stores: testenv.Stores(t, js, replicas)}
}

func testConfig() Config {
	c := DefaultConfig()
	c.Workers = 4
	c.AckWait = time.Second
	c.MaxDeliver = 5
	c.NakBackoff = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}
	c.AttemptTimeout = 5 * time.Second
	c.PullWait = 500 * time.Millisecond
	c.DrainTimeout = 5 * time.Second
	c.Relay.RetryInterval = 50 * time.Millisecond
	c.MaxEventsObjectBytes = 256 << 10
	return c
}

// running is a processor started by a test.
type running struct {
	p    *Processor
	stop context.CancelFunc
	done chan error
}

// wait returns Run's result once it returned.
func (r *running) wait(t testing.TB) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(waitLong):
		t.Fatal("processor did not stop")
		return nil
	}
}

func (e *env) start(t testing.TB, cfg Config, c Compactor, s engine.Summarizer) *running {
	t.Helper()
	return e.startLogged(t, cfg, c, s, slog.LevelInfo)
}

// startQuiet starts a processor that logs only errors (benchmarks).
func (e *env) startQuiet(t testing.TB, cfg Config, c Compactor, s engine.Summarizer) *running {
	return e.startLogged(t, cfg, c, s, slog.LevelError)
}

func (e *env) startLogged(t testing.TB, cfg Config, c Compactor, s engine.Summarizer, level slog.Level) *running {
	t.Helper()
	if c == nil {
		c = testCompactor{}
		if e.realEngine {
			c = EngineCompactor{}
		}
	}
	if s == nil {
		s = &testSummarizer{}
		if e.realEngine {
			s = offline.New(offline.DefaultOptions())
		}
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level}))
	p, err := New(cfg, Deps{JS: e.js, Stores: e.stores, Compactor: c, Summarizer: s, Logger: log})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e.run(t, p)
}

// remoteSummarizer is a summarizer the processor treats as a remote model
// (its calls are recorded in the ledger): with the real engine, the offline
// summarizer behind a wrapper that is not a LocalSummarizer.
func (e *env) remoteSummarizer() engine.Summarizer {
	if e.realEngine {
		return &testSummarizer{inner: offline.New(offline.DefaultOptions())}
	}
	return &testSummarizer{}
}

// run runs p until the test ends.
func (e *env) run(t testing.TB, p *Processor) *running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{p: p, stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-r.done; r.done <- nil })
	return r
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// reqSpec describes a request the helpers build.
type reqSpec struct {
	id, lane, parent string
	events           int
	extra            map[string]any
}

// body builds the request for the env's compactor.
func (e *env) body(s reqSpec) []byte {
	if !e.realEngine {
		return s.testBody()
	}
	lane := s.lane
	if lane == "" {
		lane = "lane-1"
	}
	n := s.events
	if n == 0 {
		n = 40
	}
	b := engineBody(e.t, s.id, lane, s.parent, n, nil)
	if len(s.extra) == 0 {
		return b
	}
	var m map[string]any
	mustJSON(e.t, b, &m)
	for k, v := range s.extra {
		if v == nil {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	return mustMarshal(e.t, m)
}

// testBody builds a Request v1 body for testCompactor.
func (s reqSpec) testBody() []byte {
	lane := s.lane
	if lane == "" {
		lane = "lane-1"
	}
	n := s.events
	if n == 0 {
		n = 3
	}
	events := make([]map[string]any, n)
	for i := range events {
		content := fmt.Sprintf("message %d of %s: remember the deploy must use blue-green", i+1, s.id)
		events[i] = map[string]any{
			"event_id": fmt.Sprintf("%s-e%d", s.id, i+1), "run_agent_id": "agent-" + lane,
			"chat_seq": i + 1, "lane_event_ordinal": i + 1, "checkpoint_namespace": "main",
			"role": []string{"user", "assistant"}[i%2], "content": content,
		}
	}
	m := map[string]any{
		"v": 1, "request_id": s.id, "trigger": "manual", "thread_id": "thread-" + lane,
		"run_agent_id": "agent-" + lane, "checkpoint_namespace": "main", "events": events,
	}
	if s.parent != "" {
		m["parent_checkpoint_id"] = s.parent
	} else {
		m["parent_checkpoint_id"] = nil
	}
	for k, v := range s.extra {
		if v == nil {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return b
}

func laneOf(name string) lanes.Lane {
	if name == "" {
		name = "lane-1"
	}
	return lanes.Lane{RunAgentID: "agent-" + name, CheckpointNamespace: "main"}
}

// publish sends a request body; msgID "" sends no Nats-Msg-Id.
func (e *env) publish(t testing.TB, body []byte, msgID string) *jetstream.PubAck {
	t.Helper()
	msg := nats.NewMsg(topology.SubjectRequested)
	msg.Data = body
	msg.Header.Set(topology.HeaderTraceparent, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	var opts []jetstream.PublishOpt
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ack *jetstream.PubAck
	testenv.Eventually(t, waitLong, func() error {
		var err error
		ack, err = e.js.PublishMsg(ctx, msg, opts...)
		return err
	})
	return ack
}

// event is a decoded compaction event with its Nats-Msg-Id.
type event struct {
	Subject string
	MsgID   string
	Trace   string
	Kind    string
	Body    map[string]any
}

func (ev event) str(k string) string { s, _ := ev.Body[k].(string); return s }
func (ev event) num(k string) int64  { f, _ := ev.Body[k].(float64); return int64(f) }
func (ev event) code() string {
	e, _ := ev.Body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// streamEvents returns every message of an event stream, in order.
func (e *env) streamEvents(t testing.TB, stream string) []event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []event
	testenv.Eventually(t, waitLong, func() error {
		out = out[:0]
		st, err := e.js.Stream(ctx, stream)
		if err != nil {
			return err
		}
		info, err := st.Info(ctx)
		if err != nil {
			return err
		}
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
			m, err := st.GetMsg(ctx, seq)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			var body map[string]any
			if err := json.Unmarshal(m.Data, &body); err != nil {
				return err
			}
			out = append(out, event{Subject: m.Subject, MsgID: m.Header.Get(jetstream.MsgIDHeader), Trace: m.Header.Get(topology.HeaderTraceparent), Kind: m.Header.Get(topology.HeaderEventKind), Body: body})
		}
		return nil
	})
	return out
}

// eventsFor returns the compaction events of one request.
func (e *env) eventsFor(t testing.TB, requestID string) []event {
	var out []event
	for _, ev := range e.streamEvents(t, topology.StreamEvents) {
		if ev.str("request_id") == requestID {
			out = append(out, ev)
		}
	}
	return out
}

// awaitOutcome waits until the request has a terminal event and returns its
// events.
func (e *env) awaitOutcome(t testing.TB, requestID string) []event {
	t.Helper()
	var evs []event
	testenv.Eventually(t, waitLong, func() error {
		evs = e.eventsFor(t, requestID)
		if len(evs) == 0 {
			return fmt.Errorf("no event for %s yet", requestID)
		}
		return nil
	})
	return evs
}

func (e *env) head(t testing.TB, lane lanes.Lane) *lanes.Head {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, _, err := lanes.New(e.stores.Heads, e.stores.Checkpoints).Head(ctx, lane)
	if err != nil {
		t.Fatalf("head: %v", err)
	}
	return h
}

func (e *env) ledgerEntry(t testing.TB, id string) *ledger.Entry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	en, _, err := ledger.New(e.stores.Ledger).Get(ctx, id)
	if err != nil {
		t.Fatalf("ledger: %v", err)
	}
	return en
}

// watchLedger follows a request's ledger entry from now on; the returned
// function waits until the entry reached a terminal state and returns
// every state it went through.
func (e *env) watchLedger(t testing.TB, id string) *ledgerWatch {
	t.Helper()
	key, err := lanes.IDKey(id)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	w, err := e.stores.Ledger.Watch(ctx, key)
	if err != nil {
		cancel()
		t.Fatalf("watch ledger: %v", err)
	}
	// The watch follows changes only once it delivered the values present
	// when it began (none, for a new request), marked by a nil.
	select {
	case u := <-w.Updates():
		if u != nil {
			t.Fatalf("ledger of %s exists already", id)
		}
	case <-ctx.Done():
		t.Fatal("ledger watch did not start")
	}
	lw := &ledgerWatch{done: make(chan struct{})}
	go func() {
		defer close(lw.done)
		defer cancel()
		defer func() { _ = w.Stop() }()
		for {
			select {
			case u := <-w.Updates():
				var en ledger.Entry
				if err := json.Unmarshal(u.Value(), &en); err != nil {
					lw.fail(fmt.Errorf("ledger entry of %s: %w", id, err))
					return
				}
				if lw.add(en.State) {
					return
				}
			case <-ctx.Done():
				lw.fail(fmt.Errorf("ledger of %s never reached a terminal state", id))
				return
			}
		}
	}()
	return lw
}

// ledgerWatch collects the states a request's ledger entry goes through,
// up to a terminal one. The bucket keeps one revision per key, so a state
// replaced before the watch received it is lost: a test that needs every
// state holds the next write back until saw reports the one before.
type ledgerWatch struct {
	mu     sync.Mutex
	states []ledger.State
	err    error
	done   chan struct{}
}

func (w *ledgerWatch) add(s ledger.State) (terminal bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.states = append(w.states, s)
	return s.Terminal()
}

func (w *ledgerWatch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
}

// saw reports whether the watch received state s.
func (w *ledgerWatch) saw(s ledger.State) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.states, s)
}

// all waits for a terminal state and returns every state seen.
func (w *ledgerWatch) all(t testing.TB) []ledger.State {
	t.Helper()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		t.Fatalf("%v (saw %v)", w.err, w.states)
	}
	return w.states
}

// onlyEvent asserts that evs holds exactly one event and returns it.
func onlyEvent(t testing.TB, evs []event) event {
	t.Helper()
	if len(evs) != 1 {
		t.Fatalf("want exactly one event, got %d: %+v", len(evs), evs)
	}
	return evs[0]
}

func (e *env) consumerInfo(t testing.TB) (*jetstream.ConsumerInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := e.js.Consumer(ctx, topology.StreamRequests, topology.ConsumerProcessor)
	if err != nil {
		return nil, err
	}
	return c.Info(ctx)
}

// resendAndSettle publishes body again without Nats-Msg-Id (as after the
// duplicate window) and waits until the processor settled it.
func resendAndSettle(t testing.TB, e *env, body []byte) {
	t.Helper()
	e.awaitSettled(t, e.publish(t, body, "").Sequence)
}

// awaitSettled waits until the processor settled every request up to the
// stream sequence seq.
func (e *env) awaitSettled(t testing.TB, seq uint64) {
	t.Helper()
	testenv.Eventually(t, waitLong, func() error {
		info, err := e.consumerInfo(t)
		if err != nil {
			return err
		}
		if info.AckFloor.Stream < seq {
			return fmt.Errorf("request at seq %d not settled yet (ack floor %d)", seq, info.AckFloor.Stream)
		}
		return nil
	})
}

// storedValue is the value stored under key in kv, as its bytes.
func storedValue(t testing.TB, kv jetstream.KeyValue, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	entry, err := kv.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(entry.Value())
}

// activate publishes a 40-event engine request id on lane (after parent,
// "" for none), requires it to be activated, and returns its body.
func activate(t testing.TB, e *env, id, lane, parent string) []byte {
	t.Helper()
	body := engineBody(t, id, lane, parent, 40, nil)
	e.publish(t, body, id)
	if ev := onlyEvent(t, e.awaitOutcome(t, id)); ev.str("kind") != "activated" {
		t.Fatalf("%s: %v", id, ev.Body)
	}
	return body
}

// withTrigger is body with its trigger replaced.
func withTrigger(t testing.TB, body []byte, trigger string) []byte {
	t.Helper()
	var m map[string]any
	mustJSON(t, body, &m)
	m["trigger"] = trigger
	return mustMarshal(t, m)
}

func (e *env) checkpoint(t testing.TB, id string) (*lanes.Checkpoint, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return lanes.New(e.stores.Heads, e.stores.Checkpoints).GetCheckpoint(ctx, id)
}

func mustJSON(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
