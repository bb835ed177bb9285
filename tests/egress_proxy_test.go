package tests

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/herald/herald/runner/sender/sendertest"
	"github.com/herald/herald/tests/testdb"
)

// Attack, through the operator's egress proxy: with HERALD_WEBHOOK_PROXY every webhook
// goes through Smokescreen (github.com/stripe/smokescreen, the CONNECT proxy Stripe's
// own webhooks leave by), which decides where a connection may go. A producer aims
// webhooks at an internal service (here on loopback, over https and http): nothing
// arrives there, the messages are dead with egress_refused and the proxy's reason. A
// receiver the proxy allows gets its webhooks, https through CONNECT and http as a
// proxied request, signed as always; herald dials nothing but the proxy (it would
// refuse loopback itself), and the proxy's password appears in no log or error.
func TestWebhooksThroughAnEgressProxy(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(testdb.RepoRoot(), ".bin", "smokescreen")
	if _, err := os.Stat(bin); err != nil {
		t.Fatal("Smokescreen is not installed (make test installs it into .bin/)")
	}
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, max_attempts) VALUES ('hooks', 'webhook', 1)`)

	var allowedHits, internalHits atomic.Int64
	var signed atomic.Int64
	allowed := func(w http.ResponseWriter, r *http.Request) {
		allowedHits.Add(1)
		if strings.HasPrefix(r.Header.Get("webhook-id"), "msg_") && r.Header.Get("webhook-signature") != "" {
			signed.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	}
	internal := func(w http.ResponseWriter, r *http.Request) { internalHits.Add(1) }
	certFile, keyFile := sendertest.CertFiles(t)
	tlsServer := func(h http.HandlerFunc) *httptest.Server {
		s := httptest.NewUnstartedServer(h)
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		s.StartTLS()
		t.Cleanup(s.Close)
		return s
	}
	plainServer := func(h http.HandlerFunc) *httptest.Server {
		s := httptest.NewServer(h)
		t.Cleanup(s.Close)
		return s
	}
	allowedTLS, allowedPlain := tlsServer(allowed), plainServer(allowed)
	internalTLS, internalPlain := tlsServer(internal), plainServer(internal)
	port := func(s *httptest.Server) string { _, p, _ := net.SplitHostPort(s.Listener.Addr().String()); return p }

	proxyAddr := freeAddr(t)
	proxyHost, proxyPort, _ := net.SplitHostPort(proxyAddr)
	cmd := exec.Command(bin, "--listen-ip", proxyHost, "--listen-port", proxyPort, "--statsd-address", freeAddr(t),
		"--allow-address", "127.0.0.1:"+port(allowedTLS), "--allow-address", "127.0.0.1:"+port(allowedPlain))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	proxyLogs := &logBuffer{}
	cmd.Stdout, cmd.Stderr = proxyLogs, proxyLogs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	waitHTTP(t, proxyAddr)

	url := func(s *httptest.Server, scheme string) string {
		return scheme + "://localhost:" + port(s) + "/hook"
	}
	targets := []string{url(allowedTLS, "https"), url(allowedPlain, "http"), url(internalTLS, "https"), url(internalPlain, "http")}
	for _, to := range targets {
		mustExec(t, pool, `SELECT herald.enqueue('hooks', $1, '{"n": 1}')`, to)
	}
	const password = "pr0xy-s3cret-9"
	runner, logs := runnerProcess(t, dbURL, "HERALD_SENDER_HOOKS=webhook", "HERALD_HOOKS_WEBHOOK_SECRETS=whsec_"+strings.Repeat("SG9va3Nz", 4),
		"HERALD_WEBHOOK_PROXY=http://herald:"+password+"@"+proxyAddr, "HERALD_WEBHOOK_CA_FILE="+certFile, "HERALD_POLL_INTERVAL=100ms")
	eventually(t, 30*time.Second, "every webhook sent or dead", func() bool {
		return countWhere(t, pool, `status IN ('sent', 'dead')`) == 4
	})
	if n := internalHits.Load(); n != 0 {
		t.Fatalf("the internal service received %d requests through the proxy", n)
	}
	if n := allowedHits.Load(); n != 2 || signed.Load() != 2 {
		t.Fatalf("the allowed receiver got %d webhooks (%d signed), want 2\n%s", n, signed.Load(), logs.String())
	}
	for _, to := range targets[:2] {
		if n := countWhere(t, pool, `recipient = $1 AND status = 'sent'`, to); n != 1 {
			t.Fatalf("%s: not sent\n%s", to, logs.String())
		}
	}
	for _, to := range targets[2:] {
		if n := countWhere(t, pool, `recipient = $1 AND status = 'dead' AND last_error_code = 'egress_refused'
				AND errors::text LIKE '%egress proxy refused localhost:%denied%'`, to); n != 1 {
			t.Fatalf("%s: not dead with the proxy's refusal: %s\n%s", to,
				scalar[string](t, pool, `SELECT errors::text FROM herald.messages WHERE recipient = $1`, to), logs.String())
		}
	}
	// Every request, refused or not, was the proxy's to decide.
	if n := strings.Count(proxyLogs.String(), "CANONICAL-PROXY-DECISION"); n != 4 {
		t.Fatalf("the proxy decided %d connections, want 4:\n%s", n, proxyLogs.String())
	}
	waitExit(t, runner, logs, 15*time.Second)
	if strings.Contains(logs.String(), password) ||
		scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE errors::text LIKE '%' || $1 || '%'`, password) != 0 {
		t.Fatalf("the proxy's password was printed or stored:\n%s", logs.String())
	}
}
