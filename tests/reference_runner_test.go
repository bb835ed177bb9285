package tests

import (
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/herald/herald/runner/sender/webhook"
	"github.com/herald/herald/tests/testdb"
)

// The reference runner in Python (examples/python/runner.py) delivers as the runner
// contract says: every message of a drain once, signed so the receiver's verifier
// accepts it, completed with the receiver's id as receipt; a 429 waits out its
// Retry-After without using an attempt; a 410 is dead at once with its code; SIGTERM
// exits 0. (Its egress check refuses loopback unless allowed: this test allows it.)
func TestPythonReferenceRunner(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, backoff_base, backoff_max) VALUES ('hooks', 'webhook', '1 second', '2 seconds')`)
	key := make([]byte, 32)
	rand.Read(key)
	secret := webhook.SecretPrefix + base64.StdEncoding.EncodeToString(key)

	var mu sync.Mutex
	got := map[string]int{}
	busy := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify([]string{secret}, r.Header, body, time.Minute, time.Now()); err != nil {
			w.WriteHeader(401)
			return
		}
		id := r.Header.Get(webhook.HeaderID)
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/gone":
			w.WriteHeader(410)
			return
		case "/busy":
			if busy++; busy == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(429)
				return
			}
		}
		got[id]++
		w.Header().Set("X-Request-Id", "rcpt-"+id)
		w.WriteHeader(204)
	}))
	defer srv.Close()
	base := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) // a host name passes enqueue; the runner's allow-list decides

	const n = 300
	mustExec(t, pool, `SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'hooks',
		'recipient', $1::text || '/hook', 'payload', jsonb_build_object('n', g))) FROM generate_series(1, $2::int) g))`, base, n)
	gone := scalar[int64](t, pool, `SELECT herald.enqueue('hooks', $1 || '/gone', '{}')`, base)
	waited := scalar[int64](t, pool, `SELECT herald.enqueue('hooks', $1 || '/busy', '{}')`, base)

	cmd := exec.Command("/usr/bin/python3", filepath.Join(testdb.RepoRoot(), "examples", "python", "runner.py"))
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "HERALD_CHANNEL=hooks", "HERALD_WEBHOOK_SECRETS="+secret,
		"HERALD_WEBHOOK_ALLOW=127.0.0.0/8 ::1/128", "HERALD_POLL_SECONDS=0.2")
	logs := &logBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })

	eventually(t, 60*time.Second, "the reference runner's drain", func() bool {
		return countWhere(t, pool, `status IN ('queued', 'processing')`) == 0
	})
	mu.Lock()
	for id, k := range got {
		if k != 1 {
			t.Errorf("%s delivered %d times", id, k)
		}
	}
	delivered := len(got)
	mu.Unlock()
	if delivered != n+1 {
		t.Fatalf("%d messages delivered, want %d\n%s", delivered, n+1, logs.String())
	}
	if k := countWhere(t, pool, `status = 'sent' AND provider_message_id = 'rcpt-msg_' || id AND attempts = 1`); k != n+1 {
		t.Fatalf("%d sent with their receipt in one attempt, want %d", k, n+1)
	}
	var status, code string
	if err := pool.QueryRow(t.Context(), `SELECT status, last_error_code FROM herald.messages WHERE id = $1`, gone).Scan(&status, &code); err != nil ||
		status != "dead" || code != "410" {
		t.Fatalf("the 410: %s %s %v", status, code, err)
	}
	if e := scalar[string](t, pool, `SELECT errors->0->>'class' FROM herald.messages WHERE id = $1`, waited); e != "rate_limited" {
		t.Fatalf("the 429 was recorded as %q", e)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("SIGTERM: %v\n%s", err, logs.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no exit 20 s after SIGTERM\n%s", logs.String())
	}
}
