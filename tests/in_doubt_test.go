package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

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

// recordEvent records one delivery event of source at now, as the events endpoints do.
func recordEvent(t *testing.T, pool *pgxpool.Pool, source, event string, id int64, providerID string, now time.Time) [3]int32 {
	t.Helper()
	evs, _ := json.Marshal([]map[string]any{{"event_id": fmt.Sprintf("%s:%d:%s", providerID, id, event), "message_id": id,
		"provider_message_id": providerID, "event": event}})
	var r [3]int32
	if err := pool.QueryRow(context.Background(), `SELECT recorded, duplicates, unknown FROM herald.record_delivery_events($1, $2, $3)`,
		source, evs, now).Scan(&r[0], &r[1], &r[2]); err != nil {
		t.Fatalf("record_delivery_events: %v", err)
	}
	return r
}

// A provider's report that it has a message settles a send herald could not be sure
// of: a message waiting for its retry after an attempt in doubt is sent (the
// provider's id kept, a 'sent' log event, the next message of its ordering key
// released) and never claimed again; one whose attempt is still out keeps the id, and
// the attempt's report (fail) or its lapsed lease (reap_stale) ends it sent; an
// outcome event settles as processed does. A report about a message never tried, or
// one already dead, sends nothing and revives nothing (nor does a redrive of that
// dead one); complete with a NULL lease
// token is refused (it would end a waiting message that no runner holds).
func TestProviderReportSettlesSendInDoubt(t *testing.T) {
	_, pool := setup(t)
	mustExec(t, pool, `UPDATE herald.channels SET backoff_base = '1 minute' WHERE name = 'sms'`)
	enqueue := func(to string, args string) int64 {
		return scalar[int64](t, pool, `SELECT herald.enqueue('sms', $1, '{"text":"code 1234"}', now => $2`+args+`)`, to, t0)
	}
	waiting := enqueue("+14155550100", "")
	next := enqueue("+14155550101", ", ordering_key => 'k'")
	held := enqueue("+14155550101", ", ordering_key => 'k'")
	out := enqueue("+14155550102", "")
	lapsing := enqueue("+14155550103", "")
	outcome := enqueue("+14155550104", "")
	dead := enqueue("+14155550105", ", max_attempts => 1")
	got := claim(t, pool, 10, t0)
	if len(got) != 6 {
		t.Fatalf("claimed %v", ids(got))
	}
	token := map[int64]int64{}
	for _, c := range got {
		token[c.ID] = c.Token
	}
	failInDoubt := func(id int64, at time.Time) int32 {
		return scalar[int32](t, pool, `SELECT herald.fail(ARRAY[$1::bigint], ARRAY[$2::bigint], ARRAY['no answer'], ARRAY['transient'],
			error_codes => ARRAY['in_doubt'], now => $3)`, id, token[id], at)
	}
	for _, id := range []int64{waiting, next, outcome, dead} {
		if n := failInDoubt(id, t0); n != 1 {
			t.Fatalf("fail of %d changed %d", id, n)
		}
	}
	// The provider took the three waiting ones, the dead one, and both still out.
	at := t0.Add(time.Second)
	for id, ev := range map[int64]string{waiting: "processed", next: "processed", out: "processed", lapsing: "processed",
		outcome: "delivered", dead: "delivered"} {
		if r := recordEvent(t, pool, "twilio", ev, id, fmt.Sprintf("SM%d", id), at); r != [3]int32{1, 0, 0} {
			t.Fatalf("event %s of %d: recorded, duplicates, unknown %v", ev, id, r)
		}
	}
	state := func(id int64) string {
		return scalar[string](t, pool, `SELECT status || ' ' || coalesce(provider_message_id, '-') || ' ' || coalesce(outcome, '-')
			FROM herald.messages WHERE id = $1`, id)
	}
	for id, want := range map[int64]string{waiting: "sent SM%d -", next: "sent SM%d -", outcome: "sent SM%d delivered",
		out: "processing SM%d -", lapsing: "processing SM%d -", dead: "dead - delivered"} {
		if got := state(id); got != strings.ReplaceAll(want, "%d", fmt.Sprint(id)) {
			t.Errorf("message %d after the provider's report: %s, want %s", id, got, want)
		}
	}
	// The attempt still out fails in doubt: it was sent all the same.
	if n := failInDoubt(out, at); n != 1 || state(out) != fmt.Sprintf("sent SM%d -", out) {
		t.Fatalf("the report of the attempt the provider took: changed %d, now %s", n, state(out))
	}
	// The runner sending the other died: its lease lapses, and it is sent, not retried.
	mustExec(t, pool, `SELECT herald.reap_stale($1)`, t0.Add(time.Hour))
	if s := state(lapsing); s != fmt.Sprintf("sent SM%d -", lapsing) {
		t.Fatalf("the lapsed lease of a message the provider took: %s", s)
	}
	// Nothing of these is claimed again, only what the ordering key held back.
	if got := ids(claim(t, pool, 10, t0.Add(24*time.Hour))); !slices.Equal(got, []int64{held}) {
		t.Fatalf("claimed after the reports %v, want only %d (released by the settled %d)", got, held, next)
	}
	if got := scalar[string](t, pool, `SELECT string_agg(e.id || ':' || e.provider_message_id, ',' ORDER BY e.id)
		FROM herald.log_statements s, unnest(s.message_ids, s.provider_message_ids) AS e(id, provider_message_id)
		WHERE s.kind = 'sent'`); got != fmt.Sprintf("%d:SM%d,%d:SM%d,%d:SM%d,%d:SM%d,%d:SM%d", waiting, waiting, next, next, out, out, lapsing, lapsing, outcome, outcome) {
		t.Fatalf("sent log events: %s", got)
	}
	if got := scalar[string](t, pool, `SELECT string_agg(h.event || coalesce(':' || h.code, ''), ',' ORDER BY h.n)
		FROM herald.history($1) WITH ORDINALITY AS h(at, event, attempt, class, code, copy, n)`, waiting); got != "accepted,failed:in_doubt,sent,processed" {
		t.Fatalf("history of the settled message: %s", got)
	}

	// The dead one the provider had is not sent again by a redrive.
	if n := scalar[int32](t, pool, `SELECT herald.redrive(ARRAY[$1::bigint], $2)`, dead, at); n != 0 || state(dead) != "dead - delivered" {
		t.Fatalf("redrive of a dead message the provider reported on: %d redriven, now %s", n, state(dead))
	}
	// A report about a message never tried settles nothing and is not kept.
	fresh := enqueue("+14155550106", "")
	if r := recordEvent(t, pool, "generic", "processed", fresh, "SMx", at); r != [3]int32{0, 1, 0} || state(fresh) != "queued - -" {
		t.Fatalf("a report about a message never tried: %v, now %s", r, state(fresh))
	}
	// A report about one already sent tells nothing new: counted with the duplicates.
	if r := recordEvent(t, pool, "twilio", "processed", waiting, fmt.Sprintf("SM%d", waiting), at.Add(time.Second)); r != [3]int32{0, 1, 0} {
		t.Fatalf("a second report of a settled send: %v", r)
	}
	_, err := pool.Exec(context.Background(), `SELECT herald.complete(ARRAY[$1::bigint], ARRAY[NULL::bigint])`, fresh)
	wantPgError(t, err, "22V12", "lease_tokens")
}

// A claim and a provider's report meeting on a message waiting for its retry: the
// report waits for the claim's lock and then does not end the message the claim took
// (its attempt is out), but leaves the provider's id on it, so that attempt's failure
// ends it sent, not queued for a third try.
func TestProviderReportMeetsAClaim(t *testing.T) {
	ctx, pool := setup(t)
	id := scalar[int64](t, pool, `SELECT herald.enqueue('sms', '+14155550100', '{"text":"code 1234"}', now => $1)`, t0)
	first := claim(t, pool, 1, t0)
	mustExec(t, pool, `SELECT herald.fail($1::bigint, $2::bigint, 'no answer', 'transient', $3, 'in_doubt', $4)`, id, first[0].Token, t0, t0)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var claimPID int32
	var token int64
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid(), lease_token FROM herald.claim_batch('w', 1, now => $1)`, t0.Add(time.Minute)).
		Scan(&claimPID, &token); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var reportPID int32
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&reportPID); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, `SELECT herald.record_delivery_events('twilio', $1, $2)`,
			fmt.Sprintf(`[{"event_id":"SM1:sent","message_id":%d,"provider_message_id":"SM1","event":"processed"}]`, id), t0.Add(time.Minute))
		done <- err
	}()
	eventually(t, 10*time.Second, "the report waiting for the claim", func() bool {
		return scalar[bool](t, pool, `SELECT $1::integer = ANY (pg_blocking_pids($2))`, claimPID, reportPID)
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := scalar[string](t, pool, `SELECT status || ' ' || coalesce(provider_message_id, '-') FROM herald.messages WHERE id = $1`, id); s != "processing SM1" {
		t.Fatalf("after the claim and the report: %s, want processing SM1", s)
	}
	mustExec(t, pool, `SELECT herald.fail($1::bigint, $2::bigint, 'no answer', 'transient', $3, 'in_doubt', $3)`, id, token, t0.Add(2*time.Minute))
	if s := scalar[string](t, pool, `SELECT status || ' ' || attempts FROM herald.messages WHERE id = $1`, id); s != "sent 2" {
		t.Fatalf("the second attempt's failure: %s, want sent 2", s)
	}
}

// End to end through `herald run` and Twilio's wire format: Twilio creates the first
// message and posts its signed status callback (sent) to the runner's endpoint, and
// then the answer to the runner's request is lost. The runner reports the send in
// doubt, and because Twilio's report came first, the message ends sent with Twilio's
// SID: one text, not two. The second message's lost answer comes with no callback: it
// is sent again (the duplicate the report avoided), so the fake tells them apart.
func TestTwilioReportAvoidsDuplicateText(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	mustExec(t, pool, `UPDATE herald.channels SET backoff_base = '100 milliseconds' WHERE name = 'sms'`)
	addr := freeAddr(t)
	callback := "http://" + addr + "/v1/events/twilio"
	var mu sync.Mutex
	posts := map[string]int{} // To → requests
	twilio := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.ParseForm() != nil {
			w.WriteHeader(400)
			return
		}
		to := r.PostForm.Get("To")
		mu.Lock()
		posts[to]++
		n := posts[to]
		mu.Unlock()
		sid := fmt.Sprintf("SM%032d", len(to)*100+n)
		if n == 1 { // created; the answer is lost
			if to == "+14155550100" {
				cb := r.PostForm.Get("StatusCallback")
				form := url.Values{"MessageSid": {sid}, "MessageStatus": {"sent"}, "AccountSid": {"AC0123"}, "To": {to},
					"From": {"+15005550006"}, "ApiVersion": {"2010-04-01"}}
				if code, b := postTwilio(t, cb, form, "tw-token"); code != 200 {
					t.Errorf("status callback to %s: %d %s", cb, code, b)
				}
			}
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		fmt.Fprintf(w, `{"sid": %q, "status": "queued", "to": %q}`, sid, to)
	}))
	defer twilio.Close()
	cmd, logs := runnerProcess(t, dbURL, "HERALD_HTTP_ADDR="+addr, "HERALD_INTAKE=off", "HERALD_SENDER_SMS=twilio",
		"HERALD_TWILIO_URL="+twilio.URL, "HERALD_TWILIO_ACCOUNT_SID=AC0123", "HERALD_TWILIO_AUTH_TOKEN=tw-token",
		"HERALD_TWILIO_FROM=+15005550006", "HERALD_TWILIO_STATUS_CALLBACK="+callback, "HERALD_POLL_INTERVAL=100ms")
	waitHTTP(t, addr)
	reported := scalar[int64](t, pool, `SELECT herald.enqueue('sms', '+14155550100', '{"text":"code 1234"}')`)
	unreported := scalar[int64](t, pool, `SELECT herald.enqueue('sms', '+14155550101', '{"text":"code 5678"}')`)
	eventually(t, 30*time.Second, "both sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 2 })
	mu.Lock()
	got := fmt.Sprint(posts["+14155550100"], posts["+14155550101"])
	mu.Unlock()
	if got != "1 2" {
		t.Fatalf("Twilio got %s requests for the reported and the unreported text, want 1 2\n%s", got, logs.String())
	}
	// The reported one's attempt ended sent, not failed: no error is kept for it.
	for id, want := range map[int64]string{reported: fmt.Sprintf("SM%032d 1 -", 1201), unreported: fmt.Sprintf("SM%032d 2 in_doubt", 1202)} {
		if s := scalar[string](t, pool, `SELECT coalesce(provider_message_id, '-') || ' ' || attempts || ' ' || coalesce(last_error_code, '-')
			FROM herald.messages WHERE id = $1`, id); s != want {
			t.Errorf("message %d: %s, want %s", id, s, want)
		}
	}
	waitExit(t, cmd, logs, 15*time.Second)
}
