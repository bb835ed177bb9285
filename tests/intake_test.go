package tests

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald/herald/runner/intake"
	"github.com/herald/herald/tests/testdb"
)

// intakeServer serves the intake on a real HTTP server over the test's database.
func intakeServer(t *testing.T, cfg intake.Config) (*httptest.Server, *pgxpool.Pool) {
	t.Helper()
	_, pool := setup(t)
	srv := httptest.NewServer(intake.Handler(pool, cfg))
	t.Cleanup(srv.Close)
	return srv, pool
}

type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Field   string `json:"field"`
		Index   *int   `json:"index"`
		Message string `json:"message"`
	} `json:"error"`
}

// do sends a request and decodes the JSON answer into out (when not nil); a "Host"
// in header is the request's Host.
func do(t *testing.T, method, url, ctype, body string, header map[string]string, out any) int {
	t.Helper()
	code, _ := doHeader(t, method, url, ctype, body, header, out)
	return code
}

// doHeader is do, also returning the answer's headers.
func doHeader(t *testing.T, method, url, ctype, body string, header map[string]string, out any) (int, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	req.Host = req.Header.Get("Host") // "": the URL's
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %q is not JSON: %v", method, url, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode, resp.Header
}

const goodEmail = `{"channel":"email","recipient":"ana@example.com","payload":{"subject":"Hi","text":"Hello"}}`

// A valid request gets 202 with the id, the row exists, and its status URL answers.
func TestIntakeAccepts(t *testing.T) {
	srv, pool := intakeServer(t, intake.Config{})
	grantPriority(t, pool, "", -5)
	var ok struct {
		ID        int64  `json:"id"`
		StatusURL string `json:"status_url"`
	}
	body := `{"channel":"sms","recipient":"+14155550100","payload":{"text":"hi"},"priority":-5,"ordering_key":"acct-9",
		"max_attempts":3,"metadata":{"tenant":"t"},"run_at":"` + time.Now().Add(24*time.Hour).UTC().Format(time.RFC3339) + `",
		"expires_at":"` + time.Now().Add(25*time.Hour).UTC().Format(time.RFC3339) + `"}`
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json; charset=utf-8", body, nil, &ok); code != 202 {
		t.Fatalf("status %d", code)
	}
	var prio, maxA int32
	var key string
	if err := pool.QueryRow(context.Background(), `SELECT priority, max_attempts, ordering_key FROM herald.messages WHERE id = $1`, ok.ID).
		Scan(&prio, &maxA, &key); err != nil || prio != -5 || maxA != 3 || key != "acct-9" {
		t.Fatalf("stored row: %d %d %s %v", prio, maxA, key, err)
	}
	if ok.StatusURL != fmt.Sprintf("/v1/messages/%d", ok.ID) {
		t.Fatalf("status_url %q", ok.StatusURL)
	}
	var st intake.Status
	if code := do(t, "GET", srv.URL+ok.StatusURL, "", "", nil, &st); code != 200 || st.Status != "queued" || st.Channel != "sms" || st.MaxAttempts != 3 ||
		st.ExpiresAt.Sub(st.RunAt) < 59*time.Minute || st.ExpiresAt.Sub(st.RunAt) > 61*time.Minute {
		t.Fatalf("GET status: %d %+v", code, st)
	}
}

// An attack on whatever reads a request before herald (a gateway's schema check, a
// producer's allow-list of recipients): a member name given twice in one object,
// which Go and PostgreSQL read as its last value and many readers as its first, so a
// filter passes one recipient and herald would store another. Refused, 400
// invalid_json naming the member, at any depth, alone or in a batch; nothing stored.
// The same name in different objects is no repeat.
func TestIntakeRefusesANameGivenTwice(t *testing.T) {
	srv, pool := intakeServer(t, intake.Config{})
	for _, c := range []struct {
		path, body, field string
		index             int
	}{
		{"/v1/messages", `{"channel":"email","recipient":"allowed@example.com","recipient":"victim@example.net","payload":{"subject":"s","text":"t"}}`, "recipient", -1},
		{"/v1/messages", `{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"Your order","text":"Click here"}}`, "payload.text", -1},
		{"/v1/messages", `{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"metadata":{"a":[{"b":1,"b":2}]}}`, "metadata.a[0].b", -1},
		{"/v1/messages/batch", `[` + goodEmail + `,{"channel":"email","channel":"sms","recipient":"a@example.com","payload":{"subject":"s","text":"t"}}]`, "channel", 1},
	} {
		var e apiError
		code := do(t, "POST", srv.URL+c.path, "application/json", c.body, nil, &e)
		if code != 400 || e.Error.Code != "invalid_json" || e.Error.Field != c.field || (c.index >= 0) != (e.Error.Index != nil) ||
			(e.Error.Index != nil && *e.Error.Index != c.index) {
			t.Errorf("%.90s: %d %+v, want 400 invalid_json on %s", c.body, code, e.Error, c.field)
		}
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 0 {
		t.Fatalf("%d rows stored from refused requests", n)
	}
	body := `{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t","headers":{"X-Text":"t"}},"metadata":{"text":"m","a":{"text":1}}}`
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", body, nil, nil); code != 202 {
		t.Fatalf("one name in different objects: %d", code)
	}
}

// Every validation error the SQL can raise is a 400 with its code and field, and
// nothing is stored.
func TestIntakeRejectsBadMessages(t *testing.T) {
	srv, pool := intakeServer(t, intake.Config{})
	big := strings.Repeat("x", 70000)
	cases := []struct{ body, code, field string }{
		{`{"channel":"fax","recipient":"a@example.com","payload":{"subject":"s","text":"t"}}`, "unknown_channel", "channel"},
		{`{"recipient":"a@example.com","payload":{"subject":"s","text":"t"}}`, "unknown_channel", "channel"},
		{`{"channel":"email","recipient":"nope","payload":{"subject":"s","text":"t"}}`, "invalid_recipient", "recipient"},
		{`{"channel":"email","recipient":"a@example.com","payload":{"text":"t"}}`, "invalid_payload", "payload"},
		{`{"channel":"email","recipient":"a@example.com","payload":"hi"}`, "invalid_payload", "payload"},
		{`{"channel":"sms","recipient":"+14155550100","payload":{"text":"` + strings.Repeat("x", 1601) + `"}}`, "invalid_payload", "payload.text"},
		{`{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t","headers":{"X-SMTPAPI":"{\"to\":[\"b@example.com\"]}"}}}`,
			"invalid_payload", "payload.headers.X-SMTPAPI"},
		{`{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"` + big + `"}}`, "payload_too_large", "payload"},
		{`{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"run_at":"2099-01-01T00:00:00Z"}`, "invalid_run_at", "run_at"},
		{`{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"run_at":"tomorrow-ish"}`, "invalid_run_at", "run_at"},
		{`{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"expires_at":"2001-01-01T00:00:00Z"}`, "invalid_expires_at", "expires_at"},
		{`{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"expires_at":7}`, "invalid_expires_at", "expires_at"},
		{`{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"priority":500}`, "invalid_priority", "priority"},
		{`{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"priority":"high"}`, "invalid_priority", "priority"},
		{`{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"max_attempts":0}`, "invalid_max_attempts", "max_attempts"},
		{`{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"metadata":[1]}`, "invalid_metadata", "metadata"},
		{`{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"idempotency_key":""}`, "invalid_idempotency_key", "idempotency_key"},
		{`{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"ordering_key":""}`, "invalid_ordering_key", "ordering_key"},
		{`{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"recipient_zone":"UTC+3"}`, "invalid_recipient_zone", "recipient_zone"},
		{`{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"recipient_zone":-5}`, "invalid_message", "recipient_zone"},
		{`{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"colour":"red"}`, "invalid_message", "colour"},
		{`{"channel":5,"recipient":"a@example.com","payload":{"subject":"s","text":"t"}}`, "invalid_message", "channel"},
		{`{"channel":"email"`, "invalid_json", ""},
		{`[` + goodEmail + `]`, "invalid_json", ""},
		{`{"channel":"email","recipient":"a\u0000@example.com","payload":{"subject":"s","text":"t"}}`, "invalid_json", ""},
	}
	for _, c := range cases {
		var e apiError
		code := do(t, "POST", srv.URL+"/v1/messages", "application/json", c.body, nil, &e)
		if code != 400 || e.Error.Code != c.code || e.Error.Field != c.field || e.Error.Index != nil || e.Error.Message == "" {
			t.Errorf("%.80s: %d %+v, want 400 %s field %q", c.body, code, e.Error, c.code, c.field)
		}
		if strings.Contains(e.Error.Message, "messages[") {
			t.Errorf("single-message error names a batch position: %q", e.Error.Message)
		}
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 0 {
		t.Fatalf("%d rows stored by rejected requests", n)
	}
}

// The Idempotency-Key header: a repeat gets 202 with the same id; a body key that
// disagrees with the header is a 400.
func TestIntakeIdempotencyKey(t *testing.T) {
	srv, pool := intakeServer(t, intake.Config{})
	var a, b struct{ ID int64 }
	h := map[string]string{"Idempotency-Key": "order-77"}
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", goodEmail, h, &a); code != 202 {
		t.Fatalf("first: %d", code)
	}
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", goodEmail, h, &b); code != 202 || b.ID != a.ID {
		t.Fatalf("repeat: %d id %d, first %d", code, b.ID, a.ID)
	}
	var e apiError
	body := strings.Replace(goodEmail, `"channel"`, `"idempotency_key":"other","channel"`, 1)
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", body, h, &e); code != 400 || e.Error.Field != "idempotency_key" {
		t.Fatalf("disagreeing keys: %d %+v", code, e.Error)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
	// The key reused for another notification is 422, alone or in a batch, and
	// stores nothing: it is not answered as the first message's repeat.
	other := strings.Replace(goodEmail, `"channel"`, `"idempotency_key":"order-77","channel"`, 1)
	other = strings.Replace(other, `ana@example.com`, `bo@example.com`, 1)
	if other == goodEmail || !strings.Contains(other, "bo@example.com") {
		t.Fatalf("goodEmail changed shape: %s", goodEmail)
	}
	e = apiError{}
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", other, nil, &e); code != 422 ||
		e.Error.Code != "idempotency_key_reused" || e.Error.Field != "idempotency_key" || !strings.Contains(e.Error.Message, fmt.Sprint(a.ID)) {
		t.Fatalf("a reused key: %d %+v", code, e.Error)
	}
	e = apiError{}
	if code := do(t, "POST", srv.URL+"/v1/messages/batch", "application/json", "["+goodEmail+","+other+"]", nil, &e); code != 422 ||
		e.Error.Code != "idempotency_key_reused" || e.Error.Index == nil || *e.Error.Index != 1 {
		t.Fatalf("a reused key in a batch: %d %+v", code, e.Error)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 1 {
		t.Fatalf("%d rows after refused reuses, want 1", n)
	}
}

// A batch sent with an Idempotency-Key header keys each of its messages
// (<key>:<index>): sent again after a timeout it stores nothing twice and answers the
// same ids, each message is found by its key, and a message changed under its key is
// refused (422, naming its index). A message carrying a key of its own besides the
// header is a 400, as is a header too long to key the whole batch.
func TestIntakeBatchIdempotencyKey(t *testing.T) {
	srv, pool := intakeServer(t, intake.Config{})
	batch := "[" + goodEmail + "," + strings.Replace(goodEmail, "ana@", "bo@", 1) + "]"
	h := map[string]string{"Idempotency-Key": "import-7"}
	var first, again struct {
		IDs []int64 `json:"ids"`
	}
	if code := do(t, "POST", srv.URL+"/v1/messages/batch", "application/json", batch, h, &first); code != 202 || len(first.IDs) != 2 {
		t.Fatalf("first: %d %v", code, first.IDs)
	}
	if code := do(t, "POST", srv.URL+"/v1/messages/batch", "application/json", batch, h, &again); code != 202 || fmt.Sprint(again.IDs) != fmt.Sprint(first.IDs) {
		t.Fatalf("again: %d %v, first %v", code, again.IDs, first.IDs)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 2 {
		t.Fatalf("%d rows after the batch twice, want 2", n)
	}
	var st intake.Status
	if code := do(t, "GET", srv.URL+"/v1/messages?idempotency_key=import-7:1", "", "", nil, &st); code != 200 || st.ID != first.IDs[1] {
		t.Fatalf("status by the second message's key: %d %+v", code, st)
	}
	for _, c := range []struct {
		body, header string
		code         int
		index        int
	}{
		{"[" + goodEmail + "," + strings.Replace(goodEmail, "ana@", "cy@", 1) + "]", "import-7", 422, 1},
		{"[" + goodEmail + "," + strings.Replace(goodEmail, `"channel"`, `"idempotency_key":"own","channel"`, 1) + "]", "import-8", 400, 1},
		{batch, strings.Repeat("k", 254), 400, -1},
	} {
		var e apiError
		code := do(t, "POST", srv.URL+"/v1/messages/batch", "application/json", c.body, map[string]string{"Idempotency-Key": c.header}, &e)
		if code != c.code || e.Error.Field != "idempotency_key" || (c.index >= 0) != (e.Error.Index != nil) || (e.Error.Index != nil && *e.Error.Index != c.index) {
			t.Errorf("%.60s… with %.20s: %d %+v, want %d", c.body, c.header, code, e.Error, c.code)
		}
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 2 {
		t.Fatalf("%d rows after refused batches, want 2", n)
	}
}

// Batches are all or nothing; the error names the index and field of the first bad
// message; the size is bounded.
func TestIntakeBatch(t *testing.T) {
	srv, pool := intakeServer(t, intake.Config{MaxBatch: 3})
	var ok struct {
		IDs        []int64  `json:"ids"`
		StatusURLs []string `json:"status_urls"`
	}
	good := `[` + goodEmail + `,{"channel":"sms","recipient":"+14155550100","payload":{"text":"x"}}]`
	if code := do(t, "POST", srv.URL+"/v1/messages/batch", "application/json", good, nil, &ok); code != 202 || len(ok.IDs) != 2 || len(ok.StatusURLs) != 2 {
		t.Fatalf("good batch: %d %+v", code, ok)
	}
	var e apiError
	bad := `[` + goodEmail + `,` + goodEmail + `,{"channel":"sms","recipient":"+1","payload":{"text":"x"}}]`
	if code := do(t, "POST", srv.URL+"/v1/messages/batch", "application/json", bad, nil, &e); code != 400 ||
		e.Error.Code != "invalid_recipient" || e.Error.Field != "recipient" || e.Error.Index == nil || *e.Error.Index != 2 {
		t.Fatalf("bad batch: %d %+v", code, e.Error)
	}
	tooMany := `[` + strings.Repeat(goodEmail+`,`, 3) + goodEmail + `]`
	if code := do(t, "POST", srv.URL+"/v1/messages/batch", "application/json", tooMany, nil, &e); code != 400 || e.Error.Code != "invalid_batch" {
		t.Fatalf("oversized batch: %d %+v", code, e.Error)
	}
	if code := do(t, "POST", srv.URL+"/v1/messages/batch", "application/json", `{"messages":[]}`, nil, &e); code != 400 || e.Error.Code != "invalid_json" {
		t.Fatalf("object instead of array: %d %+v", code, e.Error)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 2 {
		t.Fatalf("%d rows, want only the good batch's 2", n)
	}
}

// The request's W3C trace context (traceparent, tracestate) is kept in each message's
// metadata, for the webhook sender to hand on, unless the message names its own; a
// malformed or injected header is not kept, and a bad metadata is still named.
func TestIntakeKeepsTheTraceContext(t *testing.T) {
	srv, pool := intakeServer(t, intake.Config{})
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	trace := map[string]string{"traceparent": tp, "tracestate": "rojo=00f067aa0ba902b7"}
	var ok struct {
		ID  int64   `json:"id"`
		IDs []int64 `json:"ids"`
	}
	metadata := func(id int64) string {
		return scalar[string](t, pool, `SELECT coalesce(metadata::text, '-') FROM herald.messages WHERE id = $1`, id)
	}
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", goodEmail, trace, &ok); code != 202 ||
		metadata(ok.ID) != `{"tracestate": "rojo=00f067aa0ba902b7", "traceparent": "`+tp+`"}` {
		t.Fatalf("single: %d %s", code, metadata(ok.ID))
	}
	own := `{"channel":"email","recipient":"ana@example.com","payload":{"subject":"Hi","text":"Hello"},
		"metadata":{"tenant":"t","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}`
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", own, trace, &ok); code != 202 ||
		metadata(ok.ID) != `{"tenant": "t", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}` {
		t.Fatalf("a message's own traceparent: %d %s", code, metadata(ok.ID))
	}
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", goodEmail, map[string]string{"traceparent": "00-xyz"}, &ok); code != 202 ||
		metadata(ok.ID) != "-" {
		t.Fatalf("a malformed traceparent: %d %s", code, metadata(ok.ID))
	}
	batch := `[` + goodEmail + `,{"channel":"sms","recipient":"+14155550100","payload":{"text":"x"},"metadata":{"tenant":"t"}}]`
	if code := do(t, "POST", srv.URL+"/v1/messages/batch", "application/json", batch, trace, &ok); code != 202 || len(ok.IDs) != 2 ||
		metadata(ok.IDs[1]) != `{"tenant": "t", "tracestate": "rojo=00f067aa0ba902b7", "traceparent": "`+tp+`"}` {
		t.Fatalf("batch: %d %+v %s", code, ok, metadata(ok.IDs[1]))
	}
	var e apiError
	notObject := `{"channel":"email","recipient":"ana@example.com","payload":{"subject":"Hi","text":"Hello"},"metadata":[1]}`
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", notObject, trace, &e); code != 400 || e.Error.Field != "metadata" {
		t.Fatalf("metadata that is no object: %d %+v", code, e.Error)
	}
}

// A token holder cannot jump the queue, send as someone else or use a closed channel:
// a priority below 0 or an e-mail from that its producer's herald.producers row
// (intake:<name>) does not grant, or a channel whose producers leave it out, is 403
// priority_not_granted / sender_not_granted / channel_not_granted, naming the field
// (and the index in a batch), and nothing is stored; once an admin grants it, 202.
func TestIntakeRefusesUngrantedPolicy(t *testing.T) {
	srv, pool := intakeServer(t, intake.Config{Tokens: []intake.Token{{Name: "shop", Secret: "s3cret"}}})
	auth := map[string]string{"Authorization": "Bearer s3cret"}
	urgent := strings.Replace(goodEmail, `"channel"`, `"priority":-20,"channel"`, 1)
	var e apiError
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", urgent, auth, &e); code != 403 ||
		e.Error.Code != "priority_not_granted" || e.Error.Field != "priority" || e.Error.Index != nil {
		t.Fatalf("urgent message: %d %+v", code, e.Error)
	}
	e = apiError{}
	if code := do(t, "POST", srv.URL+"/v1/messages/batch", "application/json", "["+goodEmail+","+urgent+"]", auth, &e); code != 403 ||
		e.Error.Code != "priority_not_granted" || e.Error.Field != "priority" || e.Error.Index == nil || *e.Error.Index != 1 {
		t.Fatalf("urgent batch: %d %+v", code, e.Error)
	}
	spoof := strings.Replace(goodEmail, `"subject"`, `"from":"CEO <ceo@example.com>","subject"`, 1)
	e = apiError{}
	if code := do(t, "POST", srv.URL+"/v1/messages/batch", "application/json", "["+spoof+"]", auth, &e); code != 403 ||
		e.Error.Code != "sender_not_granted" || e.Error.Field != "payload.from" || e.Error.Index == nil || *e.Error.Index != 0 {
		t.Fatalf("spoofed from: %d %+v", code, e.Error)
	}
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, producers) VALUES ('vip', 'email', '{intake:other}')`)
	vip := strings.Replace(goodEmail, `"channel":"email"`, `"channel":"vip"`, 1)
	e = apiError{}
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", vip, auth, &e); code != 403 ||
		e.Error.Code != "channel_not_granted" || e.Error.Field != "channel" {
		t.Fatalf("closed channel: %d %+v", code, e.Error)
	}
	mustExec(t, pool, `UPDATE herald.channels SET recipient_prefixes = '{+1}' WHERE name = 'sms'`)
	premium := `{"channel":"sms","recipient":"+88213000000","payload":{"text":"t"}}`
	e = apiError{}
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", premium, auth, &e); code != 403 ||
		e.Error.Code != "recipient_not_allowed" || e.Error.Field != "recipient" {
		t.Fatalf("a number outside the channel's prefixes: %d %+v", code, e.Error)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 0 {
		t.Fatalf("refused requests stored %d messages", n)
	}
	grantPriority(t, pool, "intake:shop", -20)
	grantSenders(t, pool, "intake:shop", "ceo@example.com")
	mustExec(t, pool, `UPDATE herald.channels SET producers = '{intake:other,intake:shop}' WHERE name = 'vip'`)
	for _, body := range []string{urgent, spoof, vip} {
		if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", body, auth, nil); code != 202 {
			t.Fatalf("%s after the grant: %d", body, code)
		}
	}
}

// A token's producer at its max_pending is told to come back later: 429
// quota_exceeded with Retry-After (the runners' count interval), nothing stored.
func TestIntakeQuota(t *testing.T) {
	mux := http.NewServeMux()
	_, pool := setup(t)
	intake.Register(mux, pool, intake.Config{Tokens: []intake.Token{{Name: "shop", Secret: "s3cret"}}, QuotaRetry: 30 * time.Second})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mustExec(t, pool, `INSERT INTO herald.producers (producer, max_pending, pending, counted_at) VALUES ('intake:shop', 10, 10, now())`)
	before := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`)
	resp, err := http.DefaultClient.Do(func() *http.Request {
		r, _ := http.NewRequest("POST", srv.URL+"/v1/messages", strings.NewReader(goodEmail))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer s3cret")
		return r
	}())
	if err != nil {
		t.Fatal(err)
	}
	var e apiError
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 429 || e.Error.Code != "quota_exceeded" || e.Error.Field != "producer" || resp.Header.Get("Retry-After") != "30" {
		t.Fatalf("%d %+v Retry-After %q", resp.StatusCode, e.Error, resp.Header.Get("Retry-After"))
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != before {
		t.Fatalf("a refused request stored %d messages", n-before)
	}

	// Suspended for its bounce rate: Retry-After is the end of the suspension (single
	// and batch), and the error says why.
	mustExec(t, pool, `UPDATE herald.producers SET pending = 0, suspended_until = now() + interval '1 hour',
		suspended_reason = '30 of 200 messages in the last 01:00:00 bounced, over max_bounce_rate 0.05' WHERE producer = 'intake:shop'`)
	for _, c := range []struct{ path, body string }{{"/v1/messages", goodEmail}, {"/v1/messages/batch", "[" + goodEmail + "]"}} {
		e = apiError{}
		resp, err := http.DefaultClient.Do(func() *http.Request {
			r, _ := http.NewRequest("POST", srv.URL+c.path, strings.NewReader(c.body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Authorization", "Bearer s3cret")
			return r
		}())
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != 429 || e.Error.Code != "quota_exceeded" || !strings.Contains(e.Error.Message, "30 of 200 messages") ||
			wait < 3500 || wait > 3600 {
			t.Fatalf("%s while suspended: %d %+v Retry-After %q", c.path, resp.StatusCode, e.Error, resp.Header.Get("Retry-After"))
		}
	}
}

// 401 without a valid bearer token, 413 over the body limit, 415 for another
// content type, 404 for an unknown id, 400 for a bad id, 503 when the database is
// unreachable — each with a JSON error, never a stack trace.
func TestIntakeHTTPErrors(t *testing.T) {
	srv, pool := intakeServer(t, intake.Config{Tokens: []intake.Token{{Name: "a", Secret: "s3cret"}, {Name: "b", Secret: "other"}}, MaxBodyBytes: 1024})
	var e apiError
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}} {
		if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", goodEmail, h, &e); code != 401 || e.Error.Code != "unauthorized" {
			t.Fatalf("auth %v: %d %+v", h, code, e.Error)
		}
	}
	auth := map[string]string{"Authorization": "Bearer other"}
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", goodEmail, auth, nil); code != 202 {
		t.Fatalf("valid token: %d", code)
	}
	big := strings.Replace(goodEmail, `"Hello"`, `"`+strings.Repeat("x", 2000)+`"`, 1)
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", big, auth, &e); code != 413 || e.Error.Code != "body_too_large" {
		t.Fatalf("big body: %d %+v", code, e.Error)
	}
	if code := do(t, "POST", srv.URL+"/v1/messages", "text/plain", goodEmail, auth, &e); code != 415 {
		t.Fatalf("text/plain: %d", code)
	}
	if code := do(t, "GET", srv.URL+"/v1/messages/424242", "", "", auth, &e); code != 404 || e.Error.Code != "not_found" {
		t.Fatalf("unknown id: %d %+v", code, e.Error)
	}
	if code := do(t, "GET", srv.URL+"/v1/messages/abc", "", "", auth, &e); code != 400 || e.Error.Field != "id" {
		t.Fatalf("bad id: %d %+v", code, e.Error)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}

	down, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	dead := httptest.NewServer(intake.Handler(down, intake.Config{}))
	defer dead.Close()
	for _, path := range []string{"/v1/messages", "/v1/messages/batch"} {
		body := goodEmail
		if strings.HasSuffix(path, "batch") {
			body = "[" + goodEmail + "]"
		}
		if code := do(t, "POST", dead.URL+path, "application/json", body, nil, &e); code != 503 || e.Error.Code != "database_unavailable" {
			t.Fatalf("%s with the database down: %d %+v", path, code, e.Error)
		}
	}
	if code := do(t, "GET", dead.URL+"/v1/messages/1", "", "", nil, &e); code != 503 {
		t.Fatalf("GET with the database down: %d", code)
	}
	_ = testdb.RepoRoot
}

// A producer may gzip a body (Content-Encoding: gzip), and the body limit holds for
// what it expands to: a bomb of a few kilobytes that expands to 100 MB is refused 413
// as it passes the limit, without being expanded further, and stores nothing; so is a
// body over the limit as sent. An encoding herald does not read is 415 naming it, and
// data that is not gzip 400; neither stores anything.
func TestIntakeTakesGzipBodiesWithinTheLimit(t *testing.T) {
	srv, pool := intakeServer(t, intake.Config{MaxBodyBytes: 128 << 10})
	gz := func(b []byte) string {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		return buf.String()
	}
	batch := "[" + strings.TrimSuffix(strings.Repeat(goodEmail+",", 100), ",") + "]"
	var accepted struct{ IDs []int64 }
	if code := do(t, "POST", srv.URL+"/v1/messages/batch", "application/json", gz([]byte(batch)), map[string]string{"Content-Encoding": "gzip"}, &accepted); code != 202 || len(accepted.IDs) != 100 {
		t.Fatalf("a gzip batch: %d, %d ids", code, len(accepted.IDs))
	}
	bomb := gz(bytes.Repeat([]byte(" "), 100<<20))
	if len(bomb) > 128<<10 {
		t.Fatalf("the bomb is %d bytes as sent: it would be refused unread", len(bomb))
	}
	noise := make([]byte, 256<<10) // does not compress
	rand.Read(noise)
	var e apiError
	for _, c := range []struct {
		name, body, encoding string
		code                 int
		error                string
	}{
		{"a bomb", bomb, "gzip", 413, "body_too_large"},
		{"over the limit as sent", gz(noise), "gzip", 413, "body_too_large"},
		{"brotli", goodEmail, "br", 415, "unsupported_media_type"},
		{"not gzip", goodEmail, "gzip", 400, "unreadable_body"},
		{"cut off", gz([]byte(goodEmail))[:20], "gzip", 400, "unreadable_body"},
	} {
		if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", c.body, map[string]string{"Content-Encoding": c.encoding}, &e); code != c.code || e.Error.Code != c.error {
			t.Errorf("%s: %d %+v, want %d %s", c.name, code, e.Error, c.code, c.error)
		}
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 100 {
		t.Fatalf("%d messages stored, want the batch's 100", n)
	}
}

// A token holder cannot flood the database through the intake: past its rate (here
// one message per 100 seconds, a burst of a full batch of 20) a request is 429 with
// Retry-After and stores nothing; another token has its own bucket; a request refused
// before it reaches the database (malformed JSON) spends none of it. Status reads draw
// on the same bucket, so polling cannot load the database without bound either.
func TestIntakeRateLimitsEachToken(t *testing.T) {
	srv, pool := intakeServer(t, intake.Config{Tokens: []intake.Token{{Name: "a", Secret: "sa"}, {Name: "b", Secret: "sb"}},
		Rate: 0.01, MaxBatch: 20}) // a message per 100 s after the burst: no refill while the test runs
	a, b := map[string]string{"Authorization": "Bearer sa"}, map[string]string{"Authorization": "Bearer sb"}
	var e apiError
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", `{"channel":5,"recipient":"555","payload":{"text":"x"}}`, a, &e); code != 400 {
		t.Fatalf("malformed request: %d", code)
	}
	batch := "[" + strings.TrimSuffix(strings.Repeat(goodEmail+",", 20), ",") + "]"
	if code := do(t, "POST", srv.URL+"/v1/messages/batch", "application/json", batch, a, nil); code != 202 {
		t.Fatalf("a full batch within the burst: %d", code)
	}
	code, h := doHeader(t, "POST", srv.URL+"/v1/messages", "application/json", goodEmail, a, &e)
	if code != 429 || e.Error.Code != "rate_limited" || h.Get("Retry-After") == "" || h.Get("Retry-After") == "0" {
		t.Fatalf("over the rate: %d %+v Retry-After %q", code, e.Error, h.Get("Retry-After"))
	}
	// Attack: a token past its rate polls status, by id and by key.
	for _, path := range []string{"/v1/messages/1", "/v1/messages?idempotency_key=k"} {
		if code := do(t, "GET", srv.URL+path, "", "", a, &e); code != 429 || e.Error.Code != "rate_limited" {
			t.Fatalf("GET %s over the rate: %d %+v", path, code, e.Error)
		}
	}
	if code := do(t, "POST", srv.URL+"/v1/messages", "application/json", goodEmail, b, nil); code != 202 {
		t.Fatalf("another token: %d", code)
	}
	if code := do(t, "GET", srv.URL+"/v1/messages/21", "", "", b, nil); code != 200 {
		t.Fatalf("another token's status read: %d", code)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 21 {
		t.Fatalf("%d messages stored, want the 20 of the batch and token b's one", n)
	}
}
