package intake

import (
	"bytes"
	"encoding/json"
	"net/http"

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
