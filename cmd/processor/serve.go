package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/consumer"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/facts"
	"github.com/cairnhq/cairn/internal/inspect"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/cairnhq/cairn/internal/ledger"
	"github.com/cairnhq/cairn/internal/natsrv"
	"github.com/cairnhq/cairn/internal/outbox"
	natsservice "github.com/cairnhq/cairn/internal/service"
	"github.com/cairnhq/cairn/internal/telemetry"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func init() {
	register(command{name: "serve", summary: "run Cairn (the default): consume requests, activate checkpoints, harvest facts", run: runServe})
}

// serveConfig is everything `processor serve` can be told.
type serveConfig struct {
	nats         natsFlags
	natsUser     string
	natsPassword secretFlag
	dataDir      string
	listen       string
	natsConfig   string
	replicas     int
	ledgerTTL    time.Duration
	duplicates   time.Duration

	processor   consumer.Config
	harvest     facts.Config
	harvestBy   harvestFlags
	summarizer  string
	model       modelFlags
	metricsAddr string
	memoryLimit string
	log         logFlags
	ready       chan<- serveInfo // tests: told the addresses once serving
	// tokenCacheEntries bounds the token counts of event views kept across
	// requests (engine.CountCache).
	tokenCacheEntries int
	// wrapSummarizer, when set, wraps the configured summarizer (bench adds
	// a fixed model latency).
	wrapSummarizer func(engine.Summarizer) engine.Summarizer
	// holdFatal, when set, makes serve wait for it after a fatal failure
	// and before it shuts down (tests: to look at /healthz meanwhile).
	holdFatal <-chan struct{}
}

// serveInfo tells tests where a started service listens.
type serveInfo struct {
	NATSURL     string
	MetricsAddr string
	conn        *nats.Conn // the service's own connection (tests)
}

func (c *serveConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.nats.url, "nats-url", "", "connect to this NATS server or cluster instead of embedding one (also NATS_URL)")
	fs.StringVar(&c.nats.creds, "nats-creds", "", "NATS credentials file for --nats-url")
	c.nats.registerConn(fs)
	fs.StringVar(&c.natsUser, "nats-user", "", "NATS user to connect as (needed with a --nats-config that defines users, e.g. processor)")
	fs.Var(&c.natsPassword, "nats-password", "password of --nats-user (prefer CAIRN_NATS_PASSWORD: flags show in process lists)")
	fs.StringVar(&c.dataDir, "data-dir", "./data", "embedded server: JetStream file storage directory")
	fs.StringVar(&c.listen, "nats-listen", "127.0.0.1:4222", "embedded server: client listener host:port, or \"none\" for in-process only")
	fs.StringVar(&c.natsConfig, "nats-config", "", "embedded server: nats.conf to load (accounts, limits); --data-dir and --nats-listen override it")
	fs.IntVar(&c.replicas, "replicas", 1, "replicas of every stream and bucket (3 on a cluster)")
	fs.DurationVar(&c.duplicates, "duplicate-window", 20*time.Minute, "how long the request and event streams drop a message whose Nats-Msg-Id they stored (1s..24h); a resend after it is stored again, and Cairn answers it from the ledger")
	fs.DurationVar(&c.ledgerTTL, "ledger-ttl", 0, "keep each request's ledger entry this long after its last change (0: for ever; else at least 1h); a resend after it is processed as a new request")

	c.processor = consumer.DefaultConfig()
	fs.IntVar(&c.processor.Workers, "workers", c.processor.Workers, "requests this process works on at once")
	fs.IntVar(&c.processor.MaxAckPending, "max-ack-pending", 0, "requests delivered and not settled across all replicas sharing the consumer, those a killed replica left until --ack-wait ends included; pulls stay bounded by free workers (default 32 × --workers; with several replicas, 32 × the sum of their --workers)")
	fs.IntVar(&c.processor.CommitConcurrency, "commit-concurrency", 0, "requests committing at once after their model call, first come first served (default two per CPU, at most --workers)")
	fs.DurationVar(&c.processor.AckWait, "ack-wait", c.processor.AckWait, "time before an unacknowledged request is redelivered, so a replica that stops (killed or frozen) loses its requests to the others after at most this; InProgress is sent every third of it, so a long model call keeps its request")
	fs.IntVar(&c.processor.MaxDeliver, "max-deliver", c.processor.MaxDeliver, "deliveries of one request before it fails with provider_unavailable")
	fs.StringVar(&c.processor.OnUncertain, "on-uncertain", c.processor.OnUncertain, "when an earlier model call may still run: retry (after its deadline) or fail (provider_attempt_uncertain)")
	fs.DurationVar(&c.processor.AttemptTimeout, "attempt-timeout", c.processor.AttemptTimeout, "bound of one attempt of a request, model calls included")
	fs.DurationVar(&c.processor.DrainTimeout, "drain-timeout", c.processor.DrainTimeout, "on shutdown, how long in-flight requests may finish before they are handed back")
	fs.IntVar(&c.tokenCacheEntries, "token-cache-entries", defaultTokenCacheEntries, "token counts of events kept across requests, shared by all workers, so that a resent lane is not counted again; hold at least the events of the lanes compacted between two requests of one lane (about 80 bytes each: 16 MB when the default is full; used only for requests that name a tokenizer)")

	c.harvest = facts.DefaultConfig()
	fs.IntVar(&c.harvest.Workers, "harvest-workers", c.harvest.Workers, "harvest jobs this process works on at once")
	fs.IntVar(&c.harvest.MaxAckPending, "harvest-max-ack-pending", 0, "harvest jobs delivered and not settled across all replicas, those a killed replica left included (default 32 × --harvest-workers; with several replicas, 32 × the sum of theirs)")
	fs.IntVar(&c.harvest.MaxFacts, "harvest-max-facts", c.harvest.MaxFacts, "facts stored per harvest")
	fs.StringVar(&c.harvest.MemoryDir, "memory-dir", "", "also append harvested facts to <dir>/<scope>/MEMORY.md")
	c.harvestBy.register(fs)

	fs.StringVar(&c.summarizer, "summarizer", "offline", "summarizer: offline (no model) or openai (any OpenAI-compatible endpoint)")
	c.model.register(fs)
	fs.StringVar(&c.metricsAddr, "metrics-addr", "127.0.0.1:9090", "address of /metrics, /healthz and /readyz (\"none\" to disable)")
	fs.StringVar(&c.memoryLimit, "memory-limit", "", "soft limit of the process's memory, e.g. 512MiB, or none (default GOMEMLIMIT, else 90% of the container's limit)")
	c.log.register(fs)
}

// defaultTokenCacheEntries holds the events of twenty 10 000-event lanes
// (subjects.md's largest), or of two hundred of 1 000: a lane is resent
// whole with each of its requests, and an entry evicted before its lane
// comes back is counted again.
const defaultTokenCacheEntries = 200_000

// countCache is the token-count cache every worker of serve shares.
func (c serveConfig) countCache() *engine.CountCache {
	return engine.NewCountCache(c.tokenCacheEntries)
}

// topology is what serve asks of the streams and buckets it ensures.
func (c serveConfig) topology() topology.Options {
	return topology.Options{Replicas: c.replicas, Duplicates: c.duplicates, LedgerTTL: c.ledgerTTL}
}

func runServe(ctx context.Context, args []string, io stdio) int {
	fs := newFlagSet("serve", "serve [flags]", io)
	var cfg serveConfig
	cfg.register(fs)
	if ok, code := parseFlags(fs, args, mergeEnv(natsEnv, modelEnv)); !ok {
		return code
	}
	if err := cfg.topology().Validate(); err != nil {
		return usageError(io, "processor serve: --replicas, --duplicate-window or --ledger-ttl: %v", err)
	}
	if err := cfg.nats.conn.Validate(); err != nil {
		return usageError(io, "processor serve: %v", err)
	}
	if cfg.nats.url == "" && cfg.nats.conn.UsesTLS() {
		return usageError(io, "processor serve: --nats-tls-* apply to --nats-url; the embedded server takes its TLS from --nats-config")
	}
	if cfg.tokenCacheEntries < 2 {
		return usageError(io, "processor serve: --token-cache-entries must be at least 2, got %d", cfg.tokenCacheEntries)
	}
	log := cfg.log.logger(io.err)
	limit, source, err := applyMemoryLimit(cfg.memoryLimit)
	if err != nil {
		return usageError(io, "processor serve: %v", err)
	}
	if limit > 0 {
		log.Info("memory limit", "bytes", limit, "from", source)
	}
	if err := serve(ctx, cfg, log); err != nil {
		log.Error("cairn stopped", "error", err)
		return 1
	}
	return 0
}

// serve runs until ctx ends, then shuts down in order: stop taking work,
// finish or hand back in-flight requests, flush the outbox, drain the
// connection, stop the embedded server. It also stops, with an error, when
// it can no longer work: its NATS connection closed for good, or one of
// its run loops ended (see life).
func serve(ctx context.Context, cfg serveConfig, log *slog.Logger) error {
	if err := cfg.processor.Validate(); err != nil {
		return err
	}
	if err := cfg.harvest.Validate(); err != nil {
		return err
	}
	alive := newLife(ctx, log)
	defer alive.stop()
	nc, url, stopServer, err := connectOrEmbed(cfg, log, alive.connClosed)
	if err != nil {
		return err
	}
	defer stopServer()
	defer drain(nc, log)

	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	// Generous: on a cluster still electing its leaders, creating the
	// streams and buckets waits for them.
	setupCtx, cancel := context.WithTimeout(alive.ctx, 10*time.Minute)
	topo := cfg.topology()
	topo.Logger = log
	stores, err := topology.Ensure(setupCtx, js, topo)
	cancel()
	if err != nil {
		return err
	}
	stopTracing, err := telemetry.SetupTracing(ctx)
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	defer func() { _ = stopTracing(context.Background()) }()

	cfg.model.calls = cfg.processor.Workers + cfg.harvest.Workers
	summarizer, err := newSummarizer(cfg.summarizer, cfg.model)
	if err != nil {
		return err
	}
	if cfg.wrapSummarizer != nil {
		summarizer = cfg.wrapSummarizer(summarizer)
	}
	metrics := telemetry.NewMetrics()
	summarizer = metered{summarizer, metrics}
	cfg.processor.Relay.OnPublish = func(_ outbox.Record, lag time.Duration) { metrics.RelayPublished(lag) }
	proc, err := consumer.New(cfg.processor, consumer.Deps{
		JS: js, Stores: stores, Compactor: consumer.EngineCompactor{Counts: cfg.countCache()}, Summarizer: summarizer, Logger: log, Metrics: metrics,
	})
	if err != nil {
		return err
	}
	factStore := facts.NewStore(stores.Facts, nil)
	cfg.harvest.Logger = log
	if cfg.harvest.Extractors, err = cfg.harvestBy.router(cfg.model, cfg.harvest.MaxFacts); err != nil {
		return err
	}
	cfg.harvest.Metrics = metrics
	cfg.harvest.Requests = proc // harvest jobs name the request they cut
	harvester, err := facts.NewWorker(js, factStore, cfg.harvest)
	if err != nil {
		return err
	}

	// Registered after drain, so run before it: the service stops answering
	// once the processor and harvester are done, then the connection drains.
	stopService, err := startService(alive.ctx, js, stores, cfg, log)
	if err != nil {
		return err
	}
	defer stopService()

	metricsAddr := ""
	if cfg.metricsAddr != "none" {
		srv, err := telemetry.Listen(cfg.metricsAddr, telemetry.Handler(metrics, liveness(nc, alive), readiness(nc, js, proc.Relay(), metrics)))
		if err != nil {
			return err
		}
		defer func() {
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shutdownCtx)
		}()
		metricsAddr = srv.Addr()
	}
	log.Info("cairn serving", "nats", url, "service", events.ServicePrefix+".>", "summarizer", cfg.summarizer, "workers", cfg.processor.Workers, "commit_concurrency", cfg.processor.EffectiveCommitConcurrency(), "metrics", metricsAddr)
	if cfg.ready != nil {
		cfg.ready <- serveInfo{NATSURL: url, MetricsAddr: metricsAddr, conn: nc}
	}

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Go(func() { errs <- alive.run("processor", proc.Run) })
	wg.Go(func() { errs <- alive.run("harvester", harvester.Run) })
	wg.Wait()
	close(errs)
	fatal := alive.err()
	all := []error{fatal}
	for err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(fatal, err) {
			all = append(all, err)
		}
	}
	if fatal == nil {
		log.Info("cairn stopped: in-flight work finished or handed back, outbox flushed")
	} else if cfg.holdFatal != nil {
		<-cfg.holdFatal
	}
	return errors.Join(all...)
}

// startService starts Cairn's NATS service (status, lane, validate) on the
// processor's connection and returns its stop.
func startService(ctx context.Context, js jetstream.JetStream, stores *topology.Stores, cfg serveConfig, log *slog.Logger) (stop func(), err error) {
	lookupCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	requests, err := js.Stream(lookupCtx, topology.StreamRequests)
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	store := lanes.New(stores.Heads, stores.Checkpoints)
	build, _ := buildVersion()
	svc, err := natsservice.Start(js.Conn(), natsservice.Config{
		Recorder:   &natsservice.Recorder{Ledger: ledger.New(stores.Ledger), Lanes: store, Requests: requests, HistoryLimit: cfg.processor.HistoryLimit},
		Lanes:      store,
		LoadEvents: inspect.ObjectLoader(stores.Lanes),
		Build:      build,
		Logger:     log,
	})
	if err != nil {
		return nil, err
	}
	return func() {
		if err := svc.Stop(); err != nil {
			log.Warn("service: stop", "error", err)
		}
	}, nil
}

// connectOrEmbed connects to --nats-url, or starts the embedded server and
// connects through its in-process pipe. The returned stop function shuts the
// embedded server down (a no-op for an external server). The connection
// reconnects for ever after network failures; closed is called when it
// closes for good all the same (a protocol or repeated authorization error,
// or Close), unless drain has replaced it because serve is stopping.
func connectOrEmbed(cfg serveConfig, log *slog.Logger, closed nats.ConnHandler) (*nats.Conn, string, func(), error) {
	handlers := []nats.Option{
		nats.Name("cairn processor"),
		nats.MaxReconnects(-1),
		nats.ClosedHandler(closed),
		nats.ReconnectWait(time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { log.Warn("nats disconnected", "error", err) }),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("nats reconnected", "url", c.ConnectedUrlRedacted()) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { log.Warn("nats error", "error", err) }),
	}
	if cfg.natsUser != "" {
		handlers = append(handlers, nats.UserInfo(cfg.natsUser, cfg.natsPassword.value))
	}
	opts, err := cfg.nats.conn.NATSOptions()
	if err != nil {
		return nil, "", nil, err
	}
	handlers = append(opts, handlers...)
	if cfg.nats.url != "" {
		if cfg.nats.creds != "" {
			handlers = append(handlers, nats.UserCredentials(cfg.nats.creds))
		}
		nc, err := nats.Connect(cfg.nats.url, handlers...)
		if err != nil {
			return nil, "", nil, fmt.Errorf("connect to NATS at %s: %w", cfg.nats.url, err)
		}
		return nc, nc.ConnectedUrlRedacted(), func() {}, nil
	}
	srv, err := natsrv.Start(natsrv.Config{DataDir: cfg.dataDir, Listen: cfg.listen, ConfigFile: cfg.natsConfig, ReadyTimeout: 15 * time.Second})
	var inUse *natsrv.DirInUseError
	if errors.As(err, &inUse) {
		return nil, "", nil, fmt.Errorf("%w; stop it or choose another --data-dir", err)
	}
	if err != nil {
		return nil, "", nil, err
	}
	nc, err := srv.Connect(handlers...)
	if err != nil {
		srv.Shutdown()
		if cfg.natsConfig != "" && cfg.natsUser == "" {
			return nil, "", nil, fmt.Errorf("connect to the embedded server: %w (%s may require a user: pass --nats-user and CAIRN_NATS_PASSWORD)", err, cfg.natsConfig)
		}
		return nil, "", nil, fmt.Errorf("connect to the embedded server: %w", err)
	}
	url := srv.ClientURL()
	if url == "" {
		url = "in-process"
	}
	return nc, url, srv.Shutdown, nil
}

// drain flushes what the connection still holds and closes it.
func drain(nc *nats.Conn, log *slog.Logger) {
	done := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(done) })
	if err := nc.Drain(); err != nil {
		nc.Close()
		return
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		log.Warn("nats drain timed out; closing")
		nc.Close()
	}
}

// liveness lists what /healthz checks: that serve can still do its work.
// A closed connection never comes back (a disconnected one fails only
// /readyz while it reconnects).
func liveness(nc *nats.Conn, alive *life) []telemetry.Check {
	return []telemetry.Check{
		{Name: "nats", Fn: func(context.Context) error {
			if !nc.IsClosed() {
				return nil
			}
			if err := nc.LastError(); err != nil {
				return fmt.Errorf("connection closed: %w", err)
			}
			return errors.New("connection closed")
		}},
		{Name: "serve", Fn: alive.check},
	}
}

// readiness lists what /readyz checks: the connection, every stream and
// bucket, and an outbox relay with nothing left unpublished for long.
func readiness(nc *nats.Conn, js jetstream.JetStream, relay *outbox.Relay, m *telemetry.Metrics) []telemetry.Check {
	checks := []telemetry.Check{{Name: "nats", Fn: func(context.Context) error {
		if !nc.IsConnected() {
			return fmt.Errorf("not connected (%s)", nc.Status())
		}
		return nil
	}}}
	for _, s := range topology.StreamConfigs(topology.DefaultOptions()) {
		checks = append(checks, telemetry.Check{Name: "stream " + s.Name, Fn: func(ctx context.Context) error {
			_, err := js.Stream(ctx, s.Name)
			return err
		}})
	}
	for _, b := range []string{topology.BucketHeads, topology.BucketCheckpoints, topology.BucketLedger, topology.BucketFacts} {
		checks = append(checks, telemetry.Check{Name: "bucket " + b, Fn: func(ctx context.Context) error {
			_, err := js.KeyValue(ctx, b)
			return err
		}})
	}
	return append(checks, telemetry.Check{Name: "outbox", Fn: func(context.Context) error {
		behind := relay.Behind(outboxLagLimit)
		m.OutboxPending(behind)
		if behind > 0 {
			return fmt.Errorf("%d lane heads hold events unpublished for over %s", behind, outboxLagLimit)
		}
		return nil
	}})
}

// outboxLagLimit is how long events may wait past the relay's grace period
// before the service reports itself not ready.
const outboxLagLimit = 30 * time.Second

// metered records every summarizer call's duration, outcome and retries.
type metered struct {
	engine.Summarizer
	metrics *telemetry.Metrics
}

// Local passes on whether the metered summarizer is local, so that metering
// does not make the processor record its calls (consumer.LocalSummarizer).
func (m metered) Local() bool { return consumer.IsLocal(m.Summarizer) }

func (m metered) Summarize(ctx context.Context, p engine.Payload) (engine.Summary, error) {
	start := time.Now()
	sum, err := m.Summarizer.Summarize(ctx, p)
	m.metrics.ModelCall("summarizer", time.Since(start), err)
	if sum.Usage != nil {
		m.metrics.ModelRetries("summarizer", sum.Usage.Attempts-1)
	}
	return sum, err
}

// mergeEnv combines environment-to-flag maps.
func mergeEnv(envs ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range envs {
		maps.Copy(out, m)
	}
	return out
}
