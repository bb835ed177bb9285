package tests

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// complete marks processing rows sent under the right token only; a stale token
// changes nothing and the count says so.
func TestCompleteFencing(t *testing.T) {
	ctx, pool := setup(t)
	a := enqueueEmail(t, pool, "a@example.com")
	b := enqueueEmail(t, pool, "b@example.com")
	c := claim(t, pool, 10, t0)
	tok := c[0].Token

	// The lease expires and the reaper takes both back; a new claim re-leases them.
	if n := scalar[int32](t, pool, `SELECT herald.reap_stale($1)`, t0.Add(time.Minute)); n != 2 {
		t.Fatalf("reaped %d, want 2", n)
	}
	re := claim(t, pool, 10, t0.Add(time.Minute))
	if len(re) != 2 || re[0].Token == tok || re[0].Attempt != 2 {
		t.Fatalf("re-claim %+v", re)
	}
	// The first owner's late reports change nothing.
	if n := scalar[int32](t, pool, `SELECT herald.complete($1::bigint[], $2::bigint[], NULL, $3)`, []int64{a, b}, []int64{tok, tok}, t0); n != 0 {
		t.Fatalf("stale complete changed %d rows", n)
	}
	if n := scalar[int32](t, pool, `SELECT herald.fail($1::bigint[], $2::bigint[], $3, $4, now => $5)`,
		[]int64{a, b}, []int64{tok, tok}, []string{"x", "x"}, []string{"permanent", "permanent"}, t0); n != 0 {
		t.Fatalf("stale fail changed %d rows", n)
	}
	if n := scalar[int32](t, pool, `SELECT herald.extend_lease($1::bigint[], $2::bigint[], '1 minute', $3)`, []int64{a, b}, []int64{tok, tok}, t0); n != 0 {
		t.Fatalf("stale extend_lease changed %d rows", n)
	}
	// The new owner completes one with a provider id; a mixed batch counts only its own.
	n := scalar[int32](t, pool, `SELECT herald.complete($1::bigint[], $2::bigint[], $3, $4)`,
		[]int64{a, b}, []int64{re[0].Token, tok}, []string{"prov-1", "prov-2"}, t0.Add(time.Minute))
	if n != 1 {
		t.Fatalf("mixed complete changed %d rows, want 1", n)
	}
	var status, prov string
	var fin time.Time
	if err := pool.QueryRow(ctx, `SELECT status, provider_message_id, finished_at FROM herald.messages WHERE id = $1`, a).Scan(&status, &prov, &fin); err != nil ||
		status != "sent" || prov != "prov-1" || !fin.Equal(t0.Add(time.Minute)) {
		t.Fatalf("completed row: %s %s %v %v", status, prov, fin, err)
	}
	// Completing twice is harmless; the single-id form says false.
	if scalar[bool](t, pool, `SELECT herald.complete($1::bigint, $2::bigint)`, a, re[0].Token) {
		t.Fatal("second complete reported a change")
	}
	if !scalar[bool](t, pool, `SELECT herald.complete($1::bigint, $2::bigint, 'prov-b')`, b, re[1].Token) {
		t.Fatal("single-id complete with the right token reported no change")
	}
}

// A receipt over 255 characters is a receiver's header, not a provider's id (a
// webhook receiver chooses its X-Request-Id): the message is sent and the receipt not
// kept, in the row or in the log; 255 characters are kept.
func TestCompleteKeepsNoOverlongReceipt(t *testing.T) {
	ctx, pool := setup(t)
	a := enqueueEmail(t, pool, "a@example.com")
	b := enqueueEmail(t, pool, "b@example.com")
	c := claim(t, pool, 10, t0)
	long, kept := strings.Repeat("r", 100000), strings.Repeat("k", 255)
	if n := scalar[int32](t, pool, `SELECT herald.complete($1::bigint[], $2::bigint[], $3, $4)`,
		[]int64{c[0].ID, c[1].ID}, []int64{c[0].Token, c[1].Token}, []string{long, kept}, t0); n != 2 {
		t.Fatalf("complete changed %d rows, want 2", n)
	}
	var receipts string
	if err := pool.QueryRow(ctx, `SELECT string_agg(status || ':' || coalesce(length(provider_message_id), 0), ',' ORDER BY id)
		FROM herald.messages WHERE id IN ($1, $2)`, a, b).Scan(&receipts); err != nil || receipts != "sent:0,sent:255" {
		t.Fatalf("receipts %q %v", receipts, err)
	}
	if n := scalar[int64](t, pool, `SELECT max(length(r)) FROM herald.log_statements, unnest(provider_message_ids) r`); n != 255 {
		t.Fatalf("the log keeps a receipt of %d characters", n)
	}
}

// fail: transient retries after the channel's backoff (exponential, jittered,
// capped) or at retry_at; rate_limited waits for retry_at and gives the attempt
// back; permanent and exhausted attempts go dead; the history is kept.
func TestFailDecisions(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `UPDATE herald.channels SET backoff_base = '10 seconds', backoff_max = '25 seconds' WHERE name = 'email'`)
	id := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}', max_attempts => 4, now => $1)`, t0)

	now := t0
	runAt := func() time.Time {
		return scalar[time.Time](t, pool, `SELECT run_at FROM herald.messages WHERE id = $1`, id)
	}
	failOnce := func(class string, retryAt any) {
		t.Helper()
		c := claim(t, pool, 1, now)
		if len(c) != 1 {
			t.Fatalf("nothing to claim at %v", now)
		}
		if !scalar[bool](t, pool, `SELECT herald.fail($1::bigint, $2::bigint, $3, $4, $5, now => $6)`, id, c[0].Token, class+" error", class, retryAt, now) {
			t.Fatalf("fail(%s) changed nothing", class)
		}
	}
	// attempt 1, transient: backoff in [5s, 10s]
	failOnce("transient", nil)
	if d := runAt().Sub(now); d < 5*time.Second || d > 10*time.Second {
		t.Fatalf("first backoff %v, want 5s..10s", d)
	}
	// attempt 2, transient: [10s, 20s]
	now = runAt()
	failOnce("transient", nil)
	if d := runAt().Sub(now); d < 10*time.Second || d > 20*time.Second {
		t.Fatalf("second backoff %v, want 10s..20s", d)
	}
	// attempt 3, transient with an explicit retry_at (a provider's "try again later")
	now = runAt()
	failOnce("transient", now.Add(7*time.Minute))
	if got := runAt(); !got.Equal(now.Add(7 * time.Minute)) {
		t.Fatalf("retry_at not honoured: %v", got)
	}
	// rate_limited at attempt 4 of 4: waits for retry_at and is not dead-lettered
	now = runAt()
	failOnce("rate_limited", now.Add(time.Hour))
	var status, class string
	var attempts int32
	if err := pool.QueryRow(ctx, `SELECT status, attempts, last_error_class FROM herald.messages WHERE id = $1`, id).Scan(&status, &attempts, &class); err != nil ||
		status != "queued" || attempts != 3 || class != "rate_limited" || !runAt().Equal(now.Add(time.Hour)) {
		t.Fatalf("after rate_limited: %s attempts %d class %s run_at %v %v", status, attempts, class, runAt(), err)
	}
	// attempt 4 of 4, transient: backoff capped at 25s would apply, but attempts are exhausted -> dead
	now = runAt()
	failOnce("transient", nil)
	if s := scalar[string](t, pool, `SELECT status FROM herald.messages WHERE id = $1`, id); s != "dead" {
		t.Fatalf("attempts exhausted: status %s, want dead", s)
	}
	var hist []map[string]any
	if err := pool.QueryRow(ctx, `SELECT errors FROM herald.messages WHERE id = $1`, id).Scan(&hist); err != nil {
		t.Fatal(err)
	}
	classes := []string{"transient", "transient", "transient", "rate_limited", "transient"}
	if len(hist) != len(classes) {
		t.Fatalf("error history %v", hist)
	}
	for i, h := range hist {
		if h["class"] != classes[i] || h["worker"] != "test-worker" || h["error"] != classes[i]+" error" {
			t.Fatalf("history[%d] = %v", i, h)
		}
	}
	// It shows in dead_letters with its error.
	var dlErr string
	if err := pool.QueryRow(ctx, `SELECT last_error FROM herald.dead_letters WHERE id = $1`, id).Scan(&dlErr); err != nil || dlErr != "transient error" {
		t.Fatalf("dead_letters: %q %v", dlErr, err)
	}
}

// The backoff is capped by the channel's backoff_max.
func TestFailBackoffCap(t *testing.T) {
	_, pool := setup(t)
	mustExec(t, pool, `UPDATE herald.channels SET backoff_base = '10 seconds', backoff_max = '15 seconds' WHERE name = 'email'`)
	id := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}', max_attempts => 10, now => $1)`, t0)
	mustExec(t, pool, `UPDATE herald.messages SET attempts = 6 WHERE id = $1`, id) // next is attempt 7: 10s*2^6 uncapped
	c := claim(t, pool, 1, t0)
	mustExec(t, pool, `SELECT herald.fail($1::bigint, $2::bigint, 'x', 'transient', now => $3)`, id, c[0].Token, t0)
	d := scalar[time.Time](t, pool, `SELECT run_at FROM herald.messages WHERE id = $1`, id).Sub(t0)
	if d < 7500*time.Millisecond || d > 15*time.Second {
		t.Fatalf("capped backoff %v, want 7.5s..15s", d)
	}
	// A retry_at in the past counts as now.
	c = claim(t, pool, 1, t0.Add(time.Minute))
	mustExec(t, pool, `SELECT herald.fail($1::bigint, $2::bigint, 'x', 'transient', $3, now => $4)`, id, c[0].Token, t0, t0.Add(time.Minute))
	if got := scalar[time.Time](t, pool, `SELECT run_at FROM herald.messages WHERE id = $1`, id); !got.Equal(t0.Add(time.Minute)) {
		t.Fatalf("past retry_at gave run_at %v", got)
	}
}

// A permanent failure goes dead at once, whatever the attempts left.
func TestFailPermanent(t *testing.T) {
	_, pool := setup(t)
	id := enqueueEmail(t, pool, "gone@example.com")
	c := claim(t, pool, 1, t0)
	mustExec(t, pool, `SELECT herald.fail($1::bigint[], $2::bigint[], ARRAY['550 no such user'], ARRAY['permanent'], now => $3)`,
		[]int64{id}, []int64{c[0].Token}, t0)
	var status, class string
	var fin time.Time
	if err := pool.QueryRow(context.Background(), `SELECT status, last_error_class, finished_at FROM herald.messages WHERE id = $1`, id).
		Scan(&status, &class, &fin); err != nil || status != "dead" || class != "permanent" || !fin.Equal(t0) {
		t.Fatalf("after permanent failure: %s %s %v %v", status, class, fin, err)
	}
}

// A provider's permanent refusal whose code rules the address out (no such mailbox,
// no such domain; a landline or unknown number) puts the recipient on the
// suppression list, so the next message to it ends suppressed at its claim and never
// reaches the provider; any other refusal, or the same code reported as transient,
// does not. Twilio 21610 (the recipient texted STOP) does not either: Twilio lifts it
// on START.
func TestFailRefusalSuppressesTheRecipient(t *testing.T) {
	_, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('hooks', 'webhook')`)
	send := func(channel, recipient string) int64 {
		payload := `{"subject":"s","text":"t"}`
		switch channel {
		case "sms":
			payload = `{"text":"t"}`
		case "hooks":
			payload = `{"event":"paid"}`
		}
		return scalar[int64](t, pool, `SELECT herald.enqueue($1, $2, $3::jsonb, now => $4)`, channel, recipient, payload, t0)
	}
	longHook := "https://flows.example/invoke?sig=" + strings.Repeat("s", 2000-33)
	cases := []struct {
		channel, recipient, class, code string
		suppressed                      bool
	}{
		{"email", "Gone@Example.com", "permanent", "550 5.1.1", true},
		{"email", "gone@example.com", "permanent", "550 5.1.1", true}, // the same address, one entry
		{"email", "nodomain@example.net", "permanent", "550 5.1.10", true},
		{"email", "spam@example.com", "permanent", "554 5.7.1", false}, // the message, not the address
		{"email", "full@example.com", "permanent", "552 5.2.2", false},
		{"email", "later@example.com", "transient", "550 5.1.1", false},
		{"email", "bare@example.com", "permanent", "550", false},
		{"sms", "+14155550106", "permanent", "30006", true},
		{"sms", "+14155550111", "permanent", "21211", true},
		{"sms", "+14155550107", "permanent", "21610", false},
		{"sms", "+14155550108", "permanent", "30007", false},
		{"hooks", "https://gone.example/hooks", "permanent", "410", true}, // the endpoint is removed
		{"hooks", "https://lost.example/hooks", "permanent", "404", false},
		{"hooks", longHook, "permanent", "410", true}, // a URL of 2,000 bytes is suppressed too
	}
	ids := make([]int64, len(cases))
	for i, c := range cases {
		ids[i] = send(c.channel, c.recipient)
	}
	tokens := map[int64]int64{}
	for _, m := range claim(t, pool, len(cases), t0) {
		tokens[m.ID] = m.Token
	}
	// One report for all of them, as a runner sends it: the same address twice in a call.
	var toks []int64
	var errs, classes, codes []string
	for i, c := range cases {
		toks, errs, classes, codes = append(toks, tokens[ids[i]]), append(errs, "refused"), append(classes, c.class), append(codes, c.code)
	}
	if n := scalar[int32](t, pool, `SELECT herald.fail($1::bigint[], $2::bigint[], $3, $4, error_codes => $5, now => $6)`,
		ids, toks, errs, classes, codes, t0); n != int32(len(cases)) {
		t.Fatalf("fail changed %d of %d", n, len(cases))
	}
	got := scalar[[]string](t, pool, `SELECT coalesce(array_agg(kind || ':' || recipient || ':' || reason || ':' || source ORDER BY recipient), '{}')
		FROM herald.suppressions`)
	want := []string{"sms:+14155550106:bounced:send", "sms:+14155550111:bounced:send", "email:gone@example.com:bounced:send",
		"email:nodomain@example.net:bounced:send", "webhook:https://gone.example/hooks:bounced:send", "webhook:" + longHook + ":bounced:send"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("suppressions %v, want %v", got, want)
	}
	// The next message to each is not handed out.
	next := map[int64]bool{}
	for _, c := range cases {
		next[send(c.channel, strings.ToLower(c.recipient))] = c.suppressed
	}
	handed := map[int64]bool{}
	for _, m := range claim(t, pool, 100, t0.Add(time.Hour)) {
		handed[m.ID] = true
	}
	for id, suppressed := range next {
		status := scalar[string](t, pool, `SELECT status FROM herald.messages WHERE id = $1`, id)
		if suppressed != (status == "suppressed") || suppressed == handed[id] {
			t.Errorf("next message %d: status %s, claimed %v; suppressed recipient: %v", id, status, handed[id], suppressed)
		}
	}
}

// Bad arguments to complete, fail, extend_lease and purge: 22V12 naming the argument.
func TestReportRejectsBadArguments(t *testing.T) {
	ctx, pool := setup(t)
	for _, c := range []struct{ sql, field string }{
		{`SELECT herald.complete(ARRAY[1,2]::bigint[], ARRAY[1]::bigint[])`, "lease_tokens"},
		{`SELECT herald.complete(NULL::bigint[], ARRAY[1]::bigint[])`, "ids"},
		{`SELECT herald.complete(ARRAY[1]::bigint[], ARRAY[1]::bigint[], ARRAY['a','b'])`, "provider_message_ids"},
		{`SELECT herald.fail(ARRAY[1]::bigint[], ARRAY[1]::bigint[], ARRAY['e'], ARRAY['sometimes'])`, "error_classes"},
		{`SELECT herald.fail(ARRAY[1]::bigint[], ARRAY[1]::bigint[], ARRAY['e'], ARRAY[NULL]::text[])`, "error_classes"},
		{`SELECT herald.fail(ARRAY[1]::bigint[], ARRAY[1]::bigint[], NULL, ARRAY['transient'])`, "errors"},
		{`SELECT herald.fail(ARRAY[1]::bigint[], ARRAY[1]::bigint[], ARRAY['e'], ARRAY['transient'], ARRAY[now(), now()])`, "retry_at"},
		{`SELECT herald.fail(1::bigint, 1::bigint, 'e', 'fatal')`, "error_classes"},
		{`SELECT herald.extend_lease(ARRAY[1]::bigint[], ARRAY[1]::bigint[], NULL)`, "lease"},
		{`SELECT herald.extend_lease(ARRAY[1]::bigint[], ARRAY[1]::bigint[], '0 seconds')`, "lease"},
		{`SELECT herald.extend_lease(ARRAY[1]::bigint[], ARRAY[]::bigint[], '1 minute')`, "lease_tokens"},
		{`SELECT herald.purge('-1 day')`, "older_than"},
		{`SELECT herald.purge(NULL)`, "older_than"},
	} {
		_, err := pool.Exec(ctx, c.sql)
		wantPgError(t, err, "22V12", c.field)
	}
}

// extend_lease pushes the expiry of held messages so the reaper leaves them alone.
func TestExtendLease(t *testing.T) {
	_, pool := setup(t)
	id := enqueueEmail(t, pool, "a@example.com")
	c := claim(t, pool, 1, t0) // expires t0+30s
	if n := scalar[int32](t, pool, `SELECT herald.extend_lease($1::bigint[], $2::bigint[], '2 minutes', $3)`,
		[]int64{id}, []int64{c[0].Token}, t0.Add(20*time.Second)); n != 1 {
		t.Fatalf("extend_lease changed %d", n)
	}
	if n := scalar[int32](t, pool, `SELECT herald.reap_stale($1)`, t0.Add(time.Minute)); n != 0 {
		t.Fatalf("reaped %d extended messages", n)
	}
	if !scalar[bool](t, pool, `SELECT herald.complete($1::bigint, $2::bigint)`, id, c[0].Token) {
		t.Fatal("complete after extend failed")
	}
}

// reap_stale: expired leases go back to queued (the attempt counts) or dead when
// attempts are exhausted; unexpired leases stay.
func TestReapStale(t *testing.T) {
	ctx, pool := setup(t)
	once := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}', max_attempts => 1, now => $1)`, t0)
	twice := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'b@example.com', '{"subject":"s","text":"t"}', max_attempts => 2, now => $1)`, t0)
	claim(t, pool, 10, t0) // both expire at t0+30s
	fresh := enqueueEmail(t, pool, "c@example.com")
	mustExec(t, pool, `SELECT * FROM herald.claim_batch('w2', 10, '5 minutes', NULL, $1)`, t0) // expires t0+5m

	if n := scalar[int32](t, pool, `SELECT herald.reap_stale($1)`, t0.Add(29*time.Second)); n != 0 {
		t.Fatalf("reaped %d before expiry", n)
	}
	if n := scalar[int32](t, pool, `SELECT herald.reap_stale($1)`, t0.Add(time.Minute)); n != 2 {
		t.Fatalf("reaped %d, want 2", n)
	}
	want := map[int64]string{once: "dead", twice: "queued", fresh: "processing"}
	for id, st := range want {
		var status, lastErr string
		var attempts int32
		if err := pool.QueryRow(ctx, `SELECT status, attempts, coalesce(last_error, '') FROM herald.messages WHERE id = $1`, id).
			Scan(&status, &attempts, &lastErr); err != nil || status != st || attempts != 1 {
			t.Fatalf("message %d: %s attempts %d, want %s attempts 1 (%v)", id, status, attempts, st, err)
		}
		if id != fresh && lastErr != "lease expired" {
			t.Fatalf("message %d: last_error %q", id, lastErr)
		}
	}
	if n := scalar[int32](t, pool, `SELECT herald.reap_stale($1)`, t0.Add(time.Minute)); n != 0 {
		t.Fatalf("second reap took %d", n)
	}
}
