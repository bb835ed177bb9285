package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald/herald/runner"
	"github.com/herald/herald/runner/idtag"
	"github.com/herald/herald/runner/intake"
	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/email"
	"github.com/herald/herald/runner/sender/sendertest"
	"github.com/herald/herald/runner/sender/sendgrid"
	smtpsender "github.com/herald/herald/runner/sender/smtp"
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

// A spent quota (class quota) is the channel's: herald.fail gives the attempt back,
// queues the message at retry_at or after the channel's quota_wait, and pauses the
// channel by runner until then, for every runner. No runner ends it earlier (a
// worker's probe is refused, and so is a worker's forged clock); an operator may.
// A configuration failure in the same call wins (no end); bad arguments are named.
func TestQuotaPausesTheChannelForItsWait(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `UPDATE herald.channels SET quota_wait = '2 hours' WHERE name = 'email'`)
	a := enqueueEmail(t, pool, "a@example.com")
	enqueueEmail(t, pool, "b@example.com")
	cs := claim(t, pool, 1, t0)
	mustExec(t, pool, `SELECT herald.fail($1::bigint[], $2::bigint[], ARRAY['454 Throttling failure: Daily message quota exceeded.'],
		ARRAY['quota'], error_codes => ARRAY['454'], now => $3)`, []int64{a}, []int64{cs[0].Token}, t0)
	var status, class string
	var attempts int32
	var runAt, until time.Time
	if err := pool.QueryRow(ctx, `SELECT m.status, m.attempts, m.last_error_class, m.run_at, c.paused_until
		FROM herald.messages m JOIN herald.channels c ON c.name = m.channel WHERE m.id = $1`, a).
		Scan(&status, &attempts, &class, &runAt, &until); err != nil {
		t.Fatal(err)
	}
	if status != "queued" || attempts != 0 || class != "quota" || !runAt.Equal(t0.Add(2*time.Hour)) || !until.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("after a quota failure: %s, %d attempts, %s, run_at %v; channel paused until %v", status, attempts, class, runAt, until)
	}
	if got := claim(t, pool, 10, t0.Add(time.Hour)); len(got) != 0 {
		t.Fatalf("a channel out of quota handed out %d messages", len(got))
	}
	worker := loginPool(t, pool, "quota_worker", "herald_worker")
	if scalar[bool](t, worker, `SELECT herald.resume_channel('email', by => 'runner')`) { // the real clock is before t0
		t.Fatal("a probe ended a quota pause before its end")
	}
	_, err := worker.Exec(ctx, `SELECT herald.resume_channel('email', by => 'runner', now => $1)`, t0.Add(3*time.Hour))
	wantPgError(t, err, "42501", "now")
	if scalar[bool](t, pool, `SELECT herald.resume_channel('email', by => 'runner', now => $1)`, t0.Add(time.Hour)) {
		t.Fatal("a runner's resume an hour early ended the pause")
	}
	if !scalar[bool](t, pool, `SELECT herald.resume_channel('email', by => 'runner', now => $1)`, t0.Add(2*time.Hour)) {
		t.Fatal("a runner's resume at the pause's end did not end it")
	}
	if got := claim(t, pool, 10, t0.Add(2*time.Hour)); len(got) != 2 {
		t.Fatalf("after the wait: %d claimed, want both", len(got))
	}

	// retry_at, when the provider says when, is the pause's end; an operator may end
	// it sooner; a configuration failure in the same call pauses without an end.
	ids := scalar[[]int64](t, pool, `SELECT array_agg(id ORDER BY id) FROM herald.messages`)
	tokens := scalar[[]int64](t, pool, `SELECT array_agg(lease_token ORDER BY id) FROM herald.messages`)
	later := t0.Add(2*time.Hour + 30*time.Minute)
	mustExec(t, pool, `SELECT herald.fail($1::bigint[], $2::bigint[], ARRAY['quota', 'quota'], ARRAY['quota', 'quota'],
		retry_at => ARRAY[$3::timestamptz, NULL], now => $4)`, ids, tokens, later, t0.Add(2*time.Hour))
	if got := scalar[time.Time](t, pool, `SELECT paused_until FROM herald.channels WHERE name = 'email'`); !got.Equal(t0.Add(4 * time.Hour)) {
		t.Fatalf("paused until %v, want the later of retry_at and the wait (%v)", got, t0.Add(4*time.Hour))
	}
	if !scalar[bool](t, pool, `SELECT herald.resume_channel('email')`) {
		t.Fatal("an operator could not end a quota pause")
	}
	cs = claim(t, pool, 10, t0.Add(5*time.Hour))
	mustExec(t, pool, `SELECT herald.fail($1::bigint[], $2::bigint[], ARRAY['quota', 'HTTP 401'], ARRAY['quota', 'configuration'], now => $3)`,
		[]int64{cs[0].ID, cs[1].ID}, []int64{cs[0].Token, cs[1].Token}, t0.Add(5*time.Hour))
	if s := scalar[string](t, pool, `SELECT paused_by || ' ' || coalesce(paused_until::text, 'no end') FROM herald.channels WHERE name = 'email'`); s != "runner no end" {
		t.Fatalf("quota and configuration in one call: paused %s, want by runner with no end", s)
	}

	for _, c := range []struct{ sql, field string }{
		{`SELECT herald.pause_channel('sms', 'x', by => 'runner', until => now() - interval '1 second')`, "until"},
		{`SELECT herald.pause_channel('sms', 'x', until => now() + interval '1 hour')`, "until"},
		{`UPDATE herald.channels SET quota_wait = '2 days' WHERE name = 'sms'`, ""},
	} {
		_, err := pool.Exec(ctx, c.sql)
		if c.field == "" {
			wantPgError(t, err, "23514", "")
		} else {
			wantPgError(t, err, "22V12", c.field)
		}
	}
}

// One refusal for a spent quota stops the channel, not each message in turn: an SMTP
// relay answering SES's daily-quota reply is asked only for the sends under way when
// the first refusal came (the runner holds the channel at once, before its report
// lands: a loaded machine had it claim and try 140 of 200 in between), the rest of
// the backlog is never tried, none loses an attempt; after the channel's quota_wait
// the probe resumes it and everything goes out, no message before the pause's end.
func TestSpentQuotaStopsTheChannel(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	// Long enough that the probe cannot resume the channel between the pause and the
	// checks below on a loaded machine (2 seconds did once).
	mustExec(t, pool, `UPDATE herald.channels SET quota_wait = '10 seconds' WHERE name = 'email'`)
	const n, batch = 200, 5
	enqueueMany(t, pool, n, "email")
	srv := sendertest.StartSMTP(t, true)
	for i := 1; i <= n; i++ {
		srv.Reply(fmt.Sprintf("u%d", i), 454, "", "Throttling failure: Daily message quota exceeded.")
	}
	s, err := smtpsender.New(sendertest.SMTPConfig(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"email": s}, BatchSize: batch, Concurrency: batch,
		ProbeInterval: 50 * time.Millisecond, PollInterval: 50 * time.Millisecond})
	var until time.Time
	var unused, quota int64 // read with the pause, in one snapshot
	eventually(t, 20*time.Second, "the quota to pause the channel", func() bool {
		return pool.QueryRow(t.Context(), `SELECT paused_until,
			  (SELECT count(*) FROM herald.messages WHERE status = 'queued' AND attempts = 0),
			  (SELECT count(*) FROM herald.messages WHERE last_error_class = 'quota')
			FROM herald.channels
			WHERE name = 'email' AND paused_by = 'runner' AND paused_until IS NOT NULL
			  AND NOT EXISTS (SELECT FROM herald.messages WHERE status = 'processing')`).Scan(&until, &unused, &quota) == nil
	})
	tried := len(srv.Rcpts())
	if tried == 0 || tried > batch {
		t.Fatalf("the relay was asked for %d of %d recipients before the channel stopped, want 1..%d (the sends under way at the first refusal)", tried, n, batch)
	}
	if unused != n {
		odd := scalar[string](t, pool, `SELECT string_agg(concat_ws(' ', id, status, attempts, last_error_class, last_error_code, last_error), '; ')
			FROM herald.messages WHERE NOT (status = 'queued' AND attempts = 0)`)
		t.Fatalf("%d of %d messages queued with their attempt unused; the others now: %s", unused, n, odd)
	}
	if quota != int64(tried) {
		t.Fatalf("%d messages carry the quota failure, %d were tried", quota, tried)
	}
	for i := 1; i <= n; i++ {
		srv.Accept(fmt.Sprintf("u%d", i))
	}
	eventually(t, 30*time.Second, "all sent after the wait", func() bool { return countWhere(t, pool, `status = 'sent'`) == n })
	if first := scalar[time.Time](t, pool, `SELECT min(finished_at) FROM herald.messages`); first.Before(until) {
		t.Fatalf("a message went out at %v, before the pause's end %v", first, until)
	}
	if got := len(srv.Rcpts()); got != tried+n {
		t.Fatalf("%d recipients asked in all, want %d (the refused ones once more)", got, tried+n)
	}
}

// A fault the probe does not see (a provider that refuses only at the send) would
// pause and resume the channel at every probe: a runner's pause within backoff_max
// of a runner's resume is a relapse, and no runner may end it before backoff_base *
// 2^relapses (at most backoff_max) has passed. A pause long after the last resume,
// and an operator's resume, start again from none.
func TestRelapsedPausesWaitLonger(t *testing.T) {
	_, pool := setup(t)
	mustExec(t, pool, `UPDATE herald.channels SET backoff_base = '10 seconds', backoff_max = '1 minute' WHERE name = 'email'`)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	pause := func(now time.Time) string {
		t.Helper()
		mustExec(t, pool, `SELECT herald.pause_channel('email', 'HTTP 403: the From is not verified', by => 'runner', now => $1)`, now)
		return scalar[string](t, pool, `SELECT pause_relapses || ' ' || coalesce(to_char(paused_until - $1::timestamptz, 'MI:SS'), 'probe')
			FROM herald.channels WHERE name = 'email'`, now)
	}
	resume := func(now time.Time) bool {
		t.Helper()
		return scalar[bool](t, pool, `SELECT herald.resume_channel('email', by => 'runner', now => $1)`, now)
	}
	if got := pause(t0); got != "0 probe" {
		t.Fatalf("a first pause: %s, want no relapse and a probe at once", got)
	}
	if !resume(at(time.Minute)) {
		t.Fatal("the probe could not resume a first pause")
	}
	resumed := at(time.Minute)
	for i, want := range []string{"1 00:20", "2 00:40", "3 01:00", "4 01:00"} {
		paused := resumed.Add(30 * time.Second) // the next send finds the fault again
		if got := pause(paused); got != want {
			t.Fatalf("relapse %d: %s, want %s (relapses, wait)", i+1, got, want)
		}
		if resume(paused.Add(10 * time.Second)) {
			t.Fatalf("relapse %d: a probe ended the pause before its wait", i+1)
		}
		resumed = paused.Add(time.Minute)
		if !resume(resumed) {
			t.Fatalf("relapse %d: the probe could not resume after the wait", i+1)
		}
	}
	if got := pause(at(3 * time.Hour)); got != "0 probe" {
		t.Fatalf("a pause two hours after the last resume: %s, want none", got)
	}
	mustExec(t, pool, `SELECT herald.resume_channel('email', by => 'runner', now => $1)`, at(3*time.Hour+time.Minute))
	pause(at(3*time.Hour + 2*time.Minute))
	mustExec(t, pool, `SELECT herald.resume_channel('email')`)
	if got := scalar[string](t, pool, `SELECT pause_relapses || ' ' || coalesce(resumed_at::text, 'none') FROM herald.channels WHERE name = 'email'`); got != "0 none" {
		t.Fatalf("after an operator's resume: %s", got)
	}
}

// revocableProvider is a SendGrid stand-in whose key can be revoked and restored:
// /v3/scopes and /v3/mail/send answer 401 while it is revoked, or, when key is set,
// to any other key. Its one verified sender identity is noreply@example.com: mail
// from any other gets SendGrid's 403.
type revocableProvider struct {
	revoked atomic.Bool
	key     atomic.Value // the one API key taken, when set (a string)
	sends   atomic.Int64 // mail/send requests that arrived while the key was good
	tries   atomic.Int64 // mail/send requests that arrived while it was revoked
	refused atomic.Int64 // mail/send requests refused for their from
}

func (p *revocableProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, keyed := p.key.Load().(string)
	if p.revoked.Load() || keyed && r.Header.Get("Authorization") != "Bearer "+key {
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
	sg, err := sendgrid.New(sendgrid.Config{APIKey: "SG.key", BaseURL: srv.URL, Defaults: email.Defaults{MessageIDKey: idtag.StaticKey(sendertest.MessageIDKey), From: from}})
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
	// The second revocation comes soon after the probe's resume: a relapse, whose wait
	// starts at backoff_base.
	mustExec(t, pool, `UPDATE herald.channels SET backoff_base = '100 milliseconds' WHERE name = 'email'`)
	const conc = 4
	startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"email": sg}, ProbeInterval: 100 * time.Millisecond,
		PollInterval: 50 * time.Millisecond, BatchSize: conc, Concurrency: conc})
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

	// Revoked under a backlog: the runner stops the channel at the first 401, so only
	// the sends under way then are tried (not a claim after claim until the report).
	prov.revoked.Store(true)
	enqueueMany(t, pool, 50, "email")
	eventually(t, 20*time.Second, "a revoked key to pause the channel again", func() bool {
		return scalar[bool](t, pool, `SELECT paused FROM herald.channels WHERE name = 'email'`) &&
			countWhere(t, pool, `status = 'queued'`) == 50
	})
	if n := prov.tries.Load(); n < 1 || n > conc {
		t.Fatalf("%d sends of 50 tried with the revoked key, want 1..%d (those under way at the first refusal)", n, conc)
	}
	if n := countWhere(t, pool, `status = 'queued' AND attempts = 0 AND last_error_class = 'configuration'`); n < 1 {
		t.Fatalf("no message carries the configuration failure")
	}
	if n := countWhere(t, pool, `status <> 'queued' AND status <> 'sent' OR attempts > 1`); n != 0 {
		t.Fatalf("%d messages harmed by the revoked key", n)
	}
	prov.revoked.Store(false)
	eventually(t, 20*time.Second, "all 70 sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 70 })
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
		return runCommand(t, buildHerald(t), []string{"check"}, "", "HERALD_SENDER_EMAIL=sendgrid", "HERALD_SENDGRID_API_KEY="+key,
			"HERALD_SENDGRID_URL="+sgFake.URL, "HERALD_EMAIL_FROM=noreply@example.com", "HERALD_SENDER_LOG=sink:-")
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

// A channel's quiet hours (21:00 to 08:00 in Europe/Berlin here): claims hand out none
// of its messages then, new or retried, while other channels go on; at 08:00 local
// time they go out. Hours within a day (12:00 to 13:00) work the same, and so do quiet
// days (Sundays in Paris, midnight to midnight); a half-set pair, a zone that is not an
// IANA name (POSIX, abbreviations, unknown: 22V19 quiet_zone) or a
// list of days that is not 1 to 6 of the ISO days 1..7 is refused when written.
func TestQuietHoursHoldAChannel(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, quiet_from, quiet_until, quiet_zone, backoff_base)
		VALUES ('promo', 'sms', '21:00', '08:00', 'Europe/Berlin', '1 minute'), ('lunch', 'sms', '12:00', '13:00', 'UTC', '1 minute')`)
	at := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	evening := at("2030-01-15T20:58:00+01:00") // Berlin, before the quiet hours
	enq := func(channel string, when time.Time) int64 {
		t.Helper()
		return scalar[int64](t, pool, `SELECT herald.enqueue($1, '+4915112345678', '{"text":"sale"}', now => $2)`, channel, when)
	}
	promo := enq("promo", evening)
	other := enq("sms", evening)
	// 20:58: the promo goes out and fails for now, to retry a minute later.
	cs := claim(t, pool, 10, evening)
	if len(cs) != 2 {
		t.Fatalf("before the quiet hours: claimed %d, want 2", len(cs))
	}
	for _, c := range cs {
		if c.ID == promo {
			mustExec(t, pool, `SELECT herald.fail($1::bigint, $2::bigint, 'busy', 'transient', now => $3)`, c.ID, c.Token, evening)
		} else {
			mustExec(t, pool, `SELECT herald.complete($1::bigint, $2::bigint, now => $3)`, c.ID, c.Token, evening)
		}
	}
	late := enq("promo", at("2030-01-15T22:30:00+01:00"))
	latest := enq("sms", at("2030-01-15T22:30:00+01:00"))
	for _, now := range []string{"2030-01-15T21:05:00+01:00", "2030-01-15T23:59:00+01:00", "2030-01-16T07:59:59+01:00"} {
		for _, c := range claim(t, pool, 10, at(now)) {
			if c.Channel == "promo" {
				t.Fatalf("at %s a promo (%d) was claimed in the quiet hours", now, c.ID)
			}
			if c.ID != latest {
				t.Fatalf("at %s claimed %d", now, c.ID)
			}
		}
	}
	var got []int64
	for _, c := range claim(t, pool, 10, at("2030-01-16T08:00:00+01:00")) {
		got = append(got, c.ID)
	}
	if len(got) != 2 || !slices.Contains(got, promo) || !slices.Contains(got, late) {
		t.Fatalf("at 08:00 claimed %v, want the retry %d and the late promo %d", got, promo, late)
	}
	_ = other
	// 12:00 to 13:00 UTC: closed at 12:30, open at 13:00.
	enq("lunch", at("2030-01-16T12:10:00Z"))
	if cs := claim(t, pool, 10, at("2030-01-16T12:30:00Z")); len(cs) != 0 {
		t.Fatalf("claimed %d in the lunch hour", len(cs))
	}
	if cs := claim(t, pool, 10, at("2030-01-16T13:00:00Z")); len(cs) != 1 {
		t.Fatalf("claimed %d after the lunch hour, want 1", len(cs))
	}
	// Quiet days: Sundays in Paris, all day.
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, quiet_days, quiet_zone) VALUES ('weekdays', 'sms', '{7}', 'Europe/Paris')`)
	sunday := enq("weekdays", at("2030-06-01T23:30:00+02:00")) // late on Saturday
	if cs := claim(t, pool, 10, at("2030-06-02T00:00:00+02:00")); len(cs) != 0 {
		t.Fatalf("claimed %+v at midnight on Sunday", cs)
	}
	if cs := claim(t, pool, 10, at("2030-06-02T23:59:59+02:00")); len(cs) != 0 {
		t.Fatalf("claimed %+v late on Sunday", cs)
	}
	if cs := claim(t, pool, 10, at("2030-06-03T00:00:00+02:00")); len(cs) != 1 || cs[0].ID != sunday {
		t.Fatalf("claimed %+v on Monday, want %d", cs, sunday)
	}
	_, err := pool.Exec(ctx, `UPDATE herald.channels SET quiet_from = '22:00' WHERE name = 'sms'`)
	wantPgError(t, err, "23514", "")
	// quiet_zone follows recipient_zone's rule: a POSIX zone PostgreSQL would take
	// ('UTC+3' is three hours west), an abbreviation or an unknown name is refused.
	for _, zone := range []string{"Mars/Olympus", "UTC+3", "EST", "+03:00", "Abc/5"} {
		_, err = pool.Exec(ctx, `UPDATE herald.channels SET quiet_zone = $1 WHERE name = 'lunch'`, zone)
		wantPgError(t, err, "22V19", "quiet_zone")
		_, err = pool.Exec(ctx, `INSERT INTO herald.channels (name, kind, quiet_zone) VALUES ('zoned', 'sms', $1)`, zone)
		wantPgError(t, err, "22V19", "quiet_zone")
	}
	if z := scalar[string](t, pool, `SELECT quiet_zone FROM herald.channels WHERE name = 'lunch'`); z != "UTC" {
		t.Fatalf("quiet_zone now %q", z)
	}
	for _, days := range []string{"{0}", "{1,2,3,4,5,6,7}", "{1,NULL}", "{}"} {
		_, err = pool.Exec(ctx, `UPDATE herald.channels SET quiet_days = $1 WHERE name = 'weekdays'`, days)
		wantPgError(t, err, "23514", "")
	}
}

// A channel whose quiet hours are each recipient's (quiet_per_recipient, 21:00 to 08:00):
// a message is stored due at the end of its recipient's night, in the zone it names
// (quiet_zone when none), across a daylight-saving change; one that was due before
// the night began and is still queued is not handed out but moved to the morning, its
// attempt not spent, and the claimer is woken to claim the rest at once. A zone that
// is not an IANA name is refused naming the field (SQL, batch, arrays), storing nothing.
func TestQuietHoursInTheRecipientsZone(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, quiet_from, quiet_until, quiet_zone, quiet_per_recipient)
		VALUES ('promo', 'sms', '21:00', '08:00', 'Europe/Berlin', true)`)
	at := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	enq := func(channel, to string, zone any, now time.Time) int64 {
		t.Helper()
		return scalar[int64](t, pool, `SELECT herald.enqueue($1, $2, '{"text":"sale"}', recipient_zone => $3, now => $4)`,
			channel, to, zone, now)
	}
	runAt := func(id int64) time.Time {
		return scalar[time.Time](t, pool, `SELECT run_at FROM herald.messages WHERE id = $1`, id)
	}

	// 02:00 UTC in June: 22:00 in New York, 11:00 in Tokyo, 04:00 in Berlin.
	night := at("2030-06-01T02:00:00Z")
	ny := enq("promo", "+12125550100", "America/New_York", night)
	tokyo := enq("promo", "+81355550100", "Asia/Tokyo", night)
	berlin := enq("promo", "+4915112345678", nil, night)
	plain := enq("sms", "+12125550101", "America/New_York", night) // a channel without quiet hours ignores the zone
	for id, want := range map[int64]string{ny: "2030-06-01T12:00:00Z", tokyo: "2030-06-01T02:00:00Z",
		berlin: "2030-06-01T06:00:00Z", plain: "2030-06-01T02:00:00Z"} {
		if got := runAt(id); !got.Equal(at(want)) {
			t.Errorf("message %d due %s, want %s", id, got.UTC(), want)
		}
	}
	var got []int64
	for _, c := range claim(t, pool, 10, night) {
		got = append(got, c.ID)
	}
	if slices.Sort(got); !slices.Equal(got, []int64{tokyo, plain}) {
		t.Fatalf("claimed %v at night, want Tokyo's %d and the plain channel's %d", got, tokyo, plain)
	}
	if cs := claim(t, pool, 10, at("2030-06-01T06:00:00Z")); len(cs) != 1 || cs[0].ID != berlin {
		t.Fatalf("at 08:00 in Berlin claimed %+v, want %d", cs, berlin)
	}
	if cs := claim(t, pool, 10, at("2030-06-01T12:00:00Z")); len(cs) != 1 || cs[0].ID != ny {
		t.Fatalf("at 08:00 in New York claimed %+v, want %d", cs, ny)
	}

	// Due at 20:50 in New York, still queued at 21:10: moved to 08:00, the claim woken.
	late := enq("promo", "+12125550102", "America/New_York", at("2030-06-02T00:50:00Z"))
	early := enq("promo", "+81355550101", "Asia/Tokyo", at("2030-06-02T00:55:00Z"))
	listener, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Release()
	if _, err := listener.Exec(ctx, `LISTEN herald_queue`); err != nil {
		t.Fatal(err)
	}
	if cs := claim(t, pool, 1, at("2030-06-02T01:10:00Z")); len(cs) != 0 {
		t.Fatalf("claimed %+v at 21:10 in New York, want none (the one due is in its recipient's night)", cs)
	}
	var attempts int
	var status string
	if err := pool.QueryRow(ctx, `SELECT attempts, status FROM herald.messages WHERE id = $1`, late).Scan(&attempts, &status); err != nil {
		t.Fatal(err)
	}
	if !runAt(late).Equal(at("2030-06-02T12:00:00Z")) || attempts != 0 || status != "queued" {
		t.Fatalf("the late message: due %s, %d attempts, %s; want queued for 12:00 UTC, no attempt", runAt(late).UTC(), attempts, status)
	}
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := listener.Conn().WaitForNotification(wait); err != nil {
		t.Fatalf("no herald_queue notification after a claim left its batch short: %v", err)
	}
	if cs := claim(t, pool, 1, at("2030-06-02T01:10:00Z")); len(cs) != 1 || cs[0].ID != early {
		t.Fatalf("the next claim: %+v, want Tokyo's %d", cs, early)
	}

	// Not a zone name: refused, naming the field; nothing stored.
	before := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`)
	_, err = pool.Exec(ctx, `SELECT herald.enqueue('promo', '+12125550103', '{"text":"x"}', recipient_zone => 'UTC-5')`)
	wantPgError(t, err, "22V19", "recipient_zone")
	_, err = pool.Exec(ctx, `SELECT herald.enqueue_batch('[{"channel":"promo","recipient":"+12125550103","payload":{"text":"x"},"recipient_zone":"America/New_York"},
		{"channel":"promo","recipient":"+12125550104","payload":{"text":"x"},"recipient_zone":"Mars/Olympus_Mons"}]')`)
	wantPgError(t, err, "22V19", "messages[1].recipient_zone")
	_, err = pool.Exec(ctx, `SELECT herald.enqueue_many('{promo,promo}', '{+12125550103,+12125550104}', ARRAY['{"text":"x"}', '{"text":"y"}']::jsonb[],
		recipient_zones => '{NULL,EST}')`)
	wantPgError(t, err, "22V19", "messages[1].recipient_zone")
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != before {
		t.Fatalf("%d messages stored by refused calls", n-before)
	}
	// The Go producer API passes the zone on (one message, and the bulk path).
	zone := "Asia/Tokyo"
	one, err := intake.Enqueue(ctx, pool, intake.Message{Channel: "promo", Recipient: "+81355550102",
		Payload: json.RawMessage(`{"text":"x"}`), RecipientZone: &zone})
	if err != nil {
		t.Fatal(err)
	}
	many, err := intake.EnqueueMany(ctx, pool, []intake.Message{
		{Channel: "promo", Recipient: "+81355550103", Payload: json.RawMessage(`{"text":"x"}`)},
		{Channel: "promo", Recipient: "+81355550104", Payload: json.RawMessage(`{"text":"x"}`), RecipientZone: &zone}})
	if err != nil {
		t.Fatal(err)
	}
	if z := scalar[[]*string](t, pool, `SELECT array_agg(recipient_zone ORDER BY id) FROM herald.messages WHERE id = ANY ($1)`,
		append(many, one)); len(z) != 3 || z[0] == nil || *z[0] != zone || z[1] != nil || z[2] == nil || *z[2] != zone {
		t.Fatalf("stored zones %v, want Asia/Tokyo, NULL, Asia/Tokyo", z)
	}
	// The setting needs quiet hours to keep.
	_, err = pool.Exec(ctx, `UPDATE herald.channels SET quiet_per_recipient = true WHERE name = 'sms'`)
	wantPgError(t, err, "23514", "")

	// Quiet days in the recipient's time: a weekend in Tokyo ends at Monday 00:00 there
	// (Sunday 15:00 UTC), one in New York at Monday 00:00 there (04:00 UTC).
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, quiet_days, quiet_per_recipient) VALUES ('weekdays', 'sms', '{6,7}', true)`)
	saturday := at("2030-06-01T12:00:00Z")
	if id := enq("weekdays", "+81355550105", "Asia/Tokyo", saturday); !runAt(id).Equal(at("2030-06-02T15:00:00Z")) {
		t.Errorf("Tokyo's weekend: due %s, want Sunday 15:00 UTC", runAt(id).UTC())
	}
	if id := enq("weekdays", "+12125550105", "America/New_York", saturday); !runAt(id).Equal(at("2030-06-03T04:00:00Z")) {
		t.Errorf("New York's weekend: due %s, want Monday 04:00 UTC", runAt(id).UTC())
	}

	// Daylight saving begins in Berlin at 02:00 on 30 March 2031: 08:00 that morning is
	// 06:00 UTC, nine hours after 23:00 the evening before (22:00 UTC), not ten.
	if id := enq("promo", "+4915112345679", "Europe/Berlin", at("2031-03-29T22:00:00Z")); !runAt(id).Equal(at("2031-03-30T06:00:00Z")) {
		t.Errorf("due %s across the change to summer time, want 06:00 UTC", runAt(id).UTC())
	}
}

// herald.quiet_channels() lists the channels in their quiet time now, with its end, and
// not a channel whose quiet hours are its recipients' (never quiet as a whole, its
// messages scheduled instead); a runner's herald_channel_quiet gauge says the same,
// for the shipped backlog alert to leave such a backlog alone.
func TestQuietChannelsSayWhyABacklogWaits(t *testing.T) {
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	// Hours from an hour ago to an hour ahead (UTC) are quiet now; two to three hours
	// ahead are not; today (UTC) as a quiet day is quiet until midnight.
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, quiet_from, quiet_until, quiet_days, quiet_per_recipient)
		SELECT x.name, 'sms', (now() AT TIME ZONE 'UTC' + x.from_h)::time, (now() AT TIME ZONE 'UTC' + x.until_h)::time, x.days, x.local
		FROM (VALUES ('night', interval '-1 hour', interval '1 hour', NULL::smallint[], false),
		             ('later', interval '2 hours', interval '3 hours', NULL, false),
		             ('local', interval '-1 hour', interval '1 hour', NULL, true)) AS x (name, from_h, until_h, days, local)`)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, quiet_days)
		VALUES ('today', 'sms', ARRAY[extract(isodow FROM now() AT TIME ZONE 'UTC')]::smallint[])`)
	got := scalar[string](t, pool, `SELECT string_agg(channel || ' ' || CASE
		  WHEN channel = 'night' AND quiet_until BETWEEN now() + interval '59 minutes' AND now() + interval '61 minutes' THEN 'in an hour'
		  WHEN channel = 'today' AND quiet_until = date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '1 day' THEN 'at midnight'
		  ELSE quiet_until::text END, ', ' ORDER BY channel) FROM herald.quiet_channels()`)
	if got != "night in an hour, today at midnight" {
		t.Fatalf("quiet channels: %s", got)
	}
	r, stop := startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"sms": newRecorder()},
		PollInterval: 50 * time.Millisecond, StatsInterval: 50 * time.Millisecond})
	defer stop()
	eventually(t, 10*time.Second, "the quiet gauge", func() bool {
		want := map[string]float64{"night": 1, "today": 1, "later": 0, "local": 0, "sms": 0}
		for _, m := range scrape(t, r.Handler())["herald_channel_quiet"].GetMetric() {
			for ch, v := range want {
				if labelsAre(m, "channel", ch) && m.GetGauge().GetValue() == v {
					delete(want, ch)
				}
			}
		}
		return len(want) == 0
	})
}

// A stored recipient_zone the server's zone database no longer has (Debian moved
// legacy names such as US/Eastern to tzdata-legacy; uninstalled, they stop resolving)
// poisons no claim: the message keeps the channel's quiet_zone instead, and the claim
// hands out the others.
func TestQuietHoursOfAZoneNoLongerKnown(t *testing.T) {
	_, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, quiet_from, quiet_until, quiet_zone, quiet_per_recipient)
		VALUES ('promo', 'sms', '21:00', '08:00', 'Europe/Berlin', true)`)
	noon := time.Date(2030, 6, 3, 10, 0, 0, 0, time.UTC) // 12:00 in Berlin
	gone := scalar[int64](t, pool, `SELECT herald.enqueue('promo', '+12125550100', '{"text":"x"}', recipient_zone => 'America/New_York', now => $1)`, noon)
	awake := scalar[int64](t, pool, `SELECT herald.enqueue('promo', '+81355550100', '{"text":"x"}', recipient_zone => 'Asia/Tokyo', now => $1)`,
		noon.Add(-3*time.Hour)) // 16:00 in Tokyo
	mustExec(t, pool, `UPDATE herald.messages SET recipient_zone = 'Atlantis/Poseidonia', run_at = $2 WHERE id = $1`, gone, noon.Add(-2*time.Hour))
	night := time.Date(2030, 6, 3, 22, 30, 0, 0, time.UTC) // 00:30 in Berlin, 07:30 in Tokyo: both quiet
	if cs := claim(t, pool, 10, night); len(cs) != 0 {
		t.Fatalf("claimed %+v at night", cs)
	}
	if got := scalar[time.Time](t, pool, `SELECT run_at FROM herald.messages WHERE id = $1`, gone); !got.Equal(time.Date(2030, 6, 4, 6, 0, 0, 0, time.UTC)) {
		t.Fatalf("the message of an unknown zone is due %s, want 08:00 in Berlin (06:00 UTC)", got.UTC())
	}
	if cs := claim(t, pool, 10, time.Date(2030, 6, 4, 6, 0, 0, 0, time.UTC)); len(cs) != 2 {
		t.Fatalf("at 08:00 in Berlin (15:00 in Tokyo) claimed %d, want both %d and %d", len(cs), gone, awake)
	}
}

// A channel's quiet_zone the server's zone database no longer has (written while it
// had it; the trigger refuses it now) cannot say when the channel is quiet, so the
// channel holds its messages — with quiet_per_recipient too, for those naming no zone
// of their own — and nothing else stops: other channels are claimed, enqueues to it
// are stored, herald.quiet_channels lists it with no end (quiet_until NULL), the
// runner's quiet gauge leaves it out (a backlog behind it is not expected) and says
// why in its log. With a zone the server has, its messages go.
func TestAChannelZoneNoLongerKnownHoldsOnlyThatChannel(t *testing.T) {
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, quiet_from, quiet_until, quiet_zone, quiet_per_recipient)
		VALUES ('promo', 'sms', '21:00', '08:00', 'Europe/Berlin', false), ('local', 'sms', '21:00', '08:00', 'Europe/Berlin', true)`)
	mustExec(t, pool, `ALTER TABLE herald.channels DISABLE TRIGGER channels_quiet_zone`)
	mustExec(t, pool, `UPDATE herald.channels SET quiet_zone = 'Atlantis/Poseidonia' WHERE name IN ('promo', 'local')`)
	mustExec(t, pool, `ALTER TABLE herald.channels ENABLE TRIGGER channels_quiet_zone`)
	noon := time.Date(2030, 6, 3, 10, 0, 0, 0, time.UTC) // 12:00 in Berlin, 19:00 in Tokyo
	enq := func(channel, zone string) int64 {
		t.Helper()
		return scalar[int64](t, pool, `SELECT herald.enqueue($1, '+4915112345678', '{"text":"x"}', recipient_zone => nullif($2, ''), now => $3)`,
			channel, zone, noon)
	}
	held := []int64{enq("promo", ""), enq("local", ""), enq("local", "Asia/Tokyo")}
	sms := enq("sms", "")
	if got := scalar[time.Time](t, pool, `SELECT run_at FROM herald.messages WHERE id = $1`, held[1]); !got.Equal(noon) {
		t.Fatalf("a message without a zone on the channel of an unknown zone is due %s, want when enqueued", got.UTC())
	}
	if cs := claim(t, pool, 10, noon); len(cs) != 1 || cs[0].ID != sms {
		t.Fatalf("claimed %+v, want only %d of the channel whose zone is known", cs, sms)
	}
	if got := scalar[string](t, pool, `SELECT string_agg(channel || ' ' || coalesce(quiet_until::text, 'no end'), ', ' ORDER BY channel)
		FROM herald.quiet_channels()`); got != "local no end, promo no end" {
		t.Fatalf("quiet channels: %s", got)
	}
	var log logBuffer
	r, stop := startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"sms": newRecorder()},
		PollInterval: 50 * time.Millisecond, StatsInterval: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	eventually(t, 10*time.Second, "the quiet gauge and the log", func() bool {
		n := 0
		for _, m := range scrape(t, r.Handler())["herald_channel_quiet"].GetMetric() {
			if (labelsAre(m, "channel", "promo") || labelsAre(m, "channel", "local")) && m.GetGauge().GetValue() == 0 {
				n++
			}
		}
		return n == 2 && strings.Contains(log.String(), `quiet_zone=Atlantis/Poseidonia`)
	})
	stop()
	mustExec(t, pool, `UPDATE herald.channels SET quiet_zone = 'Europe/Berlin' WHERE name IN ('promo', 'local')`)
	var got []int64
	for _, c := range claim(t, pool, 10, noon) {
		got = append(got, c.ID)
	}
	if slices.Sort(got); !slices.Equal(got, held) {
		t.Fatalf("with the zone fixed claimed %v, want %v", got, held)
	}
}
