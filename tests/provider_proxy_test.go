package tests

import (
	"encoding/base64"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald/herald/runner/sender/sendertest"
	"github.com/herald/herald/tests/testdb"
)

// forwardProxy is the forward proxy of a network whose only way out it is: CONNECT
// tunnels for https, with Basic credentials (407 without them), to the hosts it
// allows (403 for the others). It stands in for DNS too: every host is 127.0.0.1,
// where the providers listen under their public names.
type forwardProxy struct {
	URL     string // with the credentials
	mu      sync.Mutex
	asked   []string        // host:port of each CONNECT with the credentials
	refused map[string]bool // host names answered 403
}

func startForwardProxy(t *testing.T, user, password string) *forwardProxy {
	t.Helper()
	p := &forwardProxy{refused: map[string]bool{}}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		if r.Header.Get("Proxy-Authorization") != want {
			w.Header().Set("Proxy-Authenticate", `Basic realm="egress"`)
			w.WriteHeader(http.StatusProxyAuthRequired)
			return
		}
		host, port, _ := net.SplitHostPort(r.Host)
		p.mu.Lock()
		p.asked = append(p.asked, r.Host)
		refused := p.refused[host]
		p.mu.Unlock()
		if refused {
			http.Error(w, "destination not allowed", http.StatusForbidden)
			return
		}
		upstream, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			upstream.Close()
			return
		}
		go func() { _, _ = io.Copy(upstream, buf); upstream.Close() }()
		go func() { _, _ = io.Copy(conn, upstream); conn.Close() }()
	}))
	t.Cleanup(srv.Close)
	p.URL = strings.Replace(srv.URL, "http://", "http://"+user+":"+password+"@", 1)
	return p
}

func (p *forwardProxy) refuse(host string, refused bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refused[host] = refused
}

func (p *forwardProxy) hosts() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, h := range p.asked {
		if name, _, _ := net.SplitHostPort(h); !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return strings.Join(out, " ")
}

// overTLS serves a provider stand-in's handler over https as host (a name under
// example.com, which the test certificate names); the URL and the CA file to trust.
func overTLS(t *testing.T, fake *httptest.Server, host string) (string, string) {
	t.Helper()
	srv := httptest.NewUnstartedServer(fake.Config.Handler)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return "https://" + host + ":" + port, ca
}

// A runner in a network whose only way out is a forward proxy reaches its providers
// through the proxy the environment names (HTTPS_PROXY, as every HTTP client reads
// it): SendGrid and Twilio by CONNECT with the proxy's credentials, their
// certificates still checked end to end. When the proxy refuses a provider's host
// (403, a missing allow rule), that is the channel's configuration, not the message's
// nor a provider outage: the channel pauses with the code proxy, the message's
// attempt is given back, and once the rule is added the probe finds the provider
// again and the message goes out (Amazon SES, whose SDK sends through herald's
// client). The proxy's password is in no log or stored error.
func TestProvidersThroughTheEnvironmentsProxy(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	proxy := startForwardProxy(t, "herald", "pr0xy-s3cret")
	sg, ca := overTLS(t, sendertest.FakeSendGrid(t), "sendgrid.example.com")
	twFake, rec := sendertest.FakeTwilio(t)
	tw, _ := overTLS(t, twFake, "twilio.example.com")
	mailID := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'ana@example.net', $1::jsonb)`, string(sendertest.EmailMessage(0, "").Payload))
	smsID := scalar[int64](t, pool, `SELECT herald.enqueue('sms', '+14155550100', '{"text":"Your code is 123456"}')`)
	cmd, logs := runnerProcess(t, dbURL, "HTTPS_PROXY="+proxy.URL, "NO_PROXY=",
		"HERALD_SENDER_EMAIL=sendgrid", "HERALD_SENDGRID_URL="+sg, "HERALD_SENDGRID_CA_FILE="+ca, "HERALD_SENDGRID_API_KEY=SG.test-key",
		"HERALD_EMAIL_FROM=Herald <noreply@example.com>",
		"HERALD_SENDER_SMS=twilio", "HERALD_TWILIO_URL="+tw, "HERALD_TWILIO_CA_FILE="+ca, "HERALD_TWILIO_ACCOUNT_SID=AC0123",
		"HERALD_TWILIO_AUTH_TOKEN=tw-token", "HERALD_TWILIO_FROM=+15005550006", "HERALD_POLL_INTERVAL=100ms")
	eventually(t, 30*time.Second, "both sent", func() bool {
		return countWhere(t, pool, `id IN ($1, $2) AND status = 'sent'`, mailID, smsID) == 2
	})
	if h := proxy.hosts(); h != "sendgrid.example.com twilio.example.com" && h != "twilio.example.com sendgrid.example.com" {
		t.Fatalf("the proxy was asked for %q, want both providers' hosts", h)
	}
	if n := len(rec.Forms()); n != 1 {
		t.Fatalf("Twilio got %d requests through the proxy", n)
	}
	waitExit(t, cmd, logs, 15*time.Second)
	out := logs.String()

	// The proxy refuses SES's host until the rule is added.
	ses, reqs := sendertest.FakeSES(t)
	sesURL, _ := overTLS(t, ses, "ses.example.com")
	proxy.refuse("ses.example.com", true)
	none := filepath.Join(t.TempDir(), "none")
	id := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'bo@example.net', '{"subject":"Your code","text":"123456"}')`)
	cmd, logs = runnerProcess(t, dbURL, "HTTPS_PROXY="+proxy.URL, "NO_PROXY=",
		"AWS_ACCESS_KEY_ID="+sendertest.SESAccessKey, "AWS_SECRET_ACCESS_KEY="+sendertest.SESSecretKey,
		"AWS_CONFIG_FILE="+none, "AWS_SHARED_CREDENTIALS_FILE="+none, "AWS_EC2_METADATA_DISABLED=true",
		"HERALD_SENDER_EMAIL=ses", "HERALD_SES_REGION="+sendertest.SESRegion, "HERALD_SES_URL="+sesURL, "HERALD_SES_CA_FILE="+ca,
		"HERALD_EMAIL_FROM=noreply@example.com", "HERALD_START_CHECK=off", "HERALD_POLL_INTERVAL=100ms", "HERALD_PROBE_INTERVAL=200ms")
	eventually(t, 30*time.Second, "the channel paused for the proxy", func() bool {
		return scalar[string](t, pool, `SELECT coalesce(paused_reason, '') FROM herald.channels WHERE name = 'email'`) != ""
	})
	if s := scalar[string](t, pool, `SELECT status || ' ' || attempts || ' ' || coalesce(last_error_code, '') FROM herald.messages WHERE id = $1`, id); s != "queued 0 proxy" {
		t.Fatalf("the message after the proxy refused the provider: %q, want queued, no attempt spent, code proxy\n%s", s, logs.String())
	}
	if reason := scalar[string](t, pool, `SELECT paused_reason FROM herald.channels WHERE name = 'email'`); !strings.Contains(reason, "ses.example.com") {
		t.Fatalf("the pause's reason %q does not name the refused host", reason)
	}
	proxy.refuse("ses.example.com", false)
	eventually(t, 30*time.Second, "the message sent once the proxy allows SES", func() bool {
		return countWhere(t, pool, `id = $1 AND status = 'sent'`, id) == 1
	})
	if len(reqs.Sent()) != 1 {
		t.Fatalf("SES got %d messages", len(reqs.Sent()))
	}
	waitExit(t, cmd, logs, 15*time.Second)
	stored := scalar[string](t, pool, `SELECT coalesce(string_agg(errors::text || coalesce(paused_reason, ''), ''), '') FROM herald.messages, herald.channels`)
	for where, text := range map[string]string{"the logs": out + logs.String(), "the database": stored} {
		if strings.Contains(text, "pr0xy-s3cret") {
			t.Fatalf("the proxy's password is in %s", where)
		}
	}
}
