package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald/herald/runner"
	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/email"
	"github.com/herald/herald/runner/sender/sendertest"
	"github.com/herald/herald/runner/sender/sendgrid"
	"github.com/herald/herald/tests/testdb"
)

// A configuration failure reported to herald.fail gives the attempt back, queues the
// message unharmed and pauses its channel in SQL (by runner, with the error as
// reason): no message of the channel is claimed, by any runner, until a probe
// (resume by runner) or an operator resumes it. queue_stats shows the pause.
func TestConfigurationFailurePausesTheChannel(t *testing.T) {
	ctx, pool := setup(t)
	a := enqueueEmail(t, pool, "a@example.com")
	b := enqueueEmail(t, pool, "b@example.com")
	cs := claim(t, pool, 1, t0)
	if len(cs) != 1 || cs[0].ID != a {
		t.Fatalf("claim: %+v", cs)
	}
	if n := scalar[int32](t, pool, `SELECT herald.fail($1::bigint[], $2::bigint[], ARRAY['HTTP 401: the API key is revoked'],
		ARRAY['configuration'], error_codes => ARRAY['401'], now => $3)`, []int64{a}, []int64{cs[0].Token}, t0); n != 1 {
		t.Fatalf("fail changed %d", n)
	}
	var status, class, reason, by string
	var attempts int32
	if err := pool.QueryRow(ctx, `SELECT m.status, m.attempts, m.last_error_class, c.paused_reason, c.paused_by
		FROM herald.messages m JOIN herald.channels c ON c.name = m.channel WHERE m.id = $1`, a).
		Scan(&status, &attempts, &class, &reason, &by); err != nil {
		t.Fatal(err)
	}
	if status != "queued" || attempts != 0 || class != "configuration" || !strings.Contains(reason, "revoked") || by != "runner" {
		t.Fatalf("after a configuration failure: %s, %d attempts, %s; channel paused by %s: %q", status, attempts, class, by, reason)
	}
	if got := claim(t, pool, 10, t0.Add(time.Minute)); len(got) != 0 {
		t.Fatalf("a paused channel handed out %d messages", len(got))
	}
	if !scalar[bool](t, pool, `SELECT bool_and(paused) FROM herald.queue_stats WHERE channel = 'email'`) {
		t.Fatal("queue_stats does not show the pause")
	}
	// The probe resumes a runner's pause; the messages come out, the attempt unused.
	worker := loginPool(t, pool, "pause_worker", "herald_worker")
	if !scalar[bool](t, worker, `SELECT herald.resume_channel('email', by => 'runner')`) {
		t.Fatal("a worker's probe could not resume a runner's pause")
	}
	got := claim(t, pool, 10, t0.Add(time.Minute))
	if len(got) != 2 || got[0].Attempt != 1 {
		t.Fatalf("after resume: %+v (a %d, b %d)", got, a, b)
	}
}

// Who may pause and resume: an operator's pause (herald_admin) is ended only by an
// operator; a worker pauses and resumes as runner only; a runner's pause does not
// replace an operator's; unknown channels and bad arguments are named.
func TestPauseAndResumeRules(t *testing.T) {
	ctx, pool := setup(t)
	worker := loginPool(t, pool, "pause_rules_worker", "herald_worker")
	if !scalar[bool](t, pool, `SELECT herald.pause_channel('email', 'provider maintenance until 14:00')`) {
		t.Fatal("operator pause did not change the channel")
	}
	if scalar[bool](t, worker, `SELECT herald.pause_channel('email', 'SMTP 535', by => 'runner')`) {
		t.Fatal("a runner's pause replaced an operator's")
	}
	if scalar[bool](t, worker, `SELECT herald.resume_channel('email', by => 'runner')`) {
		t.Fatal("a probe ended an operator's pause")
	}
	if r := scalar[string](t, pool, `SELECT paused_by || ': ' || paused_reason FROM herald.channels WHERE name = 'email'`); r != "operator: provider maintenance until 14:00" {
		t.Fatalf("pause: %s", r)
	}
	_, err := worker.Exec(ctx, `SELECT herald.resume_channel('email')`)
	wantPgError(t, err, "42501", "by")
	_, err = worker.Exec(ctx, `SELECT herald.pause_channel('sms', 'x', by => 'operator')`)
	wantPgError(t, err, "42501", "by")
	_, err = pool.Exec(ctx, `SELECT herald.pause_channel('nope', 'x')`)
	wantPgError(t, err, "22V01", "channel")
	_, err = pool.Exec(ctx, `SELECT herald.pause_channel('sms', 'x', by => 'me')`)
	wantPgError(t, err, "22V12", "by")
	if !scalar[bool](t, pool, `SELECT herald.resume_channel('email')`) {
		t.Fatal("operator could not resume")
	}
	if scalar[bool](t, pool, `SELECT paused OR paused_reason IS NOT NULL OR paused_by IS NOT NULL FROM herald.channels WHERE name = 'email'`) {
		t.Fatal("resume left the pause's reason behind")
	}
	// A producer may do neither.
	producer := loginPool(t, pool, "pause_rules_producer", "herald_producer")
	_, err = producer.Exec(ctx, `SELECT herald.pause_channel('email', 'x', by => 'runner')`)
	wantPgError(t, err, "42501", "")
}

// revocableProvider is a SendGrid stand-in whose key can be revoked and restored:
// /v3/scopes and /v3/mail/send answer 401 while it is revoked. Its one verified
// sender identity is noreply@example.com: mail from any other gets SendGrid's 403.
type revocableProvider struct {
	revoked atomic.Bool
	sends   atomic.Int64 // mail/send requests that arrived while the key was good
	tries   atomic.Int64 // mail/send requests that arrived while it was revoked
	refused atomic.Int64 // mail/send requests refused for their from
}

func (p *revocableProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.revoked.Load() {
		if r.URL.Path == "/v3/mail/send" {
			p.tries.Add(1)
		}
		w.WriteHeader(401)
		io.WriteString(w, `{"errors":[{"field":null,"message":"The provided authorization grant is invalid, expired, or revoked"}]}`)
		return
	}
	switch r.URL.Path {
	case "/v3/scopes":
		io.WriteString(w, `{"scopes":["mail.send"]}`)
	case "/v3/mail/send":
		var req struct {
			From struct{ Email string } `json:"from"`
		}
		if json.NewDecoder(r.Body).Decode(&req) != nil || req.From.Email != "noreply@example.com" {
			p.refused.Add(1)
			w.WriteHeader(403)
			io.WriteString(w, `{"errors":[{"message":"The from address does not match a verified Sender Identity. Mail cannot be sent until this error is resolved.","field":"from","help":null}]}`)
			return
		}
		n := p.sends.Add(1)
		w.Header().Set("X-Message-Id", fmt.Sprintf("sg-%d", n))
		w.WriteHeader(202)
	default:
		w.WriteHeader(404)
	}
}

// sendGridStandIn serves a revocableProvider (revoked or not) and returns it with a
// SendGrid sender pointed at it whose channel From is from.
func sendGridStandIn(t *testing.T, from string, revoked bool) (*revocableProvider, sender.Sender) {
	t.Helper()
	prov := &revocableProvider{}
	prov.revoked.Store(revoked)
	srv := httptest.NewServer(prov)
	t.Cleanup(srv.Close)
	sg, err := sendgrid.New(sendgrid.Config{APIKey: "SG.key", BaseURL: srv.URL, Defaults: email.Defaults{From: from}})
	if err != nil {
		t.Fatal(err)
	}
	return prov, sg
}

// A revoked key never costs a message: the start check pauses the channel before
// anything is claimed (no send is tried), the probe resumes it once the key works,
// and a key revoked while running pauses the channel again with every message
// queued and its attempt given back. Nothing is dead-lettered.
func TestRevokedKeyPausesTheChannelNotTheMail(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	prov, sg := sendGridStandIn(t, "noreply@example.com", true)
	enqueueMany(t, pool, 20, "email")
	startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"email": sg}, ProbeInterval: 100 * time.Millisecond,
		PollInterval: 50 * time.Millisecond})
	eventually(t, 20*time.Second, "the start check to pause the channel", func() bool {
		return scalar[bool](t, pool, `SELECT paused AND paused_by = 'runner' FROM herald.channels WHERE name = 'email'`)
	})
	if n := prov.tries.Load(); n != 0 {
		t.Fatalf("%d sends tried with a key the start check found revoked", n)
	}
	prov.revoked.Store(false)
	eventually(t, 20*time.Second, "the probe to resume and the 20 messages to go out", func() bool {
		return countWhere(t, pool, `status = 'sent'`) == 20
	})
	if n := prov.sends.Load(); n != 20 {
		t.Fatalf("%d sends for 20 messages", n)
	}

	prov.revoked.Store(true)
	enqueueMany(t, pool, 5, "email")
	eventually(t, 20*time.Second, "a revoked key to pause the channel again", func() bool {
		return scalar[bool](t, pool, `SELECT paused FROM herald.channels WHERE name = 'email'`) &&
			countWhere(t, pool, `status = 'queued'`) == 5
	})
	if n := countWhere(t, pool, `status = 'queued' AND attempts = 0 AND last_error_class = 'configuration'`); n < 1 {
		t.Fatalf("no message carries the configuration failure")
	}
	if n := countWhere(t, pool, `status <> 'queued' AND status <> 'sent' OR attempts > 1`); n != 0 {
		t.Fatalf("%d messages harmed by the revoked key", n)
	}
	prov.revoked.Store(false)
	eventually(t, 20*time.Second, "all 25 sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 25 })
}

// A producer granted a domain (herald.producers.senders) cannot stop the channel with
// a from its provider has not verified: SendGrid's 403 for that from dead-letters that
// message alone, asked once, and the other producers' mail goes out with the channel
// never paused. (A 403 for the channel's own From pauses it: the runner's setup.)
func TestProducersUnverifiedFromFailsOnlyItsMessage(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	mallory := loginPool(t, pool, "unverified_from_mallory", "herald_producer")
	grantSenders(t, pool, "unverified_from_mallory", "example.com")
	bad := scalar[int64](t, mallory, `SELECT herald.enqueue('email', 'ana@example.net', '{"subject":"s","text":"t","from":"CEO <ceo@example.com>"}')`)
	enqueueMany(t, pool, 20, "email")
	prov, sg := sendGridStandIn(t, "Herald <noreply@example.com>", false)
	startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"email": sg}, ProbeInterval: 50 * time.Millisecond,
		PollInterval: 50 * time.Millisecond})
	eventually(t, 20*time.Second, "20 sent and the unverified from's message dead", func() bool {
		return countWhere(t, pool, `status = 'sent'`) == 20 && countWhere(t, pool, `status = 'dead'`) == 1
	})
	var status, class, code string
	if err := pool.QueryRow(t.Context(), `SELECT status, last_error_class, last_error_code FROM herald.messages WHERE id = $1`, bad).
		Scan(&status, &class, &code); err != nil {
		t.Fatal(err)
	}
	if status != "dead" || class != "permanent" || code != "403" {
		t.Fatalf("the unverified from's message: %s, %s, code %s", status, class, code)
	}
	if n := prov.refused.Load(); n != 1 {
		t.Fatalf("SendGrid was asked %d times for the unverified from, want once", n)
	}
	if scalar[bool](t, pool, `SELECT paused FROM herald.channels WHERE name = 'email'`) {
		t.Fatal("the channel is paused")
	}
}

// StartCheck refuse: Run returns ErrConfiguration before claiming anything; herald
// check says which channel failed and why, exits 1, and prints no key.
func TestStartCheckRefuseAndHeraldCheck(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	_, sg := sendGridStandIn(t, "noreply@example.com", true)
	enqueueMany(t, pool, 3, "email")
	r, err := runner.New(pool, runner.Config{Senders: map[string]sender.Sender{"email": sg}, StartCheck: runner.StartCheckRefuse,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(t.Context()); !errors.Is(err, runner.ErrConfiguration) {
		t.Fatalf("Run: %v, want ErrConfiguration", err)
	}
	if n := countWhere(t, pool, `status = 'queued' AND attempts = 0`); n != 3 {
		t.Fatalf("%d of 3 messages untouched", n)
	}

	sgFake := sendertest.FakeSendGrid(t)
	check := func(key string) (int, string) {
		cmd := exec.Command(buildHerald(t), "check")
		cmd.Env = append(os.Environ(), "HERALD_SENDER_EMAIL=sendgrid", "HERALD_SENDGRID_API_KEY="+key, "HERALD_SENDGRID_URL="+sgFake.URL,
			"HERALD_EMAIL_FROM=noreply@example.com", "HERALD_SENDER_LOG=sink:-")
		out, err := cmd.CombinedOutput()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}
	if code, out := check("SG.test-key"); code != 0 || !strings.Contains(out, "email  sendgrid  ok") {
		t.Fatalf("herald check with a good key: exit %d\n%s", code, out)
	}
	code, out := check("SG.read-only")
	if code != 1 || !strings.Contains(out, "email  sendgrid  FAIL  configuration") || !strings.Contains(out, "mail.send") ||
		!strings.Contains(out, "log    sink      ok") || strings.Contains(out, "SG.read-only") {
		t.Fatalf("herald check with a key lacking mail.send: exit %d\n%s", code, out)
	}
}
