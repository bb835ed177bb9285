package tests

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/herald/herald/runner/intake"
)

// The intake's OpenAPI document (GET /v1/openapi.json) is what the intake does: a
// valid OpenAPI 3 document whose operations are exactly the routes the intake serves,
// and every answer of real requests — accepted, refused, over a limit, not found, in
// conflict — matches its declared status, headers and body schema (the error codes
// an enum: an undeclared one fails), validated with kin-openapi. Every operation is
// exercised with a success.
func TestIntakeMatchesItsOpenAPIDocument(t *testing.T) {
	ctx := context.Background()
	doc, err := openapi3.NewLoader().LoadFromData(intake.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(ctx); err != nil {
		t.Fatalf("the document is not valid OpenAPI: %v", err)
	}
	operations := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			operations[method+" "+path] = false
		}
	}
	patterns := intake.Patterns()
	for _, p := range patterns {
		if _, ok := operations[p]; !ok {
			t.Errorf("the intake serves %s, which the document does not describe", p)
		}
	}
	if len(patterns) != len(operations) {
		t.Fatalf("the document has %d operations, the intake %d routes: %v", len(operations), len(patterns), patterns)
	}

	_, pool := setup(t)
	role := loginPool(t, pool, "herald_test_intake", "herald_intake")
	srv := httptest.NewServer(intake.Handler(role, intake.Config{MaxBodyBytes: 4096,
		Tokens: []intake.Token{{Name: "shop", Secret: "tok-shop"}}}))
	defer srv.Close()
	// The same intake with a rate of one request per 1,000 s after the first.
	slow := httptest.NewServer(intake.Handler(role, intake.Config{Rate: 0.001, MaxBatch: 1,
		Tokens: []intake.Token{{Name: "shop", Secret: "tok-shop"}}}))
	defer slow.Close()
	// An open intake, asked through a DNS name (host_not_allowed).
	open := httptest.NewServer(intake.Handler(role, intake.Config{}))
	defer open.Close()
	doc.Servers = openapi3.Servers{{URL: srv.URL}, {URL: slow.URL}, {URL: open.URL}} // the document's "/", here
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, pool, `UPDATE herald.channels SET recipient_limit = 1 WHERE name = 'sms'`)
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	email := func(key string) string {
		return fmt.Sprintf(`{"channel":"email","recipient":"ana@example.com","payload":{"subject":"Hi","text":"Hello"},"run_at":%q,"idempotency_key":%q}`, later, key)
	}
	auth := map[string]string{"Authorization": "Bearer tok-shop"}
	var busy int64
	type step struct {
		method, path, body string
		header             map[string]string
		want               int
		before             func()
	}
	steps := []step{
		{"GET", "/v1/openapi.json", "", nil, 200, nil},
		{"POST", "/v1/messages", email("k1"), auth, 202, nil},
		{"POST", "/v1/messages", email("k2"), auth, 202, nil},
		{"POST", "/v1/messages", `{"channel":"sms","recipient":"+14155550100","payload":{"text":"code 1"}}`, auth, 202, nil},
		{"POST", "/v1/messages", `{"channel":"sms","recipient":"+14155550100","payload":{"text":"code 2"}}`, auth, 429, nil},
		{"POST", "/v1/messages", `{"channel":"sms","recipient":"555","payload":{"text":"x"}}`, auth, 400, nil},
		{"POST", "/v1/messages", `{"channel":"sms","recipient":"+14155550101","payload":{"text":"x"},"priority":-5}`, auth, 403, nil},
		{"POST", "/v1/messages", email("k3"), nil, 401, nil},
		{"POST", "/v1/messages", `{"channel":"email","recipient":"a@example.com","payload":{"text":"` + strings.Repeat("x", 5000) + `"}}`, auth, 413, nil},
		{"POST", "/v1/messages/batch", "[" + email("k4") + "," + email("k5") + "]", auth, 202, nil},
		{"POST", "/v1/messages/batch", "[" + email("k6") + `,{"channel":"fax","recipient":"x","payload":{}}]`, auth, 400, nil},
		{"GET", "/v1/messages/1", "", auth, 200, nil},
		{"GET", "/v1/messages/1/history", "", auth, 200, nil},
		{"GET", "/v1/messages/999999/history", "", auth, 404, nil},
		{"GET", "/v1/messages/999999", "", auth, 404, nil},
		{"GET", "/v1/messages/abc", "", auth, 400, nil},
		{"GET", "/v1/messages?idempotency_key=k1", "", auth, 200, nil},
		{"GET", "/v1/messages?idempotency_key=nope", "", auth, 404, nil},
		{"GET", "/v1/messages", "", auth, 400, nil},
		{"DELETE", "/v1/messages?idempotency_key=k1", "", auth, 200, nil},
		{"DELETE", "/v1/messages/2", "", auth, 200, nil},
		{"DELETE", "/v1/messages/999999", "", auth, 404, nil},
		{"DELETE", "/v1/messages/{busy}", "", auth, 409, func() {
			busy = scalar[int64](t, pool, `SELECT id FROM herald.claim_batch('w', 1)`)
		}},
	}
	run := func(base string, s step) {
		if s.before != nil {
			s.before()
		}
		path := strings.ReplaceAll(s.path, "{busy}", fmt.Sprint(busy))
		req, _ := http.NewRequest(s.method, base+path, strings.NewReader(s.body))
		if s.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range s.header {
			req.Header.Set(k, v)
		}
		req.Host = req.Header.Get("Host")
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Fatalf("%s %s: not in the document: %v", s.method, path, err)
		}
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}}
		if s.want < 300 { // a request the document allows is one the intake takes
			if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
				t.Fatalf("%s %s: the request does not match the document: %v", s.method, path, err)
			}
			req.Body = io.NopCloser(strings.NewReader(s.body))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != s.want {
			t.Fatalf("%s %s: %d %s, want %d", s.method, path, resp.StatusCode, body, s.want)
		}
		if err := openapi3filter.ValidateResponse(ctx, &openapi3filter.ResponseValidationInput{RequestValidationInput: in,
			Status: resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body)), Options: in.Options}); err != nil {
			t.Fatalf("%s %s: the answer %d %s does not match the document: %v", s.method, path, resp.StatusCode, body, err)
		}
		if s.want < 300 {
			operations[s.method+" "+route.Path] = true
		}
	}
	for _, s := range steps {
		run(srv.URL, s)
	}
	for _, s := range []step{
		{"GET", "/v1/messages/1", "", auth, 200, nil},
		{"GET", "/v1/messages/1", "", auth, 429, nil},
		{"GET", "/v1/messages?idempotency_key=k2", "", auth, 429, nil},
	} {
		run(slow.URL, s)
	}
	rebound := map[string]string{"Host": "rebind.example"}
	for _, s := range []step{
		{"POST", "/v1/messages", email("rebound"), rebound, 403, nil},
		{"POST", "/v1/messages/batch", `{"messages":[` + email("rebound") + `]}`, rebound, 403, nil},
		{"GET", "/v1/messages/1", "", rebound, 403, nil},
		{"GET", "/v1/messages?idempotency_key=k2", "", rebound, 403, nil},
		{"DELETE", "/v1/messages/1", "", rebound, 403, nil},
	} {
		run(open.URL, s)
	}
	for op, done := range operations {
		if !done {
			t.Errorf("%s is never answered with a success here", op)
		}
	}
}
