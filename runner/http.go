package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// CountDeliveryEvents adds what a delivery-event endpoint recorded (events.Config's
// Counted: counts by event name) to herald_delivery_events_received_total.
func (r *Runner) CountDeliveryEvents(source string, counts map[string]int) {
	addCounts(r.m.events, source, counts)
}

// CountIntakeRequest adds one answer of the HTTP intake (intake.Config's Counted) to
// herald_intake_requests_total.
func (r *Runner) CountIntakeRequest(token string, status int, code string) {
	countIntake(r.m.intake, token, status, code)
}

// addCounts adds counts by event name under source to c.
func addCounts(c *prometheus.CounterVec, source string, counts map[string]int) {
	for event, n := range counts {
		c.WithLabelValues(source, event).Add(float64(n))
	}
}

// ServeMetrics is the /metrics of a process that serves HTTP endpoints without
// delivering (herald serve): the Go runtime and process collectors, what its
// delivery-event endpoints recorded (herald_delivery_events_received_total) and what
// its intake answered (herald_intake_requests_total).
type ServeMetrics struct {
	reg    *prometheus.Registry
	events *prometheus.CounterVec
	intake *prometheus.CounterVec
}

// NewServeMetrics returns a ServeMetrics with its own registry.
func NewServeMetrics() *ServeMetrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &ServeMetrics{reg: reg, events: deliveryEvents(reg), intake: intakeRequests(reg)}
}

// CountDeliveryEvents is Runner.CountDeliveryEvents for herald serve.
func (m *ServeMetrics) CountDeliveryEvents(source string, counts map[string]int) {
	addCounts(m.events, source, counts)
}

// CountIntakeRequest is Runner.CountIntakeRequest for herald serve.
func (m *ServeMetrics) CountIntakeRequest(token string, status int, code string) {
	countIntake(m.intake, token, status, code)
}

// Handler serves the Prometheus exposition.
func (m *ServeMetrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Handler serves /metrics (Prometheus exposition, github.com/prometheus/client_golang),
// /healthz (readiness: 200 when the database answers, the listener is connected —
// its "listener" also says when LISTEN is deaf, polling — and the claim loop turns,
// else 503, with a JSON body saying which) and /livez (liveness: 503 only while the
// claim loop is stalled, which a restart may mend; a database outage is not).
func (r *Runner) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(r.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
		defer cancel()
		body := map[string]string{"database": "ok", "listener": "connected"}
		code := r.claims(body)
		if err := r.pool.Ping(ctx); err != nil {
			body["database"] = "unreachable"
			code = http.StatusServiceUnavailable
		}
		if !r.listenerUp.Load() {
			body["listener"] = "disconnected"
			code = http.StatusServiceUnavailable
		} else if r.deaf.Load() {
			// Delivering, by polling: not down, but misconfigured (HERALD_LISTEN_URL).
			body["listener"] = "deaf: LISTEN receives no notifications (a transaction pooler?); polling every " +
				r.cfg.DeafPollInterval.String()
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(body)
	})
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, req *http.Request) {
		body := map[string]string{}
		code := r.claims(body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(body)
	})
	return mux
}

// claims sets body's "claims" to whether the claim loop turns (Stalled) and returns
// 200, or 503 when it is stalled.
func (r *Runner) claims(body map[string]string) int {
	if d := r.Stalled(); d > 0 {
		body["claims"] = fmt.Sprintf("stalled: the claim loop has not come round for %s", d.Round(time.Second))
		return http.StatusServiceUnavailable
	}
	body["claims"] = "turning"
	return http.StatusOK
}
