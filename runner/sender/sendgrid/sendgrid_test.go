package sendgrid_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

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
		Defaults: email.Defaults{From: "Herald <noreply@example.com>"}})
	if err != nil {
		t.Fatal(err)
	}
	limited := ratelimit.New(s, 100, 10)
	ctx := context.Background()
	// cc and bcc travel as the personalization's cc and bcc (the fake answers 400 otherwise).
	copied := sendertest.EmailMessage(6, "copied@example.net")
	copied.Payload = json.RawMessage(strings.Replace(string(copied.Payload), `"headers"`, `"cc":["bo@example.net"],"bcc":["audit@example.net"],"headers"`, 1))
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
	// A revoked key (401) and an unverified sender (403) are the runner's problem, not
	// the message's: they wait without using an attempt. 413 is permanent.
	for _, c := range []struct {
		local, code string
		class       sender.Class
	}{{"revoked", "401", sender.ClassRateLimited}, {"unverified", "403", sender.ClassRateLimited}, {"huge", "413", sender.ClassPermanent}} {
		_, err = limited.Send(ctx, sendertest.EmailMessage(11, c.local+"@example.net"))
		if f := sendertest.WantClass(t, err, c.class); f.Code != c.code {
			t.Fatalf("%s: code %q", c.local, f.Code)
		}
	}
}
