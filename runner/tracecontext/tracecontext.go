// Package tracecontext reads the W3C Trace Context headers (traceparent, tracestate)
// that herald carries through the queue: the HTTP intake keeps a request's in the
// message's metadata, and the webhook sender sends them on to the receiver, so a
// receiver's tracing continues the producer's trace across the queue.
package tracecontext

import (
	"bytes"
	"encoding/json"
	"regexp"
)

// Metadata keys, and header names, of the two fields.
const (
	Parent = "traceparent"
	State  = "tracestate"
)

var (
	parent = regexp.MustCompile(`^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)
	state  = regexp.MustCompile(`^[\x20-\x7e]{1,512}$`)
)

// ValidParent reports whether s is a traceparent as W3C Trace Context writes it
// (version-traceid-parentid-flags in lower-case hex; version ff, an all-zero trace id
// or parent id are invalid). Anything else is not passed on.
func ValidParent(s string) bool {
	return parent.MatchString(s) && s[:2] != "ff" && s[3:35] != "00000000000000000000000000000000" &&
		s[36:52] != "0000000000000000"
}

// ValidState reports whether s can be passed on as a tracestate header: printable
// ASCII, at most 512 characters (the size receivers must accept). Its entries are the
// tracing systems' business.
func ValidState(s string) bool { return state.MatchString(s) }

// FromMetadata is the trace context a message's metadata carries (its traceparent,
// with its tracestate), as header names to values, or nil when it carries no valid
// traceparent; a tracestate that is not valid is left out.
func FromMetadata(metadata []byte) map[string]string {
	if !bytes.Contains(metadata, []byte(Parent)) {
		return nil
	}
	var md struct {
		Parent string `json:"traceparent"`
		State  string `json:"tracestate"`
	}
	if json.Unmarshal(metadata, &md) != nil || !ValidParent(md.Parent) {
		return nil
	}
	out := map[string]string{Parent: md.Parent}
	if ValidState(md.State) {
		out[State] = md.State
	}
	return out
}
