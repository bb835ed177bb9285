package tests

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald/herald/tests/testdb"
)

// Duplicates counted where they may arise: a send that fails after the whole
// request went out (the receiver read it and hung up, as a provider that crashed
// while acting on it would) may have been taken, so its retry may deliver it twice.
// Such a failure has the code in_doubt and is counted in herald_in_doubt_total; one
// that never reached anyone (a refused connection) is neither. The retry delivers it.
func TestSendsInDoubtAreCounted(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, backoff_base) VALUES ('hooks', 'webhook', '100 milliseconds')`)
	var calls atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if calls.Add(1) == 1 { // the request read whole; the answer lost
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				c.Close()
			}
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	doubtful := scalar[int64](t, pool, `SELECT herald.enqueue('hooks', $1, '{"n": 1}')`, strings.Replace(receiver.URL, "127.0.0.1", "localhost", 1)+"/in")
	unreached := scalar[int64](t, pool, `SELECT herald.enqueue('hooks', $1, '{"n": 2}', max_attempts => 1)`,
		"http://localhost:"+strings.Split(refused, ":")[1]+"/in")
	addr := freeAddr(t)
	cmd, logs := runnerProcess(t, dbURL, "HERALD_HTTP_ADDR="+addr, "HERALD_INTAKE=off", "HERALD_SENDER_HOOKS=webhook",
		"HERALD_HOOKS_WEBHOOK_SECRETS=whsec_"+strings.Repeat("SG9va3Nz", 4), "HERALD_WEBHOOK_ALLOW=localhost", "HERALD_POLL_INTERVAL=100ms")
	eventually(t, 30*time.Second, "the doubtful webhook sent on its retry, the other dead", func() bool {
		return countWhere(t, pool, `id = $1 AND status = 'sent'`, doubtful) == 1 && countWhere(t, pool, `id = $1 AND status = 'dead'`, unreached) == 1
	})
	if s := scalar[string](t, pool, `SELECT string_agg(e ->> 'code', ',') FROM herald.messages, jsonb_array_elements(errors) e WHERE id = $1`, doubtful); s != "in_doubt" {
		t.Fatalf("the doubtful send's errors: %q\n%s", s, logs.String())
	}
	if s := scalar[string](t, pool, `SELECT coalesce(last_error_code, '') FROM herald.messages WHERE id = $1`, unreached); s == "in_doubt" {
		t.Fatalf("a refused connection is in doubt")
	}
	body := metricsOf(t, addr)
	if !regexp.MustCompile(`(?m)^herald_in_doubt_total\{channel="hooks"\} 1$`).Match(body) {
		t.Fatalf("/metrics does not count the send in doubt once:\n%s", regexp.MustCompile(`(?m)^herald_in_doubt.*$`).FindAll(body, -1))
	}
	waitExit(t, cmd, logs, 15*time.Second)
}
