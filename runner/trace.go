package runner

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/tracecontext"
)

// traceSend starts the span of one send of m when the runner traces (Config.Tracer):
// "deliver <channel>", a child of the trace context the message carries (its
// metadata's traceparent and tracestate, the producer's), else the root of a trace of
// its own. Its attributes name the message (id, channel, attempt), never its
// recipient or payload. The returned context carries the span to the sender (the
// webhook sender passes it on to the receiver). Without a tracer, ctx and nil.
func (r *Runner) traceSend(ctx context.Context, m sender.Message) (context.Context, trace.Span) {
	if r.cfg.Tracer == nil {
		return ctx, nil
	}
	if carrier := tracecontext.FromMetadata(m.Metadata); carrier != nil {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier(carrier))
	}
	return r.cfg.Tracer.Start(ctx, "deliver "+m.Channel, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("messaging.system", "herald"),
			attribute.String("messaging.operation.name", "deliver"),
			attribute.String("messaging.destination.name", m.Channel),
			attribute.String("messaging.message.id", strconv.FormatInt(m.ID, 10)),
			attribute.Int("herald.attempt", m.Attempt)))
}

// endSend ends a send's span with its outcome: the provider's id, or the failure's
// class and code (its status description; not the error's text, which may quote the
// recipient). It returns the span's trace id for the logs ("" without a span).
func endSend(span trace.Span, res sender.Result, err error) string {
	if span == nil {
		return ""
	}
	if err == nil {
		if res.ProviderMessageID != "" {
			span.SetAttributes(attribute.String("herald.provider_message_id", res.ProviderMessageID))
		}
		span.SetStatus(codes.Ok, "")
	} else {
		f := sender.Classify(err)
		span.SetAttributes(attribute.String("error.type", string(f.Class)), attribute.String("herald.error.code", f.Code))
		span.SetStatus(codes.Error, string(f.Class)+" "+f.Code)
	}
	span.End()
	return span.SpanContext().TraceID().String()
}
