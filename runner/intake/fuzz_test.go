package intake_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/herald/herald/runner/intake"
	"github.com/herald/herald/tests/testdb"
)

// FuzzPostMessage drives the request decoder and the SQL validation path with
// arbitrary bodies, content types and idempotency keys: every answer is a 202 or a
// 4xx — never a 5xx or a panic — and a 4xx never stores a row. The seed corpus runs
// in `make test`; `go test -fuzz FuzzPostMessage ./runner/intake` explores further.
func FuzzPostMessage(f *testing.F) {
	pool := testdb.NewPool(f)
	h := intake.Handler(pool, intake.Config{MaxBodyBytes: 64 << 10})
	post := func(body []byte, ctype, key string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "http://localhost/v1/messages", bytes.NewReader(body)) // the open intake's name
		req.Header.Set("Content-Type", ctype)
		if key != "" && validHeaderValue(key) {
			req.Header.Set("Idempotency-Key", key)
		}
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, req)
		return rr
	}
	if rr := post([]byte(`{"channel":"email","recipient":"ana@example.com","payload":{"subject":"Hi","text":"Hello"}}`), "application/json", ""); rr.Code != http.StatusAccepted {
		f.Fatalf("a valid message: %d %s: the fuzzing would not reach the decoder", rr.Code, rr.Body)
	}
	for _, seed := range []struct{ body, ctype, key string }{
		{`{"channel":"email","recipient":"ana@example.com","payload":{"subject":"Hi","text":"Hello"}}`, "application/json", ""},
		{`{"channel":"email","recipient":"ana@example.com","payload":{"subject":"Hi","text":"Hello"}}`, "application/json", "k1"},
		{`{"channel":"sms","recipient":"+14155550100","payload":{"text":"x"},"run_at":"2026-11-22T10:00:00Z","priority":"3"}`, "application/json", ""},
		{`{"channel":"sms","recipient":"+1","payload":{"text":"x"}}`, "application/json", ""},
		{`{"channel":"email","recipient":"a@b.c","payload":{"subject":"s","text":"t"},"metadata":{"a":[1,2,{"b":null}]}}`, "application/json", ""},
		{`{"channel":"email","recipient":"a@b.c","payload":{"subject":"s","text":"t"},"max_attempts":1e400}`, "application/json", ""},
		{`{"channel":"email","recipient":"a\u0000@b.c","payload":{}}`, "application/json", ""},
		{"{\"channel\":\"email\",\"recipient\":\"\xff\xfe@b.c\",\"payload\":{}}", "application/json", ""},
		{`{"channel":"email","channel":"sms","recipient":"a@b.c","payload":{"subject":"s","text":"t","text":"u"}}`, "application/json", ""},
		{`null`, "application/json", ""},
		{`[]`, "application/json", ""},
		{`{"channel":"email"} {"x":1}`, "application/json", ""},
		{`{"channel":"email","recipient":"a@b.c","payload":{"subject":"s","text":"t"}}`, "text/plain", ""},
		{``, "", ""},
		{`{"priority":-0.0,"run_at":"epoch","ordering_key":"` + "\t" + `"}`, "application/json; charset=utf-8", "\x00"},
	} {
		f.Add([]byte(seed.body), seed.ctype, seed.key)
	}
	f.Fuzz(func(t *testing.T, body []byte, ctype, key string) {
		ctx := context.Background()
		var before int64
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM herald.messages`).Scan(&before); err != nil {
			t.Fatal(err)
		}
		rr := post(body, ctype, key)
		if rr.Code != http.StatusAccepted && (rr.Code < 400 || rr.Code > 499) {
			t.Fatalf("status %d for body %q (content type %q, key %q): %s", rr.Code, body, ctype, key, rr.Body.String())
		}
		var after int64
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM herald.messages`).Scan(&after); err != nil {
			t.Fatal(err)
		}
		if rr.Code != http.StatusAccepted && after != before {
			t.Fatalf("a %d stored %d rows for body %q", rr.Code, after-before, body)
		}
	})
}

// validHeaderValue reports whether s can travel in an HTTP header at all.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}
