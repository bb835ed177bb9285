package runner

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/sink"
)

// A claim loop that has not come round for more than twice its longest turn (lease
// plus poll interval) is stalled: /livez and /healthz answer 503 saying so, and
// Stalled, which feeds systemd's watchdog, says how long. Before the first turn (the
// start check) and while it turns, it is not; a database that does not answer makes
// the runner not ready (/healthz) but leaves it alive (/livez).
func TestAStalledClaimLoopIsUnhealthy(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	r, err := New(pool, Config{Senders: map[string]sender.Sender{"email": sink.New(io.Discard)}, Lease: 30 * time.Second, PollInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	claims := func(path string) (int, string) {
		rr := httptest.NewRecorder()
		r.Handler().ServeHTTP(rr, httptest.NewRequest("GET", path, nil))
		var body map[string]string
		if err := json.Unmarshal(rr.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		return rr.Code, body["claims"]
	}
	// The database does not answer: not ready, yet alive (a restart would not help).
	if code, c := claims("/livez"); r.Stalled() != 0 || code != 200 || c != "turning" {
		t.Fatalf("before the first turn: %s, /livez %d %q", r.Stalled(), code, c)
	}
	if code, c := claims("/healthz"); code != 503 || c != "turning" {
		t.Fatalf("the database down: /healthz %d %q", code, c)
	}
	r.turned.Store(time.Now().Add(-61 * time.Second).UnixNano()) // within two turns of 31s
	if code, c := claims("/livez"); r.Stalled() != 0 || code != 200 || c != "turning" {
		t.Fatalf("61s after a turn: %s, /livez %d %q", r.Stalled(), code, c)
	}
	r.turned.Store(time.Now().Add(-63 * time.Second).UnixNano())
	for _, path := range []string{"/livez", "/healthz"} {
		if code, c := claims(path); r.Stalled() < 63*time.Second || code != 503 || !strings.HasPrefix(c, "stalled: the claim loop has not come round for 1m3s") {
			t.Fatalf("63s after a turn: %s, %s %d %q", r.Stalled(), path, code, c)
		}
	}
}
