// A channel's recipient_limit: how many messages one recipient may be sent, whoever
// enqueues them.
package tests

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald/herald/runner/intake"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Attack: SMS bombing. Whoever holds a producer role or an intake token (a sign-up
// form's "send me a code") asks for code after code to one victim's number, from
// several producers and over SQL and HTTP at once. The channel's recipient_limit (5
// an hour) lets 5 through in all; every other is refused (53400 recipient, HTTP 429
// with the wait) and stores nothing, while other numbers are served. The limit
// refills at its rate; repeats and suppressed messages take nothing.
func TestRecipientLimitStopsBombing(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `UPDATE herald.channels SET recipient_limit = 5, recipient_window = '1 hour' WHERE name IN ('sms', 'email')`)
	alice := loginPool(t, pool, "herald_test_alice", "herald_producer")
	mallory := loginPool(t, pool, "herald_test_mallory", "herald_producer")
	role := loginPool(t, pool, "herald_test_intake", "herald_intake")
	srv := httptest.NewServer(intake.Handler(role, intake.Config{Tokens: []intake.Token{{Name: "signup", Secret: "tok-signup"}}}))
	defer srv.Close()
	const victim = "+14155550100"
	otp := func(to string) string {
		return fmt.Sprintf(`{"channel":"sms","recipient":%q,"payload":{"text":"Your code is 123456"}}`, to)
	}
	auth := map[string]string{"Authorization": "Bearer tok-signup"}

	refused := 0
	for i := range 12 {
		var err error
		switch i % 3 {
		case 0:
			_, err = alice.Exec(ctx, `SELECT herald.enqueue('sms', $1, '{"text":"Your code is 123456"}')`, victim)
		case 1:
			_, err = mallory.Exec(ctx, `SELECT herald.enqueue('sms', $1, '{"text":"Your code is 123456"}')`, victim)
		case 2:
			var e apiError
			switch code := do(t, "POST", srv.URL+"/v1/messages", "application/json", otp(victim), auth, &e); code {
			case 202:
			case 429:
				if e.Error.Code != "recipient_limit_exceeded" || e.Error.Field != "recipient" {
					t.Fatalf("HTTP refusal: %+v", e.Error)
				}
				refused++
			default:
				t.Fatalf("HTTP enqueue %d: %d %+v", i, code, e.Error)
			}
			continue
		}
		if err != nil {
			wantPgError(t, err, "53400", "recipient")
			refused++
		}
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE recipient = $1`, victim); n != 5 || refused != 7 {
		t.Fatalf("%d messages stored for the victim and %d refused, want 5 and 7", n, refused)
	}
	// Another number is served; a batch that would take the victim past the limit is
	// refused whole, naming the first message to the victim.
	enqueueBatch(t, pool, "sms", 3, time.Now())
	before := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`)
	_, err := alice.Exec(ctx, `SELECT herald.enqueue_batch($1)`, "["+otp("+14155550199")+","+otp(victim)+"]")
	wantPgError(t, err, "53400", "messages[1].recipient")
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != before {
		t.Fatalf("a refused batch stored %d messages", n-before)
	}
	// The wait: 5 an hour is one every 12 minutes; the intake sends it as Retry-After,
	// for a single message and for a batch.
	wait := scalar[*int32](t, pool, `SELECT herald.recipient_wait('sms', $1)`, victim)
	if wait == nil || *wait < 700 || *wait > 720 {
		t.Fatalf("recipient_wait %v, want about 720 seconds", wait)
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/messages", otp(victim)},
		{"/v1/messages/batch", "[" + otp("+14155550198") + "," + otp(victim) + "]"},
	} {
		var e apiError
		code, h := doHeader(t, "POST", srv.URL+c.path, "application/json", c.body, auth, &e)
		retry, _ := strconv.Atoi(h.Get("Retry-After"))
		if code != 429 || e.Error.Code != "recipient_limit_exceeded" || retry < 700 || retry > 720 {
			t.Fatalf("%s: %d %+v Retry-After %q", c.path, code, e.Error, h.Get("Retry-After"))
		}
	}
	// 12 minutes later (an admin's clock) one more code goes, and only one.
	later := time.Now().Add(12*time.Minute + time.Second)
	if w := scalar[*int32](t, pool, `SELECT herald.recipient_wait('sms', $1, now => $2)`, victim, later); w != nil {
		t.Fatalf("recipient_wait 12 minutes later: %d", *w)
	}
	mustExec(t, pool, `SELECT herald.enqueue('sms', $1, '{"text":"x"}', now => $2)`, victim, later)
	_, err = pool.Exec(ctx, `SELECT herald.enqueue('sms', $1, '{"text":"x"}', now => $2)`, victim, later)
	wantPgError(t, err, "53400", "recipient")

	// An e-mail address counts as its mailbox: letter case and +tags are one recipient.
	for i, to := range []string{"victim@example.com", "Victim@Example.COM", "victim+1@example.com", "VICTIM+b@example.com", "victim+x.y@example.com"} {
		if _, err := mallory.Exec(ctx, `SELECT herald.enqueue('email', $1, '{"subject":"s","text":"t"}')`, to); err != nil {
			t.Fatalf("e-mail %d: %v", i, err)
		}
	}
	_, err = mallory.Exec(ctx, `SELECT herald.enqueue('email', 'victim+6@example.com', '{"subject":"s","text":"t"}')`)
	wantPgError(t, err, "53400", "recipient")

	// A repeat of a stored key is answered, not refused; a suppressed recipient's
	// messages end suppressed and take nothing.
	mustExec(t, pool, `UPDATE herald.channels SET recipient_limit = 2 WHERE name = 'sms'`)
	first := scalar[int64](t, alice, `SELECT herald.enqueue('sms', '+14155550150', '{"text":"x"}', idempotency_key => 'k1')`)
	scalar[int64](t, alice, `SELECT herald.enqueue('sms', '+14155550150', '{"text":"y"}')`)
	if again := scalar[int64](t, alice, `SELECT herald.enqueue('sms', '+14155550150', '{"text":"x"}', idempotency_key => 'k1')`); again != first {
		t.Fatalf("a repeat at the limit: %d, want %d", again, first)
	}
	mustExec(t, pool, `SELECT herald.suppress('sms', ARRAY['+14155550160'])`)
	for range 3 {
		scalar[int64](t, alice, `SELECT herald.enqueue('sms', '+14155550160', '{"text":"x"}')`)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.recipient_buckets WHERE recipient = '+14155550160'`); n != 0 {
		t.Fatal("suppressed messages took tokens")
	}

	// purge drops the budgets that are whole again.
	mustExec(t, pool, `SELECT herald.purge('30 days', now => now() + interval '61 minutes')`)
	if left := scalar[string](t, pool, `SELECT coalesce(string_agg(recipient, ','), '') FROM herald.recipient_buckets`); left != victim {
		t.Fatalf("buckets after purge: %q, want only the victim's, which took one more 12 minutes later", left)
	}
}

// Enqueues to one recipient from 8 connections at once take turns on its bucket:
// exactly the limit is stored. Batches naming two recipients in opposite orders do
// not deadlock (buckets are locked in one order).
func TestRecipientLimitUnderConcurrency(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `UPDATE herald.channels SET recipient_limit = 10 WHERE name = 'sms'`)
	var wg sync.WaitGroup
	var mu sync.Mutex
	stored, refused := 0, 0
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 5 {
				_, err := pool.Exec(ctx, `SELECT herald.enqueue('sms', '+14155550100', '{"text":"x"}')`)
				var pg *pgconn.PgError
				mu.Lock()
				switch {
				case err == nil:
					stored++
				case errors.As(err, &pg) && pg.Code == "53400":
					refused++
				default:
					errs <- err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if stored != 10 || refused != 30 {
		t.Fatalf("stored %d, refused %d; want 10 and 30", stored, refused)
	}
	mustExec(t, pool, `UPDATE herald.channels SET recipient_limit = 1000000 WHERE name = 'sms'`)
	a, b := `{"channel":"sms","recipient":"+14155550101","payload":{"text":"a"}}`, `{"channel":"sms","recipient":"+14155550102","payload":{"text":"b"}}`
	for i := range 8 {
		wg.Go(func() {
			batch := "[" + a + "," + b + "]"
			if i%2 == 1 {
				batch = "[" + b + "," + a + "]"
			}
			for range 30 {
				if _, err := pool.Exec(ctx, `SELECT herald.enqueue_batch($1)`, batch); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// Attack: SMS pumping (toll fraud). Whoever reaches a "send me a code" form asks for
// one code each to many numbers of one range, which a carrier in on the fraud pays
// out for; no number gets two, so the recipient_limit never sees it. The channel's
// range_limit (5 an hour for the numbers sharing their first 7 digits) lets 5 of the
// range through and refuses the rest (53400 recipient, HTTP 429 with the wait),
// storing nothing, while numbers of other ranges are served. The range refills at its
// rate.
func TestRangeLimitStopsSMSPumping(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, recipient_limit, range_limit, range_window, range_digits)
		VALUES ('otp', 'sms', 3, 5, '1 hour', 7)`)
	form := loginPool(t, pool, "herald_test_pump_form", "herald_producer")
	role := loginPool(t, pool, "herald_test_intake", "herald_intake")
	srv := httptest.NewServer(intake.Handler(role, intake.Config{Tokens: []intake.Token{{Name: "signup", Secret: "tok-signup"}}}))
	defer srv.Close()
	code := func(to string) string {
		return fmt.Sprintf(`{"channel":"otp","recipient":%q,"payload":{"text":"Your code is 123456"}}`, to)
	}
	stored, refused := 0, 0
	for i := range 20 {
		number := fmt.Sprintf("+8801712%06d", i)
		if i%2 == 0 {
			_, err := form.Exec(ctx, `SELECT herald.enqueue('otp', $1, '{"text":"Your code is 123456"}')`, number)
			if err == nil {
				stored++
				continue
			}
			if e := wantPgError(t, err, "53400", "recipient"); !strings.Contains(e.Message, "range_limit") {
				t.Fatalf("refusal: %s", e.Message)
			}
			refused++
			continue
		}
		if postWithinLimit(t, srv.URL, "tok-signup", code(number)) {
			stored++
		} else {
			refused++
		}
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE recipient LIKE '+8801712%'`); n != 5 || stored != 5 || refused != 15 {
		t.Fatalf("%d stored (%d counted) and %d refused, want 5 and 15", n, stored, refused)
	}
	// Other ranges are served, within their numbers' own limit.
	for range 3 {
		if _, err := form.Exec(ctx, `SELECT herald.enqueue('otp', '+14155550100', '{"text":"Your code is 123456"}')`); err != nil {
			t.Fatalf("a number of another range: %v", err)
		}
	}
	_, err := form.Exec(ctx, `SELECT herald.enqueue('otp', '+14155550100', '{"text":"Your code is 123456"}')`)
	if e := wantPgError(t, err, "53400", "recipient"); !strings.Contains(e.Message, "recipient_limit") {
		t.Fatalf("the fourth code to one number: %s", e.Message)
	}
	// A batch with one number of the spent range is refused whole, naming it.
	_, err = form.Exec(ctx, `SELECT herald.enqueue_batch($1)`, "["+code("+4915112345678")+","+code("+8801712999999")+"]")
	wantPgError(t, err, "53400", "messages[1].recipient")
	// The wait for a new number of the range: 5 an hour is one every 12 minutes.
	wait := scalar[int32](t, pool, `SELECT herald.recipient_wait('otp', '+8801712555555')`)
	if wait < 700 || wait > 720 {
		t.Fatalf("recipient_wait for the range: %d s, want about 720", wait)
	}
	mustExec(t, pool, `SELECT herald.enqueue('otp', '+8801712555555', '{"text":"Your code is 123456"}', now => now() + interval '13 minutes')`)
	// range_limit is for SMS: an e-mail channel refuses it.
	_, err = pool.Exec(ctx, `UPDATE herald.channels SET range_limit = 5 WHERE name = 'email'`)
	wantPgError(t, err, "23514", "")
}

// Attack: a producer aims webhooks at a third party's site, each at another URL (other
// paths, host names under the site's wildcard DNS, ports, letter case, a final dot) so
// that no recipient gets two and every runner sends its share. A webhook channel's
// range_limit (5 an hour per site: the host's registrable domain by the Public Suffix
// List) lets 5 through from all producers together and refuses the rest (53400
// recipient naming the site, HTTP 429 with the wait), storing nothing; other sites,
// and other IP addresses, are served. Sites under a public suffix of more than one
// label are told apart (example.co.uk from bakery.co.uk), and so are the tenants of a
// shared host (alice.herokuapp.com, bob.herokuapp.com): a producer that spends one
// tenant's budget leaves the others theirs.
func TestRangeLimitBoundsAWebhookSite(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, range_limit, range_window) VALUES ('hooks', 'webhook', 5, '1 hour')`)
	producer := loginPool(t, pool, "herald_test_hook_producer", "herald_producer")
	role := loginPool(t, pool, "herald_test_intake", "herald_intake")
	srv := httptest.NewServer(intake.Handler(role, intake.Config{Tokens: []intake.Token{{Name: "app", Secret: "tok-app"}}}))
	defer srv.Close()
	urls := []string{"https://victim.example/a", "https://api.victim.example/b", "https://A.B.Victim.Example:8443/c?d=1",
		"http://victim.example./e", "https://victim.example/f#g", "https://x1.victim.example/", "https://victim.example:443/h",
		"https://VICTIM.EXAMPLE/i", "https://x2.victim.example/j", "https://x3.victim.example/k"}
	stored, refused := 0, 0
	for i, u := range urls {
		if i%2 == 0 {
			_, err := producer.Exec(ctx, `SELECT herald.enqueue('hooks', $1, '{"event":"ping"}')`, u)
			if err == nil {
				stored++
				continue
			}
			if e := wantPgError(t, err, "53400", "recipient"); !strings.Contains(e.Message, "site") || !strings.Contains(e.Message, "range_limit") {
				t.Fatalf("refusal: %s", e.Message)
			}
			refused++
			continue
		}
		if postWithinLimit(t, srv.URL, "tok-app", fmt.Sprintf(`{"channel":"hooks","recipient":%q,"payload":{"event":"ping"}}`, u)) {
			stored++
		} else {
			refused++
		}
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE channel = 'hooks'`); n != 5 || stored != 5 || refused != 5 {
		t.Fatalf("%d stored (%d counted) and %d refused, want 5 and 5", n, stored, refused)
	}
	// Other sites and other addresses have budgets of their own.
	for _, u := range []string{"https://other.example/a", "https://192.0.2.1/a", "https://192.0.2.2/a", "https://[2001:db8::1]:8443/a"} {
		if _, err := producer.Exec(ctx, `SELECT herald.enqueue('hooks', $1, '{"event":"ping"}')`, u); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
	}
	// The wait for a new URL of the site: 5 an hour is one every 12 minutes.
	if wait := scalar[int32](t, pool, `SELECT herald.recipient_wait('hooks', 'https://new.victim.example/')`); wait < 700 || wait > 720 {
		t.Fatalf("recipient_wait for the site: %d s, want about 720", wait)
	}
	// A site under a public suffix of two labels, and tenants of a shared host.
	mustExec(t, pool, `UPDATE herald.channels SET range_limit = 1 WHERE name = 'hooks'`)
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"https://a.shop.example.co.uk/", true}, {"https://b.shop.example.co.uk/", false}, {"https://bakery.co.uk/", true},
		{"https://hooks.alice.herokuapp.com/", true}, {"https://alice.herokuapp.com/again", false}, {"https://bob.herokuapp.com/", true},
		{"https://evil.github.io/", true}, {"https://good.github.io/", true},
	} {
		_, err := producer.Exec(ctx, `SELECT herald.enqueue('hooks', $1, '{"event":"ping"}')`, c.url)
		if c.ok && err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		if !c.ok {
			wantPgError(t, err, "53400", "recipient")
		}
	}
}

// postWithinLimit posts message to the intake at url with token: true when it is
// stored (202), false when a recipient or range limit refuses it (429
// recipient_limit_exceeded); any other answer fails the test.
func postWithinLimit(t *testing.T, url, token, message string) bool {
	t.Helper()
	var e apiError
	switch got := do(t, "POST", url+"/v1/messages", "application/json", message, map[string]string{"Authorization": "Bearer " + token}, &e); got {
	case 202:
		return true
	case 429:
		if e.Error.Code != "recipient_limit_exceeded" {
			t.Fatalf("HTTP refusal of %s: %+v", message, e.Error)
		}
		return false
	default:
		t.Fatalf("HTTP enqueue of %s: %d %+v", message, got, e.Error)
		return false
	}
}

// Attack: a producer enqueues one webhook to hooks.slack.com on a channel with a
// range_limit and keeps its transaction open (on purpose, or doing slow work after
// the enqueue). The site's budget row stays locked until it commits; every other
// producer's enqueue to any Slack URL, over SQL, in a batch or over HTTP, waits at
// most the channel's budget_wait, then is refused with 55P03 (HTTP 503
// recipient_busy, Retry-After 1; the CLI exits 1) and stores nothing, instead of waiting for as long
// as the open transaction lasts. Other sites are served meanwhile; a caller's own
// lock_timeout is what it was after the call; once the holder commits, the same
// enqueue is stored.
func TestAnOpenTransactionHoldsOthersAtMostBudgetWait(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, range_limit, range_window, budget_wait)
		VALUES ('hooks', 'webhook', 1000, '1 hour', '200 milliseconds')`)
	holder := loginPool(t, pool, "herald_test_hook_holder", "herald_producer")
	producer := loginPool(t, pool, "herald_test_hook_producer", "herald_producer")
	role := loginPool(t, pool, "herald_test_intake", "herald_intake")
	srv := httptest.NewServer(intake.Handler(role, intake.Config{Tokens: []intake.Token{{Name: "app", Secret: "tok-app"}}}))
	defer srv.Close()

	open, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Rollback(ctx)
	if _, err := open.Exec(ctx, `SELECT herald.enqueue('hooks', 'https://hooks.slack.com/services/T0/B0/holder', '{"text":"hi"}')`); err != nil {
		t.Fatal(err)
	}

	conn, err := producer.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET statement_timeout = '30s'`); err != nil { // without the bound, the wait ends here
		t.Fatal(err)
	}
	defer conn.Exec(ctx, `RESET statement_timeout`)
	_, err = conn.Exec(ctx, `SELECT herald.enqueue('hooks', 'https://hooks.slack.com/services/T1/B1/other', '{"text":"hi"}')`)
	if e := wantPgError(t, err, "55P03", "recipient"); !strings.Contains(e.Message, "not committed") {
		t.Fatalf("refusal: %s", e.Message)
	}
	_, err = conn.Exec(ctx, `SELECT herald.enqueue_batch('[{"channel":"hooks","recipient":"https://other.example/a","payload":{}},
		{"channel":"hooks","recipient":"https://hooks.slack.com/services/T2/B2/x","payload":{}}]')`)
	wantPgError(t, err, "55P03", "messages")
	var e apiError
	code, h := doHeader(t, "POST", srv.URL+"/v1/messages", "application/json",
		`{"channel":"hooks","recipient":"https://hooks.slack.com/services/T3/B3/y","payload":{}}`, map[string]string{"Authorization": "Bearer tok-app"}, &e)
	if code != 503 || e.Error.Code != "recipient_busy" || h.Get("Retry-After") != "1" {
		t.Fatalf("over HTTP: %d %+v Retry-After %q", code, e.Error, h.Get("Retry-After"))
	}
	cli := exec.Command(buildHerald(t), "enqueue", "--channel", "hooks", "--recipient", "https://hooks.slack.com/services/T4/B4/z", "--payload", `{}`)
	cli.Env = append(os.Environ(), "DATABASE_URL="+roleURL(t, pool, "herald_test_hook_producer"))
	if out, _ := cli.CombinedOutput(); cli.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "recipient_busy") {
		t.Fatalf("herald enqueue: exit %d %q, want 1 naming recipient_busy", cli.ProcessState.ExitCode(), out)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE channel = 'hooks'`); n != 0 {
		t.Fatalf("%d messages stored by refused calls (the holder's is not committed)", n)
	}

	// Other sites go on, and the caller's lock_timeout is its own again.
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '7s'`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT herald.enqueue('hooks', 'https://other.example/hook', '{}')`); err != nil {
		t.Fatal(err)
	}
	if got := scalarTx(t, tx, `SHOW lock_timeout`); got != "7s" {
		t.Fatalf("lock_timeout after the enqueue: %q, want the caller's 7s", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	if err := open.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT herald.enqueue('hooks', 'https://hooks.slack.com/services/T1/B1/other', '{"text":"hi"}')`); err != nil {
		t.Fatalf("after the holder committed: %v", err)
	}
	if _, err := pool.Exec(ctx, `UPDATE herald.channels SET budget_wait = '0' WHERE name = 'hooks'`); err == nil {
		t.Fatal("a budget_wait of 0 (lock_timeout's 'no bound') was taken")
	}
}

// scalarTx reads one text value inside tx.
func scalarTx(t *testing.T, tx pgx.Tx, sql string) string {
	t.Helper()
	var s string
	if err := tx.QueryRow(context.Background(), sql).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}
