package webhook_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/herald/herald/runner/idtag"
	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/egress"
	"github.com/herald/herald/runner/sender/sendertest"
	"github.com/herald/herald/runner/sender/webhook"
)

// newSecret returns a fresh "whsec_" secret.
func newSecret(t *testing.T) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return webhook.SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// idKey stands for the installation's key (herald.message_id_keys), which makes
// webhook-ids.
var idKey = []byte("the installation's key, 32 bytes")

// loopback allows the test servers on 127.0.0.1, which the default policy refuses.
var loopback = egress.Policy{Allow: []string{"127.0.0.1/32"}}

// A receiver verifies herald's requests with the Standard Webhooks reference library;
// during a rotation a receiver that knows only the old or only the new secret
// verifies; a tampered body, another channel's secret or a replay fail; 410 is
// permanent, 429 rate_limited.
func TestWebhookSignaturesVerifyWithTheReferenceLibrary(t *testing.T) {
	t.Parallel()
	oldSecret, newSec, otherChannel := newSecret(t), newSecret(t), newSecret(t)
	var mu sync.Mutex
	var lastBody []byte
	var lastHeader http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		lastBody, lastHeader = body, r.Header.Clone()
		mu.Unlock()
		switch r.URL.Path {
		case "/gone":
			w.WriteHeader(410)
		case "/busy":
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(429)
		default:
			w.Header().Set("X-Request-Id", "rcv-1")
			w.WriteHeader(204)
		}
	}))
	defer srv.Close()
	s, err := webhook.New(webhook.Config{IDKey: idtag.StaticKey(idKey), Secrets: []string{newSec, oldSecret}, Egress: loopback})
	if err != nil {
		t.Fatal(err)
	}
	m := sender.Message{ID: 9, Channel: "hooks", Recipient: srv.URL + "/receipts", Attempt: 1, Payload: json.RawMessage(`{"event":"paid"}`)}
	res, err := s.Send(context.Background(), m)
	if err != nil || res.ProviderMessageID != "rcv-1" {
		t.Fatalf("delivery: %+v %v", res, err)
	}
	for _, secret := range []string{oldSecret, newSec} {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(lastBody, lastHeader); err != nil {
			t.Fatalf("the reference library refuses herald's signature: %v", err)
		}
		if err := webhook.Verify([]string{secret}, lastHeader, lastBody, 5*time.Minute, time.Now()); err != nil {
			t.Fatalf("webhook.Verify: %v", err)
		}
	}
	var got sender.Message
	if err := json.Unmarshal(lastBody, &got); err != nil || got.ID != 9 || string(got.Payload) != `{"event":"paid"}` || lastHeader.Get(webhook.HeaderID) != webhook.ID(9, idKey) {
		t.Fatalf("body %s: %+v %v", lastBody, got, err)
	}
	tampered := bytes.Replace(lastBody, []byte("paid"), []byte("free"), 1)
	wh, _ := standardwebhooks.NewWebhook(newSec)
	if wh.Verify(tampered, lastHeader) == nil || webhook.Verify([]string{newSec}, lastHeader, tampered, 5*time.Minute, time.Now()) == nil {
		t.Fatal("a tampered body passed verification")
	}
	other, _ := standardwebhooks.NewWebhook(otherChannel)
	if other.Verify(lastBody, lastHeader) == nil {
		t.Fatal("another channel's secret verifies this channel's request")
	}
	if err := webhook.Verify([]string{newSec}, lastHeader, lastBody, 5*time.Minute, time.Now().Add(10*time.Minute)); err == nil {
		t.Fatal("a replay 10 minutes later passed verification")
	}
	m.Recipient = srv.URL + "/gone"
	_, err = s.Send(context.Background(), m)
	sendertest.WantClass(t, err, sender.ClassPermanent)
	m.Recipient = srv.URL + "/busy"
	_, err = s.Send(context.Background(), m)
	if f := sendertest.WantClass(t, err, sender.ClassRateLimited); f.Code != "429" {
		t.Fatalf("code %q", f.Code)
	}
	for _, bad := range []string{"short", "whsec_c2hvcnQ=", "whsec_%%%", strings.Repeat("x", 40)} {
		if _, err := webhook.New(webhook.Config{IDKey: idtag.StaticKey(idKey), Secrets: []string{bad}}); err == nil || strings.Contains(err.Error(), bad) {
			t.Fatalf("secret %q: %v (accepted, or printed)", bad, err)
		}
	}
}

// Receivers that share a channel must not be able to sign for each other. With
// PerEndpoint, each receiver URL verifies with its own secret (EndpointSecret; the
// reference library accepts it, both during a rotation); the channel secret and
// another receiver's secret verify nothing, and a request receiver A signs with its
// secret for receiver B is refused by B.
func TestPerEndpointSecretsIsolateReceivers(t *testing.T) {
	t.Parallel()
	oldSecret, newSec := newSecret(t), newSecret(t)
	var mu sync.Mutex
	got := map[string][]byte{}
	headers := map[string]http.Header{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.URL.Path], headers[r.URL.Path] = body, r.Header.Clone()
		mu.Unlock()
		w.WriteHeader(204)
	}))
	defer srv.Close()
	s, err := webhook.New(webhook.Config{IDKey: idtag.StaticKey(idKey), Secrets: []string{newSec, oldSecret}, Egress: loopback, PerEndpoint: true})
	if err != nil {
		t.Fatal(err)
	}
	urlA, urlB := srv.URL+"/tenant-a/hooks", srv.URL+"/tenant-b/hooks"
	for i, u := range []string{urlA, urlB} {
		m := sender.Message{ID: int64(i + 1), Channel: "hooks", Recipient: u, Attempt: 1, Payload: json.RawMessage(`{"event":"paid"}`)}
		if _, err := s.Send(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	secret := func(channelSecret, u string) string {
		e, err := webhook.EndpointSecret(channelSecret, u)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	mu.Lock()
	defer mu.Unlock()
	bodyA, hA, bodyB, hB := got["/tenant-a/hooks"], headers["/tenant-a/hooks"], got["/tenant-b/hooks"], headers["/tenant-b/hooks"]
	for _, channelSecret := range []string{oldSecret, newSec} {
		a, b := secret(channelSecret, urlA), secret(channelSecret, urlB)
		wh, err := standardwebhooks.NewWebhook(a)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(bodyA, hA); err != nil {
			t.Fatalf("receiver A's own secret: %v", err)
		}
		if webhook.Verify([]string{b}, hA, bodyA, 5*time.Minute, time.Now()) == nil ||
			webhook.Verify([]string{channelSecret}, hA, bodyA, 5*time.Minute, time.Now()) == nil {
			t.Fatal("another receiver's secret, or the channel's, verifies receiver A's request")
		}
		if webhook.Verify([]string{b}, hB, bodyB, 5*time.Minute, time.Now()) != nil {
			t.Fatal("receiver B's own secret does not verify its request")
		}
		// Receiver A forges a request to B with what it holds.
		key, _ := webhook.DecodeSecret(a)
		forged := http.Header{}
		ts := time.Now().Unix()
		forged.Set(webhook.HeaderID, "msg_99")
		forged.Set(webhook.HeaderTimestamp, fmt.Sprint(ts))
		forged.Set(webhook.HeaderSignature, webhook.Sign(key, "msg_99", ts, []byte(`{"event":"refund"}`)))
		if webhook.Verify([]string{b}, forged, []byte(`{"event":"refund"}`), 5*time.Minute, time.Now()) == nil {
			t.Fatal("receiver B accepted a request receiver A signed")
		}
	}
	if _, err := webhook.EndpointSecret("whsec_short", urlA); err == nil {
		t.Fatal("a bad channel secret gave an endpoint secret")
	}
}

// Attack: a producer points a webhook at the runner's own network — loopback by
// address, by name, in IPv6 and IPv4-mapped form, the unspecified address, the cloud
// metadata address — or carries credentials in the URL. The request never arrives;
// the failure is permanent with code egress_refused.
func TestWebhookEgressRefusesInternalAddresses(t *testing.T) {
	t.Parallel()
	var arrived atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		w.WriteHeader(200)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	ln6, err := net.Listen("tcp", "[::1]:0")
	var port6 string
	if err == nil {
		srv6 := &http.Server{Handler: srv.Config.Handler}
		go srv6.Serve(ln6)
		defer srv6.Close()
		_, port6, _ = net.SplitHostPort(ln6.Addr().String())
	}
	s, err := webhook.New(webhook.Config{IDKey: idtag.StaticKey(idKey), Secrets: []string{newSecret(t)}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	targets := []string{
		"http://127.0.0.1:" + port + "/x",
		"http://localhost:" + port + "/x",
		"http://0.0.0.0:" + port + "/x",
		"http://[::ffff:127.0.0.1]:" + port + "/x",
		"http://169.254.169.254/latest/meta-data/iam/security-credentials/",
		"http://user:pass@example.com/x",
	}
	if port6 != "" {
		targets = append(targets, "http://[::1]:"+port6+"/x")
	}
	for _, target := range targets {
		_, err := s.Send(context.Background(), sender.Message{ID: 1, Channel: "hooks", Recipient: target, Payload: json.RawMessage(`{}`)})
		f := sendertest.WantClass(t, err, sender.ClassPermanent)
		if f.Code != "egress_refused" {
			t.Errorf("%s: code %q: %v", target, f.Code, err)
		}
	}
	if n := arrived.Load(); n != 0 {
		t.Fatalf("%d requests arrived at the internal listener", n)
	}
	// The operator's allow-list opens one network.
	allowed, err := webhook.New(webhook.Config{IDKey: idtag.StaticKey(idKey), Secrets: []string{newSecret(t)}, Egress: loopback})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := allowed.Send(context.Background(), sender.Message{ID: 1, Recipient: srv.URL + "/x", Payload: json.RawMessage(`{}`)}); err != nil || arrived.Load() != 1 {
		t.Fatalf("allowed 127.0.0.1/32: %v, %d arrived", err, arrived.Load())
	}
}

// A name whose DNS answer changes between a check and the connection gets nowhere:
// the policy judges the address dialled, not a lookup made before.
func TestEgressChecksTheAddressDialled(t *testing.T) {
	t.Parallel()
	dial := egress.Policy{}.DialContext(time.Second)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	for _, addr := range []string{ln.Addr().String(), "localhost:" + strings.Split(ln.Addr().String(), ":")[1]} {
		if _, err := dial(context.Background(), "tcp", addr); !errors.Is(err, egress.ErrRefused) {
			t.Fatalf("%s: %v", addr, err)
		}
	}
	select {
	case <-accepted:
		t.Fatal("a refused dial reached the listener")
	default:
	}
	for _, a := range []string{"10.0.0.1", "172.31.255.255", "192.168.1.1", "100.64.0.1", "169.254.169.254", "fd00:ec2::254",
		"fe80::1", "ff02::1", "224.0.0.1", "255.255.255.255", "::", "::ffff:10.0.0.1", "64:ff9b::7f00:1",
		"::a00:1", "::7f00:1", "2002:a00:1::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2"} {
		if why := (egress.Policy{}).Reason(netip.MustParseAddr(a)); why == "" {
			t.Errorf("%s is not refused", a)
		}
	}
	for _, a := range []string{"8.8.8.8", "2001:4860:4860::8888", "::ffff:8.8.8.8", "2001:db8::1", "2003::1"} {
		if why := (egress.Policy{}).Reason(netip.MustParseAddr(a)); why != "" {
			t.Errorf("%s refused: %s", a, why)
		}
	}
}

// Redirects are not followed: a 307 would re-POST body and signature elsewhere, a
// 302 turns into a GET whose 200 would mark the message sent.
func TestWebhookDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer target.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := 302
		if r.URL.Path == "/307" {
			code = 307
		}
		http.Redirect(w, r, target.URL+"/stolen", code)
	}))
	defer srv.Close()
	s, err := webhook.New(webhook.Config{IDKey: idtag.StaticKey(idKey), Secrets: []string{newSecret(t)}, Egress: loopback})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/302", "/307"} {
		_, err := s.Send(context.Background(), sender.Message{ID: 1, Recipient: srv.URL + path, Payload: json.RawMessage(`{}`)})
		if f := sendertest.WantClass(t, err, sender.ClassPermanent); f.Code != "redirect" {
			t.Fatalf("%s: code %q", path, f.Code)
		}
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("a redirect was followed %d times", n)
	}
}

// An attack by a receiver a producer points its webhooks at: an answer with 10 MiB of
// headers is read no further than sender.MaxResponseHeader (Go's default read all
// 10 MiB, so every send in flight to such receivers held ten megabytes) and fails
// transient. Measured as the bytes the send allocates.
func TestAReceiversHugeHeadersAreNotRead(t *testing.T) {
	var answer bytes.Buffer
	answer.WriteString("HTTP/1.1 200 OK\r\n")
	for i := 0; answer.Len() < 10<<20; i++ {
		fmt.Fprintf(&answer, "X-Pad-%d: %s\r\n", i, strings.Repeat("a", 1000))
	}
	answer.WriteString("Content-Length: 0\r\n\r\n")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				http.ReadRequest(bufio.NewReader(c))
				c.Write(answer.Bytes())
			}()
		}
	}()
	s, err := webhook.New(webhook.Config{IDKey: idtag.StaticKey(idKey), Secrets: []string{newSecret(t)}, Egress: loopback})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = s.Send(context.Background(), sender.Message{ID: 1, Recipient: "http://" + ln.Addr().String() + "/h", Payload: json.RawMessage(`{}`)})
	runtime.ReadMemStats(&after)
	sendertest.WantClass(t, err, sender.ClassTransient)
	if got := after.TotalAlloc - before.TotalAlloc; got > 2<<20 {
		t.Fatalf("the send allocated %d bytes for an answer of %d bytes of headers", got, answer.Len())
	}
}

// A receiver with a certificate of its own CA: trusted with RootCAs (HERALD_WEBHOOK_CA_FILE),
// refused without (the system's roots do not know it).
func TestWebhookTrustsTheConfiguredCA(t *testing.T) {
	certFile, keyFile := sendertest.CertFiles(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots, err := sender.LoadCAFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	m := sender.Message{ID: 1, Channel: "hooks", Recipient: srv.URL + "/in", Payload: json.RawMessage(`{}`)}
	trusting, _ := webhook.New(webhook.Config{IDKey: idtag.StaticKey(idKey), Secrets: []string{newSecret(t)}, Egress: loopback, RootCAs: roots})
	if _, err := trusting.Send(context.Background(), m); err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	plain, _ := webhook.New(webhook.Config{IDKey: idtag.StaticKey(idKey), Secrets: []string{newSecret(t)}, Egress: loopback})
	if _, err := plain.Send(context.Background(), m); err == nil {
		t.Fatal("a certificate of an unknown CA was accepted")
	}
}

// The W3C trace context in a message's metadata reaches the receiver as the
// traceparent and tracestate headers, so its tracing continues the producer's trace.
// A malformed one, or one smuggling a header in a line break, is not passed on, and
// the message is still delivered.
func TestWebhookPassesTheTraceContext(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.URL.Path] = r.Header.Get("traceparent") + "|" + r.Header.Get("tracestate") + "|" + r.Header.Get("X-Evil")
		mu.Unlock()
	}))
	defer srv.Close()
	s, err := webhook.New(webhook.Config{IDKey: idtag.StaticKey(idKey), Secrets: []string{newSecret(t)}, Egress: loopback})
	if err != nil {
		t.Fatal(err)
	}
	for path, md := range map[string]string{
		"/traced":    `{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"rojo=00f067aa0ba902b7","order":7}`,
		"/injected":  `{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\nX-Evil: 1"}`,
		"/bad-state": `{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"a=b\r\nX-Evil: 1"}`,
		"/none":      `{"order":7}`,
	} {
		m := sender.Message{ID: 1, Recipient: srv.URL + path, Payload: json.RawMessage(`{}`), Metadata: json.RawMessage(md)}
		if _, err := s.Send(context.Background(), m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	want := map[string]string{
		"/traced":    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01|rojo=00f067aa0ba902b7|",
		"/injected":  "||",
		"/bad-state": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01||",
		"/none":      "||",
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("headers the receiver got:\n%v\nwant\n%v", got, want)
	}
}

// A channel signing with a whsk_ key sends v1a (Ed25519) signatures that its whpk_
// public key verifies, in Go and in OpenSSL (another implementation of Ed25519), next
// to the v1 signature of a whsec_ secret it still carries during a move (the
// reference library, which knows only v1, verifies that one). Attacks: the public key
// a receiver holds signs nothing (a forged v1a does not verify), another channel's
// key verifies nothing, a changed body or a replay fails.
func TestAsymmetricSignatures(t *testing.T) {
	seed := make([]byte, 32)
	rand.Read(seed)
	signingKey := webhook.SigningKeyPrefix + base64.StdEncoding.EncodeToString(seed)
	symmetric := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a symmetric secret, 32 bytes ok"))
	var lastHeader http.Header
	var lastBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lastHeader, lastBody = r.Header.Clone(), must(io.ReadAll(r.Body))
		w.WriteHeader(204)
	}))
	defer srv.Close()
	s, err := webhook.New(webhook.Config{IDKey: idtag.StaticKey(idKey), Secrets: []string{signingKey, symmetric}, Egress: loopback, PerEndpoint: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(context.Background(), sender.Message{ID: 7, Channel: "hooks", Recipient: srv.URL + "/r", Attempt: 1,
		Payload: json.RawMessage(`{"event":"paid"}`)}); err != nil {
		t.Fatal(err)
	}
	public, err := webhook.PublicKey(signingKey)
	if err != nil || !strings.HasPrefix(public, webhook.PublicKeyPrefix) {
		t.Fatalf("public key %q %v", public, err)
	}
	sigs := strings.Fields(lastHeader.Get(webhook.HeaderSignature))
	if len(sigs) != 2 || !strings.HasPrefix(sigs[0], "v1a,") || !strings.HasPrefix(sigs[1], "v1,") {
		t.Fatalf("webhook-signature %q", lastHeader.Get(webhook.HeaderSignature))
	}
	now := time.Now()
	if err := webhook.Verify([]string{public}, lastHeader, lastBody, 5*time.Minute, now); err != nil {
		t.Fatalf("the public key does not verify: %v", err)
	}
	endpoint, _ := webhook.EndpointSecret(symmetric, srv.URL+"/r")
	if wh, _ := standardwebhooks.NewWebhook(endpoint); wh.Verify(lastBody, lastHeader) != nil {
		t.Fatal("the reference library refuses the v1 signature beside the v1a one")
	}

	// OpenSSL verifies the v1a signature with the public key.
	dir := t.TempDir()
	pub, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(public, webhook.PublicKeyPrefix))
	der, err := x509.MarshalPKIXPublicKey(ed25519.PublicKey(pub))
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(sigs[0], "v1a,"))
	signed := fmt.Sprintf("%s.%s.%s", lastHeader.Get(webhook.HeaderID), lastHeader.Get(webhook.HeaderTimestamp), lastBody)
	for name, b := range map[string][]byte{"pub.pem": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}),
		"msg": []byte(signed), "sig": sig} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("openssl", "pkeyutl", "-verify", "-pubin", "-inkey", filepath.Join(dir, "pub.pem"), "-rawin",
		"-in", filepath.Join(dir, "msg"), "-sigfile", filepath.Join(dir, "sig")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Signature Verified Successfully") {
		t.Fatalf("openssl: %v %s", err, out)
	}

	// Attacks.
	forged := lastHeader.Clone()
	forged.Set(webhook.HeaderSignature, "v1a,"+base64.StdEncoding.EncodeToString(append(pub, pub...)))
	if webhook.Verify([]string{public}, forged, lastBody, 5*time.Minute, now) == nil {
		t.Fatal("a v1a signature made of the public key verified")
	}
	otherSeed := make([]byte, 32)
	rand.Read(otherSeed)
	other, _ := webhook.PublicKey(webhook.SigningKeyPrefix + base64.StdEncoding.EncodeToString(otherSeed))
	if webhook.Verify([]string{other}, lastHeader, lastBody, 5*time.Minute, now) == nil {
		t.Fatal("another channel's public key verified this request")
	}
	if webhook.Verify([]string{public}, lastHeader, bytes.Replace(lastBody, []byte("paid"), []byte("free"), 1), 5*time.Minute, now) == nil {
		t.Fatal("a changed body verified")
	}
	if webhook.Verify([]string{public}, lastHeader, lastBody, 5*time.Minute, now.Add(10*time.Minute)) == nil {
		t.Fatal("a replay 10 minutes later verified")
	}
	// A whsk_ key that is not a 32-byte seed is refused at start, without its value.
	if _, err := webhook.New(webhook.Config{IDKey: idtag.StaticKey(idKey), Secrets: []string{"whsk_c2hvcnQ="}, Egress: loopback}); err == nil ||
		strings.Contains(err.Error(), "c2hvcnQ") {
		t.Fatalf("a short whsk_ key: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// An attack on the other tenants of a shared receiver host (hooks.slack.com and
// discord.com take every customer's webhooks, and limit each URL by itself): a
// producer floods its own endpoint there until it answers 429. That endpoint's
// circuit opens, not the host's: another tenant's URL on the host is still sent. A
// host that does not answer at all (503 on every path) is held whole, as before.
func TestAFloodedEndpointDoesNotHoldItsHostsOtherTenants(t *testing.T) {
	t.Parallel()
	shared := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/services/flooded" {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer shared.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()
	s, err := webhook.New(webhook.Config{IDKey: idtag.StaticKey(idKey), Secrets: []string{newSecret(t)}, Egress: loopback, CircuitFailures: 3, CircuitCooldown: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	send := func(id int64, u string) error {
		_, err := s.Send(ctx, sender.Message{ID: id, Recipient: u, Payload: json.RawMessage(`{}`)})
		return err
	}
	for i := range 5 {
		send(int64(i), shared.URL+"/services/flooded")
	}
	if f := sendertest.WantClass(t, send(10, shared.URL+"/services/flooded"), sender.ClassRateLimited); f.Code != "circuit_open" {
		t.Fatalf("the flooded endpoint: code %q, want its circuit open", f.Code)
	}
	if err := send(11, shared.URL+"/services/other-tenant"); err != nil {
		t.Fatalf("another tenant of the host: %v", err)
	}
	for i := range 5 {
		send(int64(20+i), down.URL+"/a")
	}
	if f := sendertest.WantClass(t, send(30, down.URL+"/b"), sender.ClassRateLimited); f.Code != "circuit_open" {
		t.Fatalf("another URL of a host that does not answer: code %q, want the host's circuit open", f.Code)
	}
}

// Attack on the operator's records: a webhook URL's path or query is often the
// receiver's credential (Slack, Discord and Teams webhook URLs), and a failure's text
// is kept for workers and admins and sent to the ordered log's consumers in a dead
// event. Neither a receiver that does not answer, nor one that times out, nor an
// endpoint whose circuit a run of 429s opened puts the token in the error: it names
// the host.
func TestAFailureDoesNotNameTheURLsToken(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	block := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer slow.Close()
	defer close(block) // before Close, which waits for the handler
	flooded := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer flooded.Close()
	s, err := webhook.New(webhook.Config{IDKey: idtag.StaticKey(idKey), Secrets: []string{newSecret(t)}, Egress: loopback, Timeout: 200 * time.Millisecond,
		CircuitFailures: 2, CircuitCooldown: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	const token = "/services/T0ACME/B0HOOK/s3cr3tT0ken?key=s3cr3tK3y"
	var texts []string
	for i, base := range []string{"http://" + closed, slow.URL, flooded.URL, flooded.URL, flooded.URL} {
		_, err := s.Send(context.Background(), sender.Message{ID: int64(i), Recipient: base + token, Payload: json.RawMessage(`{}`)})
		if err == nil {
			t.Fatalf("%s: sent", base)
		}
		texts = append(texts, err.Error())
	}
	if !strings.Contains(texts[4], "circuit open") {
		t.Fatalf("the third 429: %q, want the endpoint's circuit open", texts[4])
	}
	for i, text := range texts {
		if strings.Contains(text, "s3cr3t") || strings.Contains(text, "B0HOOK") {
			t.Errorf("the error names the URL's token: %q", text)
		}
		if (i == 0 || i == 1 || i == 4) && !strings.Contains(text, "127.0.0.1") { // no answer, a timeout, the circuit
			t.Errorf("the error does not name the host: %q", text)
		}
	}
}

// Receivers' firewalls tell webhooks by their User-Agent: AWS WAF's Bot Control
// blocks HTTP libraries' own (Go-http-client), and others any generic one. Every
// request carries herald's, or the operator's brand when set; a User-Agent that is
// not one header line is refused at start.
func TestWebhooksSayWhoTheyAre(t *testing.T) {
	t.Parallel()
	agents := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agents <- r.Header.Get("User-Agent")
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	for _, c := range []struct{ set, want string }{{"", webhook.DefaultUserAgent}, {"Acme-Webhooks/2.0 (+https://acme.example/webhooks)", ""}} {
		s, err := webhook.New(webhook.Config{IDKey: idtag.StaticKey(idKey), Secrets: []string{newSecret(t)}, Egress: loopback, UserAgent: c.set})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Send(context.Background(), sender.Message{ID: 1, Recipient: srv.URL + "/hook", Payload: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if got, want := <-agents, cmp.Or(c.want, c.set); got != want {
			t.Fatalf("User-Agent %q, want %q", got, want)
		}
	}
	for _, bad := range []string{"Acme\r\nX-Injected: 1", strings.Repeat("a", 257), "Acmé/1"} {
		if _, err := webhook.New(webhook.Config{IDKey: idtag.StaticKey(idKey), Secrets: []string{newSecret(t)}, UserAgent: bad}); err == nil {
			t.Errorf("User-Agent %q taken", bad)
		}
	}
}

// The egress proxy's own trouble is the channel's, not a receiver's: a proxy that
// wants other credentials is configuration (code proxy_auth: the channel pauses, and
// the password is not in the error), one that is down or failing is transient and
// unavailable (the runner's outage count), one that is busy rate_limited with its
// Retry-After; none of them opens a receiver's circuit. A proxy that cannot reach the
// receiver (502) is that receiver's failure, counted towards its host's circuit, and
// a refusal (403) is egress_refused. With the right credentials the webhook goes
// through the proxy's tunnel.
func TestTheEgressProxysFailuresAreTheChannels(t *testing.T) {
	t.Parallel()
	receiver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close") // each send asks the proxy again
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	var answer atomic.Int64 // the proxy's status for the next CONNECT; 200 tunnels
	var tunnels atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte("herald:right"))
		switch code := int(answer.Load()); {
		case r.Method != http.MethodConnect:
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
		case r.Header.Get("Proxy-Authorization") != want:
			w.Header().Set("Proxy-Authenticate", `Basic realm="egress"`)
			w.WriteHeader(http.StatusProxyAuthRequired)
		case code == http.StatusTooManyRequests:
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(code)
		case code != http.StatusOK:
			w.WriteHeader(code)
		default:
			up, err := net.Dial("tcp", r.Host)
			if err != nil {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			tunnels.Add(1)
			w.WriteHeader(http.StatusOK)
			down, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				up.Close()
				return
			}
			go func() { _, _ = io.Copy(up, rw); up.Close() }()
			_, _ = io.Copy(down, up)
			down.Close()
		}
	}))
	defer proxy.Close()
	roots := x509.NewCertPool()
	roots.AddCert(receiver.Certificate())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://herald:right@" + ln.Addr().String()
	ln.Close()
	through := func(proxyURL string) *webhook.Sender {
		u, err := url.Parse(proxyURL)
		if err != nil {
			t.Fatal(err)
		}
		s, err := webhook.New(webhook.Config{IDKey: idtag.StaticKey(idKey), Secrets: []string{newSecret(t)}, RootCAs: roots,
			Egress: egress.Policy{Proxy: u}, CircuitFailures: 2, CircuitCooldown: time.Hour, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	send := func(s *webhook.Sender) *sender.Failure {
		_, err := s.Send(context.Background(), sender.Message{ID: 1, Recipient: receiver.URL + "/hook", Payload: json.RawMessage(`{}`)})
		if err == nil {
			return nil
		}
		return sender.Classify(err)
	}
	proxied := strings.Replace(proxy.URL, "http://", "http://herald:right@", 1)
	if f := send(through(strings.Replace(proxy.URL, "http://", "http://herald:wr0ng-pa55@", 1))); f == nil || f.Class != sender.ClassConfiguration ||
		f.Code != "proxy_auth" || f.Receiver || strings.Contains(f.Error(), "wr0ng-pa55") {
		t.Fatalf("wrong proxy credentials: %+v", f)
	}
	if f := send(through(down)); f == nil || f.Class != sender.ClassTransient || !f.Unavailable || f.Receiver {
		t.Fatalf("the proxy down: %+v", f)
	}
	s := through(proxied)
	for _, code := range []int64{http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusInternalServerError} {
		answer.Store(code)
		if f := send(s); f == nil || f.Class != sender.ClassTransient || !f.Unavailable || f.Receiver || f.Code != fmt.Sprint("proxy_", code) {
			t.Fatalf("the proxy answering %d: %+v", code, f)
		}
	}
	answer.Store(http.StatusTooManyRequests)
	if f := send(s); f == nil || f.Class != sender.ClassRateLimited || f.Receiver || time.Until(f.RetryAt) < 5*time.Second {
		t.Fatalf("the proxy busy: %+v", f)
	}
	answer.Store(http.StatusOK) // three failures of the proxy's in a row opened no circuit of the receiver's
	if f := send(s); f != nil || tunnels.Load() != 1 {
		t.Fatalf("through the proxy's tunnel: %+v (%d tunnels)", f, tunnels.Load())
	}
	answer.Store(http.StatusForbidden)
	if f := send(s); f == nil || f.Class != sender.ClassPermanent || f.Code != "egress_refused" || !f.Receiver {
		t.Fatalf("the proxy refusing the receiver: %+v", f)
	}
	answer.Store(http.StatusBadGateway)
	for i := range 3 { // the receiver unreachable: its host's circuit opens after two
		f := send(s)
		if f == nil || f.Class == sender.ClassPermanent || !f.Receiver || (i == 2) != f.Held {
			t.Fatalf("the receiver unreachable, send %d: %+v", i+1, f)
		}
	}
}
