package sendgrid_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/herald/herald/runner/idtag"
	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/email"
	"github.com/herald/herald/runner/sender/ratelimit"
	"github.com/herald/herald/runner/sender/sendertest"
	"github.com/herald/herald/runner/sender/sendgrid"
)

// SendGrid: success stores the provider id; 429 with Retry-After is rate_limited at
// the right time (and slows the limiter); 500 transient; an invalid recipient
// permanent.
func TestSendGridSender(t *testing.T) {
	t.Parallel()
	srv := sendertest.FakeSendGrid(t)
	s, err := sendgrid.New(sendgrid.Config{APIKey: "SG.test-key", BaseURL: srv.URL,
		Defaults: email.Defaults{MessageIDKey: idtag.StaticKey(sendertest.MessageIDKey), From: "Herald <noreply@example.com>"}})
	if err != nil {
		t.Fatal(err)
	}
	limited := ratelimit.New(s, 100, 10)
	ctx := context.Background()
	// cc and bcc travel as the personalization's cc and bcc (the fake answers 400
	// otherwise), each address once: SendGrid answers 400 to an address named twice,
	// so the recipient and repeats (letter case aside) are left out of the copies.
	copied := sendertest.EmailMessage(6, "copied@example.net")
	copied.Payload = json.RawMessage(strings.Replace(string(copied.Payload), `"headers"`,
		`"cc":["COPIED@example.net","bo@example.net","Bo@example.net"],"bcc":["bo@example.net","audit@example.net"],"headers"`, 1))
	if res, err := s.Send(ctx, copied); err != nil || res.ProviderMessageID != "sg-copied" {
		t.Fatalf("cc/bcc: %+v %v", res, err)
	}
	res, err := limited.Send(ctx, sendertest.EmailMessage(7, "ana@example.net"))
	if err != nil || res.ProviderMessageID != "sg-7" {
		t.Fatalf("success: %+v %v", res, err)
	}
	before := time.Now()
	_, err = limited.Send(ctx, sendertest.EmailMessage(8, "limited@example.net"))
	f := sendertest.WantClass(t, err, sender.ClassRateLimited)
	if d := f.RetryAt.Sub(before); d < 29*time.Second || d > 31*time.Second {
		t.Fatalf("retry_at %v after the request, want 30s (Retry-After)", d)
	}
	if limited.Limit() != 50 {
		t.Fatalf("the limiter runs at %v/s after a 429, want 50", limited.Limit())
	}
	_, err = limited.Send(ctx, sendertest.EmailMessage(9, "down@example.net"))
	sendertest.WantClass(t, err, sender.ClassTransient)
	_, err = limited.Send(ctx, sendertest.EmailMessage(10, "bad@example.net"))
	if f := sendertest.WantClass(t, err, sender.ClassPermanent); !strings.Contains(f.Error(), "personalizations.0.to.0.email") {
		t.Fatalf("permanent error lacks SendGrid's field: %v", f)
	}
	// A revoked key (401) and a key without the scope (403) are the runner's problem,
	// not the message's: they wait without using an attempt; so do spent credits
	// (also a 401), as the channel's quota. 413 is permanent.
	for _, c := range []struct {
		local, code string
		class       sender.Class
	}{{"revoked", "401", sender.ClassConfiguration}, {"forbidden", "403", sender.ClassConfiguration}, {"nocredits", "401", sender.ClassQuota},
		{"huge", "413", sender.ClassPermanent}} {
		_, err = limited.Send(ctx, sendertest.EmailMessage(11, c.local+"@example.net"))
		if f := sendertest.WantClass(t, err, c.class); f.Code != c.code {
			t.Fatalf("%s: code %q", c.local, f.Code)
		}
	}
}

// fromPayload is an e-mail whose payload sets from.
func fromPayload(id int64, to, from string) sender.Message {
	m := sendertest.EmailMessage(id, to)
	m.Payload = json.RawMessage(strings.Replace(string(m.Payload), `{`, `{"from":"`+from+`",`, 1))
	return m
}

// SendGrid refuses a from it has not verified (403, field from). A producer's own from
// that SendGrid refuses fails that message only: the channel is not paused for every
// producer, and the producer sees the code. The channel's default From refused is the
// runner's configuration, as is a 403 that blames the key, whoever's from it carries.
func TestSendGridRefusedSender(t *testing.T) {
	t.Parallel()
	srv := sendertest.FakeSendGrid(t, "billing@example.com")
	ctx := context.Background()
	verifiedDefault, err := sendgrid.New(sendgrid.Config{APIKey: "SG.test-key", BaseURL: srv.URL,
		Defaults: email.Defaults{MessageIDKey: idtag.StaticKey(sendertest.MessageIDKey), From: "Herald <noreply@example.com>"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = verifiedDefault.Send(ctx, fromPayload(1, "ana@example.net", "ceo@example.com"))
	if f := sendertest.WantClass(t, err, sender.ClassPermanent); f.Code != "403" || !strings.Contains(f.Error(), "ceo@example.com") {
		t.Fatalf("a producer's unverified from: code %q, %v", f.Code, f)
	}
	if res, err := verifiedDefault.Send(ctx, fromPayload(2, "ana@example.net", "Billing <billing@example.com>")); err != nil || res.ProviderMessageID != "sg-2" {
		t.Fatalf("a producer's verified from: %+v %v", res, err)
	}
	_, err = verifiedDefault.Send(ctx, fromPayload(3, "forbidden@example.net", "billing@example.com"))
	sendertest.WantClass(t, err, sender.ClassConfiguration)

	unverifiedDefault, err := sendgrid.New(sendgrid.Config{APIKey: "SG.test-key", BaseURL: srv.URL,
		Defaults: email.Defaults{MessageIDKey: idtag.StaticKey(sendertest.MessageIDKey), From: "Shop <shop@example.com>"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []sender.Message{sendertest.EmailMessage(4, "ana@example.net"), fromPayload(5, "ana@example.net", "shop@EXAMPLE.com")} {
		_, err = unverifiedDefault.Send(ctx, m)
		if f := sendertest.WantClass(t, err, sender.ClassConfiguration); f.Code != "403" || !strings.Contains(f.Error(), "channel's From") {
			t.Fatalf("the channel's unverified From (message %d): code %q, %v", m.ID, f.Code, f)
		}
	}
}

// Attachments, a dynamic template with its data, categories and custom arguments
// travel as the Mail Send API's own fields; herald_id stays herald's.
func TestSendGridProviderFields(t *testing.T) {
	t.Parallel()
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			w.WriteHeader(400)
			return
		}
		w.Header().Set("X-Message-Id", "sg-fields")
		w.WriteHeader(202)
	}))
	t.Cleanup(srv.Close)
	s, err := sendgrid.New(sendgrid.Config{APIKey: "SG.test-key", BaseURL: srv.URL, Defaults: email.Defaults{MessageIDKey: idtag.StaticKey(sendertest.MessageIDKey), From: "noreply@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	m := sender.Message{ID: 9, Channel: "email", Recipient: "ana@example.net", Payload: json.RawMessage(`{
		"template_id": "d-0123456789abcdef0123456789abcdef", "dynamic_template_data": {"name": "Ana"},
		"categories": ["welcome"], "custom_args": {"user": "42"},
		"attachments": [{"filename": "a.txt", "content": "aGkK", "content_type": "text/plain"},
		                {"filename": "logo.png", "content": "iVBORw==", "disposition": "inline", "content_id": "logo"}]}`)}
	if _, err := s.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	for _, want := range []string{`"template_id":"d-0123456789abcdef0123456789abcdef"`, `"dynamic_template_data":{"name":"Ana"}`,
		`"categories":["welcome"]`, `"custom_args":{"herald_id":"9","user":"42"}`,
		`{"content":"aGkK","filename":"a.txt","type":"text/plain"}`,
		`{"content":"iVBORw==","content_id":"logo","disposition":"inline","filename":"logo.png"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("request lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), `"subject"`) || strings.Contains(string(b), `"content":[`) {
		t.Errorf("a templated mail carries no subject or content of its own:\n%s", b)
	}
}

// The start check reads the key's scopes: mail.send passes, a key without it and a
// revoked key are configuration failures.
func TestSendGridCheck(t *testing.T) {
	t.Parallel()
	srv := sendertest.FakeSendGrid(t)
	for _, c := range []struct {
		key  string
		want sender.Class
		code string
	}{{"SG.test-key", "", ""}, {"SG.read-only", sender.ClassConfiguration, "scope"}, {"SG.revoked", sender.ClassConfiguration, "401"}} {
		s, err := sendgrid.New(sendgrid.Config{APIKey: c.key, BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		err = s.Check(context.Background())
		if c.want == "" {
			if err != nil {
				t.Fatalf("%s: %v", c.key, err)
			}
			continue
		}
		if f := sendertest.WantClass(t, err, c.want); f.Code != c.code {
			t.Fatalf("%s: code %q, want %q", c.key, f.Code, c.code)
		}
	}
}
