package topology_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/audit"
	"github.com/cairnhq/cairn/internal/consumer"
	"github.com/cairnhq/cairn/internal/facts"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/natsrv"
	"github.com/cairnhq/cairn/internal/summarize/offline"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const upgradeWait = 30 * time.Second

// The fixture's requests and the state the release at 45f7c3e left them in
// (testdata/README.md).
const (
	prevActive  = "prev-active"  // activated; its outbox relayed; its harvest job queued
	prevFailed  = "prev-failed"  // failed with stale_head
	prevStored  = "prev-stored"  // ledger at stored with its plan, checkpoint stored, head not moved, unacked
	prevPending = "prev-pending" // head moved with its activated event and harvest job in the outbox, unacked
	prevNext    = "prev-next"    // a follow-up on prev-active's head, never sent (prev-next.json)
)

// A store written by the release before the format marker (45f7c3e), with
// a request stopped at each point of its commit, is read by this Cairn:
// each request ends in exactly one outcome, resends replay it, the old
// head takes a new activation, and the old harvest jobs are harvested.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	dir := unpackFixture(t)
	js := serveDir(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*upgradeWait)
	defer cancel()

	if md := metadata(t, js, topology.StreamRequests); md[topology.FormatKey] != "" {
		t.Fatalf("fixture is marked already: %v", md)
	}
	o := topology.DefaultOptions()
	o.MarkLedgerIDs = lanes.MarkLedgerKeys
	stores, err := topology.Ensure(ctx, js, o)
	if err != nil {
		t.Fatalf("Ensure on the previous release's store: %v", err)
	}
	for _, name := range ownedStreams() {
		if got := metadata(t, js, name)[topology.FormatKey]; got != strconv.Itoa(topology.StoreFormat) {
			t.Errorf("%s not marked: %q", name, got)
		}
	}
	// The request stream, created without direct gets, now answers them
	// (harvest jobs read their request back by sequence).
	if str, err := js.Stream(ctx, topology.StreamRequests); err != nil || !str.CachedInfo().Config.AllowDirect {
		t.Fatalf("%s after Ensure: direct gets not allowed (%v)", topology.StreamRequests, err)
	}
	ls := lanes.New(stores.Heads, stores.Checkpoints)
	led := ledger.New(stores.Ledger)

	// The old records read as they are, before any processor runs.
	active := head(t, ls, prevActive)
	if active == nil || active.CheckpointID != prevActive || active.Generation != 1 || len(active.Outbox) != 0 {
		t.Fatalf("%s head: %+v", prevActive, active)
	}
	activeCP, err := ls.GetCheckpoint(ctx, prevActive)
	if err != nil || activeCP == nil || activeCP.Hash != active.HeadHash {
		t.Fatalf("%s checkpoint %+v: %v", prevActive, activeCP, err)
	}
	if h := head(t, ls, prevPending); h == nil || h.CheckpointID != prevPending || len(h.Outbox) < 2 {
		t.Fatalf("%s head: %+v", prevPending, h)
	}
	if h := head(t, ls, prevStored); h != nil {
		t.Fatalf("%s head moved in the fixture: %+v", prevStored, h)
	}
	storedEntry := entry(t, led, prevStored)
	if storedEntry == nil || storedEntry.State != ledger.Stored || storedEntry.Plan == nil || storedEntry.Checkpoint == nil {
		t.Fatalf("%s ledger: %+v", prevStored, storedEntry)
	}
	if cp, err := ls.GetCheckpoint(ctx, prevStored); err != nil || cp == nil || cp.Hash != storedEntry.Checkpoint.Hash {
		t.Fatalf("%s checkpoint %+v: %v", prevStored, cp, err)
	}
	if en := entry(t, led, prevFailed); en == nil || en.State != ledger.Failed || en.Retryable {
		t.Fatalf("%s ledger: %+v", prevFailed, en)
	}
	// The upgrade to format 3 marked the ids the ledger holds that had no
	// checkpoint record, so that a first delivery, which reads no ledger,
	// finds them.
	if cp, err := ls.GetCheckpoint(ctx, prevFailed); err != nil || cp == nil || !cp.IsMarker() || cp.ID != prevFailed {
		t.Fatalf("%s has no marker after the upgrade: %+v (%v)", prevFailed, cp, err)
	}
	if cp, err := ls.GetCheckpoint(ctx, prevActive); err != nil || cp == nil || cp.IsMarker() {
		t.Fatalf("%s's checkpoint was replaced by a marker: %+v (%v)", prevActive, cp, err)
	}
	failedBefore := onlyOne(t, eventsOf(t, js, prevFailed), prevFailed)

	// The unacked requests come back from the old consumer, whose ack
	// window the processor shortens.
	p := startProcessor(t, js, stores)
	for _, id := range []string{prevPending, prevStored} {
		ev := awaitOne(t, js, id)
		if ev.kind() != events.KindActivated || ev.MsgID != id+":activated" || ev.str("checkpoint_id") != id || ev.num("generation") != 1 {
			t.Fatalf("%s: %s %v", id, ev.MsgID, ev.Body)
		}
		testenv.Eventually(t, upgradeWait, func() error {
			if en := entry(t, led, id); en.State != ledger.Activated {
				return fmt.Errorf("%s ledger %s", id, en.State)
			}
			if h := head(t, ls, id); h == nil || h.Generation != 1 || len(h.Outbox) != 0 {
				return fmt.Errorf("%s head %+v", id, h)
			}
			return nil
		})
	}

	// A resend of a finished request replays its outcome under the same
	// event id and moves nothing. It is sent without Nats-Msg-Id: a
	// fixture younger than the duplicate window (the day it is written)
	// would have the stream drop a resend with it, and one beyond the
	// window reaches the processor just as this one does.
	for _, id := range []string{prevActive, prevStored, prevFailed} {
		seq := resend(t, js, id)
		awaitAcked(t, js, seq)
	}
	activeEv := onlyOne(t, eventsOf(t, js, prevActive), prevActive)
	if activeEv.kind() != events.KindActivated || activeEv.MsgID != prevActive+":activated" {
		t.Fatalf("%s replay: %s %v", prevActive, activeEv.MsgID, activeEv.Body)
	}
	onlyOne(t, eventsOf(t, js, prevStored), prevStored)
	// subjects.md: a non-retryable failure is final; its resend replays
	// the recorded failed event.
	failedEv := onlyOne(t, eventsOf(t, js, prevFailed), prevFailed)
	if failedEv.MsgID != prevFailed+":failed" || failedEv.code() != "stale_head" || failedEv.str("event_id") != failedBefore.str("event_id") {
		t.Fatalf("%s replay: %s %v", prevFailed, failedEv.MsgID, failedEv.Body)
	}
	if en := entry(t, led, prevFailed); en.State != ledger.Failed {
		t.Fatalf("%s ledger after resend: %s", prevFailed, en.State)
	}
	if h := head(t, ls, prevActive); h.Generation != 1 || h.CheckpointID != prevActive {
		t.Fatalf("%s head moved by a resend: %+v", prevActive, h)
	}

	// The old head takes a new activation, chained to the old checkpoint.
	next, err := os.ReadFile(filepath.Join(dir, "prev-next.json"))
	if err != nil {
		t.Fatal(err)
	}
	publish(t, js, next, prevNext)
	nextEv := awaitOne(t, js, prevNext)
	if nextEv.kind() != events.KindActivated || nextEv.num("generation") != 2 || nextEv.str("parent_checkpoint_hash") != activeCP.Hash {
		t.Fatalf("%s: %v", prevNext, nextEv.Body)
	}
	if h := head(t, ls, prevActive); h.CheckpointID != prevNext || h.Generation != 2 || h.ParentCheckpointID != prevActive {
		t.Fatalf("%s head after %s: %+v", prevActive, prevNext, h)
	}

	// Every activation has exactly one harvest job, old and new alike, and
	// the harvester reads them all.
	harvested := []string{prevActive, prevPending, prevStored, prevNext}
	testenv.Eventually(t, upgradeWait, func() error {
		if n := len(streamMsgs(t, js, topology.StreamHarvest)); n != len(harvested) {
			return fmt.Errorf("%d harvest jobs, want %d", n, len(harvested))
		}
		return nil
	})
	startHarvester(t, js, stores, p)
	testenv.Eventually(t, upgradeWait, func() error {
		flushed := map[string][]string{}
		for _, m := range streamMsgs(t, js, topology.StreamMemory) {
			if m.kind() != events.KindMemoryFlush {
				return fmt.Errorf("harvest of %s: %s %v", m.str("head_entry_id"), m.kind(), m.Body)
			}
			flushed[m.str("head_entry_id")] = append(flushed[m.str("head_entry_id")], m.MsgID)
		}
		for _, id := range harvested {
			if len(flushed[id]) != 1 {
				return fmt.Errorf("%s flushed %d times", id, len(flushed[id]))
			}
		}
		return nil
	})
	if n := len(streamMsgs(t, js, topology.StreamHarvest)); n != len(harvested) {
		t.Fatalf("%d harvest jobs after the harvest, want %d", n, len(harvested))
	}

	// Old and new links make one hash chain per lane.
	report, err := audit.Verify(ctx, js, ls)
	if err != nil {
		t.Fatal(err)
	}
	if !report.OK() || len(report.Lanes) != 3 || report.Events != 4 {
		t.Fatalf("audit: %+v", report)
	}
}

// A store a newer Cairn marked is refused on start with the clear
// message, and nothing in it changes.
func TestUpgradeRefusesNewerFormat(t *testing.T) {
	dir := unpackFixture(t)
	js := serveDir(t, dir)
	ctx := context.Background()
	newer := strconv.Itoa(topology.StoreFormat + 1)
	setMetadata(t, js, "KV_"+topology.BucketHeads, topology.FormatKey, newer)
	_, err := topology.Ensure(ctx, js, topology.DefaultOptions())
	checkFormatRefusal(t, err, "KV_"+topology.BucketHeads, newer)
	if md := metadata(t, js, topology.StreamRequests); md[topology.FormatKey] != "" {
		t.Errorf("refused Ensure marked %s: %v", topology.StreamRequests, md)
	}
}

// unpackFixture extracts testdata/prev-store.tar.gz into a new directory.
func unpackFixture(t *testing.T) string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "prev-store.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Clean(h.Name)
		if !filepath.IsLocal(name) && name != "." {
			t.Fatalf("fixture entry %q leaves its directory", h.Name)
		}
		dst := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("fixture entry %q has type %c", h.Name, h.Typeflag)
		}
	}
}

// serveDir starts an embedded server on the store in dir, as serve does on
// --data-dir.
func serveDir(t *testing.T, dir string) jetstream.JetStream {
	t.Helper()
	s, err := natsrv.Start(natsrv.Config{DataDir: dir, Listen: natsrv.ListenNone, ReadyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func startProcessor(t *testing.T, js jetstream.JetStream, stores *topology.Stores) *consumer.Processor {
	t.Helper()
	cfg := consumer.DefaultConfig()
	cfg.Workers = 2
	cfg.AckWait = time.Second
	cfg.NakBackoff = []time.Duration{50 * time.Millisecond}
	cfg.PullWait = 200 * time.Millisecond
	cfg.DrainTimeout = 5 * time.Second
	cfg.Relay.RetryInterval = 50 * time.Millisecond
	p, err := consumer.New(cfg, consumer.Deps{JS: js, Stores: stores, Compactor: consumer.EngineCompactor{},
		Summarizer: offline.New(offline.DefaultOptions()), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	run(t, p.Run)
	return p
}

// startHarvester runs the harvester as serve does, reading the cut events
// of a job that points to its request through the processor.
func startHarvester(t *testing.T, js jetstream.JetStream, stores *topology.Stores, requests facts.RequestReader) {
	t.Helper()
	cfg := facts.DefaultConfig()
	cfg.AckWait = 5 * time.Second
	cfg.Retry = []time.Duration{50 * time.Millisecond}
	cfg.PullWait = 200 * time.Millisecond
	cfg.Logger = testLogger(t)
	cfg.Requests = requests
	w, err := facts.NewWorker(js, facts.NewStore(stores.Facts, nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	run(t, w.Run)
}

// run runs fn until the test ends, and fails the test if it returns an
// error of its own before.
func run(t *testing.T, fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("run: %v", err)
		}
	})
}

func head(t *testing.T, ls *lanes.Store, lane string) *lanes.Head {
	t.Helper()
	h, _, err := ls.Head(context.Background(), lanes.Lane{RunAgentID: "agent-" + lane, CheckpointNamespace: "main"})
	if err != nil {
		t.Fatalf("head of %s: %v", lane, err)
	}
	return h
}

func entry(t *testing.T, led *ledger.Ledger, id string) *ledger.Entry {
	t.Helper()
	en, _, err := led.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("ledger of %s: %v", id, err)
	}
	return en
}

// msg is one message of a stream, its body decoded.
type msg struct {
	Seq   uint64
	MsgID string
	Body  map[string]any
}

func (m msg) str(k string) string { s, _ := m.Body[k].(string); return s }
func (m msg) num(k string) int64  { f, _ := m.Body[k].(float64); return int64(f) }
func (m msg) kind() string        { return m.str("kind") }
func (m msg) code() string {
	e, _ := m.Body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func streamMsgs(t *testing.T, js jetstream.JetStream, stream string) []msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []msg
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		if err := json.Unmarshal(m.Data, &body); err != nil {
			t.Fatalf("%s #%d: %v", stream, seq, err)
		}
		out = append(out, msg{Seq: seq, MsgID: m.Header.Get(jetstream.MsgIDHeader), Body: body})
	}
	return out
}

func eventsOf(t *testing.T, js jetstream.JetStream, requestID string) []msg {
	t.Helper()
	var out []msg
	for _, m := range streamMsgs(t, js, topology.StreamEvents) {
		if m.str("request_id") == requestID {
			out = append(out, m)
		}
	}
	return out
}

// onlyOne checks that a request's events are one event: a replay inside
// the events stream's duplicate window is dropped, one beyond it repeats
// the same id and body.
func onlyOne(t *testing.T, evs []msg, id string) msg {
	t.Helper()
	if len(evs) == 0 {
		t.Fatalf("%s: no event", id)
	}
	for _, ev := range evs[1:] {
		if ev.MsgID != evs[0].MsgID || ev.str("event_id") != evs[0].str("event_id") || ev.kind() != evs[0].kind() {
			t.Fatalf("%s: two outcomes, %s %v and %s %v", id, evs[0].MsgID, evs[0].Body, ev.MsgID, ev.Body)
		}
	}
	return evs[0]
}

func awaitOne(t *testing.T, js jetstream.JetStream, id string) msg {
	t.Helper()
	testenv.Eventually(t, upgradeWait, func() error {
		if len(eventsOf(t, js, id)) == 0 {
			return fmt.Errorf("no event for %s yet", id)
		}
		return nil
	})
	return onlyOne(t, eventsOf(t, js, id), id)
}

// resend publishes the stored body of a request again and returns its
// sequence.
func resend(t *testing.T, js jetstream.JetStream, id string) uint64 {
	t.Helper()
	for _, m := range requestMsgs(t, js) {
		if m.Header.Get(jetstream.MsgIDHeader) == id {
			return publish(t, js, m.Data, "")
		}
	}
	t.Fatalf("no request %s in %s", id, topology.StreamRequests)
	return 0
}

func requestMsgs(t *testing.T, js jetstream.JetStream) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx := context.Background()
	st, err := js.Stream(ctx, topology.StreamRequests)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func publish(t *testing.T, js jetstream.JetStream, body []byte, msgID string) uint64 {
	t.Helper()
	m := nats.NewMsg(topology.SubjectRequested)
	m.Data = body
	var opts []jetstream.PublishOpt
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	ack, err := js.PublishMsg(context.Background(), m, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if ack.Duplicate {
		t.Fatalf("request %s dropped as a duplicate", msgID)
	}
	return ack.Sequence
}

// awaitAcked waits until the processor acked every request up to seq.
func awaitAcked(t *testing.T, js jetstream.JetStream, seq uint64) {
	t.Helper()
	testenv.Eventually(t, upgradeWait, func() error {
		c, err := js.Consumer(context.Background(), topology.StreamRequests, topology.ConsumerProcessor)
		if err != nil {
			return err
		}
		info, err := c.Info(context.Background())
		if err != nil {
			return err
		}
		if info.AckFloor.Stream < seq {
			return fmt.Errorf("acked up to %d, want %d", info.AckFloor.Stream, seq)
		}
		return nil
	})
}
