package tests

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald/herald/runner/sender/sendertest"
	"github.com/herald/herald/tests/testdb"
)

// A channel's fallback sends its due messages while a runner has paused it, and only
// then: not while it is open, not under an operator's pause, not in its quiet hours,
// never a message before its run_at. A claim moves them to the fallback (the channel
// the runner sends them through, what herald.status shows) with a rerouted log event
// naming the channel and its pause; a message that failed on the channel's quota or
// setup is due for the fallback at once, its attempt given back.
func TestFallbackSendsWhileTheChannelIsPaused(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, lease) VALUES ('backup', 'email', '2 minutes')`)
	mustExec(t, pool, `UPDATE herald.channels SET fallback = 'backup' WHERE name = 'email'`)
	a, b := enqueueEmail(t, pool, "a@example.com"), enqueueEmail(t, pool, "b@example.com")
	later := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'later@example.com', '{"subject":"Hi","text":"Hello"}',
		run_at => $1, now => $2)`, t0.Add(time.Hour), t0)
	backup := scalar[int64](t, pool, `SELECT herald.enqueue('backup', 'own@example.com', '{"subject":"Hi","text":"Hello"}', now => $1)`, t0)

	// Open: the backup's runner takes its own message only.
	cs := claimOn(t, pool, []string{"backup"}, nil, 10, t0)
	if len(cs) != 1 || cs[0].ID != backup {
		t.Fatalf("the backup's claim while email is open: %+v", cs)
	}
	// An operator's pause stops the mail: nothing is rerouted.
	mustExec(t, pool, `SELECT herald.pause_channel('email', 'incident review', now => $1)`, t0)
	if cs := claimOn(t, pool, []string{"backup"}, nil, 10, t0); len(cs) != 0 {
		t.Fatalf("an operator's pause rerouted %+v", cs)
	}
	mustExec(t, pool, `SELECT herald.resume_channel('email', now => $1)`, t0)

	// The provider refuses the channel's setup: the message goes back due at once, the
	// attempt unused, and the channel pauses.
	cs = claimOn(t, pool, []string{"email"}, nil, 1, t0)
	if len(cs) != 1 || cs[0].ID != a {
		t.Fatalf("email's claim: %+v", cs)
	}
	mustExec(t, pool, `SELECT herald.fail($1::bigint, $2::bigint, '535 5.7.8 authentication failed', 'configuration', now => $3)`,
		cs[0].ID, cs[0].Token, t0)
	if s := scalar[string](t, pool, `SELECT format('%s %s %s', m.status, m.attempts, m.run_at = $2)
		FROM herald.messages m WHERE m.id = $1`, a, t0); s != "queued 0 t" {
		t.Fatalf("after the configuration failure: %s", s)
	}
	// Quiet hours of the paused channel hold its messages from the fallback too.
	mustExec(t, pool, `UPDATE herald.channels SET quiet_from = '11:00', quiet_until = '13:00' WHERE name = 'email'`)
	if cs := claimOn(t, pool, []string{"backup"}, nil, 10, t0); len(cs) != 0 {
		t.Fatalf("rerouted in the channel's quiet hours: %+v", cs)
	}
	mustExec(t, pool, `UPDATE herald.channels SET quiet_from = NULL, quiet_until = NULL WHERE name = 'email'`)
	// The email runner sees nothing; the backup's runner gets both due messages as its
	// own, with the backup's lease, and not the scheduled one.
	if cs := claimOn(t, pool, []string{"email"}, nil, 10, t0); len(cs) != 0 {
		t.Fatalf("a paused channel handed out %+v", cs)
	}
	cs = claimOn(t, pool, []string{"backup"}, nil, 10, t0)
	if got := fmt.Sprint(ids(cs)); got != fmt.Sprint([]int64{a, b}) {
		t.Fatalf("the backup claimed %s, want [%d %d] (later %d)", got, a, b, later)
	}
	for _, c := range cs {
		if c.Channel != "backup" || c.Attempt != 1 || !c.Expires.Equal(t0.Add(2*time.Minute)) {
			t.Fatalf("a rerouted message as claimed: %+v", c)
		}
	}
	if s := scalar[string](t, pool, `SELECT string_agg(s.channel || ' ' || s.status, ',' ORDER BY i) FROM unnest($1::bigint[]) i, herald.status(i) s`,
		[]int64{a, b, later}); s != "backup processing,backup processing,email queued" {
		t.Fatalf("status: %s", s)
	}
	mustExec(t, pool, `SELECT herald.log_sequence()`)
	if s := scalar[string](t, pool, `SELECT string_agg(format('%s %s %s', message_id, channel, detail), ',' ORDER BY "offset")
		FROM herald.log WHERE kind = 'rerouted'`); s != fmt.Sprintf(
		`%d backup {"from": "email", "reason": "535 5.7.8 authentication failed"},%d backup {"from": "email", "reason": "535 5.7.8 authentication failed"}`, a, b) {
		t.Fatalf("rerouted events: %s", s)
	}
	// The scheduled message waits for its time, then goes to the fallback if the
	// channel is still paused.
	if cs := claimOn(t, pool, []string{"backup"}, nil, 10, t0.Add(59*time.Minute)); len(cs) != 0 {
		t.Fatalf("a scheduled message went early: %+v", cs)
	}
	if cs := claimOn(t, pool, []string{"backup"}, nil, 10, t0.Add(time.Hour)); len(cs) != 1 || cs[0].ID != later {
		t.Fatalf("at its run_at: %+v", cs)
	}

	// A spent quota: the channel pauses for its quota_wait, the message is due at once
	// for the fallback.
	mustExec(t, pool, `SELECT herald.resume_channel('email', now => $1)`, t0)
	q := enqueueEmail(t, pool, "q@example.com")
	cs = claimOn(t, pool, []string{"email"}, nil, 1, t0)
	mustExec(t, pool, `SELECT herald.fail($1::bigint, $2::bigint, '454 Daily message quota exceeded', 'quota', now => $3)`,
		cs[0].ID, cs[0].Token, t0)
	if s := scalar[string](t, pool, `SELECT format('%s %s', paused_by, paused_until = $1) FROM herald.channels WHERE name = 'email'`,
		t0.Add(time.Hour)); s != "runner t" {
		t.Fatalf("the quota's pause: %s", s)
	}
	if cs := claimOn(t, pool, []string{"backup"}, nil, 10, t0); len(cs) != 1 || cs[0].ID != q || cs[0].Attempt != 1 {
		t.Fatalf("after the quota failure the backup claimed %+v, want %d", cs, q)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM herald.messages WHERE channel = 'email'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d messages left on email (%v)", n, err)
	}
}

// A rate-limited fallback's rate covers what it sends for others: its own and the
// rerouted messages share its tokens.
func TestFallbackKeepsItsRate(t *testing.T) {
	_, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, rate, burst) VALUES ('backup', 'sms', 1, 3)`)
	mustExec(t, pool, `UPDATE herald.channels SET fallback = 'backup' WHERE name = 'sms'`)
	enqueueBatch(t, pool, "sms", 5, t0)
	for i := range 5 {
		mustExec(t, pool, `SELECT herald.enqueue('backup', $1, '{"text":"own"}', now => $2)`, fmt.Sprintf("+1415666%04d", i), t0)
	}
	mustExec(t, pool, `SELECT herald.pause_channel('sms', 'provider down', by => 'runner', now => $1)`, t0)
	cs := claimOn(t, pool, []string{"backup"}, nil, 100, t0)
	if len(cs) != 3 {
		t.Fatalf("a fallback with a burst of 3 claimed %d", len(cs))
	}
	if cs := claimOn(t, pool, []string{"backup"}, nil, 100, t0.Add(999*time.Millisecond)); len(cs) != 0 {
		t.Fatalf("claimed %d before a token came back", len(cs))
	}
	if cs := claimOn(t, pool, []string{"backup"}, nil, 100, t0.Add(2*time.Second)); len(cs) != 2 {
		t.Fatalf("claimed %d two seconds later, want 2", len(cs))
	}
}

// A fallback must be another existing channel of the same kind, and never for a
// webhook channel (its signing keys are what its receivers trust); a refused setting
// changes nothing.
func TestFallbackSettingsRefused(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('hooks', 'webhook'), ('hooks2', 'webhook'), ('backup', 'email')`)
	for _, c := range []struct{ sql, code string }{
		{`UPDATE herald.channels SET fallback = 'sms' WHERE name = 'email'`, "23503"},
		{`UPDATE herald.channels SET fallback = 'nowhere' WHERE name = 'email'`, "23503"},
		{`UPDATE herald.channels SET fallback = 'email' WHERE name = 'email'`, "23514"},
		{`UPDATE herald.channels SET fallback = 'hooks2' WHERE name = 'hooks'`, "23514"},
	} {
		_, err := pool.Exec(ctx, c.sql)
		wantPgError(t, err, c.code, "")
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.channels WHERE fallback IS NOT NULL`); n != 0 {
		t.Fatalf("%d fallbacks stored", n)
	}
	mustExec(t, pool, `UPDATE herald.channels SET fallback = 'backup' WHERE name = 'email'`)
	_, err := pool.Exec(ctx, `DELETE FROM herald.channels WHERE name = 'backup'`)
	wantPgError(t, err, "23503", "")
}

// End to end, two SMTP relays: the primary delivers until it goes down; after
// HERALD_OUTAGE_FAILURES sends in a row without an answer the runner pauses the
// channel and every message goes out through the fallback's relay, once each, none
// dead; the log and herald.status say which.
func TestFallbackRelayTakesOverAnOutage(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('backup', 'email')`)
	mustExec(t, pool, `UPDATE herald.channels SET fallback = 'backup', backoff_base = '100 milliseconds' WHERE name = 'email'`)
	primary, second := sendertest.StartSMTP(t, true), sendertest.StartSMTP(t, true)
	env := append(append(smtpEnv("HERALD_SMTP_", primary), smtpEnv("HERALD_BACKUP_SMTP_", second)...),
		"HERALD_SENDER_EMAIL=smtp", "HERALD_SENDER_BACKUP=smtp", "HERALD_EMAIL_FROM=noreply@example.com",
		"HERALD_BACKUP_FROM=noreply@example.com", "HERALD_POLL_INTERVAL=100ms", "HERALD_OUTAGE_FAILURES=3",
		"HERALD_PROBE_INTERVAL=1h", "HERALD_SMTP_TIMEOUT=2s", "HERALD_HTTP_ADDR=off", "HERALD_INTAKE=off")
	cmd, logs := runnerProcess(t, dbURL, env...)
	enqueue := func(from, n int) []int64 {
		var out []int64
		for i := from; i < from+n; i++ {
			out = append(out, scalar[int64](t, pool, `SELECT herald.enqueue('email', $1, '{"subject":"Hi","text":"Hello"}')`,
				fmt.Sprintf("u%d@example.net", i)))
		}
		return out
	}
	enqueue(0, 5)
	eventually(t, 30*time.Second, "five sent through the primary", func() bool { return countWhere(t, pool, `status = 'sent'`) == 5 })
	primary.Stop()
	down := enqueue(5, 10)
	eventually(t, 60*time.Second, "ten more sent through the fallback", func() bool { return countWhere(t, pool, `status = 'sent'`) == 15 })
	if !scalar[bool](t, pool, `SELECT paused AND paused_by = 'runner' FROM herald.channels WHERE name = 'email'`) {
		t.Fatalf("the primary's channel is not paused\n%s", logs.String())
	}
	got := second.Rcpts()
	slices.Sort(got)
	var want []string
	for i := 5; i < 15; i++ {
		want = append(want, fmt.Sprintf("u%d@example.net", i))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the fallback relay got %v, want each of %v once", got, want)
	}
	if n := len(primary.Messages()); n != 5 {
		t.Fatalf("the primary relay took %d messages, want 5", n)
	}
	if s := scalar[string](t, pool, `SELECT string_agg(DISTINCT s.channel || ' ' || s.status, ',') FROM unnest($1::bigint[]) i, herald.status(i) s`, down); s != "backup sent" {
		t.Fatalf("status of the rerouted messages: %s", s)
	}
	// log_sequence returns 0 at once while the runner's own run holds the counter: sequence until the log has them.
	eventually(t, 20*time.Second, "a rerouted event for each of the ten", func() bool {
		mustExec(t, pool, `SELECT herald.log_sequence()`)
		return scalar[int64](t, pool, `SELECT count(DISTINCT message_id) FROM herald.log WHERE kind = 'rerouted' AND detail->>'from' = 'email'`) == 10
	})
	if strings.Contains(logs.String(), second.Password) {
		t.Fatal("a relay's password appears in the runner's logs")
	}
	waitExit(t, cmd, logs, 15*time.Second)
}
