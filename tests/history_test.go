package tests

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/herald/herald/runner/intake"
)

// herald.history tells a producer what happened to its message, event by event:
// accepted, each failed attempt with its class and code (never the provider's text,
// which may quote other people's addresses), the end it came to, the providers'
// reports after sent, a copy's marked. Attack: another producer, over SQL and HTTP,
// learns nothing of it, not even that it exists.
func TestHistoryTellsItsProducerOnly(t *testing.T) {
	ctx, pool := setup(t)
	mine := loginPool(t, pool, "herald_test_history_mine", "herald_producer")
	other := loginPool(t, pool, "herald_test_history_other", "herald_producer")
	id := scalar[int64](t, mine, `SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"s","text":"t","cc":["bo@example.com"]}',
		idempotency_key => 'order-9')`)
	mustExec(t, pool, `SELECT herald.fail(id, lease_token, '421 4.3.2 mx.example.com busy; secret-relay-text', 'transient',
		error_code => '421 4.3.2', now => $1) FROM herald.claim_batch('w', 10, now => $1)`, time.Now().Add(time.Second))
	mustExec(t, pool, `SELECT herald.complete(id, lease_token, '<m-9>', now => $1) FROM herald.claim_batch('w', 10, now => $1)`,
		time.Now().Add(time.Hour))
	mustExec(t, pool, `SELECT herald.record_delivery_events('generic', jsonb_build_array(
		jsonb_build_object('event_id', 'e1', 'message_id', $1::bigint, 'event', 'delivered', 'at', $2::timestamptz),
		jsonb_build_object('event_id', 'e2', 'message_id', $1::bigint, 'recipient', 'bo@example.com', 'event', 'bounced',
		                   'type', 'hard', 'code', '550 5.1.1', 'reason', 'bo: no such user', 'at', $3::timestamptz)))`,
		id, time.Now().Add(2*time.Hour), time.Now().Add(3*time.Hour))
	want := "accepted - - - f; failed 1 transient 421 4.3.2 f; sent 2 - - f; delivered - - - f; bounced - hard 550 5.1.1 t"
	history := `SELECT string_agg(concat_ws(' ', event, coalesce(attempt::text, '-'), coalesce(class, '-'), coalesce(code, '-'), copy), '; ')
		FROM herald.history(%s)`
	if got := scalar[string](t, mine, fmt.Sprintf(history, "id => $1"), id); got != want {
		t.Fatalf("history by id: %s\nwant %s", got, want)
	}
	if got := scalar[string](t, mine, fmt.Sprintf(history, "idempotency_key => 'order-9'")); got != want {
		t.Fatalf("history by key: %s", got)
	}
	if n := scalar[int64](t, mine, `SELECT count(*) FROM herald.history($1) h WHERE h::text ~ 'secret-relay-text|no such user|ana@|bo@'`, id); n != 0 {
		t.Fatal("the history shows a provider's text or an address")
	}
	if n := scalar[int64](t, other, `SELECT count(*) FROM herald.history($1)`, id); n != 0 {
		t.Fatalf("another producer read %d events of the message", n)
	}
	if n := scalar[int64](t, other, `SELECT count(*) FROM herald.history(idempotency_key => 'order-9')`); n != 0 {
		t.Fatalf("another producer read %d events by the key", n)
	}
	_, err := mine.Exec(ctx, `SELECT * FROM herald.history(1, 'order-9')`)
	wantPgError(t, err, "22V12", "idempotency_key")

	role := loginPool(t, pool, "herald_test_history_intake", "herald_intake")
	srv := httptest.NewServer(intake.Handler(role, intake.Config{Tokens: []intake.Token{{Name: "shop", Secret: "tok-shop"}, {Name: "rival", Secret: "tok-rival"}}}))
	defer srv.Close()
	var acc struct {
		ID int64 `json:"id"`
	}
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", `{"channel":"email","recipient":"cy@example.com","payload":{"subject":"s","text":"t"}}`,
		map[string]string{"Authorization": "Bearer tok-shop"}, &acc); code != 202 {
		t.Fatalf("enqueue over HTTP: %d", code)
	}
	var got struct {
		Events []intake.Event `json:"events"`
	}
	if code := do(t, "GET", fmt.Sprintf("%s/v1/messages/%d/history", srv.URL, acc.ID), "", "", map[string]string{"Authorization": "Bearer tok-shop"}, &got); code != 200 ||
		len(got.Events) != 1 || got.Events[0].Event != "accepted" {
		t.Fatalf("history over HTTP: %d %+v", code, got)
	}
	var e apiError
	for _, u := range []string{fmt.Sprintf("%s/v1/messages/%d/history", srv.URL, acc.ID), fmt.Sprintf("%s/v1/messages/%d/history", srv.URL, id)} {
		if code := do(t, "GET", u, "", "", map[string]string{"Authorization": "Bearer tok-rival"}, &e); code != 404 || !strings.Contains(e.Error.Code, "not_found") {
			t.Fatalf("another token read %s: %d %+v", u, code, e.Error)
		}
	}
}
