package tests

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/email"
	"github.com/herald/herald/runner/sender/ratelimit"
	"github.com/herald/herald/runner/sender/sendgrid"
	smtpsender "github.com/herald/herald/runner/sender/smtp"
	"github.com/herald/herald/runner/sender/twilio"
	"github.com/herald/herald/runner/sender/webhook"
	"github.com/herald/herald/tests/testdb"
)

func emailMsg(id int64, to string) sender.Message {
	return sender.Message{ID: id, Channel: "email", Recipient: to, Attempt: 1,
		Payload: json.RawMessage(`{"subject":"Your receipt","text":"Thanks, Ana.","html":"<p>Thanks, <b>Ana</b>.</p>","headers":{"X-Campaign":"spring"}}`)}
}

func wantClass(t *testing.T, err error, class sender.Class) *sender.Failure {
	t.Helper()
	if err == nil {
		t.Fatalf("want a %s failure, got success", class)
	}
	f := sender.Classify(err)
	if f.Class != class {
		t.Fatalf("want %s, got %s: %v", class, f.Class, err)
	}
	return f
}

func smtpConfig(t *testing.T, s *smtpServer) smtpsender.Config {
	t.Helper()
	host, port, _ := net.SplitHostPort(s.Addr)
	p, _ := strconv.Atoi(port)
	pem, err := os.ReadFile(s.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return smtpsender.Config{Host: host, Port: p, TLSConfig: &tls.Config{RootCAs: pool}, Username: s.User, Password: s.Password,
		Timeout: 5 * time.Second, Defaults: email.Defaults{From: "Herald <noreply@example.com>", ReplyTo: "support@example.com"}}
}

// SMTP over STARTTLS with AUTH: envelope, headers and body arrive as built; one
// connection serves several messages; 451 is transient, 451 4.7.x throttling
// rate_limited, 550 permanent, a dropped connection transient.
func TestSMTPSender(t *testing.T) {
	t.Parallel()
	srv := startSMTP(t, true)
	s, err := smtpsender.New(smtpConfig(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for i := int64(1); i <= 3; i++ {
		res, err := s.Send(ctx, emailMsg(40+i, fmt.Sprintf("ana%d@example.net", i)))
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if res.ProviderMessageID != fmt.Sprintf("<herald-%d@example.com>", 40+i) {
			t.Fatalf("provider id %q", res.ProviderMessageID)
		}
	}
	msgs := srv.messages()
	if len(msgs) != 3 || srv.connCount() != 1 {
		t.Fatalf("%d messages over %d connections, want 3 over 1", len(msgs), srv.connCount())
	}
	m := msgs[0]
	if m.From != "noreply@example.com" || len(m.To) != 1 || m.To[0] != "ana1@example.net" {
		t.Fatalf("envelope: from %q to %v", m.From, m.To)
	}
	parsed, err := mail.ReadMessage(strings.NewReader(m.Data))
	if err != nil {
		t.Fatal(err)
	}
	h := parsed.Header
	for k, want := range map[string]string{"Subject": "Your receipt", "Message-Id": "<herald-41@example.com>", "X-Campaign": "spring",
		"To": "<ana1@example.net>", "Reply-To": "<support@example.com>"} {
		if got := h.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if !strings.Contains(h.Get("From"), "noreply@example.com") || !strings.Contains(h.Get("Content-Type"), "multipart/alternative") {
		t.Errorf("From %q, Content-Type %q", h.Get("From"), h.Get("Content-Type"))
	}
	body, _ := io.ReadAll(parsed.Body)
	if !bytes.Contains(body, []byte("Thanks, Ana.")) || !bytes.Contains(body, []byte("<b>Ana</b>")) {
		t.Errorf("body lacks the text or the html part:\n%s", body)
	}

	_, err = s.Send(ctx, emailMsg(50, "busy@example.net"))
	wantClass(t, err, sender.ClassTransient)
	_, err = s.Send(ctx, emailMsg(51, "slow-down@example.net"))
	if f := wantClass(t, err, sender.ClassRateLimited); f.RetryAt.Before(time.Now()) {
		t.Fatalf("throttling retry_at %v is not in the future", f.RetryAt)
	}
	_, err = s.Send(ctx, emailMsg(52, "unknown@example.net"))
	wantClass(t, err, sender.ClassPermanent)
	_, err = s.Send(ctx, emailMsg(53, "drop@example.net"))
	wantClass(t, err, sender.ClassTransient)
	// After all that, the sender still delivers.
	if _, err := s.Send(ctx, emailMsg(54, "ana@example.net")); err != nil {
		t.Fatalf("send after failures: %v", err)
	}
}

// STARTTLS is required by default: a server without it is refused; TLS "none" is an
// explicit opt-out for a local relay; implicit TLS (SMTPS) works; wrong credentials are transient (an operator
// fixes them), a payload without a subject permanent.
func TestSMTPSenderTLSPolicyAndAuth(t *testing.T) {
	t.Parallel()
	plain := startSMTP(t, false)
	host, port, _ := net.SplitHostPort(plain.Addr)
	p, _ := strconv.Atoi(port)
	defaults := email.Defaults{From: "noreply@example.com"}
	required, err := smtpsender.New(smtpsender.Config{Host: host, Port: p, Timeout: 5 * time.Second, Defaults: defaults})
	if err != nil {
		t.Fatal(err)
	}
	_, err = required.Send(context.Background(), emailMsg(1, "a@example.net"))
	wantClass(t, err, sender.ClassTransient)
	if len(plain.messages()) != 0 {
		t.Fatal("a message went out without TLS")
	}
	relay, err := smtpsender.New(smtpsender.Config{Host: host, Port: p, TLS: "none", Timeout: 5 * time.Second, Defaults: defaults})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := relay.Send(context.Background(), emailMsg(2, "a@example.net")); err != nil || len(plain.messages()) != 1 {
		t.Fatalf("relay without TLS: %v, %d messages", err, len(plain.messages()))
	}

	secure := startSMTP(t, true)
	cfg := smtpConfig(t, secure)
	cfg.Password = "wrong"
	bad, _ := smtpsender.New(cfg)
	_, err = bad.Send(context.Background(), emailMsg(3, "a@example.net"))
	wantClass(t, err, sender.ClassTransient)

	good, _ := smtpsender.New(smtpConfig(t, secure))
	_, err = good.Send(context.Background(), sender.Message{ID: 4, Recipient: "a@example.net", Payload: json.RawMessage(`{"text":"no subject"}`)})
	wantClass(t, err, sender.ClassPermanent)
	implicit := startSMTPMode(t, true, true)
	cfg = smtpConfig(t, implicit)
	cfg.TLS = "tls"
	smtps, _ := smtpsender.New(cfg)
	if _, err := smtps.Send(context.Background(), emailMsg(5, "a@example.net")); err != nil || len(implicit.messages()) != 1 {
		t.Fatalf("implicit TLS: %v, %d messages", err, len(implicit.messages()))
	}
	if _, err := smtpsender.New(smtpsender.Config{Host: host, TLS: "maybe"}); err == nil {
		t.Fatal("an unknown TLS mode was accepted")
	}
}

// fakeSendGrid checks each request as the v3 Mail Send API documents it and answers
// with SendGrid's response shapes; recipients choose the answer.
func fakeSendGrid(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.URL.Path != "/v3/mail/send" || r.Header.Get("Authorization") != "Bearer SG.test-key" ||
			r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("sendgrid: bad request %s %s auth %q type %q", r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"))
			w.WriteHeader(400)
			return
		}
		var req struct {
			Personalizations []struct {
				To []struct{ Email string } `json:"to"`
			} `json:"personalizations"`
			From       struct{ Email, Name string }   `json:"from"`
			ReplyTo    *struct{ Email string }        `json:"reply_to"`
			Subject    string                         `json:"subject"`
			Content    []struct{ Type, Value string } `json:"content"`
			Headers    map[string]string              `json:"headers"`
			CustomArgs map[string]string              `json:"custom_args"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Personalizations) != 1 || len(req.Personalizations[0].To) != 1 {
			t.Errorf("sendgrid: body: %v %+v", err, req)
			w.WriteHeader(400)
			return
		}
		to := req.Personalizations[0].To[0].Email
		if req.From.Email != "noreply@example.com" || req.From.Name != "Herald" || req.Subject != "Your receipt" ||
			len(req.Content) != 2 || req.Content[0].Type != "text/plain" || req.Content[1].Type != "text/html" ||
			req.CustomArgs["herald_id"] == "" || !strings.HasPrefix(req.Headers["Message-ID"], "<herald-") || req.Headers["X-Campaign"] != "spring" {
			t.Errorf("sendgrid: fields: %+v", req)
		}
		switch strings.SplitN(to, "@", 2)[0] {
		case "limited":
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(429)
			io.WriteString(w, `{"errors":[{"field":null,"message":"too many requests"}]}`)
		case "down":
			w.WriteHeader(500)
			io.WriteString(w, `{"errors":[{"field":null,"message":"internal error"}]}`)
		case "bad":
			w.WriteHeader(400)
			io.WriteString(w, `{"errors":[{"message":"Does not contain a valid address.","field":"personalizations.0.to.0.email","help":"http://sendgrid.com/docs/API_Reference/Web_API_v3/Mail/errors.html#message.personalizations.to"}]}`)
		default:
			w.Header().Set("X-Message-Id", "sg-"+req.CustomArgs["herald_id"])
			w.WriteHeader(202)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// SendGrid: success stores the provider id; 429 with Retry-After is rate_limited at
// the right time (and slows the limiter); 500 transient; an invalid recipient
// permanent.
func TestSendGridSender(t *testing.T) {
	t.Parallel()
	srv := fakeSendGrid(t)
	s, err := sendgrid.New(sendgrid.Config{APIKey: "SG.test-key", BaseURL: srv.URL,
		Defaults: email.Defaults{From: "Herald <noreply@example.com>"}})
	if err != nil {
		t.Fatal(err)
	}
	limited := ratelimit.New(s, 100, 10)
	ctx := context.Background()
	res, err := limited.Send(ctx, emailMsg(7, "ana@example.net"))
	if err != nil || res.ProviderMessageID != "sg-7" {
		t.Fatalf("success: %+v %v", res, err)
	}
	before := time.Now()
	_, err = limited.Send(ctx, emailMsg(8, "limited@example.net"))
	f := wantClass(t, err, sender.ClassRateLimited)
	if d := f.RetryAt.Sub(before); d < 29*time.Second || d > 31*time.Second {
		t.Fatalf("retry_at %v after the request, want 30s (Retry-After)", d)
	}
	if limited.Limit() != 50 {
		t.Fatalf("the limiter runs at %v/s after a 429, want 50", limited.Limit())
	}
	_, err = limited.Send(ctx, emailMsg(9, "down@example.net"))
	wantClass(t, err, sender.ClassTransient)
	_, err = limited.Send(ctx, emailMsg(10, "bad@example.net"))
	if f := wantClass(t, err, sender.ClassPermanent); !strings.Contains(f.Error(), "personalizations.0.to.0.email") {
		t.Fatalf("permanent error lacks SendGrid's field: %v", f)
	}
}

// twilioRequests records what the Twilio fake received.
type twilioRequests struct {
	mu   sync.Mutex
	sent []string // To numbers accepted
}

// fakeTwilio checks each request as the Messages API documents it (path, Basic auth,
// form encoding, fields) and answers with Twilio's response shapes.
func fakeTwilio(t *testing.T) (*httptest.Server, *twilioRequests) {
	rec := &twilioRequests{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if r.Method != "POST" || r.URL.Path != "/2010-04-01/Accounts/AC0123/Messages.json" || !ok || user != "AC0123" || pass != "tw-token" ||
			r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			t.Errorf("twilio: bad request %s %s auth %v %q type %q", r.Method, r.URL.Path, ok, user, r.Header.Get("Content-Type"))
			w.WriteHeader(401)
			return
		}
		if err := r.ParseForm(); err != nil || r.PostForm.Get("From") != "+15005550006" || r.PostForm.Get("Body") == "" {
			t.Errorf("twilio: form %v %v", r.PostForm, err)
		}
		to := r.PostForm.Get("To")
		w.Header().Set("Content-Type", "application/json")
		switch to {
		case "+15005550001":
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"code": 21211, "message": "The 'To' number %s is not a valid phone number.", "more_info": "https://www.twilio.com/docs/errors/21211", "status": 400}`, to)
		case "+15005550002":
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(429)
			io.WriteString(w, `{"code": 20429, "message": "Too Many Requests", "more_info": "https://www.twilio.com/docs/errors/20429", "status": 429}`)
		case "+15005550003":
			w.WriteHeader(503)
			io.WriteString(w, `{"code": 20503, "message": "Service Unavailable", "status": 503}`)
		default:
			rec.mu.Lock()
			rec.sent = append(rec.sent, to)
			n := len(rec.sent)
			rec.mu.Unlock()
			w.WriteHeader(201)
			fmt.Fprintf(w, `{"account_sid": "AC0123", "body": %q, "direction": "outbound-api", "from": "+15005550006", "sid": "SM%032d", "status": "queued", "to": %q}`,
				r.PostForm.Get("Body"), n, to)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, rec
}

func smsMsg(id int64, to string) sender.Message {
	return sender.Message{ID: id, Channel: "sms", Recipient: to, Attempt: 1, Payload: json.RawMessage(`{"text":"Your code is 123456"}`)}
}

// Twilio: success stores the message SID; 429 with Retry-After rate_limited; 503
// transient; error 21211 (invalid To) permanent.
func TestTwilioSender(t *testing.T) {
	t.Parallel()
	srv, rec := fakeTwilio(t)
	s, err := twilio.New(twilio.Config{AccountSID: "AC0123", AuthToken: "tw-token", From: "+15005550006", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := s.Send(ctx, smsMsg(1, "+14155550100"))
	if err != nil || !strings.HasPrefix(res.ProviderMessageID, "SM") || len(rec.sent) != 1 {
		t.Fatalf("success: %+v %v", res, err)
	}
	before := time.Now()
	_, err = s.Send(ctx, smsMsg(2, "+15005550002"))
	if f := wantClass(t, err, sender.ClassRateLimited); f.RetryAt.Sub(before) < 4*time.Second || f.RetryAt.Sub(before) > 6*time.Second {
		t.Fatalf("retry_at %v after the request, want 5s", f.RetryAt.Sub(before))
	}
	_, err = s.Send(ctx, smsMsg(3, "+15005550003"))
	wantClass(t, err, sender.ClassTransient)
	_, err = s.Send(ctx, smsMsg(4, "+15005550001"))
	if f := wantClass(t, err, sender.ClassPermanent); !strings.Contains(f.Error(), "21211") {
		t.Fatalf("permanent error lacks Twilio's code: %v", f)
	}
}

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
	wantClass(t, err, sender.ClassPermanent)
	m.Recipient = srv.URL + "/busy"
	_, err = s.Send(context.Background(), m)
	wantClass(t, err, sender.ClassRateLimited)
	if _, err := webhook.New(webhook.Config{Secret: []byte("short")}); err == nil {
		t.Fatal("a short secret was accepted")
	}
}

// End to end through `herald run`: an e-mail enqueued from SQL reaches the in-process
// SMTP server, an SMS the Twilio fake, and a permanent failure ends in
// herald.dead_letters with its error; provider ids are stored.
func TestProvidersEndToEnd(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	smtpSrv := startSMTP(t, true)
	tw, rec := fakeTwilio(t)
	host, port, _ := net.SplitHostPort(smtpSrv.Addr)
	pwFile := t.TempDir() + "/smtp-password"
	if err := os.WriteFile(pwFile, []byte(smtpSrv.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, logs := runnerProcess(t, url,
		"HERALD_SENDER_EMAIL=smtp", "HERALD_SMTP_HOST="+host, "HERALD_SMTP_PORT="+port, "HERALD_SMTP_CA_FILE="+smtpSrv.CAFile,
		"HERALD_SMTP_USERNAME="+smtpSrv.User, "HERALD_SMTP_PASSWORD_FILE="+pwFile, "HERALD_EMAIL_FROM=Herald <noreply@example.com>",
		"HERALD_SENDER_SMS=twilio", "HERALD_TWILIO_URL="+tw.URL, "HERALD_TWILIO_ACCOUNT_SID=AC0123", "HERALD_TWILIO_AUTH_TOKEN=tw-token",
		"HERALD_TWILIO_FROM=+15005550006", "HERALD_POLL_INTERVAL=100ms")
	mailID := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'ana@example.net', '{"subject":"Hi","text":"Hello Ana"}')`)
	smsID := scalar[int64](t, pool, `SELECT herald.enqueue('sms', '+14155550100', '{"text":"Your code is 123456"}')`)
	deadID := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'unknown@example.net', '{"subject":"Hi","text":"Hello"}')`)
	eventually(t, 30*time.Second, "all three settled", func() bool {
		return countWhere(t, pool, `status IN ('sent', 'dead')`) == 3
	})
	var mailProv, smsProv string
	if err := pool.QueryRow(context.Background(), `SELECT (SELECT provider_message_id FROM herald.messages WHERE id = $1 AND status = 'sent'),
		(SELECT provider_message_id FROM herald.messages WHERE id = $2 AND status = 'sent')`, mailID, smsID).Scan(&mailProv, &smsProv); err != nil {
		t.Fatalf("sent rows: %v\n%s", err, logs.String())
	}
	if mailProv != fmt.Sprintf("<herald-%d@example.com>", mailID) || !strings.HasPrefix(smsProv, "SM") {
		t.Fatalf("provider ids %q %q", mailProv, smsProv)
	}
	msgs := smtpSrv.messages()
	if len(msgs) != 1 || msgs[0].To[0] != "ana@example.net" || !strings.Contains(msgs[0].Data, "Hello Ana") {
		t.Fatalf("SMTP server got %+v", msgs)
	}
	if len(rec.sent) != 1 || rec.sent[0] != "+14155550100" {
		t.Fatalf("Twilio got %v", rec.sent)
	}
	var class, lastErr string
	if err := pool.QueryRow(context.Background(), `SELECT last_error_class, last_error FROM herald.dead_letters WHERE id = $1`, deadID).
		Scan(&class, &lastErr); err != nil || class != "permanent" || !strings.Contains(lastErr, "550") {
		t.Fatalf("dead letter: %s %q %v", class, lastErr, err)
	}
	if strings.Contains(logs.String(), smtpSrv.Password) || strings.Contains(logs.String(), "tw-token") {
		t.Fatal("a secret appears in the runner's logs")
	}
	waitExit(t, cmd, logs, 15*time.Second)
	_ = errors.New
}
