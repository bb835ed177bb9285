package twilio_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/sendertest"
	"github.com/herald/herald/runner/sender/twilio"
)

// fakeTwilio starts the Twilio stand-in (sendertest.FakeTwilio) and returns what it
// received and a sender from the account's number pointed at it.
func fakeTwilio(t *testing.T) (*sendertest.TwilioRequests, *twilio.Sender) {
	t.Helper()
	srv, rec := sendertest.FakeTwilio(t)
	s, err := twilio.New(twilio.Config{AccountSID: "AC0123", AuthToken: "tw-token", From: "+15005550006", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return rec, s
}

// Twilio: success stores the message SID; 429 with Retry-After rate_limited; 503
// transient; error 21211 (invalid To) permanent.
func TestTwilioSender(t *testing.T) {
	t.Parallel()
	rec, s := fakeTwilio(t)
	ctx := context.Background()
	res, err := s.Send(ctx, sendertest.SMSMessage(1, "+14155550100"))
	if err != nil || !strings.HasPrefix(res.ProviderMessageID, "SM") || len(rec.Sent()) != 1 {
		t.Fatalf("success: %+v %v", res, err)
	}
	before := time.Now()
	_, err = s.Send(ctx, sendertest.SMSMessage(2, "+15005550002"))
	if f := sendertest.WantClass(t, err, sender.ClassRateLimited); f.RetryAt.Sub(before) < 4*time.Second || f.RetryAt.Sub(before) > 6*time.Second {
		t.Fatalf("retry_at %v after the request, want 5s", f.RetryAt.Sub(before))
	}
	_, err = s.Send(ctx, sendertest.SMSMessage(3, "+15005550003"))
	sendertest.WantClass(t, err, sender.ClassTransient)
	_, err = s.Send(ctx, sendertest.SMSMessage(4, "+15005550001"))
	if f := sendertest.WantClass(t, err, sender.ClassPermanent); !strings.Contains(f.Error(), "21211") || f.Code != "21211" {
		t.Fatalf("permanent error lacks Twilio's code: %v (code %q)", f, f.Code)
	}
	// Twilio's documented errors: a full From queue (21611) and bad credentials
	// (20003) wait without using an attempt, as does a sender identity the account
	// cannot use (21601 From not its number, 21660 the From another account's, 21701 no
	// such Messaging Service: the
	// channel pauses instead of every SMS dying); an unsubscribed recipient (21610)
	// and a number that is not mobile (21614) are permanent. The code is Twilio's.
	for _, c := range []struct {
		to, code string
		class    sender.Class
	}{{"+15005550011", "21611", sender.ClassRateLimited}, {"+15005550012", "20003", sender.ClassConfiguration},
		{"+15005550013", "21610", sender.ClassPermanent}, {"+15005550014", "21614", sender.ClassPermanent},
		{"+15005550015", "21601", sender.ClassConfiguration}, {"+15005550016", "21701", sender.ClassConfiguration},
		{"+15005550017", "21660", sender.ClassConfiguration}} {
		_, err := s.Send(ctx, sendertest.SMSMessage(5, c.to))
		if f := sendertest.WantClass(t, err, c.class); f.Code != c.code || (c.class == sender.ClassRateLimited && !f.RetryAt.After(time.Now())) {
			t.Fatalf("Twilio %s: code %q, retry at %v", c.code, f.Code, f.RetryAt)
		}
	}
}

// Concurrent sends reuse connections (one TLS handshake per connection, not per
// message), and the API's certificate is checked against the configured CAs only.
func TestTwilioReusesConnectionsAndTrustsItsCA(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	conns := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(201)
		io.WriteString(w, `{"sid": "SM0123", "status": "queued"}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.StartTLS()
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	s, err := twilio.New(twilio.Config{AccountSID: "AC0123", AuthToken: "tok", From: "+15005550006", BaseURL: srv.URL, RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 16, 25
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := s.Send(context.Background(), sendertest.SMSMessage(int64(w*each+i), "+14155550100")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// About one per concurrent send, plus the dials Go's transport races against a
	// connection coming free; the default client (2 idle per host) opens one for
	// nearly every send.
	if conns > 4*workers {
		t.Fatalf("%d sends opened %d connections; at most %d expected", workers*each, conns, 4*workers)
	}
	// Without the CA, the same server is not trusted.
	untrusting, _ := twilio.New(twilio.Config{AccountSID: "AC0123", AuthToken: "tok", From: "+15005550006", BaseURL: srv.URL})
	if _, err := untrusting.Send(context.Background(), sendertest.SMSMessage(1, "+14155550100")); err == nil {
		t.Fatal("a certificate from an unknown CA was accepted")
	}
	s.Close()
}

// MMS media, the status callback and API-key credentials: MediaUrl once per URL, a
// media-only message without Body, StatusCallback on every message; the key
// authenticates instead of the auth token. The start check reads the account and
// looks the From number up among the account's. SmartEncoded only when configured.
func TestTwilioMediaCallbackAndAPIKey(t *testing.T) {
	t.Parallel()
	srv, rec := sendertest.FakeTwilio(t)
	s, err := twilio.New(twilio.Config{AccountSID: "AC0123", APIKeySID: "SK0123", APIKeySecret: "sk-secret", From: "+15005550006",
		BaseURL: srv.URL, StatusCallback: "https://herald.example.com/v1/events/twilio"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m := sender.Message{ID: 1, Channel: "sms", Recipient: "+14155550100",
		Payload: json.RawMessage(`{"media_urls":["https://example.com/a.png","https://example.com/b.png"]}`)}
	if _, err := s.Send(ctx, m); err != nil {
		t.Fatal(err)
	}
	f := rec.Forms()[0]
	if got := f["MediaUrl"]; len(got) != 2 || got[1] != "https://example.com/b.png" || f.Has("Body") ||
		f.Get("StatusCallback") != "https://herald.example.com/v1/events/twilio?herald_id=1" || f.Has("SmartEncoded") {
		t.Fatalf("form %v", f)
	}
	// Smart encoding only when configured: it changes the text as written.
	smart, _ := twilio.New(twilio.Config{AccountSID: "AC0123", AuthToken: "tw-token", From: "+15005550006", BaseURL: srv.URL, SmartEncoded: true})
	if _, err := smart.Send(ctx, sender.Message{ID: 2, Channel: "sms", Recipient: "+14155550100",
		Payload: json.RawMessage(`{"text":"“Hi” — your code is 123456"}`)}); err != nil {
		t.Fatal(err)
	}
	if f := rec.Forms()[1]; f.Get("SmartEncoded") != "true" || f.Get("Body") != "“Hi” — your code is 123456" {
		t.Fatalf("smart-encoded form %v", f)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatalf("check with the API key: %v", err)
	}
	wrong, _ := twilio.New(twilio.Config{AccountSID: "AC0123", AuthToken: "nope", From: "+15005550006", BaseURL: srv.URL})
	if f := sendertest.WantClass(t, wrong.Check(ctx), sender.ClassConfiguration); f.Code != "401" {
		t.Fatalf("check with a wrong token: code %q", f.Code)
	}
	// A From that is not the account's number fails the check (so a probe does not
	// resume a channel paused for it); a Messaging Service is not looked up.
	notOurs, _ := twilio.New(twilio.Config{AccountSID: "AC0123", AuthToken: "tw-token", From: "+15005550099", BaseURL: srv.URL})
	if f := sendertest.WantClass(t, notOurs.Check(ctx), sender.ClassConfiguration); f.Code != "21601" || !strings.Contains(f.Error(), "+15005550099") {
		t.Fatalf("check with another account's From: %v (code %q)", f, f.Code)
	}
	service, _ := twilio.New(twilio.Config{AccountSID: "AC0123", AuthToken: "tw-token", MessagingServiceSID: "MG0123", BaseURL: srv.URL})
	if err := service.Check(ctx); err != nil {
		t.Fatalf("check with a Messaging Service: %v", err)
	}
	if _, err := twilio.New(twilio.Config{AccountSID: "AC0123", APIKeySID: "SK0123", From: "+15005550006"}); err == nil {
		t.Fatal("an API key without its secret was accepted")
	}
}

// A message with a deadline carries it to Twilio as ValidityPeriod (whole seconds
// left, which Twilio takes from 1 to 36,000), so Twilio's own queue cannot deliver it
// late; none without a deadline or with one past Twilio's 10 hours. Under a second
// left, nothing is handed over: the message waits for its deadline and ends expired.
func TestTwilioValidityPeriodIsTheDeadline(t *testing.T) {
	t.Parallel()
	rec, s := fakeTwilio(t)
	ctx := context.Background()
	for i, c := range []struct {
		left     time.Duration // zero: no deadline
		min, max int           // the ValidityPeriod sent; 0: none
	}{{10 * time.Minute, 598, 600}, {2500 * time.Millisecond, 1, 2}, {0, 0, 0}, {11 * time.Hour, 0, 0}} {
		m := sendertest.SMSMessage(int64(i+1), "+14155550100")
		if c.left > 0 {
			m.Deadline = time.Now().Add(c.left)
		}
		if _, err := s.Send(ctx, m); err != nil {
			t.Fatalf("deadline in %v: %v", c.left, err)
		}
		f := rec.Forms()[i]
		if c.max == 0 {
			if f.Has("ValidityPeriod") {
				t.Errorf("deadline in %v: ValidityPeriod %s sent", c.left, f.Get("ValidityPeriod"))
			}
			continue
		}
		if v, err := strconv.Atoi(f.Get("ValidityPeriod")); err != nil || v < c.min || v > c.max {
			t.Errorf("deadline in %v: ValidityPeriod %q, want %d..%d", c.left, f.Get("ValidityPeriod"), c.min, c.max)
		}
	}
	late := sendertest.SMSMessage(9, "+14155550100")
	late.Deadline = time.Now().Add(900 * time.Millisecond)
	_, err := s.Send(ctx, late)
	if f := sendertest.WantClass(t, err, sender.ClassRateLimited); f.Code != "expired" || !f.RetryAt.Equal(late.Deadline) {
		t.Fatalf("under a second left: code %q, retry at %v (deadline %v)", f.Code, f.RetryAt, late.Deadline)
	}
	if n := len(rec.Sent()); n != 4 {
		t.Fatalf("Twilio got %d messages, want the 4 with time left", n)
	}
}

// A 2xx is Twilio's word that the message is created and will go out: an answer
// whose body is cut off before the sid arrives is a sent message with no provider
// id, not a failure whose retry would text the person twice.
func TestTwilioAcceptedWithoutSidIsSent(t *testing.T) {
	t.Parallel()
	var n int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"sid\": \"SM01")
		buf.Flush()
	}))
	t.Cleanup(srv.Close)
	s, err := twilio.New(twilio.Config{AccountSID: "AC0123", AuthToken: "tw-token", From: "+15005550006", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Send(context.Background(), sendertest.SMSMessage(1, "+14155550100"))
	mu.Lock()
	defer mu.Unlock()
	if err != nil || res.ProviderMessageID != "" || n != 1 {
		t.Fatalf("a 201 cut off before its sid: %+v, %v, after %d requests", res, err, n)
	}
}

// A status callback Twilio would refuse (error 21609, for every message) is refused
// when the sender is made, with a reason that does not print the URL (it may carry
// credentials); one Twilio refuses anyway is the channel's configuration, not the
// message's: the channel pauses instead of every text dying. herald_id joins a
// callback's own query.
func TestTwilioStatusCallbackIsTheChannelsConfiguration(t *testing.T) {
	t.Parallel()
	srv, rec := sendertest.FakeTwilio(t)
	for _, cb := range []string{"herald.example.com/v1/events/twilio", "ftp://herald.example.com/x", "https://user:secret@events_host.example.com/x",
		"https://herald.example.com/x#frag", "https://herald.example.com/" + strings.Repeat("x", 4000)} {
		_, err := twilio.New(twilio.Config{AccountSID: "AC0123", AuthToken: "tw-token", From: "+15005550006", BaseURL: srv.URL, StatusCallback: cb})
		if err == nil || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "herald.example.com") {
			t.Fatalf("%.60s: %v", cb, err)
		}
	}
	refused, err := twilio.New(twilio.Config{AccountSID: "AC0123", AuthToken: "tw-token", From: "+15005550006", BaseURL: srv.URL,
		StatusCallback: "https://events.example.invalid/v1/events/twilio"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = refused.Send(context.Background(), sendertest.SMSMessage(1, "+14155550100"))
	if f := sendertest.WantClass(t, err, sender.ClassConfiguration); f.Code != "21609" {
		t.Fatalf("a refused status callback: code %q", f.Code)
	}
	withQuery, _ := twilio.New(twilio.Config{AccountSID: "AC0123", AuthToken: "tw-token", From: "+15005550006", BaseURL: srv.URL,
		StatusCallback: "https://herald.example.com/v1/events/twilio?account=a"})
	if _, err := withQuery.Send(context.Background(), sendertest.SMSMessage(7, "+14155550100")); err != nil {
		t.Fatal(err)
	}
	if got := rec.Forms()[0].Get("StatusCallback"); got != "https://herald.example.com/v1/events/twilio?account=a&herald_id=7" {
		t.Fatalf("callback %q", got)
	}
}

// WhatsApp through Twilio: both addresses carry "whatsapp:" (the recipient stays
// E.164 in herald, so its limits and suppressions are the number's), and a message
// outside WhatsApp's 24-hour window is an approved Content template: ContentSid with
// its ContentVariables as a JSON string, no Body. A WhatsApp sender is not looked up
// among the account's phone numbers (it need not be one). The same template goes
// out as a text on an SMS channel.
func TestTwilioWhatsAppAndContentTemplates(t *testing.T) {
	t.Parallel()
	srv, rec := sendertest.FakeTwilio(t)
	wa, err := twilio.New(twilio.Config{AccountSID: "AC0123", AuthToken: "tw-token", From: "+15005550006", BaseURL: srv.URL, WhatsApp: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	template := `{"content_sid":"HX0123456789abcdef0123456789abcdef","content_variables":{"1":"Ana","2":"123456"}}`
	for i, payload := range []string{`{"text":"Your order shipped"}`, template} {
		if _, err := wa.Send(ctx, sender.Message{ID: int64(i + 1), Channel: "whatsapp", Recipient: "+14155550100", Payload: json.RawMessage(payload)}); err != nil {
			t.Fatalf("%s: %v", payload, err)
		}
	}
	forms := rec.Forms()
	if f := forms[0]; f.Get("To") != "whatsapp:+14155550100" || f.Get("From") != "whatsapp:+15005550006" || f.Get("Body") != "Your order shipped" {
		t.Fatalf("WhatsApp text: %v", f)
	}
	if f := forms[1]; f.Get("ContentSid") != "HX0123456789abcdef0123456789abcdef" || f.Get("ContentVariables") != `{"1":"Ana","2":"123456"}` ||
		f.Has("Body") || f.Get("To") != "whatsapp:+14155550100" {
		t.Fatalf("WhatsApp template: %v", f)
	}
	if err := wa.Check(ctx); err != nil {
		t.Fatalf("check of a WhatsApp sender: %v", err)
	}
	sms, _ := twilio.New(twilio.Config{AccountSID: "AC0123", AuthToken: "tw-token", From: "+15005550006", BaseURL: srv.URL})
	if _, err := sms.Send(ctx, sender.Message{ID: 3, Channel: "sms", Recipient: "+14155550100", Payload: json.RawMessage(template)}); err != nil {
		t.Fatal(err)
	}
	if f := rec.Forms()[2]; f.Get("To") != "+14155550100" || f.Get("From") != "+15005550006" || f.Get("ContentSid") == "" {
		t.Fatalf("SMS template: %v", f)
	}
	// A WhatsApp From on a channel not set up for WhatsApp: Twilio finds no channel
	// for it (63007), the channel's configuration, for every message alike.
	mixed, _ := twilio.New(twilio.Config{AccountSID: "AC0123", AuthToken: "tw-token", From: "whatsapp:+15005550006", BaseURL: srv.URL})
	_, err = mixed.Send(ctx, sender.Message{ID: 4, Channel: "sms", Recipient: "+14155550100", Payload: json.RawMessage(`{"text":"t"}`)})
	if f := sendertest.WantClass(t, err, sender.ClassConfiguration); f.Code != "63007" {
		t.Fatalf("a WhatsApp From to an SMS To: code %q", f.Code)
	}
}
