package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/sendertest"
	"github.com/herald/herald/runner/sender/webhook"
)

// Webhook: the receiver verifies the signature; a tampered body, a wrong secret or
// an old timestamp fail verification; 410 is permanent, 429 rate_limited.
func TestWebhookSender(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef-webhook")
	var mu sync.Mutex
	var verified []error
	var lastBody []byte
	var lastHeader http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		err := webhook.Verify(secret, r.Header, body, 5*time.Minute, time.Now())
		mu.Lock()
		verified, lastBody, lastHeader = append(verified, err), body, r.Header.Clone()
		mu.Unlock()
		switch r.URL.Path {
		case "/gone":
			w.WriteHeader(410)
		case "/busy":
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(429)
		default:
			if err != nil {
				w.WriteHeader(401)
				return
			}
			w.Header().Set("X-Request-Id", "rcv-1")
			w.WriteHeader(204)
		}
	}))
	defer srv.Close()
	s, err := webhook.New(webhook.Config{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	m := sender.Message{ID: 9, Channel: "hooks", Recipient: srv.URL + "/receipts", Attempt: 1, Payload: json.RawMessage(`{"event":"paid"}`)}
	res, err := s.Send(context.Background(), m)
	if err != nil || res.ProviderMessageID != "rcv-1" || verified[0] != nil {
		t.Fatalf("delivery: %+v %v, verification %v", res, err, verified)
	}
	var got sender.Message
	if err := json.Unmarshal(lastBody, &got); err != nil || got.ID != 9 || string(got.Payload) != `{"event":"paid"}` || lastHeader.Get(webhook.HeaderMessageID) != "9" {
		t.Fatalf("body %s: %+v %v", lastBody, got, err)
	}
	tampered := bytes.Replace(lastBody, []byte("paid"), []byte("free"), 1)
	if err := webhook.Verify(secret, lastHeader, tampered, 5*time.Minute, time.Now()); err == nil {
		t.Fatal("a tampered body passed verification")
	}
	if err := webhook.Verify([]byte("another-secret-of-16+"), lastHeader, lastBody, 5*time.Minute, time.Now()); err == nil {
		t.Fatal("a wrong secret passed verification")
	}
	if err := webhook.Verify(secret, lastHeader, lastBody, 5*time.Minute, time.Now().Add(10*time.Minute)); err == nil {
		t.Fatal("a replay 10 minutes later passed verification")
	}
	m.Recipient = srv.URL + "/gone"
	_, err = s.Send(context.Background(), m)
	sendertest.WantClass(t, err, sender.ClassPermanent)
	m.Recipient = srv.URL + "/busy"
	_, err = s.Send(context.Background(), m)
	sendertest.WantClass(t, err, sender.ClassRateLimited)
	if _, err := webhook.New(webhook.Config{Secret: []byte("short")}); err == nil {
		t.Fatal("a short secret was accepted")
	}
}
