package natsrv

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/consumer"
	"github.com/cairnhq/cairn/internal/facts"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The tests in this file pin the consumer rules of the repository's
// nats.conf: the request and harvest streams hold the processor's durables
// and only the processor touches consumers there; the event streams hold no
// durables at all, so that readers, who may create, pull from and delete
// their own ordered consumers there, can harm nobody's.

// jsErrEphemeralWithDurable is the server's refusal of a durable name sent
// to the ephemeral-only create endpoint, where nats.conf's account mappings
// send every consumer create on the event streams.
const jsErrEphemeralWithDurable = 10020

// permFixture is a server started from nats.conf and provisioned by the
// processor, with the processor's and the harvester's durables in place
// and one message on each of the request, events and memory streams.
type permFixture struct {
	srv       *Server
	processor jetstream.JetStream
	ctx       context.Context
}

func newPermFixture(t *testing.T) *permFixture {
	t.Helper()
	s, err := Start(Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", ConfigFile: "../../nats.conf", ReadyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	f := &permFixture{srv: s, ctx: ctx}
	f.processor = connect(t, s, "processor", "processor-dev-password", nil)
	stores := testenv.Stores(t, f.processor, 1)
	if _, err := f.processor.CreateOrUpdateConsumer(ctx, topology.StreamRequests, consumer.DefaultConfig().ConsumerConfig()); err != nil {
		t.Fatalf("processor cannot create its durable: %v", err)
	}
	w, err := facts.NewWorker(f.processor, facts.NewStore(stores.Facts, time.Now), facts.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.processor.CreateOrUpdateConsumer(ctx, topology.StreamHarvest, w.ConsumerConfig()); err != nil {
		t.Fatalf("processor cannot create the harvester durable: %v", err)
	}
	producer := connect(t, s, "producer", "producer-dev-password", nil)
	if _, err := producer.Publish(ctx, topology.SubjectRequested, []byte(`{}`), jetstream.WithMsgID("r-1")); err != nil {
		t.Fatalf("producer cannot publish a request: %v", err)
	}
	for subj, id := range map[string]string{topology.SubjectActivated: "ev-1", topology.SubjectFlushed: "mem-1"} {
		if _, err := f.processor.Publish(ctx, subj, []byte(`{}`), jetstream.WithMsgID(id)); err != nil {
			t.Fatalf("processor cannot publish %s: %v", subj, err)
		}
	}
	return f
}

// consumerConfig returns the configuration of a consumer, failing the test
// when it does not exist.
func (f *permFixture) consumerConfig(t *testing.T, stream, name string) jetstream.ConsumerConfig {
	t.Helper()
	c, err := f.processor.Consumer(f.ctx, stream, name)
	if err != nil {
		t.Fatalf("consumer %s on %s: %v", name, stream, err)
	}
	return c.CachedInfo().Config
}

// exists reports whether the consumer is on the stream.
func (f *permFixture) exists(t *testing.T, stream, name string) bool {
	t.Helper()
	_, err := f.processor.Consumer(f.ctx, stream, name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return false
	}
	if err != nil {
		t.Fatalf("consumer %s on %s: %v", name, stream, err)
	}
	return true
}

// attacker is a connection used only for raw JetStream API requests, so that
// each permission violation the server reports belongs to the request that
// caused it.
type attacker struct {
	user string
	nc   *nats.Conn
	errs chan error
}

func newAttacker(t *testing.T, s *Server, user string) *attacker {
	t.Helper()
	a := &attacker{user: user, errs: make(chan error, 16)}
	nc, err := nats.Connect(s.ClientURL(), nats.UserInfo(user, user+"-dev-password"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case a.errs <- err:
			default:
			}
		}))
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	a.nc = nc
	return a
}

// outcome is how the server answered one API request: a permission
// violation, a JetStream API error code, or a reply (data).
type outcome struct {
	violation bool
	code      int
	data      []byte
}

func (o outcome) refused() bool { return o.violation || o.code == jsErrEphemeralWithDurable }

func (o outcome) String() string {
	switch {
	case o.violation:
		return "permission violation"
	case o.code != 0:
		return "API error " + string(o.data)
	}
	return "accepted: " + string(o.data)
}

// request sends body to subject and waits for the reply or for the server's
// permission violation, whichever comes first.
func (a *attacker) request(t *testing.T, subject string, body any) outcome {
	t.Helper()
	for len(a.errs) > 0 {
		<-a.errs
	}
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	type reply struct {
		msg *nats.Msg
		err error
	}
	replies := make(chan reply, 1)
	go func() {
		m, err := a.nc.RequestWithContext(ctx, subject, b)
		replies <- reply{m, err}
	}()
	select {
	case err := <-a.errs:
		if strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
			return outcome{violation: true}
		}
		t.Fatalf("%s: %s: %v", a.user, subject, err)
	case r := <-replies:
		if r.err != nil {
			t.Fatalf("%s: %s: no reply and no violation: %v", a.user, subject, r.err)
		}
		var resp struct {
			Error *struct {
				ErrCode int `json:"err_code"`
			} `json:"error"`
		}
		if json.Unmarshal(r.msg.Data, &resp) == nil && resp.Error != nil {
			return outcome{code: resp.Error.ErrCode, data: r.msg.Data}
		}
		return outcome{data: r.msg.Data}
	}
	return outcome{}
}

// mustRefuse fails the test unless the server refuses the request.
func (a *attacker) mustRefuse(t *testing.T, what, subject string, body any) {
	t.Helper()
	if o := a.request(t, subject, body); !o.refused() {
		t.Errorf("%s %s: %s", a.user, what, o)
	} else {
		t.Logf("refused: %s %s (%s)", a.user, what, o)
	}
}

// createBody is a consumer create request as nats.go sends it.
func createBody(stream string, cfg jetstream.ConsumerConfig) map[string]any {
	return map[string]any{"stream_name": stream, "config": cfg}
}

// createSubjects returns every create subject that may carry cfg: the named
// one, the one with the filter subject (the filter itself, or a wildcard
// one no account mapping can match), the ephemeral one and the legacy
// durable one.
func createSubjects(stream, name, filter string) map[string]string {
	api := "$JS.API.CONSUMER."
	return map[string]string{
		"named":     api + "CREATE." + stream + "." + name,
		"filtered":  api + "CREATE." + stream + "." + name + "." + filter,
		"wildcard":  api + "CREATE." + stream + "." + name + "." + wildcardFilter,
		"ephemeral": api + "CREATE." + stream,
		"durable":   api + "DURABLE.CREATE." + stream + "." + name,
	}
}

// wildcardFilter matches every Cairn subject.
const wildcardFilter = "conversation.>"

// withFilter sets the filter subject the create subject form carries.
func withFilter(cfg jetstream.ConsumerConfig, form, filter string) jetstream.ConsumerConfig {
	switch form {
	case "filtered":
		cfg.FilterSubject = filter
	case "wildcard":
		cfg.FilterSubject = wildcardFilter
	}
	return cfg
}

// TestConfNoDurableOnEventStreams: no identity, the processor included, can
// create a durable on an event stream, by any of the create subjects. With
// none there, a reader that deletes or pulls from a consumer it does not
// own can only disturb another reader's ordered consumer, which recovers.
func TestConfNoDurableOnEventStreams(t *testing.T) {
	f := newPermFixture(t)
	streams := map[string]string{topology.StreamEvents: topology.SubjectActivated, topology.StreamMemory: topology.SubjectFlushed}
	for _, user := range []string{"producer", "auditor", "processor"} {
		a := newAttacker(t, f.srv, user)
		for stream, filter := range streams {
			for form, subject := range createSubjects(stream, "keeper", filter) {
				cfg := withFilter(jetstream.ConsumerConfig{Durable: "keeper", AckPolicy: jetstream.AckExplicitPolicy}, form, filter)
				a.mustRefuse(t, "creates durable keeper on "+stream+" ("+form+")", subject, createBody(stream, cfg))
				if f.exists(t, stream, "keeper") {
					t.Fatalf("%s created durable keeper on %s (%s)", user, stream, form)
				}
			}
		}
	}
	// The way a client library creates one is refused too.
	producer := connect(t, f.srv, "producer", "producer-dev-password", nil)
	_, err := producer.CreateOrUpdateConsumer(f.ctx, topology.StreamEvents, jetstream.ConsumerConfig{Durable: "keeper", FilterSubject: topology.SubjectActivated})
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jsErrEphemeralWithDurable {
		t.Fatalf("producer CreateOrUpdateConsumer durable on events = %v, want error %d", err, jsErrEphemeralWithDurable)
	}
}

// TestConfProducerCannotDeleteDurables: the producer cannot delete a durable
// it does not own: the processor's and the harvester's, nor one another
// identity made on the events stream (when the server lets one be made at
// all; TestConfNoDurableOnEventStreams requires that it does not).
func TestConfProducerCannotDeleteDurables(t *testing.T) {
	f := newPermFixture(t)
	targets := [][2]string{
		{topology.StreamRequests, topology.ConsumerProcessor},
		{topology.StreamHarvest, topology.ConsumerHarvester},
	}
	auditor := newAttacker(t, f.srv, "auditor")
	for _, stream := range []string{topology.StreamEvents, topology.StreamMemory} {
		subject := "$JS.API.CONSUMER.CREATE." + stream + ".watcher"
		auditor.request(t, subject, createBody(stream, jetstream.ConsumerConfig{Durable: "watcher", AckPolicy: jetstream.AckExplicitPolicy}))
		if f.exists(t, stream, "watcher") {
			targets = append(targets, [2]string{stream, "watcher"})
		} else {
			t.Logf("the auditor cannot make a durable on %s: nothing there for the producer to delete", stream)
		}
	}
	producer := newAttacker(t, f.srv, "producer")
	for _, tg := range targets {
		stream, name := tg[0], tg[1]
		producer.mustRefuse(t, "deletes "+name+" on "+stream, "$JS.API.CONSUMER.DELETE."+stream+"."+name, nil)
		if !f.exists(t, stream, name) {
			t.Errorf("the producer deleted %s on %s", name, stream)
		}
	}
}

// TestConfAuditorCannotCreateConsumersOnWorkStreams: the request and
// harvest streams hold the processor's durables. The server cannot tell a
// reader's ordered consumer from a durable, nor from a rewrite of the
// processor's consumer under its name, so readers create none there.
func TestConfAuditorCannotCreateConsumersOnWorkStreams(t *testing.T) {
	f := newPermFixture(t)
	streams := map[string]string{topology.StreamRequests: topology.SubjectRequested, topology.StreamHarvest: topology.SubjectHarvest}
	auditor := newAttacker(t, f.srv, "auditor")
	for stream, filter := range streams {
		for form, subject := range createSubjects(stream, "copy", filter) {
			cfg := withFilter(jetstream.ConsumerConfig{Durable: "copy", AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy}, form, filter)
			if form == "ephemeral" {
				cfg.Durable, cfg.Name = "", "copy"
			}
			auditor.mustRefuse(t, "creates consumer copy on "+stream+" ("+form+")", subject, createBody(stream, cfg))
			if f.exists(t, stream, "copy") {
				t.Fatalf("the auditor created consumer copy on %s (%s)", stream, form)
			}
		}
	}
	// An ordered consumer, the way replay reads, is refused there too.
	js := connect(t, f.srv, "auditor", "auditor-dev-password", nil)
	short, cancel := context.WithTimeout(f.ctx, 3*time.Second)
	defer cancel()
	if _, err := js.OrderedConsumer(short, topology.StreamRequests, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}); err == nil {
		t.Error("the auditor created an ordered consumer on the request stream")
	}
}

// TestConfAuditorCannotEditProcessorConsumer: neither the named create
// subject nor the ephemeral one (the name in the body) lets the auditor
// rewrite the processor's or the harvester's consumer.
func TestConfAuditorCannotEditProcessorConsumer(t *testing.T) {
	f := newPermFixture(t)
	auditor := newAttacker(t, f.srv, "auditor")
	producer := newAttacker(t, f.srv, "producer")
	for _, tg := range [][3]string{
		{topology.StreamRequests, topology.ConsumerProcessor, topology.SubjectRequested},
		{topology.StreamHarvest, topology.ConsumerHarvester, topology.SubjectHarvest},
	} {
		stream, name, filter := tg[0], tg[1], tg[2]
		before := f.consumerConfig(t, stream, name)
		edited := before
		edited.MaxDeliver, edited.InactiveThreshold = 1, time.Second
		asEphemeral := edited
		asEphemeral.Durable = ""
		for _, a := range []*attacker{auditor, producer} {
			subjects := createSubjects(stream, name, filter)
			a.mustRefuse(t, "updates "+name+" (filtered)", subjects["filtered"], createBody(stream, edited))
			a.mustRefuse(t, "updates "+name+" (named)", subjects["named"], createBody(stream, asEphemeral))
			a.mustRefuse(t, "updates "+name+" (ephemeral endpoint, name in body)", subjects["ephemeral"], createBody(stream, asEphemeral))
			a.mustRefuse(t, "updates "+name+" (legacy durable)", subjects["durable"], createBody(stream, edited))
		}
		after := f.consumerConfig(t, stream, name)
		if after.MaxDeliver != before.MaxDeliver || after.InactiveThreshold != 0 || after.Durable != name {
			t.Errorf("%s on %s was rewritten: MaxDeliver %d, InactiveThreshold %s, Durable %q", name, stream, after.MaxDeliver, after.InactiveThreshold, after.Durable)
		}
	}
}

// TestConfAuditorCannotPullFromProcessorConsumer: a pull from the
// processor's consumer by anyone else would hold a request for an ack wait
// and spend one of its deliveries.
func TestConfAuditorCannotPullFromProcessorConsumer(t *testing.T) {
	f := newPermFixture(t)
	pull := map[string]any{"batch": 1, "expires": int64(time.Second)}
	for _, user := range []string{"auditor", "producer"} {
		a := newAttacker(t, f.srv, user)
		for stream, name := range map[string]string{topology.StreamRequests: topology.ConsumerProcessor, topology.StreamHarvest: topology.ConsumerHarvester} {
			a.mustRefuse(t, "pulls from "+name, "$JS.API.CONSUMER.MSG.NEXT."+stream+"."+name, pull)
		}
	}
	cons, err := f.processor.Consumer(f.ctx, topology.StreamRequests, topology.ConsumerProcessor)
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Delivered.Consumer != 0 || info.NumAckPending != 0 {
		t.Fatalf("processor's consumer delivered %d, %d pending, before the processor pulled", info.Delivered.Consumer, info.NumAckPending)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatalf("processor pull: %v", err)
	}
	md, err := msg.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if md.NumDelivered != 1 {
		t.Errorf("the request reached the processor on delivery %d, want 1", md.NumDelivered)
	}
	if err := msg.Ack(); err != nil {
		t.Fatalf("processor ack: %v", err)
	}
}

// TestConfReadersStillRead: what the producer and the auditor legitimately
// do still works: the events package's Follow on both event streams (the
// producer's outcome wait and a memory service's memory.flushed), the
// audit's filtered ordered read and the deletion of that consumer, plain
// subscriptions, and the lookup of a request by sequence.
func TestConfReadersStillRead(t *testing.T) {
	f := newPermFixture(t)
	for _, user := range []string{"producer", "auditor"} {
		js := connect(t, f.srv, user, user+"-dev-password", nil)
		for stream, subject := range map[string]string{topology.StreamEvents: topology.SubjectActivated, topology.StreamMemory: topology.SubjectFlushed} {
			for _, filter := range [][]string{nil, {subject}} {
				if got := followFirst(t, f.ctx, js, events.FollowOptions{Stream: stream, Subjects: filter, FromStart: true}); got != subject {
					t.Errorf("%s followed %s (filter %v): got %q, want %q", user, stream, filter, got, subject)
				}
			}
		}
		// The audit's way: an ordered consumer on the activations from the start.
		cons, err := js.OrderedConsumer(f.ctx, topology.StreamEvents, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{topology.SubjectActivated}, DeliverPolicy: jetstream.DeliverAllPolicy,
		})
		if err != nil {
			t.Fatalf("%s ordered consumer: %v", user, err)
		}
		if msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second)); err != nil || msg.Subject() != topology.SubjectActivated {
			t.Fatalf("%s ordered read: %v", user, err)
		}
		// A reader deletes its ordered consumer when done rather than
		// leaving it to expire (one per read, or per message with Next).
		del, cancel := context.WithTimeout(f.ctx, 5*time.Second)
		err = js.DeleteConsumer(del, topology.StreamEvents, cons.CachedInfo().Name)
		cancel()
		if err != nil {
			t.Errorf("%s cannot delete its own ordered consumer: %v", user, err)
		}
		nc := js.Conn()
		sub, err := nc.SubscribeSync(topology.SubjectFlushed)
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.processor.Publish(f.ctx, topology.SubjectFlushed, []byte(`{}`), jetstream.WithMsgID("mem-live-"+user)); err != nil {
			t.Fatal(err)
		}
		if _, err := sub.NextMsg(5 * time.Second); err != nil {
			t.Errorf("%s did not receive memory.flushed: %v", user, err)
		}
		if str, err := js.Stream(f.ctx, topology.StreamRequests); err != nil {
			t.Errorf("%s stream info on requests: %v", user, err)
		} else if _, err := str.GetMsg(f.ctx, 1); err != nil {
			t.Errorf("%s read request #1: %v", user, err)
		}
	}
	auditor := connect(t, f.srv, "auditor", "auditor-dev-password", nil)
	heads, err := f.processor.KeyValue(f.ctx, topology.BucketHeads)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := heads.Put(f.ctx, "lane", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	for _, bucket := range []string{topology.BucketHeads, topology.BucketCheckpoints} {
		kv, err := auditor.KeyValue(f.ctx, bucket)
		if err != nil {
			t.Fatalf("auditor opens %s: %v", bucket, err)
		}
		if _, err := kv.Get(f.ctx, "lane"); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Errorf("auditor reads %s: %v", bucket, err)
		}
		if _, err := kv.Keys(f.ctx); err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
			t.Errorf("auditor lists %s: %v", bucket, err)
		}
	}
}

// followFirst returns the subject of the first event Follow delivers.
func followFirst(t *testing.T, ctx context.Context, js jetstream.JetStream, o events.FollowOptions) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var subject string
	stop := errors.New("stop")
	err := events.Follow(ctx, js, o, func(ev events.Event) error {
		subject = ev.Subject
		return stop
	})
	if !errors.Is(err, stop) {
		t.Fatalf("follow %s: %v", o.Stream, err)
	}
	return subject
}

// A producer whose permissions predate direct gets on COMPACT_REQUESTS (a
// copy of nats.conf without "$JS.API.DIRECT.GET.COMPACT_REQUESTS") cannot
// read its stored request; the events client's error names the subject to
// allow instead of only timing out.
func TestConfOldProducerPermissionIsNamed(t *testing.T) {
	conf, err := os.ReadFile("../../nats.conf")
	if err != nil {
		t.Fatal(err)
	}
	const grant = "\"$JS.API.DIRECT.GET.COMPACT_REQUESTS\"\n"
	if !strings.Contains(string(conf), grant) {
		t.Fatal("nats.conf no longer grants direct gets by sequence on COMPACT_REQUESTS")
	}
	path := filepath.Join(t.TempDir(), "old.conf")
	if err := os.WriteFile(path, []byte(strings.Replace(string(conf), grant, "\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Start(Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", ConfigFile: path, ReadyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := topology.Ensure(ctx, connect(t, s, "processor", "processor-dev-password", nil), topology.DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	producer := connect(t, s, "producer", "producer-dev-password", func(*nats.Conn, *nats.Subscription, error) {})
	ack, err := producer.Publish(ctx, topology.SubjectRequested, []byte(`{}`), jetstream.WithMsgID("old-1"))
	if err != nil {
		t.Fatal(err)
	}
	read, cancelRead := context.WithTimeout(ctx, 2*time.Second)
	defer cancelRead()
	_, err = events.PublishedAt(read, producer, ack)
	if err == nil || !strings.Contains(err.Error(), "$JS.API.DIRECT.GET."+topology.StreamRequests) {
		t.Fatalf("read without the permission: %v, want an error naming it", err)
	}
}
