package tests

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/herald/herald/runner/intake"
)

// Attack: a producer (or a stolen intake token) multiplies what each text costs. A
// 1,600-character text of emoji or curly quotes is 24 to 48 billed segments, so a
// send_limit of messages would bound nothing. The channel's max_segments (10 by
// default) refuses a text over it — over SQL, the batch path and HTTP, with the field,
// the count and the first character that forced UCS-2 — and stores nothing; a text
// that fits, and an MMS (priced per message), go through.
func TestMaxSegmentsBoundsWhatATextCosts(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `UPDATE herald.channels SET max_segments = 3 WHERE name = 'sms'`)
	prod := loginPool(t, pool, "herald_test_sms_costly", "herald_producer")
	role := loginPool(t, pool, "herald_test_sms_intake", "herald_intake")
	srv := httptest.NewServer(intake.Handler(role, intake.Config{Tokens: []intake.Token{{Name: "shop", Secret: "tok-shop"}}}))
	defer srv.Close()
	quotes := strings.Repeat("\u201csale\u201d ", 30) // 210 UCS-2 units: 4 segments
	gsm := strings.Repeat("sale ", 92)                // 460 septets: 4 segments
	_, err := prod.Exec(ctx, `SELECT herald.enqueue('sms', '+14155550100', jsonb_build_object('text', $1::text))`, quotes)
	if e := wantPgError(t, err, "22V03", "payload.text"); !strings.Contains(e.Message, "4 SMS segments") || !strings.Contains(e.Message, "\u201c") {
		t.Fatalf("refusal: %s", e.Message)
	}
	_, err = prod.Exec(ctx, `SELECT herald.enqueue_batch(jsonb_build_array(
		jsonb_build_object('channel', 'sms', 'recipient', '+14155550100', 'payload', jsonb_build_object('text', 'fine')),
		jsonb_build_object('channel', 'sms', 'recipient', '+14155550101', 'payload', jsonb_build_object('body', $1::text))))`, gsm)
	if e := wantPgError(t, err, "22V03", "messages[1].payload.body"); !strings.Contains(e.Message, "GSM-7") {
		t.Fatalf("batch refusal: %s", e.Message)
	}
	var e apiError
	body := fmt.Sprintf(`{"channel":"sms","recipient":"+14155550102","payload":{"text":%q}}`, quotes)
	if got := do(t, "POST", srv.URL+"/v1/messages", "application/json", body, map[string]string{"Authorization": "Bearer tok-shop"}, &e); got != 400 ||
		e.Error.Field != "payload.text" || !strings.Contains(e.Error.Message, "segments") {
		t.Fatalf("HTTP: %d %+v", got, e.Error)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 0 {
		t.Fatalf("%d messages stored by refused enqueues", n)
	}
	// Three segments pass; so does an MMS whatever its text.
	mustExec(t, prod, `SELECT herald.enqueue('sms', '+14155550100', jsonb_build_object('text', $1::text))`, strings.Repeat("sale ", 91))
	mustExec(t, prod, `SELECT herald.enqueue('sms', '+14155550100', jsonb_build_object('text', $1::text,
		'media_urls', jsonb_build_array('https://example.com/sale.png')))`, quotes)
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 2 {
		t.Fatalf("%d messages stored, want 2", n)
	}
	_, err = pool.Exec(ctx, `UPDATE herald.channels SET max_segments = 0 WHERE name = 'sms'`)
	wantPgError(t, err, "23514", "")
}
