package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/consumer"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/inspect"
	"github.com/cairnhq/cairn/internal/lanegen"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/natsrv"
	"github.com/cairnhq/cairn/internal/service"
	"github.com/cairnhq/cairn/internal/summarize/offline"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// cairn is a server started from the repository's nats.conf with a
// processor and the service running as the processor identity.
type cairn struct {
	srv    *natsrv.Server
	ctx    context.Context
	ledger *ledger.Ledger
}

// startCairn provisions the streams with the given duplicate window and
// runs the processor (offline summarizer) and the service.
func startCairn(t testing.TB, duplicates time.Duration) *cairn {
	t.Helper()
	return startCairnWith(t, duplicates, offline.New(offline.DefaultOptions()))
}

// remote is a summarizer the processor treats as a remote model's: it
// hides the offline summarizer's Local method, so that every request
// records its plan and outcome in the ledger.
type remote struct{ engine.Summarizer }

func startCairnWith(t testing.TB, duplicates time.Duration, summarizer engine.Summarizer) *cairn {
	t.Helper()
	srv, err := natsrv.Start(natsrv.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", ConfigFile: "../../nats.conf", ReadyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	js := connect(t, srv, "processor")
	opts := topology.DefaultOptions()
	opts.Duplicates = duplicates
	stores, err := topology.Ensure(ctx, js, opts)
	if err != nil {
		t.Fatal(err)
	}
	proc, err := consumer.New(consumer.DefaultConfig(), consumer.Deps{
		JS: js, Stores: stores, Compactor: consumer.EngineCompactor{}, Summarizer: summarizer,
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = proc.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })

	requests, err := js.Stream(ctx, topology.StreamRequests)
	if err != nil {
		t.Fatal(err)
	}
	store := lanes.New(stores.Heads, stores.Checkpoints)
	svc, err := service.Start(js.Conn(), service.Config{
		Recorder:   &service.Recorder{Ledger: ledger.New(stores.Ledger), Lanes: store, Requests: requests, HistoryLimit: 256},
		Lanes:      store,
		LoadEvents: inspect.ObjectLoader(stores.Lanes),
		Build:      "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	return &cairn{srv: srv, ctx: ctx, ledger: ledger.New(stores.Ledger)}
}

var passwords = map[string]string{"processor": "processor-dev-password", "producer": "producer-dev-password", "auditor": "auditor-dev-password"}

func connect(t testing.TB, srv *natsrv.Server, user string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo(user, passwords[user]), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	js := testenv.JetStream(t, nc)
	return js
}

// request is a generated request of its own lane; edit changes its
// options before it is generated.
func request(id string, edit func(*lanegen.RequestOptions)) []byte {
	o := lanegen.RequestOptions{Lane: lanegen.Options{Events: 60, Seed: 7, Namespace: "ns-" + id}, RequestID: id}
	if edit != nil {
		edit(&o)
	}
	return lanegen.RequestJSON(o)
}

// belowTrigger makes the request automatic: it fills 90 % of its window,
// above the trigger ratio, so the trigger ratio is raised above that.
func belowTrigger(o *lanegen.RequestOptions) {
	o.Trigger = events.TriggerAuto
	o.Policy = map[string]any{"trigger_ratio": 0.95}
}

// badHash breaks the first event's content_hash.
func badHash(o *lanegen.RequestOptions) {
	o.Events = lanegen.Lane(o.Lane)
	o.Events[0].ContentHash = strings.Repeat("0", 64)
}

// publishAndWait publishes body and waits for its outcome on the stream
// alone (not asking the service), so that the event has its sequence.
func publishAndWait(t *testing.T, ctx context.Context, js jetstream.JetStream, id string, body []byte) (*jetstream.PubAck, events.Event) {
	t.Helper()
	since := time.Now().Add(-time.Second)
	ack, err := events.PublishRaw(ctx, js, id, body, "")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := events.WaitOutcome(ctx, readerOnly{js}, id, since)
	if err != nil {
		t.Fatalf("outcome of %s: %v", id, err)
	}
	return ack, ev
}

// streamEvent reads the outcome event as COMPACT_EVENTS stored it.
func streamEvent(t *testing.T, ctx context.Context, js jetstream.JetStream, seq uint64) []byte {
	t.Helper()
	str, err := js.Stream(ctx, events.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := str.GetMsg(ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	return msg.Data
}

// The status of each kind of outcome is the event as published, byte for
// byte, by request_id and by the request's stream sequence; an id Cairn
// never saw is unknown, and another body under a used id is a conflict.
// With a local summarizer an activation on its first delivery is recorded
// with its checkpoint; with a remote one, in the ledger naming it.
func TestStatusAnswersTheRecordedOutcome(t *testing.T) {
	t.Run("local summarizer", func(t *testing.T) {
		checkStatusAnswers(t, startCairn(t, topology.DefaultOptions().Duplicates))
	})
	t.Run("remote summarizer", func(t *testing.T) {
		c := startCairnWith(t, topology.DefaultOptions().Duplicates, remote{offline.New(offline.DefaultOptions())})
		checkStatusAnswers(t, c)
		entry, _, err := c.ledger.Get(c.ctx, "req-activated")
		if err != nil || entry == nil || entry.Outcome == nil || entry.Outcome.CheckpointRef != "req-activated" {
			t.Fatalf("the activation's ledger entry does not name its checkpoint record, so this case proves nothing: %+v, %v", entry, err)
		}
	})
}

func checkStatusAnswers(t *testing.T, c *cairn) {
	processor := connect(t, c.srv, "processor")
	producer := connect(t, c.srv, "producer")
	cases := []struct {
		id    string
		edit  func(*lanegen.RequestOptions)
		state string
	}{
		{"req-activated", nil, events.StateActivated},
		{"req-skipped", belowTrigger, events.StateSkipped},
		{"req-failed", badHash, events.StateFailed},
	}
	for _, tc := range cases {
		t.Run(tc.state, func(t *testing.T) {
			body := request(tc.id, tc.edit)
			ack, ev := publishAndWait(t, c.ctx, producer, tc.id, body)
			if ev.Kind != tc.state {
				t.Fatalf("outcome %s, want %s: %s", ev.Kind, tc.state, ev.Raw)
			}
			stored := streamEvent(t, c.ctx, processor, ev.Sequence)
			for _, q := range []events.StatusQuery{
				{RequestID: tc.id},
				{RequestID: tc.id, ContentHash: ledger.ContentHash(body)},
				{StreamSequence: ack.Sequence},
			} {
				reply, err := events.Status(c.ctx, producer.Conn(), q)
				if err != nil {
					t.Fatalf("status %+v: %v", q, err)
				}
				if reply.State != tc.state || reply.RequestID != tc.id || reply.Outcome == nil {
					t.Fatalf("status %+v = %+v", q, reply)
				}
				if reply.Outcome.Subject != ev.Subject || reply.Outcome.EventID != tc.id+":"+tc.state || !bytes.Equal(reply.Outcome.Event, stored) {
					t.Fatalf("status %+v outcome %s %s differs from the stored event:\n%s\n%s", q, reply.Outcome.Subject, reply.Outcome.EventID, reply.Outcome.Event, stored)
				}
			}
			other := ledger.ContentHash(append([]byte(" "), body...))
			if reply, err := events.Status(c.ctx, producer.Conn(), events.StatusQuery{RequestID: tc.id, ContentHash: other}); err != nil || reply.State != events.StateConflict || reply.Outcome != nil {
				t.Fatalf("status with another body's hash = %+v, %v", reply, err)
			}
		})
	}
	reply, err := events.Status(c.ctx, producer.Conn(), events.StatusQuery{RequestID: "never-sent"})
	if err != nil || reply.State != events.StateUnknown || reply.Outcome != nil {
		t.Fatalf("status of an id never sent = %+v, %v", reply, err)
	}
	reply, err = events.Status(c.ctx, producer.Conn(), events.StatusQuery{StreamSequence: 1 << 40})
	if err != nil || reply.State != events.StateUnknown || reply.StreamSequence != 1<<40 {
		t.Fatalf("status of a sequence never stored = %+v, %v", reply, err)
	}
}

// readerOnly hides the connection of a JetStream context, as a Reader
// that is not a jetstream.JetStream would: WaitOutcome then cannot ask
// the status service.
type readerOnly struct{ events.Reader }

// A resent request whose outcome event the events stream may drop as a
// duplicate gets its outcome from the status service within a second:
// resent without Nats-Msg-Id inside the duplicate window (where a reader
// that cannot ask the service waits in vain: the stream dropped the
// event), and resent with it after the request stream's duplicate window
// (the events stream, whose window began a little later, may still drop
// the event there).
func TestResendGetsItsOutcome(t *testing.T) {
	const id, window = "req-resent", time.Second
	body := request(id, nil)
	resends := []struct {
		name     string
		window   time.Duration
		resend   func(t *testing.T, ctx context.Context, js jetstream.JetStream) *jetstream.PubAck
		inWindow bool
	}{{
		"without Nats-Msg-Id", topology.DefaultOptions().Duplicates,
		func(t *testing.T, ctx context.Context, js jetstream.JetStream) *jetstream.PubAck {
			ack, err := js.Publish(ctx, events.SubjectRequested, body)
			if err != nil {
				t.Fatal(err)
			}
			return ack
		}, true,
	}, {
		"after the duplicate window", window,
		func(t *testing.T, ctx context.Context, js jetstream.JetStream) *jetstream.PubAck {
			var ack *jetstream.PubAck
			testenv.Eventually(t, 10*window, func() error {
				var err error
				if ack, err = events.PublishRaw(ctx, js, id, body, ""); err != nil {
					return err
				}
				if ack.Duplicate {
					return errors.New("still inside the duplicate window")
				}
				return nil
			})
			return ack
		}, false,
	}}
	for _, r := range resends {
		t.Run(r.name, func(t *testing.T) {
			c := startCairn(t, r.window)
			producer := connect(t, c.srv, "producer")
			first, original := publishAndWait(t, c.ctx, producer, id, body)
			ack := r.resend(t, c.ctx, producer)
			if ack.Duplicate || ack.Sequence == first.Sequence {
				t.Fatalf("the resend was not stored anew: %+v", ack)
			}
			since, err := events.PublishedAt(c.ctx, producer, ack)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			ctx, cancel := context.WithTimeout(c.ctx, time.Second)
			defer cancel()
			ev, err := events.WaitOutcome(ctx, producer, id, since, events.WithBody(body))
			if err != nil {
				t.Fatalf("no outcome for the resend within 1 s: %v", err)
			}
			t.Logf("outcome of the resend in %s", time.Since(start))
			if ev.Activated == nil || !bytes.Equal(ev.Raw, original.Raw) {
				t.Fatalf("resend's outcome %s differs from the original's %s", ev.Raw, original.Raw)
			}
			if !r.inWindow {
				return
			}
			blind, cancelBlind := context.WithTimeout(c.ctx, 2*time.Second)
			defer cancelBlind()
			if ev, err := events.WaitOutcome(blind, readerOnly{producer}, id, since); err == nil {
				t.Fatalf("a reader without the service found %.200s: the stream kept the resend's event, so this test proves nothing", ev.Raw)
			}
		})
	}
}

// lane answers what `lane show` prints; a lane without a head is
// lane_not_found (404), a malformed ask invalid_service_request (400).
func TestLaneAndErrors(t *testing.T) {
	c := startCairn(t, topology.DefaultOptions().Duplicates)
	producer := connect(t, c.srv, "producer")
	const id = "req-lane"
	_, ev := publishAndWait(t, c.ctx, producer, id, request(id, nil))
	if ev.Activated == nil {
		t.Fatalf("outcome %s", ev.Raw)
	}
	var view inspect.LaneView
	ask(t, producer.Conn(), events.SubjectLane, fmt.Sprintf(`{"run_agent_id":%q,"checkpoint_namespace":%q}`, ev.Activated.RunAgentID, ev.Activated.CheckpointNamespace), "", &view)
	if view.Generation != 1 || view.CheckpointID != id || view.CheckpointHash != ev.Activated.CheckpointHash || view.Checkpoint == nil || view.Checkpoint.Full != nil {
		t.Fatalf("lane = %+v", view)
	}
	ask(t, producer.Conn(), events.SubjectLane, fmt.Sprintf(`{"run_agent_id":%q,"checkpoint_namespace":"elsewhere"}`, ev.Activated.RunAgentID), "404 lane_not_found", nil)
	for _, bad := range []string{`{"request_id":`, `{"colour":"red"}`, `{}`, `{"request_id":"a","stream_sequence":1}`, `{"request_id":"a\nb"}`, `{"request_id":"a","content_hash":"xyz"}`, `{} {}`} {
		ask(t, producer.Conn(), events.SubjectStatus, bad, "400 invalid_service_request", nil)
	}
	ask(t, producer.Conn(), events.SubjectStatus, `{"request_id":"`+strings.Repeat("a", 5000)+`"}`, "413 payload_too_large", nil)
	// A malformed ask names the member at fault and the rule it broke.
	for _, tt := range []struct{ subject, body, field, rule string }{
		{events.SubjectStatus, `{}`, "request_id", "required"},
		{events.SubjectStatus, `{"request_id":"a","stream_sequence":1}`, "stream_sequence", "exclusive"},
		{events.SubjectLane, `{"run_agent_id":"x"}`, "checkpoint_namespace", "required"},
		{events.SubjectLane, `{"checkpoint_namespace":"ns"}`, "run_agent_id", "required"},
		{events.SubjectLane, `{"run_agent_id":"x","checkpoint_namespace":"a\nb"}`, "checkpoint_namespace", "pattern"},
	} {
		msg, err := producer.Conn().RequestWithContext(c.ctx, tt.subject, []byte(tt.body))
		var reply events.ServiceErrorReply
		if err != nil || json.Unmarshal(msg.Data, &reply) != nil || reply.Error == nil {
			t.Fatalf("%s %s: %v", tt.subject, tt.body, err)
		}
		if d := reply.Error.Details; d["field"] != tt.field || d["rule"] != tt.rule {
			t.Errorf("%s %s: details %v, want field %s rule %s", tt.subject, tt.body, d, tt.field, tt.rule)
		}
	}
}

// validate answers what `request validate` says.
func TestValidate(t *testing.T) {
	c := startCairn(t, topology.DefaultOptions().Duplicates)
	producer := connect(t, c.srv, "producer")
	var v inspect.Validation
	ask(t, producer.Conn(), events.SubjectValidate, string(request("req-v", nil)), "", &v)
	if !v.OK || v.Status != "compacted" || v.Summarize == nil || v.RequestID != "req-v" {
		t.Fatalf("validate a compacting request = %+v", v)
	}
	v = inspect.Validation{}
	ask(t, producer.Conn(), events.SubjectValidate, string(request("req-bad", badHash)), "", &v)
	if v.OK || v.Error == nil || v.Error.Code != events.CodeInvalidEvent || v.Error.Details["field"] != "content_hash" {
		t.Fatalf("validate a bad hash = %+v", v)
	}
}

// ask sends body to subject and decodes the answer into out, or checks
// that the answer is the error "<status> <code>".
func ask(t *testing.T, nc *nats.Conn, subject, body, wantErr string, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg, err := nc.RequestWithContext(ctx, subject, []byte(body))
	if err != nil {
		t.Fatalf("%s %q: %v", subject, cut(body), err)
	}
	status := msg.Header.Get(micro.ErrorCodeHeader)
	if wantErr == "" {
		if status != "" {
			t.Fatalf("%s %q answered %s %s: %s", subject, cut(body), status, msg.Header.Get(micro.ErrorHeader), msg.Data)
		}
		if err := json.Unmarshal(msg.Data, out); err != nil {
			t.Fatalf("%s answered %s: %v", subject, msg.Data, err)
		}
		return
	}
	var reply events.ServiceErrorReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil || reply.Error == nil {
		t.Fatalf("%s %q: error body %s: %v", subject, cut(body), msg.Data, err)
	}
	if got := status + " " + reply.Error.Code; got != wantErr || msg.Header.Get(micro.ErrorHeader) == "" || reply.Error.Details == nil {
		t.Fatalf("%s %q answered %q (%s), want %q", subject, cut(body), got, msg.Data, wantErr)
	}
}

func cut(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// nats.conf grants status, lane and validate to the producer, status and
// lane to the auditor, and micro's discovery to both; `nats micro stats`
// then counts each endpoint's asks.
func TestIdentitiesAskWhatNATSConfGrants(t *testing.T) {
	c := startCairn(t, topology.DefaultOptions().Duplicates)
	producer := connect(t, c.srv, "producer")
	const id = "req-roles"
	_, ev := publishAndWait(t, c.ctx, producer, id, request(id, nil))
	laneAsk := fmt.Sprintf(`{"run_agent_id":%q,"checkpoint_namespace":%q}`, ev.Activated.RunAgentID, ev.Activated.CheckpointNamespace)
	asks := map[string]string{
		events.SubjectStatus:   `{"request_id":"` + id + `"}`,
		events.SubjectLane:     laneAsk,
		events.SubjectValidate: string(request("req-roles-2", nil)),
	}
	grants := map[string][]string{
		"producer": {events.SubjectStatus, events.SubjectLane, events.SubjectValidate},
		"auditor":  {events.SubjectStatus, events.SubjectLane},
	}
	for user, granted := range grants {
		nc := connect(t, c.srv, user).Conn()
		for subject, body := range asks {
			ctx, cancel := context.WithTimeout(c.ctx, 2*time.Second)
			msg, err := nc.RequestWithContext(ctx, subject, []byte(body))
			cancel()
			allowed := slices.Contains(granted, subject)
			switch {
			case allowed && (err != nil || msg.Header.Get(micro.ErrorCodeHeader) != ""):
				t.Errorf("%s may ask %s, got %v %v", user, subject, err, msg)
			case !allowed && err == nil:
				t.Errorf("%s may not ask %s, got an answer %.100s", user, subject, msg.Data)
			}
		}
		for _, verb := range []string{"PING", "INFO", "STATS"} {
			ctx, cancel := context.WithTimeout(c.ctx, 2*time.Second)
			msg, err := nc.RequestWithContext(ctx, "$SRV."+verb+"."+service.Name, nil)
			cancel()
			if err != nil || !bytes.Contains(msg.Data, []byte(`"name":"cairn"`)) {
				t.Errorf("%s: $SRV.%s.cairn = %v %v", user, verb, err, msg)
			}
		}
	}
	// micro counts an ask once its handler returns, which is after the
	// reply is sent: the counts are read again until they settle.
	var counts map[string]int
	for deadline := time.Now().Add(5 * time.Second); ; {
		counts = endpointCounts(t, c.ctx, producer.Conn())
		if counts[events.SubjectStatus] == 2 && counts[events.SubjectLane] == 2 && counts[events.SubjectValidate] == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("asks counted per endpoint: %v", counts)
		}
	}
}

// endpointCounts asks the service's stats for each endpoint's asks.
func endpointCounts(t *testing.T, ctx context.Context, nc *nats.Conn) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	msg, err := nc.RequestWithContext(ctx, "$SRV.STATS."+service.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	var stats micro.Stats
	if err := json.Unmarshal(msg.Data, &stats); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, e := range stats.Endpoints {
		counts[e.Subject] = e.NumRequests
		if e.NumRequests > 0 && e.AverageProcessingTime <= 0 {
			t.Errorf("%s: %d asks without a processing time", e.Subject, e.NumRequests)
		}
	}
	return counts
}

// Real asks and replies match schemas/status-query.json and
// schemas/status-reply.json, and asks the service refuses do not.
func TestStatusMatchesItsSchemas(t *testing.T) {
	c := startCairn(t, topology.DefaultOptions().Duplicates)
	producer := connect(t, c.srv, "producer")
	const id = "req-schema"
	body := request(id, nil)
	publishAndWait(t, c.ctx, producer, id, body)
	compiler := jsonschema.NewCompiler()
	query, err := compiler.Compile("../../schemas/status-query.json")
	if err != nil {
		t.Fatal(err)
	}
	replySchema, err := compiler.Compile("../../schemas/status-reply.json")
	if err != nil {
		t.Fatal(err)
	}
	check := func(s *jsonschema.Schema, doc []byte) error {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
		if err != nil {
			return err
		}
		return s.Validate(v)
	}
	for _, ask := range []string{
		`{"request_id":"` + id + `"}`,
		`{"request_id":"` + id + `","content_hash":"` + ledger.ContentHash(body) + `"}`,
		`{"stream_sequence":1}`,
		`{"request_id":"never-sent"}`,
	} {
		if err := check(query, []byte(ask)); err != nil {
			t.Errorf("ask %s does not match its schema: %v", ask, err)
		}
		msg, err := producer.Conn().Request(events.SubjectStatus, []byte(ask), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := check(replySchema, msg.Data); err != nil {
			t.Errorf("reply %.200s does not match its schema: %v", msg.Data, err)
		}
	}
	for _, bad := range []string{`{}`, `{"request_id":"a","stream_sequence":1}`, `{"stream_sequence":1,"content_hash":"` + strings.Repeat("0", 64) + `"}`, `{"request_id":"a","content_hash":"xyz"}`, `{"colour":"red"}`} {
		if check(query, []byte(bad)) == nil {
			t.Errorf("the schema accepts %s, which the service refuses", bad)
		}
	}
}
