package intake

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/herald/herald/runner/tracecontext"
)

// tracedMetadata is a message's metadata with the request's W3C trace context (the
// traceparent header, when valid, and tracestate, when passable) added, so the
// webhook sender hands it on to the receiver; unchanged when the request has none,
// when the metadata names a traceparent itself, or when it is not a JSON object
// (herald refuses that as it would without the header).
func tracedMetadata(md json.RawMessage, h http.Header) json.RawMessage {
	tp := h.Get(tracecontext.Parent)
	if !tracecontext.ValidParent(tp) {
		return md
	}
	fields := map[string]json.RawMessage{}
	if t := bytes.TrimSpace(md); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		if json.Unmarshal(t, &fields) != nil || fields == nil {
			return md
		}
		if _, ok := fields[tracecontext.Parent]; ok {
			return md
		}
	}
	fields[tracecontext.Parent], _ = json.Marshal(tp)
	if ts := h.Get(tracecontext.State); tracecontext.ValidState(ts) {
		fields[tracecontext.State], _ = json.Marshal(ts)
	}
	out, _ := json.Marshal(fields)
	return out
}

// enqueueTrace is the span of one POST of messages (Config.Tracer); nil when the
// intake does not trace.
type enqueueTrace struct {
	span trace.Span
	w    http.ResponseWriter
}

// traceEnqueue starts the span of a POST of messages when the intake traces:
// "enqueue" (kind producer), a child of the request's W3C trace context, else the
// root of a trace of its own. It returns the headers the messages are stamped from
// (tracedMetadata): the request's, with this span's traceparent and tracestate in
// place of the caller's, so that each message's deliver spans are children of its
// enqueue. Without a tracer: the request's headers and nil.
func (h *handler) traceEnqueue(w http.ResponseWriter, r *http.Request) (http.Header, *enqueueTrace) {
	if h.cfg.Tracer == nil {
		return r.Header, nil
	}
	prop := propagation.TraceContext{}
	ctx, span := h.cfg.Tracer.Start(prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header)), "enqueue",
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("messaging.system", "herald"), attribute.String("messaging.operation.name", "enqueue")))
	hdr := r.Header.Clone()
	hdr.Del(tracecontext.Parent)
	hdr.Del(tracecontext.State)
	prop.Inject(ctx, propagation.HeaderCarrier(hdr))
	return hdr, &enqueueTrace{span: span, w: w}
}

// end ends the span with the answer: for an accepted single message its channel (in
// the span's name) and id, for a batch its count; for a refusal the error's code as
// error.type and the status. Never a recipient, a payload or a refused channel's name
// (whatever a producer sent).
func (t *enqueueTrace) end(channel string, ids []int64) {
	if t == nil {
		return
	}
	status, code := http.StatusOK, ""
	if c, ok := t.w.(*counted); ok {
		status, code = c.status, c.code
	}
	switch {
	case status >= 400:
		t.span.SetAttributes(attribute.String("error.type", code), attribute.Int("http.response.status_code", status))
		t.span.SetStatus(otelcodes.Error, code)
	case channel != "":
		t.span.SetName("enqueue " + channel)
		t.span.SetAttributes(attribute.String("messaging.destination.name", channel),
			attribute.String("messaging.message.id", strconv.FormatInt(ids[0], 10)))
		t.span.SetStatus(otelcodes.Ok, "")
	default:
		t.span.SetAttributes(attribute.Int("messaging.batch.message_count", len(ids)))
		t.span.SetStatus(otelcodes.Ok, "")
	}
	t.span.End()
}
