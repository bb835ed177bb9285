package ses_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald/herald/runner/idtag"
	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/email"
	"github.com/herald/herald/runner/sender/sendertest"
	"github.com/herald/herald/runner/sender/ses"
)

// awsEnv gives the SDK's credential chain the fake's key (or none) and nothing else to
// find: no shared files, no instance metadata.
func awsEnv(t *testing.T, key, secret string) {
	t.Setenv("AWS_ACCESS_KEY_ID", key)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

func newSES(t *testing.T, url string, cfg ses.Config) *ses.Sender {
	t.Helper()
	cfg.Region, cfg.Endpoint = sendertest.SESRegion, url
	if cfg.Defaults.From == "" {
		cfg.Defaults.From = "Herald <noreply@example.com>"
	}
	cfg.Defaults.MessageIDKey = idtag.StaticKey(sendertest.MessageIDKey)
	s, err := ses.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// SES v2, signed with Signature Version 4 (the fake checks it): the message goes raw,
// the MIME the SMTP sender writes, with herald's Message-ID (the provider id: SES's
// event notifications report it) and no Bcc header, the copies as the destination's,
// herald_id as a message tag, the configuration set and the return path as SES's
// fields. SES's answers land in herald's classes.
func TestSESSender(t *testing.T) {
	awsEnv(t, sendertest.SESAccessKey, sendertest.SESSecretKey)
	srv, reqs := sendertest.FakeSES(t, "shop@example.com")
	s := newSES(t, srv.URL, ses.Config{ConfigurationSet: "herald-events", Defaults: email.Defaults{ReturnPath: "bounces@example.com"}})
	ctx := context.Background()
	m := sendertest.EmailMessage(7, "ana@example.net")
	m.Payload = json.RawMessage(strings.Replace(string(m.Payload), `"headers"`, `"cc":["bo@example.net"],"bcc":["audit@example.net"],"headers"`, 1))
	res, err := s.Send(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	sent := reqs.Sent()
	if len(sent) != 1 {
		t.Fatalf("%d requests", len(sent))
	}
	got := sent[0]
	if !strings.Contains(got.Raw, "Message-ID: "+res.ProviderMessageID) || !strings.HasPrefix(res.ProviderMessageID, "<herald-7.") ||
		strings.Contains(strings.ToLower(got.Raw), "\nbcc:") || !strings.Contains(got.Raw, "Subject: Your receipt") ||
		!strings.Contains(got.Raw, "X-Campaign: spring") {
		t.Fatalf("the raw message (provider id %q):\n%s", res.ProviderMessageID, got.Raw)
	}
	if strings.Join(got.To, ",") != "ana@example.net" || strings.Join(got.Cc, ",") != "bo@example.net" || strings.Join(got.Bcc, ",") != "audit@example.net" ||
		got.Tags["herald_id"] != "7" || got.ConfigurationSet != "herald-events" || got.FeedbackTo != "bounces@example.com" {
		t.Fatalf("the request: %+v", got)
	}

	for _, c := range []struct {
		to    string
		class sender.Class
		code  string
	}{
		{"throttled@example.net", sender.ClassRateLimited, "TooManyRequestsException"},
		{"quota@example.net", sender.ClassQuota, "TooManyRequestsException"},
		{"sandboxed@example.net", sender.ClassPermanent, "MessageRejected"},
		{"fails@example.net", sender.ClassTransient, "InternalFailure"},
	} {
		_, err := s.Send(ctx, sendertest.EmailMessage(8, c.to))
		if f := sendertest.WantClass(t, err, c.class); f.Code != c.code || f.Receiver {
			t.Errorf("%s: %+v, want code %s", c.to, f, c.code)
		}
	}
	// An unverified From: the channel's own pauses it; a payload's own fails alone.
	other := newSES(t, srv.URL, ses.Config{Defaults: email.Defaults{From: "news@unverified.example"}})
	if _, err := other.Send(ctx, sendertest.EmailMessage(9, "ana@example.net")); !strings.Contains(sendertest.WantClass(t, err, sender.ClassConfiguration).Error(), "news@unverified.example") {
		t.Fatalf("the channel's unverified From: %v", err)
	}
	own := sendertest.EmailMessage(10, "ana@example.net")
	own.Payload = json.RawMessage(strings.Replace(string(own.Payload), `"headers"`, `"from":"promo@unverified.example","headers"`, 1))
	if _, err := s.Send(ctx, own); err == nil || sender.Classify(err).Class != sender.ClassPermanent {
		t.Fatalf("the payload's unverified from: %v", err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
	reqs.Paused = true
	sendertest.WantClass(t, s.Check(ctx), sender.ClassConfiguration)
}

// Credentials that SES refuses (a wrong secret: the signature does not match) or that
// the chain cannot find are the channel's configuration, never a message's failure,
// and the secret appears in no error.
func TestSESCredentialsAreConfiguration(t *testing.T) {
	srv, _ := sendertest.FakeSES(t)
	awsEnv(t, sendertest.SESAccessKey, "wr0ng-s3cret")
	_, err := newSES(t, srv.URL, ses.Config{}).Send(context.Background(), sendertest.EmailMessage(1, "ana@example.net"))
	if f := sendertest.WantClass(t, err, sender.ClassConfiguration); f.Code != "SignatureDoesNotMatch" || strings.Contains(f.Error(), "wr0ng") {
		t.Fatalf("a wrong secret: %+v", f)
	}
	awsEnv(t, "", "")
	err = newSES(t, srv.URL, ses.Config{}).Check(context.Background())
	if f := sendertest.WantClass(t, err, sender.ClassConfiguration); f.Code != "credentials" {
		t.Fatalf("no credentials: %+v", f)
	}
}
