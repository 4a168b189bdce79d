package consumer

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/errcode"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestObserveContinuesTheTraceAndLogsWithoutContent(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	var logs bytes.Buffer
	p := &Processor{log: slog.New(slog.NewJSONHandler(&logs, nil))}
	const trace = "0af7651916cd43dd8448eb211c80319c"
	d := &delivery{
		traceparent: "00-" + trace + "-b7ad6b7169203331-01",
		req:         &envelope{RequestID: "req-9", Correlation: events.Correlation{RunAgentID: "agent", CheckpointNamespace: "root"}},
		delivered:   2,
	}
	h := p.observe(traced("compact", func(handler) handler {
		return func(ctx context.Context, d *delivery) error {
			d.status = "failed"
			return errcode.New(errcode.StaleHead, "the secret plan of the user")
		}
	})(nil))
	_ = h(context.Background(), d)

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want the request's and its stage's", len(spans))
	}
	for _, s := range spans {
		if s.SpanContext().TraceID().String() != trace {
			t.Errorf("span %s is in trace %s, not the request's", s.Name(), s.SpanContext().TraceID())
		}
	}
	line := logs.String()
	for _, want := range []string{`"request_id":"req-9"`, `"lane":"agent/root"`, `"code":"stale_head"`, `"delivery":2`} {
		if !strings.Contains(line, want) {
			t.Errorf("log lacks %s: %s", want, line)
		}
	}
	if strings.Contains(line, "secret plan") {
		t.Errorf("log carries an error message that may quote content: %s", line)
	}
}
