package consumer

import (
	"context"
	"log/slog"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// observe is the outermost middleware: it runs the pipeline inside a span
// that continues the request's W3C trace, and logs one line per delivery
// with its request id, lane, outcome and duration once it is settled. It
// never logs conversation content.
func (p *Processor) observe(next handler) handler {
	return func(ctx context.Context, d *delivery) error {
		ctx = contextWithTraceparent(ctx, d.traceparent)
		ctx, span := telemetry.Tracer().Start(ctx, "cairn.compact", trace.WithSpanKind(trace.SpanKindConsumer))
		defer span.End()
		start := time.Now()
		err := next(ctx, d)
		span.SetAttributes(attribute.String("cairn.request_id", requestIDOf(d)), attribute.Int64("messaging.delivery_count", int64(d.delivered)))
		attrs := append(d.logAttrs(), slog.String("status", d.status), slog.Duration("duration", time.Since(start)), slog.Uint64("delivery", d.delivered))
		if err != nil {
			code := errcode.Code(err)
			span.SetStatus(codes.Error, code)
			attrs = append(attrs, slog.String("code", code))
		}
		p.log.LogAttrs(ctx, slog.LevelInfo, "consumer: request handled", attrs...)
		return err
	}
}

// logAttrs are the identifying attributes of a delivery: never content.
func (d *delivery) logAttrs() []slog.Attr {
	attrs := []slog.Attr{slog.String("request_id", requestIDOf(d))}
	if d.req != nil && d.req.RunAgentID != "" {
		attrs = append(attrs, slog.String("lane", d.req.RunAgentID+"/"+d.req.CheckpointNamespace))
	}
	return attrs
}

// contextWithTraceparent continues the W3C trace named by traceparent.
func contextWithTraceparent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// traced runs a middleware, and everything inside it, in a span named
// after its stage.
func traced(stage string, mw middleware) middleware {
	return func(next handler) handler {
		inner := mw(next)
		return func(ctx context.Context, d *delivery) error {
			ctx, span := telemetry.Tracer().Start(ctx, "cairn."+stage)
			defer span.End()
			err := inner(ctx, d)
			if err != nil {
				span.SetStatus(codes.Error, errcode.Code(err))
			}
			return err
		}
	}
}

// tracedHandler is traced for the innermost handler.
func tracedHandler(stage string, h handler) handler {
	return traced(stage, func(handler) handler { return h })(nil)
}
