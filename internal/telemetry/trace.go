package telemetry

import (
	"context"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TracerName names Cairn's spans.
const TracerName = "github.com/cairnhq/cairn"

// SetupTracing installs the W3C trace-context propagator and, when the
// standard OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set and
// OTEL_TRACES_EXPORTER is not "none", an OTLP/HTTP exporter configured by the
// standard OTEL_* variables. Without them tracing is a no-op, but trace
// context still flows from requests into events. The returned function
// flushes and stops the exporter.
func SetupTracing(ctx context.Context) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	noop := func(context.Context) error { return nil }
	if !exporterConfigured() {
		return noop, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return noop, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}

func exporterConfigured() bool {
	if strings.EqualFold(os.Getenv("OTEL_TRACES_EXPORTER"), "none") || os.Getenv("OTEL_SDK_DISABLED") == "true" {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Tracer returns Cairn's tracer from the global provider.
func Tracer() trace.Tracer { return otel.Tracer(TracerName) }
