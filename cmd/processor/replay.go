package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/streamread"
	"github.com/nats-io/nats.go/jetstream"
)

func init() {
	register(command{name: "replay", summary: "replay Cairn's streams as JSON lines or a table", run: runReplay})
}

// replayStreams maps the --stream names onto JetStream streams.
var replayStreams = map[string]string{
	"events":   topology.StreamEvents,
	"memory":   topology.StreamMemory,
	"requests": topology.StreamRequests,
	"harvest":  topology.StreamHarvest,
}

// replayFilter selects messages by the fields every message carries.
type replayFilter struct {
	thread, lane, request string
}

// replayed is one message as replay prints it.
type replayed struct {
	Stream   string          `json:"stream"`
	Sequence uint64          `json:"seq"`
	Subject  string          `json:"subject"`
	Time     time.Time       `json:"time"`
	Data     json.RawMessage `json:"data"`
}

// messageFields are the identifying fields of any Cairn message.
type messageFields struct {
	Kind                string `json:"kind"`
	RequestID           string `json:"request_id"`
	ThreadID            string `json:"thread_id"`
	ConversationID      string `json:"conversation_id"`
	RunAgentID          string `json:"run_agent_id"`
	CheckpointNamespace string `json:"checkpoint_namespace"`
	Status              string `json:"status"`
	Reason              string `json:"reason"`
	Error               *struct {
		Code string `json:"code"`
	} `json:"error"`
}

func (f replayFilter) match(m messageFields) bool {
	thread := m.ThreadID
	if thread == "" {
		thread = m.ConversationID
	}
	return (f.thread == "" || f.thread == thread) &&
		(f.lane == "" || f.lane == m.RunAgentID+"/"+m.CheckpointNamespace) &&
		(f.request == "" || f.request == m.RequestID)
}

func runReplay(ctx context.Context, args []string, io stdio) int {
	fs := newFlagSet("replay", "replay [flags]", io)
	var nf natsFlags
	nf.register(fs)
	stream := fs.String("stream", "events", "stream to replay: events, memory, requests or harvest")
	fromSeq := fs.Uint64("from-seq", 0, "start at this stream sequence")
	since := fs.String("since", "", "start at this time (RFC 3339) or this long ago (e.g. 1h)")
	subject := fs.String("subject", "", "only this subject")
	var filter replayFilter
	fs.StringVar(&filter.thread, "thread", "", "only messages of this thread (conversation) id")
	fs.StringVar(&filter.lane, "lane", "", "only messages of this lane, as run_agent_id/checkpoint_namespace")
	fs.StringVar(&filter.request, "request", "", "only messages of this request id")
	follow := fs.Bool("follow", false, "keep printing new messages after reaching the end")
	asJSON := fs.Bool("json", !isTerminal(io.out), "print JSON lines (default when stdout is not a terminal)")
	if ok, code := parseFlags(fs, args, natsEnv); !ok {
		return code
	}
	name, ok := replayStreams[*stream]
	if !ok {
		return usageError(io, "processor: --stream %q: want events, memory, requests or harvest", *stream)
	}
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if *subject != "" {
		cfg.FilterSubjects = []string{*subject}
	}
	if err := startAt(&cfg, *fromSeq, *since, time.Now()); err != nil {
		return usageError(io, "processor: %v", err)
	}
	return nf.run(ctx, "replay", 0, io, func(ctx context.Context, js jetstream.JetStream) int {
		out := newReplayPrinter(io.out, *asJSON)
		defer out.flush()
		var err error
		if workStreams[name] && !*follow {
			// Only the processor may create consumers on the work streams
			// (nats.conf); an auditor reads them message by message.
			err = replayBySequence(ctx, js, name, cfg, filter, out)
		} else {
			err = replay(ctx, js, name, cfg, filter, *follow, out, newProgress(io.err))
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			return fail(io, err)
		}
		return 0
	})
}

// workStreams are the streams whose consumers belong to the processor.
var workStreams = map[string]bool{topology.StreamRequests: true, topology.StreamHarvest: true}

// replayBySequence prints the stream's messages up to its last sequence at
// the start by reading them one at a time (the next message at or after a
// sequence, on the filter subject), which needs no consumer.
func replayBySequence(ctx context.Context, js jetstream.JetStream, name string, cfg jetstream.OrderedConsumerConfig, f replayFilter, out *replayPrinter) error {
	str, err := js.Stream(ctx, name)
	if err != nil {
		return fmt.Errorf("stream %s: %w", name, err)
	}
	last := str.CachedInfo().State.LastSeq
	subject := ">"
	if len(cfg.FilterSubjects) == 1 {
		subject = cfg.FilterSubjects[0]
	}
	for seq := max(cfg.OptStartSeq, 1); seq <= last; {
		msg, err := str.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("stream %s: read #%d: %w", name, seq, err)
		}
		if msg.Sequence > last {
			return nil
		}
		if cfg.OptStartTime == nil || !msg.Time.Before(*cfg.OptStartTime) {
			out.offer(f, replayed{Stream: name, Sequence: msg.Sequence, Subject: msg.Subject, Time: msg.Time.UTC(), Data: msg.Data})
		}
		seq = msg.Sequence + 1
	}
	return nil
}

// startAt sets the consumer's start from --from-seq or --since.
func startAt(cfg *jetstream.OrderedConsumerConfig, seq uint64, since string, now time.Time) error {
	switch {
	case seq > 0 && since != "":
		return errors.New("--from-seq and --since are exclusive")
	case seq > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, seq
	case since != "":
		t, err := time.Parse(time.RFC3339, since)
		if err != nil {
			d, derr := time.ParseDuration(since)
			if derr != nil {
				return fmt.Errorf("--since %q is neither RFC 3339 nor a duration", since)
			}
			t = now.Add(-d)
		}
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	}
	return nil
}

// replay prints the stream's messages up to its last sequence at the start
// (or forever with follow), through one ordered-consumer iterator that
// resumes after the last printed message when its consumer is lost.
func replay(ctx context.Context, js jetstream.JetStream, name string, cfg jetstream.OrderedConsumerConfig, f replayFilter, follow bool, out *replayPrinter, bar *progress) error {
	str, err := js.Stream(ctx, name)
	if err != nil {
		return fmt.Errorf("stream %s: %w", name, err)
	}
	state := str.CachedInfo().State
	bar.start(state.FirstSeq, state.LastSeq)
	defer bar.done()
	o := streamread.Options{Stream: name, Config: cfg, Follow: follow}
	return streamread.Read(ctx, js, o, func(msg jetstream.Msg, md *jetstream.MsgMetadata) error {
		out.offer(f, replayed{Stream: name, Sequence: md.Sequence.Stream, Subject: msg.Subject(), Time: md.Timestamp.UTC(), Data: msg.Data()})
		bar.update(md.Sequence.Stream)
		return nil
	})
}

// replayPrinter prints JSON lines or an aligned table.
type replayPrinter struct {
	json bool
	w    io.Writer
	tw   *tabwriter.Writer
}

func newReplayPrinter(w io.Writer, asJSON bool) *replayPrinter {
	p := &replayPrinter{json: asJSON, w: w}
	if !asJSON {
		p.tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(p.tw, "SEQ\tTIME\tSUBJECT\tREQUEST\tLANE\tOUTCOME")
	}
	return p
}

// offer prints r when its message passes the filter.
func (p *replayPrinter) offer(f replayFilter, r replayed) {
	var fields messageFields
	_ = json.Unmarshal(r.Data, &fields)
	if f.match(fields) {
		p.print(r, fields)
	}
}

func (p *replayPrinter) print(r replayed, m messageFields) {
	if p.json {
		printJSON(p.w, r)
		return
	}
	outcome := m.Status
	switch {
	case m.Reason != "":
		outcome = m.Reason
	case m.Error != nil:
		outcome = m.Error.Code
	}
	lane := ""
	if m.RunAgentID != "" {
		lane = m.RunAgentID + "/" + m.CheckpointNamespace
	}
	subject := strings.TrimPrefix(r.Subject, "conversation.")
	fmt.Fprintf(p.tw, "%d\t%s\t%s\t%s\t%s\t%s\n", r.Sequence, r.Time.Format(time.DateTime), subject, m.RequestID, lane, outcome)
}

func (p *replayPrinter) flush() {
	if p.tw != nil {
		_ = p.tw.Flush()
	}
}

// progress draws a one-line progress bar on a terminal for long replays.
type progress struct {
	w           io.Writer
	active      bool
	first, last uint64
	shown       int
}

// progressThreshold is the replay length above which a bar is worth drawing.
const progressThreshold = 2000

func newProgress(w io.Writer) *progress { return &progress{w: w, active: isTerminal(w)} }

func (p *progress) start(first, last uint64) {
	p.first, p.last = first, last
	p.active = p.active && last-first >= progressThreshold
}

func (p *progress) update(seq uint64) {
	if !p.active || p.last <= p.first {
		return
	}
	pct := int(100 * (seq - p.first) / (p.last - p.first))
	if pct == p.shown {
		return
	}
	p.shown = pct
	const width = 30
	filled := pct * width / 100
	fmt.Fprintf(p.w, "\r[%s%s] %3d%% %d/%d", strings.Repeat("#", filled), strings.Repeat(" ", width-filled), pct, seq, p.last)
}

func (p *progress) done() {
	if p.active {
		fmt.Fprintln(p.w)
	}
}
