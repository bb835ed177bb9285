package tests

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/herald/herald/tests/testdb"
)

// collector is an OpenTelemetry collector's OTLP/HTTP traces endpoint: it decodes
// what exporters post (protobuf) and keeps it.
type collector struct {
	URL string
	mu  sync.Mutex
	raw [][]byte
	req []*coltracepb.ExportTraceServiceRequest
}

func startCollector(t *testing.T) *collector {
	t.Helper()
	c := &collector{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &coltracepb.ExportTraceServiceRequest{}
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, req) != nil {
			http.Error(w, "not an OTLP/HTTP protobuf export", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.raw, c.req = append(c.raw, body), append(c.req, req)
		c.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

// spans are the spans received, by their messaging.message.id, with the resource's
// service.name of each.
func (c *collector) spans() (map[string]*tracepb.Span, map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	spans, services := map[string]*tracepb.Span{}, map[string]string{}
	for _, req := range c.req {
		for _, rs := range req.ResourceSpans {
			service := ""
			for _, a := range rs.Resource.GetAttributes() {
				if a.Key == "service.name" {
					service = a.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					if id := spanAttr(s, "messaging.message.id"); id != "" {
						spans[id], services[id] = s, service
					}
				}
			}
		}
	}
	return spans, services
}

// exported is everything the collector received, as bytes.
func (c *collector) exported() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, r := range c.raw {
		b.Write(r)
	}
	return b.String()
}

// spanAttr is a span's attribute as text ("" when it has none).
func spanAttr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			switch v := a.Value.Value.(type) {
			case *commonpb.AnyValue_StringValue:
				return v.StringValue
			case *commonpb.AnyValue_IntValue:
				return fmt.Sprint(v.IntValue)
			}
		}
	}
	return ""
}

// Sends traced with OpenTelemetry: a runner given an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT) exports a span per send to the collector — a child of
// the producer's traceparent from the message's metadata, or a trace's root without
// one — and the webhook receiver's traceparent is a child of that span, the
// producer's tracestate passed on. A span names the message, channel, attempt and
// outcome (a failure's class and code), never the recipient, the payload or the
// error's text (a receiver's answer may quote them): the collector is a third party's
// storage. The runner's log line of a failure names its trace_id. SIGTERM exports
// what is batched before the runner exits.
func TestSendsAreTracedWithOpenTelemetry(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('hooks', 'webhook')`)
	var mu sync.Mutex
	parents := map[string]string{} // path: the traceparent received
	states := map[string]string{}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		parents[r.URL.Path], states[r.URL.Path] = r.Header.Get("traceparent"), r.Header.Get("tracestate")
		mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/gone/") {
			http.Error(w, "no endpoint for "+r.URL.Path, http.StatusGone)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	col := startCollector(t)
	base := strings.Replace(receiver.URL, "127.0.0.1", "localhost", 1)
	const producerTrace, producerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	md := fmt.Sprintf(`{"traceparent": "00-%s-%s-01", "tracestate": "shop=a1"}`, producerTrace, producerSpan)
	traced := scalar[int64](t, pool, `SELECT herald.enqueue('hooks', $1, '{"text": "payload-secret-1"}', metadata => $2::jsonb)`, base+"/in/customer-secret-77", md)
	gone := scalar[int64](t, pool, `SELECT herald.enqueue('hooks', $1, '{"text": "payload-secret-2"}', metadata => $2::jsonb, max_attempts => 1)`, base+"/gone/customer-secret-78", md)
	plain := scalar[int64](t, pool, `SELECT herald.enqueue('hooks', $1, '{"text": "payload-secret-3"}')`, base+"/plain")
	cmd, logs := runnerProcess(t, dbURL, "HERALD_SENDER_HOOKS=webhook", "HERALD_HOOKS_WEBHOOK_SECRETS=whsec_"+strings.Repeat("SG9va3Nz", 4),
		"HERALD_WEBHOOK_ALLOW=localhost", "HERALD_POLL_INTERVAL=100ms",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL, "OTEL_SERVICE_NAME=herald-shop", "OTEL_BSP_SCHEDULE_DELAY=100")
	eventually(t, 30*time.Second, "the three webhooks sent or dead", func() bool {
		return countWhere(t, pool, `status IN ('sent', 'dead')`) == 3
	})
	waitExit(t, cmd, logs, 15*time.Second)

	spans, services := col.spans()
	if len(spans) != 3 {
		t.Fatalf("%d spans of sends exported, want 3; logs:\n%s", len(spans), logs.String())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, c := range []struct {
		id            int64
		path          string
		child, failed bool
	}{{traced, "/in/customer-secret-77", true, false}, {gone, "/gone/customer-secret-78", true, true}, {plain, "/plain", false, false}} {
		s := spans[fmt.Sprint(c.id)]
		if s == nil {
			t.Fatalf("message %d: no span", c.id)
		}
		traceID, spanID, parent := hex.EncodeToString(s.TraceId), hex.EncodeToString(s.SpanId), hex.EncodeToString(s.ParentSpanId)
		if s.Name != "deliver hooks" || s.Kind != tracepb.Span_SPAN_KIND_CONSUMER || spanAttr(s, "messaging.destination.name") != "hooks" ||
			spanAttr(s, "herald.attempt") != "1" || services[fmt.Sprint(c.id)] != "herald-shop" {
			t.Fatalf("message %d: span %q kind %v, attributes %v, service %q", c.id, s.Name, s.Kind, s.Attributes, services[fmt.Sprint(c.id)])
		}
		if c.child && (traceID != producerTrace || parent != producerSpan || s.TraceState != "shop=a1") {
			t.Fatalf("message %d: span in trace %s under %s (state %q), want the producer's %s under %s", c.id, traceID, parent, s.TraceState, producerTrace, producerSpan)
		}
		if !c.child && (traceID == producerTrace || parent != "") {
			t.Fatalf("message %d without a trace context: span in trace %s under %q, want a root", c.id, traceID, parent)
		}
		if want := "00-" + traceID + "-" + spanID + "-01"; parents[c.path] != want {
			t.Fatalf("message %d: the receiver got traceparent %q, want the send's span %q", c.id, parents[c.path], want)
		}
		if c.child && states[c.path] != "shop=a1" {
			t.Fatalf("message %d: the receiver got tracestate %q", c.id, states[c.path])
		}
		if code := s.Status.GetCode(); c.failed != (code == tracepb.Status_STATUS_CODE_ERROR) || (!c.failed && code != tracepb.Status_STATUS_CODE_OK) {
			t.Fatalf("message %d: status %v", c.id, s.Status)
		}
		if c.failed && (s.Status.Message != "permanent 410" || spanAttr(s, "error.type") != "permanent" || spanAttr(s, "herald.error.code") != "410") {
			t.Fatalf("message %d: status %q, attributes %v", c.id, s.Status.Message, s.Attributes)
		}
	}
	// The log's line of the failure names its trace, to go from one to the other.
	if !regexp.MustCompile(`"msg":"delivery failed",[^\n]*"id":` + fmt.Sprint(gone) + `,[^\n]*"trace_id":"` + producerTrace + `"`).MatchString(logs.String()) {
		t.Fatalf("the failure's log line does not name its trace %s:\n%s", producerTrace, logs.String())
	}
	all := col.exported()
	for _, secret := range []string{"customer-secret", "payload-secret", "localhost:", "no endpoint"} {
		if strings.Contains(all, secret) {
			t.Fatalf("the collector received %q", secret)
		}
	}
}

// A collector that cannot be reached holds no send back: the runner sends, logs that
// spans were dropped, and still stops within its grace.
func TestAnUnreachableCollectorHoldsNoSendBack(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	enqueueMany(t, pool, 20, "email")
	cmd, logs := runnerProcess(t, dbURL, "HERALD_SENDER_EMAIL=noop", "HERALD_POLL_INTERVAL=100ms",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+down+"/v1/traces", "OTEL_BSP_SCHEDULE_DELAY=50")
	eventually(t, 30*time.Second, "the messages sent", func() bool {
		return countWhere(t, pool, `status = 'sent'`) == 20
	})
	eventually(t, 30*time.Second, "the dropped spans logged", func() bool {
		return strings.Contains(logs.String(), "exporting spans failed")
	})
	waitExit(t, cmd, logs, 15*time.Second)
}

// herald check checks the collector too: with an OTLP endpoint it exports one span
// ("herald check") and says ok, or FAIL with why (exit 1) when the collector cannot
// be reached.
func TestCheckExportsASpan(t *testing.T) {
	t.Parallel()
	col := startCollector(t)
	check := func(endpoint string) (int, string) {
		return runCommand(t, buildHerald(t), []string{"check"}, "", "HERALD_SENDER_EMAIL=noop", "OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint)
	}
	if code, out := check(col.URL); code != 0 || !strings.Contains(out, "tracing  otlp  ok") || !strings.Contains(col.exported(), "herald check") {
		t.Fatalf("herald check with a collector: exit %d\n%s", code, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	if code, out := check(down); code != 1 || !strings.Contains(out, "tracing  otlp  FAIL  "+down) {
		t.Fatalf("herald check with no collector: exit %d\n%s", code, out)
	}
}

// all is every span received.
func (c *collector) all() []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*tracepb.Span
	for _, req := range c.req {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
}

// The HTTP intake's enqueues are spans too: a POST of a message is "enqueue <channel>"
// (kind producer), a child of the request's traceparent, or the root of a trace of
// its own without one; the message's deliver span is its child, so a trace shows the
// request, the wait in the queue and each attempt. A batch is one span, parent of
// both messages' sends. A refused request's span says why (error.type, its code) and
// carries nothing the producer sent: not the recipient, not the payload.
func TestIntakeEnqueuesAreTraced(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('hooks', 'webhook')`)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer receiver.Close()
	base := strings.Replace(receiver.URL, "127.0.0.1", "localhost", 1)
	col := startCollector(t)
	addr := freeAddr(t)
	cmd, logs := runnerProcess(t, dbURL, "HERALD_HTTP_ADDR="+addr, "HERALD_INTAKE_OPEN=true", "HERALD_SENDER_HOOKS=webhook",
		"HERALD_HOOKS_WEBHOOK_SECRETS=whsec_"+strings.Repeat("SG9va3Nz", 4), "HERALD_WEBHOOK_ALLOW=localhost", "HERALD_POLL_INTERVAL=100ms",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL, "OTEL_BSP_SCHEDULE_DELAY=100")
	waitHTTP(t, addr)
	const producerTrace, producerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	traced := map[string]string{"traceparent": "00-" + producerTrace + "-" + producerSpan + "-01"}
	post := func(path, body string, header map[string]string) (int, map[string]any) {
		var out map[string]any
		code := do(t, "POST", "http://"+addr+path, "application/json", body, header, &out)
		return code, out
	}
	one := func(path string) string {
		return fmt.Sprintf(`{"channel":"hooks","recipient":%q,"payload":{"text":"payload-secret"}}`, base+path)
	}
	code, a := post("/v1/messages", one("/a"), traced)
	code2, b := post("/v1/messages", one("/b"), nil)
	code3, batch := post("/v1/messages/batch", "["+one("/c")+","+one("/d")+"]", traced)
	code4, _ := post("/v1/messages", `{"channel":"hooks","recipient":"http://customer-secret.invalid:99999/x","payload":{"text":"payload-secret"}}`, traced)
	if code != 202 || code2 != 202 || code3 != 202 || code4 != 400 {
		t.Fatalf("answers %d %d %d %d, want 202 202 202 400", code, code2, code3, code4)
	}
	eventually(t, 30*time.Second, "the four webhooks sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 4 })
	waitExit(t, cmd, logs, 15*time.Second)

	spans := col.all()
	enqueue, deliver := map[string]*tracepb.Span{}, map[string]*tracepb.Span{} // by message id
	var batchSpan, refused *tracepb.Span
	for _, s := range spans {
		switch {
		case s.Name == "deliver hooks":
			deliver[spanAttr(s, "messaging.message.id")] = s
		case s.Name == "enqueue hooks" && s.Kind == tracepb.Span_SPAN_KIND_PRODUCER:
			enqueue[spanAttr(s, "messaging.message.id")] = s
		case s.Name == "enqueue" && spanAttr(s, "messaging.batch.message_count") == "2":
			batchSpan = s
		case s.Name == "enqueue" && s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR:
			refused = s
		}
	}
	if len(enqueue) != 2 || len(deliver) != 4 || batchSpan == nil || refused == nil {
		t.Fatalf("spans: %d single enqueues, %d sends, batch %v, refused %v; want 2, 4, both", len(enqueue), len(deliver), batchSpan != nil, refused != nil)
	}
	hexOf := hex.EncodeToString
	idOf := func(v any) string { return fmt.Sprint(int64(v.(float64))) }
	ea, eb := enqueue[idOf(a["id"])], enqueue[idOf(b["id"])]
	if ea == nil || hexOf(ea.TraceId) != producerTrace || hexOf(ea.ParentSpanId) != producerSpan {
		t.Fatalf("the traced request's enqueue span is not the producer's child: %v", ea)
	}
	if eb == nil || len(eb.ParentSpanId) != 0 || hexOf(eb.TraceId) == producerTrace {
		t.Fatalf("the untraced request's enqueue span is not a root: %v", eb)
	}
	for id, parent := range map[string]*tracepb.Span{idOf(a["id"]): ea, idOf(b["id"]): eb,
		idOf(batch["ids"].([]any)[0]): batchSpan, idOf(batch["ids"].([]any)[1]): batchSpan} {
		d := deliver[id]
		if d == nil || !bytes.Equal(d.TraceId, parent.TraceId) || !bytes.Equal(d.ParentSpanId, parent.SpanId) {
			t.Fatalf("message %s: its send is not a child of its enqueue span", id)
		}
	}
	if hexOf(batchSpan.ParentSpanId) != producerSpan || spanAttr(refused, "error.type") != "invalid_recipient" ||
		hexOf(refused.ParentSpanId) != producerSpan {
		t.Fatalf("batch span under %s; refused span under %s with error.type %q", hexOf(batchSpan.ParentSpanId),
			hexOf(refused.ParentSpanId), spanAttr(refused, "error.type"))
	}
	for _, secret := range []string{"customer-secret", "payload-secret", "localhost:"} {
		if strings.Contains(col.exported(), secret) {
			t.Fatalf("the collector received %q", secret)
		}
	}
}
