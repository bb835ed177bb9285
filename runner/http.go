package runner

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Handler serves /metrics (Prometheus text format) and /healthz (200 when the
// database answers and the listener is connected, else 503, with a JSON body saying
// which).
func (r *Runner) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		r.m.reg.WriteTo(w)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
		defer cancel()
		body := map[string]string{"database": "ok", "listener": "connected"}
		code := http.StatusOK
		if err := r.pool.Ping(ctx); err != nil {
			body["database"] = "unreachable"
			code = http.StatusServiceUnavailable
		}
		if !r.listenerUp.Load() {
			body["listener"] = "disconnected"
			code = http.StatusServiceUnavailable
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(body)
	})
	return mux
}
