// A producer withdrawing its own messages, and reading them by key: herald.cancel and
// herald.status by id or idempotency key, over SQL and HTTP, and what they must not
// reach.
package tests

import (
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald/herald/runner/intake"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A producer schedules a reminder under a key and withdraws it when the appointment
// is called off; it is never claimed. Attack: another producer that knows the id (ids
// are a sequence) or the key cancels nothing of it, and learns nothing it could not
// learn from an unknown id.
func TestProducersCancelOnlyTheirOwnMessages(t *testing.T) {
	ctx, pool := setup(t)
	alice := loginPool(t, pool, "herald_test_alice", "herald_producer")
	mallory := loginPool(t, pool, "herald_test_mallory", "herald_producer")
	enqueue := func(p *pgxpool.Pool, key string) int64 {
		t.Helper()
		var id int64
		if err := p.QueryRow(ctx, `SELECT herald.enqueue('email', 'a@example.com', `+otp+`,
			run_at => now() + interval '1 hour', idempotency_key => $1)`, key).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	reminder := enqueue(alice, "reminder-42")
	other := enqueue(alice, "reminder-43")
	third := enqueue(alice, "reminder-44")

	cancelAs := func(p *pgxpool.Pool, sql string, arg any) *string {
		t.Helper()
		var s *string
		if err := p.QueryRow(ctx, sql, arg).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := cancelAs(mallory, `SELECT herald.cancel($1)`, reminder); s != nil {
		t.Fatalf("another producer's cancel by id answered %q", *s)
	}
	if s := cancelAs(mallory, `SELECT herald.cancel(idempotency_key => $1)`, "reminder-42"); s != nil {
		t.Fatalf("another producer's cancel by key answered %q", *s)
	}
	if n := scalar[int64](t, mallory, `SELECT count(*) FROM herald.status(idempotency_key => 'reminder-42')`); n != 0 {
		t.Fatal("another producer read a message's status by its key")
	}
	if got := scalar[int64](t, alice, `SELECT message_id FROM herald.status(idempotency_key => 'reminder-42')`); got != reminder {
		t.Fatalf("the owner's status by key names message %d, want %d", got, reminder)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE status = 'queued'`); n != 3 {
		t.Fatalf("after the attacks %d of alice's 3 messages are queued", n)
	}
	// Mallory's own message under the same key is hers to cancel, and only it.
	mine := enqueue(mallory, "reminder-42")
	if s := cancelAs(mallory, `SELECT herald.cancel(idempotency_key => $1)`, "reminder-42"); s == nil || *s != "cancelled" {
		t.Fatalf("mallory's cancel of her own key: %v", s)
	}
	if st := scalar[string](t, pool, `SELECT string_agg(id || ' ' || status, ', ' ORDER BY id) FROM herald.messages WHERE id IN ($1, $2)`, reminder, mine); st != fmt.Sprintf("%d queued, %d cancelled", reminder, mine) {
		t.Fatalf("after mallory cancelled her key: %s", st)
	}

	if s := cancelAs(alice, `SELECT herald.cancel(idempotency_key => $1)`, "reminder-42"); s == nil || *s != "cancelled" {
		t.Fatalf("alice's cancel by key: %v", s)
	}
	if s := cancelAs(alice, `SELECT herald.cancel($1)`, other); s == nil || *s != "cancelled" {
		t.Fatalf("alice's cancel by id: %v", s)
	}
	if s := scalar[string](t, alice, `SELECT status FROM herald.status($1)`, reminder); s != "cancelled" {
		t.Fatalf("status of the cancelled reminder: %s", s)
	}
	// The admin cancels any message by id.
	if s := scalar[string](t, pool, `SELECT herald.cancel($1)`, third); s != "cancelled" {
		t.Fatalf("admin's cancel: %s", s)
	}
	if got := claim(t, pool, 10, time.Now().Add(2*time.Hour)); len(got) != 0 {
		t.Fatalf("claimed after every message was cancelled: %v", ids(got))
	}
	sequenceAll(t, pool)
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.log WHERE kind = 'cancelled'`); n != 4 {
		t.Fatalf("%d cancelled log events, want 4", n)
	}

	// Bad input changes nothing.
	fresh := enqueue(alice, "reminder-45")
	for _, c := range []struct{ sql, code, field string }{
		{`SELECT herald.cancel()`, "22V12", "id"},
		{`SELECT herald.cancel(` + fmt.Sprint(fresh) + `, 'reminder-45')`, "22V12", "idempotency_key"},
		{`SELECT herald.cancel(idempotency_key => '')`, "22V09", "idempotency_key"},
		{`SELECT herald.cancel(idempotency_key => repeat('k', 256))`, "22V09", "idempotency_key"},
	} {
		_, err := alice.Exec(ctx, c.sql)
		wantPgError(t, err, c.code, c.field)
	}
	if s := scalar[string](t, pool, `SELECT status FROM herald.messages WHERE id = $1`, fresh); s != "queued" {
		t.Fatalf("bad cancels left the message %s", s)
	}
}

// A cancel racing the runners' claims: each message is either cancelled and never
// handed to a worker, or handed to exactly one and reported back as processing to the
// canceller; none is both, none is neither.
func TestCancelRacesTheClaim(t *testing.T) {
	ctx, pool := setup(t)
	alice := loginPool(t, pool, "herald_test_alice", "herald_producer")
	const n = 300
	all := scalar[[]int64](t, alice, `SELECT array_agg(herald.enqueue('email', 'u' || i || '@example.com', `+otp+`)) FROM generate_series(1, $1) AS i`, n)

	var mu sync.Mutex
	claimedBy := map[int64]int{}
	answer := map[int64]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	done := make(chan struct{})
	for w := range 2 {
		wg.Go(func() {
			for {
				rows, err := pool.Query(ctx, `SELECT id FROM herald.claim_batch($1, 7)`, fmt.Sprint("w", w))
				if err != nil {
					errs <- err
					return
				}
				got := 0
				for rows.Next() {
					var id int64
					if err := rows.Scan(&id); err != nil {
						errs <- err
						return
					}
					mu.Lock()
					claimedBy[id]++
					mu.Unlock()
					got++
				}
				if err := rows.Err(); err != nil {
					errs <- err
					return
				}
				select {
				case <-done:
					if got == 0 {
						return
					}
				default:
				}
			}
		})
	}
	var cw sync.WaitGroup
	for c := range 2 {
		cw.Go(func() {
			order := append([]int64(nil), all...)
			rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			for _, id := range order {
				if id%2 != int64(c) {
					continue
				}
				var s *string
				if err := alice.QueryRow(ctx, `SELECT herald.cancel($1)`, id).Scan(&s); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				answer[id] = fmt.Sprint(*s)
				mu.Unlock()
			}
		})
	}
	cw.Wait()
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cancelled := 0
	for _, id := range all {
		got := answer[id]
		switch {
		case got == "cancelled" && claimedBy[id] == 0:
			cancelled++
		case got == "processing" && claimedBy[id] == 1:
		default:
			t.Fatalf("message %d: cancel answered %q, claimed %d times", id, got, claimedBy[id])
		}
		want := map[string]string{"cancelled": "cancelled", "processing": "processing"}[got]
		if s := scalar[string](t, pool, `SELECT status FROM herald.messages WHERE id = $1`, id); s != want {
			t.Fatalf("message %d is %s, the cancel answered %s", id, s, got)
		}
	}
	t.Logf("%d of %d cancelled, %d claimed", cancelled, n, n-cancelled)
}

// Over HTTP: DELETE by id or by key; a token cancels only its own producer's
// messages (404 for another's, as for an unknown id); a message being sent is 409
// with its state; bad ids and keys are 400 and change nothing.
func TestIntakeCancel(t *testing.T) {
	_, pool := setup(t)
	role := loginPool(t, pool, "herald_test_intake", "herald_intake")
	srv := httptest.NewServer(intake.Handler(role, intake.Config{Tokens: []intake.Token{
		{Name: "billing", Secret: "tok-billing"}, {Name: "shipping", Secret: "tok-shipping"}}}))
	defer srv.Close()
	billing := map[string]string{"Authorization": "Bearer tok-billing"}
	shipping := map[string]string{"Authorization": "Bearer tok-shipping"}
	post := func(key string) int64 {
		t.Helper()
		var r struct{ ID int64 }
		h := map[string]string{"Authorization": "Bearer tok-billing", "Idempotency-Key": key}
		if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", goodEmail, h, &r); code != 202 {
			t.Fatalf("enqueue: %d", code)
		}
		return r.ID
	}
	keyed, byID, busy := post("invoice/7 reminder"), post("b"), post("c")
	byKeyURL := srv.URL + "/v1/messages?idempotency_key=" + url.QueryEscape("invoice/7 reminder")

	var e struct {
		Error struct{ Code, Field, Status string }
	}
	if code := do(t, "DELETE", fmt.Sprintf("%s/v1/messages/%d", srv.URL, keyed), "", "", shipping, &e); code != 404 || e.Error.Code != "not_found" {
		t.Fatalf("another token's cancel by id: %d %+v", code, e.Error)
	}
	if code := do(t, "DELETE", byKeyURL, "", "", shipping, &e); code != 404 {
		t.Fatalf("another token's cancel by key: %d %+v", code, e.Error)
	}
	getByKey := srv.URL + "/v1/messages?idempotency_key=" + url.QueryEscape("invoice/7 reminder")
	if code := do(t, "GET", getByKey, "", "", shipping, &e); code != 404 || e.Error.Field != "idempotency_key" {
		t.Fatalf("another token's status by key: %d %+v", code, e.Error)
	}
	var st intake.Status
	if code := do(t, "GET", getByKey, "", "", billing, &st); code != 200 || st.ID != keyed || st.Status != "queued" {
		t.Fatalf("status by key: %d %+v", code, st)
	}
	if code := do(t, "DELETE", byKeyURL, "", "", nil, &e); code != 401 {
		t.Fatalf("cancel without a token: %d", code)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE status = 'queued'`); n != 3 {
		t.Fatalf("after the attacks %d of 3 messages are queued", n)
	}

	type cancelled struct {
		ID             int64  `json:"id"`
		IdempotencyKey string `json:"idempotency_key"`
		Status         string `json:"status"`
	}
	var ok cancelled
	if code := do(t, "DELETE", byKeyURL, "", "", billing, &ok); code != 200 || ok.Status != "cancelled" || ok.IdempotencyKey != "invoice/7 reminder" {
		t.Fatalf("cancel by key: %d %+v", code, ok)
	}
	ok = cancelled{}
	if code := do(t, "DELETE", fmt.Sprintf("%s/v1/messages/%d", srv.URL, byID), "", "", billing, &ok); code != 200 || ok.Status != "cancelled" || ok.ID != byID {
		t.Fatalf("cancel by id: %d %+v", code, ok)
	}
	if got := claim(t, pool, 10, time.Now()); len(got) != 1 || got[0].ID != busy {
		t.Fatalf("claimed %v, want only %d", ids(got), busy)
	}
	if code := do(t, "DELETE", fmt.Sprintf("%s/v1/messages/%d", srv.URL, busy), "", "", billing, &e); code != 409 ||
		e.Error.Code != "not_cancellable" || e.Error.Status != "processing" || e.Error.Field != "id" {
		t.Fatalf("cancel of a message being sent: %d %+v", code, e.Error)
	}

	for _, bad := range []struct{ path, code string }{
		{"/v1/messages/abc", "invalid_id"},
		{"/v1/messages/0", "invalid_id"},
		{"/v1/messages", "invalid_idempotency_key"},
		{"/v1/messages?idempotency_key=a&idempotency_key=b", "invalid_idempotency_key"},
		{"/v1/messages?idempotency_key=", "invalid_idempotency_key"},
		{"/v1/messages?idempotency_key=" + strings.Repeat("k", 256), "invalid_idempotency_key"},
		{"/v1/messages?idempotency_key=a%00b", "invalid_idempotency_key"},
	} {
		e.Error.Code = ""
		if code := do(t, "DELETE", srv.URL+bad.path, "", "", billing, &e); code != 400 || e.Error.Code != bad.code {
			t.Fatalf("DELETE %s: %d %q, want 400 %s", bad.path, code, e.Error.Code, bad.code)
		}
	}
	if st := scalar[string](t, pool, `SELECT string_agg(status, ',' ORDER BY id) FROM herald.messages`); st != "cancelled,cancelled,processing" {
		t.Fatalf("statuses: %s", st)
	}
}
