package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// tracing is what the runner exports spans with, configured by OpenTelemetry's own
// variables (the SDK reads them): sends are traced when an OTLP endpoint is set
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), over
// OTLP/HTTP with protobuf, batched (OTEL_BSP_*), sampled by OTEL_TRACES_SAMPLER
// (default: the producer's decision, else every send), as OTEL_SERVICE_NAME (default
// herald) with OTEL_RESOURCE_ATTRIBUTES. OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none turn it off; another exporter or the gRPC protocol is
// refused. An exporter that cannot reach its collector drops spans and never holds a
// send back.
type tracing struct {
	Tracer   trace.Tracer // nil: not tracing
	provider *sdktrace.TracerProvider
	endpoint string
}

// tracingFromEnv reads whether and how to trace (see tracing).
func tracingFromEnv(ctx context.Context, ev *environ, logger *slog.Logger) (*tracing, error) {
	endpoint := ev.str("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ev.str("OTEL_EXPORTER_OTLP_ENDPOINT", ""))
	exporter := ev.str("OTEL_TRACES_EXPORTER", "otlp")
	protocol := ev.str("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", ev.str("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"))
	switch {
	case strings.EqualFold(ev.str("OTEL_SDK_DISABLED", ""), "true") || exporter == "none" || endpoint == "":
		return &tracing{}, nil
	case exporter != "otlp":
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: herald exports spans with otlp (or none)", exporter)
	case protocol != "http/protobuf":
		name := "OTEL_EXPORTER_OTLP_PROTOCOL"
		if ev.str("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "") != "" {
			name = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
		}
		return nil, fmt.Errorf("%s=%q: herald exports OTLP over HTTP with protobuf (http/protobuf, a collector's port 4318)", name, protocol)
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "herald")),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("exporting spans failed; they are dropped", "err", err)
	}))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &tracing{Tracer: tp.Tracer("github.com/herald/herald/runner"), provider: tp, endpoint: endpoint}, nil
}

// check exports one span ("herald check") and says whether the collector took it
// (herald check).
func (t *tracing) check(ctx context.Context) error {
	_, span := t.Tracer.Start(ctx, "herald check")
	span.End()
	return t.provider.ForceFlush(ctx)
}

// shutdown exports the spans still batched, for at most five seconds.
func (t *tracing) shutdown() {
	if t.provider == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = t.provider.Shutdown(ctx)
}
