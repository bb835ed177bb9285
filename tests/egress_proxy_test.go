package tests

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
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

	proxyAddr, proxyLogs := startSmokescreen(t, "--allow-address", "127.0.0.1:"+port(allowedTLS), "--allow-address", "127.0.0.1:"+port(allowedPlain))

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

// startTool runs .bin/<name> (a tool make test installs there) with args until the
// test ends, in a process group of its own, and returns its output.
func startTool(t *testing.T, name string, args ...string) *logBuffer {
	t.Helper()
	bin := filepath.Join(testdb.RepoRoot(), ".bin", name)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is not installed (make test installs it into .bin/)", name)
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logs := &logBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	return logs
}

// startSmokescreen runs Smokescreen on a free loopback port with args and returns
// its address, once it listens, and its output.
func startSmokescreen(t *testing.T, args ...string) (string, *logBuffer) {
	t.Helper()
	addr := freeAddr(t)
	host, port, _ := net.SplitHostPort(addr)
	logs := startTool(t, "smokescreen", append([]string{"--listen-ip", host, "--listen-port", port, "--statsd-address", freeAddr(t)}, args...)...)
	waitHTTP(t, addr)
	return addr, logs
}

// testPKI is a CA of its own that signs certificates for tests, written as PEM files.
type testPKI struct {
	dir    string
	CAFile string
	ca     *x509.Certificate
	key    *ecdsa.PrivateKey
	serial int64
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir(), serial: 1}
	p.key, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "herald test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, _ = x509.ParseCertificate(der)
	p.CAFile = filepath.Join(p.dir, "ca.pem")
	writePEM(t, p.CAFile, "CERTIFICATE", der)
	return p
}

// issue signs a certificate for cn (a server's for 127.0.0.1 when server, else a
// client's) and returns its certificate and key files.
func (p *testPKI) issue(t *testing.T, cn string, server bool) (certFile, keyFile string) {
	t.Helper()
	p.serial++
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage, tmpl.IPAddresses = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(p.dir, cn+".pem"), filepath.Join(p.dir, cn+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", kder)
	return certFile, keyFile
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Smokescreen as Stripe runs it: over TLS, naming each client by its certificate's
// CommonName and allowing each such role its own receivers (an egress ACL). herald
// shows the proxy the client certificate of HERALD_WEBHOOK_PROXY_CERT_FILE and checks
// the proxy's certificate against HERALD_WEBHOOK_PROXY_CA_FILE. Three runners send
// to one receiver the ACL allows role herald-webhooks: with that role's certificate
// the webhook arrives; attacks: with another service's certificate (a role allowed
// elsewhere) and with none, nothing arrives and the messages are dead with the
// proxy's refusal. The receiver asks every client for a certificate: herald never
// shows it the proxy's (its identity at the proxy is not for receivers to see or
// replay). A runner trusting another CA for the proxy connects to no proxy at all.
func TestWebhooksThroughSmokescreenOverMutualTLS(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, max_attempts) VALUES ('right', 'webhook', 1), ('wrong', 'webhook', 1),
		('none', 'webhook', 1), ('untrusted', 'webhook', 1)`)
	pki := newTestPKI(t)
	proxyCert, proxyKey := pki.issue(t, "smokescreen", true)
	rightCert, rightKey := pki.issue(t, "herald-webhooks", false)
	wrongCert, wrongKey := pki.issue(t, "billing", false)
	bundle := filepath.Join(t.TempDir(), "bundle.pem")
	var pemBytes []byte
	for _, f := range []string{proxyCert, proxyKey} {
		b, _ := os.ReadFile(f)
		pemBytes = append(pemBytes, b...)
	}
	if err := os.WriteFile(bundle, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}

	var hits, shownCerts atomic.Int64
	receiverCert, receiverKey := sendertest.CertFiles(t)
	receiver := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if len(r.TLS.PeerCertificates) > 0 {
			shownCerts.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	cert, err := tls.LoadX509KeyPair(receiverCert, receiverKey)
	if err != nil {
		t.Fatal(err)
	}
	receiver.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert}
	receiver.StartTLS()
	t.Cleanup(receiver.Close)
	_, receiverPort, _ := net.SplitHostPort(receiver.Listener.Addr().String())

	acl := filepath.Join(t.TempDir(), "acl.yaml")
	if err := os.WriteFile(acl, []byte(`---
version: v1
services:
  - name: herald-webhooks
    project: notifications
    action: enforce
    allowed_domains:
      - localhost
  - name: billing
    project: payments
    action: enforce
    allowed_domains:
      - api.stripe.com
default:
  project: other
  action: enforce
  allowed_domains: []
`), 0o600); err != nil {
		t.Fatal(err)
	}
	proxyAddr, proxyLogs := startSmokescreen(t, "--tls-server-bundle-file", bundle, "--tls-client-ca-file", pki.CAFile,
		"--egress-acl-file", acl, "--allow-address", "127.0.0.1:"+receiverPort)

	target := "https://localhost:" + receiverPort + "/hook"
	ids := map[string]int64{}
	for _, ch := range []string{"right", "wrong", "none", "untrusted"} {
		ids[ch] = scalar[int64](t, pool, `SELECT herald.enqueue($1, $2, '{"n": 1}')`, ch, target)
	}
	otherCA := newTestPKI(t)
	common := []string{"HERALD_WEBHOOK_PROXY=https://" + proxyAddr, "HERALD_WEBHOOK_CA_FILE=" + receiverCert,
		"HERALD_POLL_INTERVAL=100ms", "HERALD_OUTAGE_FAILURES=1"}
	runners := map[string][]string{
		"right":     {"HERALD_WEBHOOK_PROXY_CA_FILE=" + pki.CAFile, "HERALD_WEBHOOK_PROXY_CERT_FILE=" + rightCert, "HERALD_WEBHOOK_PROXY_KEY_FILE=" + rightKey},
		"wrong":     {"HERALD_WEBHOOK_PROXY_CA_FILE=" + pki.CAFile, "HERALD_WEBHOOK_PROXY_CERT_FILE=" + wrongCert, "HERALD_WEBHOOK_PROXY_KEY_FILE=" + wrongKey},
		"none":      {"HERALD_WEBHOOK_PROXY_CA_FILE=" + pki.CAFile},
		"untrusted": {"HERALD_WEBHOOK_PROXY_CA_FILE=" + otherCA.CAFile, "HERALD_WEBHOOK_PROXY_CERT_FILE=" + rightCert, "HERALD_WEBHOOK_PROXY_KEY_FILE=" + rightKey},
	}
	logs := map[string]*logBuffer{}
	for ch, env := range runners {
		env = append(append(env, common...), "HERALD_SENDER_"+strings.ToUpper(ch)+"=webhook",
			"HERALD_"+strings.ToUpper(ch)+"_WEBHOOK_SECRETS=whsec_"+strings.Repeat("SG9va3Nz", 4))
		_, logs[ch] = runnerProcess(t, dbURL, env...)
	}
	state := func(ch string) string {
		return scalar[string](t, pool, `SELECT status || ' ' || coalesce(last_error_code, '-') FROM herald.messages WHERE id = $1`, ids[ch])
	}
	eventually(t, 30*time.Second, "the three decided, the untrusted proxy's channel paused", func() bool {
		return countWhere(t, pool, `status IN ('sent', 'dead')`) == 3 && strings.HasPrefix(state("untrusted"), "queued ") &&
			scalar[bool](t, pool, `SELECT paused FROM herald.channels WHERE name = 'untrusted'`)
	})
	for ch, want := range map[string]string{"right": "sent -", "wrong": "dead egress_refused", "none": "dead egress_refused"} {
		if got := state(ch); got != want {
			t.Errorf("channel %s: %s, want %s\n%s", ch, got, want, logs[ch].String())
		}
	}
	if n, shown := hits.Load(), shownCerts.Load(); n != 1 || shown != 0 {
		t.Fatalf("the receiver got %d webhooks (want 1), %d of them with a client certificate (want 0)", n, shown)
	}
	// Not the receiver's fault nor the message's: the channel pauses, the message waits.
	if got, why := state("untrusted"), scalar[string](t, pool, `SELECT paused_reason FROM herald.channels WHERE name = 'untrusted'`); !strings.HasPrefix(got, "queued ") ||
		!strings.Contains(why, "certificate") {
		t.Errorf("the runner that does not trust the proxy: %s, the channel paused for %q", got, why)
	}
	if !strings.Contains(proxyLogs.String(), "herald-webhooks") || !strings.Contains(proxyLogs.String(), "billing") {
		t.Fatalf("the proxy did not name the roles by their certificates:\n%s", proxyLogs.String())
	}
}
