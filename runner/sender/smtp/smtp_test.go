package smtp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/mail"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	smtpsender "github.com/herald/herald/runner/sender/smtp"

	"github.com/herald/herald/runner/idtag"
	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/email"
	"github.com/herald/herald/runner/sender/sendertest"
)

// SMTP over STARTTLS with AUTH: envelope, headers and body arrive as built; one
// connection serves several messages; 451 is transient, 451 4.7.x throttling
// rate_limited, 550 permanent, a dropped connection transient.
func TestSMTPSender(t *testing.T) {
	t.Parallel()
	srv, s := startSender(t)
	ctx := context.Background()
	for i := int64(1); i <= 3; i++ {
		res, err := s.Send(ctx, sendertest.EmailMessage(40+i, fmt.Sprintf("ana%d@example.net", i)))
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if res.ProviderMessageID != email.MessageID(40+i, sendertest.MessageIDKey, "example.com") {
			t.Fatalf("provider id %q", res.ProviderMessageID)
		}
	}
	msgs := srv.Messages()
	if len(msgs) != 3 || srv.ConnCount() != 1 {
		t.Fatalf("%d messages over %d connections, want 3 over 1", len(msgs), srv.ConnCount())
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
	for k, want := range map[string]string{"Subject": "Your receipt", "Message-Id": email.MessageID(41, sendertest.MessageIDKey, "example.com"), "X-Campaign": "spring",
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

	_, err = s.Send(ctx, sendertest.EmailMessage(50, "busy@example.net"))
	sendertest.WantClass(t, err, sender.ClassTransient)
	_, err = s.Send(ctx, sendertest.EmailMessage(51, "slow-down@example.net"))
	if f := sendertest.WantClass(t, err, sender.ClassRateLimited); f.RetryAt.Before(time.Now()) {
		t.Fatalf("throttling retry_at %v is not in the future", f.RetryAt)
	}
	_, err = s.Send(ctx, sendertest.EmailMessage(52, "unknown@example.net"))
	sendertest.WantClass(t, err, sender.ClassPermanent)
	_, err = s.Send(ctx, sendertest.EmailMessage(53, "drop@example.net"))
	sendertest.WantClass(t, err, sender.ClassTransient)
	// After all that, the sender still delivers.
	if _, err := s.Send(ctx, sendertest.EmailMessage(54, "ana@example.net")); err != nil {
		t.Fatalf("send after failures: %v", err)
	}
}

// STARTTLS is required by default: a server without it is refused; TLS "none" is an
// explicit opt-out for a local relay; implicit TLS (SMTPS) works; wrong credentials are transient (an operator
// fixes them), a payload without a subject permanent.
func TestSMTPSenderTLSPolicyAndAuth(t *testing.T) {
	t.Parallel()
	plain := sendertest.StartSMTP(t, false)
	host, port, _ := net.SplitHostPort(plain.Addr)
	p, _ := strconv.Atoi(port)
	defaults := email.Defaults{MessageIDKey: idtag.StaticKey(sendertest.MessageIDKey), From: "noreply@example.com"}
	required, err := smtpsender.New(smtpsender.Config{Host: host, Port: p, Timeout: 5 * time.Second, Defaults: defaults})
	if err != nil {
		t.Fatal(err)
	}
	_, err = required.Send(context.Background(), sendertest.EmailMessage(1, "a@example.net"))
	sendertest.WantClass(t, err, sender.ClassTransient)
	if len(plain.Messages()) != 0 {
		t.Fatal("a message went out without TLS")
	}
	relay, err := smtpsender.New(smtpsender.Config{Host: host, Port: p, TLS: "none", Timeout: 5 * time.Second, Defaults: defaults})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := relay.Send(context.Background(), sendertest.EmailMessage(2, "a@example.net")); err != nil || len(plain.Messages()) != 1 {
		t.Fatalf("relay without TLS: %v, %d messages", err, len(plain.Messages()))
	}

	secure := sendertest.StartSMTP(t, true)
	cfg := sendertest.SMTPConfig(t, secure)
	cfg.Password = "wrong"
	bad, _ := smtpsender.New(cfg)
	_, err = bad.Send(context.Background(), sendertest.EmailMessage(3, "a@example.net"))
	if f := sendertest.WantClass(t, err, sender.ClassConfiguration); f.Code != "535 5.7.8" { // a wrong password pauses the channel
		t.Fatalf("wrong password: code %q", f.Code)
	}
	// The start check says the same without a message; with the right password it passes.
	if f := sendertest.WantClass(t, bad.Check(context.Background()), sender.ClassConfiguration); f.Code != "535 5.7.8" {
		t.Fatalf("check with a wrong password: code %q", f.Code)
	}
	if err := newSMTP(t, sendertest.SMTPConfig(t, secure)).Check(context.Background()); err != nil {
		t.Fatalf("check: %v", err)
	}
	// A server certificate the runner does not trust is configuration too (code tls).
	untrusted := sendertest.SMTPConfig(t, secure)
	untrusted.TLSConfig = nil
	if f := sendertest.WantClass(t, newSMTP(t, untrusted).Check(context.Background()), sender.ClassConfiguration); f.Code != "tls" {
		t.Fatalf("untrusted certificate: code %q", f.Code)
	}

	good, _ := smtpsender.New(sendertest.SMTPConfig(t, secure))
	_, err = good.Send(context.Background(), sender.Message{ID: 4, Recipient: "a@example.net", Payload: json.RawMessage(`{"text":"no subject"}`)})
	sendertest.WantClass(t, err, sender.ClassPermanent)
	implicit := sendertest.StartSMTPMode(t, true, true)
	cfg = sendertest.SMTPConfig(t, implicit)
	cfg.TLS = "tls"
	smtps, _ := smtpsender.New(cfg)
	if _, err := smtps.Send(context.Background(), sendertest.EmailMessage(5, "a@example.net")); err != nil || len(implicit.Messages()) != 1 {
		t.Fatalf("implicit TLS: %v, %d messages", err, len(implicit.Messages()))
	}
	if _, err := smtpsender.New(smtpsender.Config{Host: host, TLS: "maybe"}); err == nil {
		t.Fatal("an unknown TLS mode was accepted")
	}
}

// Providers' exact replies land in the class docs/operations.md gives them: quotas
// are the channel's (quota: SQL pauses it for its quota_wait), throttling waits a
// minute, neither uses an attempt; "too many recipients" is
// not throttling; unknown mailboxes and full mailboxes are permanent; the reply code
// is the failure's code.
func TestSMTPRepliesAsProvidersSendThem(t *testing.T) {
	t.Parallel()
	srv, s := startSender(t)
	const minute = time.Minute
	for i, c := range []struct {
		code           int
		enhanced, text string
		class          sender.Class
		wait           time.Duration // for rate_limited: at least this far ahead
	}{
		{454, "", "Throttling failure: Maximum sending rate exceeded.", sender.ClassRateLimited, minute},                                                                            // Amazon SES
		{454, "", "Throttling failure: Daily message quota exceeded.", sender.ClassQuota, 0},                                                                                        // Amazon SES
		{451, "", "Authentication failed: Maximum credits exceeded", sender.ClassQuota, 0},                                                                                          // SendGrid's relay
		{550, "5.4.5", "Daily user sending limit exceeded.", sender.ClassQuota, 0},                                                                                                  // Gmail
		{554, "5.2.0", "STOREDRV.Submission.Exception:SubmissionQuotaExceededException; Failed to process message due to a permanent exception with message", sender.ClassQuota, 0}, // Microsoft 365
		{421, "4.7.0", "Try again later, closing connection.", sender.ClassRateLimited, minute},                                                                                     // Gmail
		{451, "4.7.1", "Greylisted, please try again later", sender.ClassRateLimited, minute},                                                                                       // greylisting
		{450, "4.2.1", "The user you are trying to contact is receiving mail too quickly.", sender.ClassRateLimited, minute},
		{554, "", "Sending suspended for this account. For more information, please check the inbox of the email address associated with your AWS account.", sender.ClassConfiguration, 0}, // Amazon SES
		{554, "", "Sending paused for this configuration set.", sender.ClassConfiguration, 0},                                                                                              // Amazon SES
		{550, "5.7.705", "Access denied, tenant has exceeded threshold", sender.ClassConfiguration, 0},                                                                                     // Microsoft 365
		{550, "5.7.708", "Access denied, traffic not accepted from this IP.", sender.ClassConfiguration, 0},                                                                                // Microsoft 365
		{550, "", "Unauthenticated senders not allowed", sender.ClassConfiguration, 0},                                                                                                     // SendGrid's relay
		{550, "5.7.0", "Mail relay denied [203.0.113.7]. Invalid credentials for relay for one of the domains in: example.com", sender.ClassConfiguration, 0},                              // Google's SMTP relay
		{452, "4.5.3", "Too many recipients", sender.ClassTransient, 0},
		{452, "4.2.2", "The email account that you tried to reach is over quota.", sender.ClassTransient, 0},
		{450, "4.2.0", "mailbox unavailable", sender.ClassTransient, 0},
		{550, "5.1.1", "The email account that you tried to reach does not exist.", sender.ClassPermanent, 0},
		{552, "5.2.2", "The email account that you tried to reach is over quota.", sender.ClassPermanent, 0},
		{553, "5.1.3", "The recipient address is not a valid RFC 5321 address.", sender.ClassPermanent, 0},
		{554, "5.7.1", "Message rejected: spam", sender.ClassPermanent, 0},
	} {
		local := fmt.Sprintf("reply%d", i)
		srv.Reply(local, c.code, c.enhanced, c.text)
		_, err := s.Send(context.Background(), sendertest.EmailMessage(int64(100+i), local+"@example.net"))
		f := sendertest.WantClass(t, err, c.class)
		if want := strings.TrimSpace(fmt.Sprint(c.code, " ", c.enhanced)); f.Code != want { // "550 5.1.1", or "454"
			t.Errorf("%d %s: code %q, want %q", c.code, c.text, f.Code, want)
		}
		if c.class == sender.ClassRateLimited && time.Until(f.RetryAt) < c.wait-time.Second {
			t.Errorf("%d %s: retry at %v, want at least %v ahead", c.code, c.text, f.RetryAt, c.wait)
		}
	}
}

// A subject or header that looks like an RFC 2047 encoded word is encoded itself, so
// receivers read the text the producer wrote, not what the "word" decodes to; no
// X-Mailer or User-Agent names our library.
func TestSMTPHeadersReadBackAsWritten(t *testing.T) {
	t.Parallel()
	srv, s := startSender(t)
	subject := "=?utf-8?B?Zm9v?= and a long ASCII tail after it: " + strings.Repeat("x", 60)
	m := sender.Message{ID: 7, Channel: "email", Recipient: "ana@example.net", Attempt: 1,
		Payload: json.RawMessage(`{"subject":` + strconv.Quote(subject) + `,"text":"t","headers":{"X-Tag":"=?iso-8859-1?q?caf=E9?="}}`)}
	if _, err := s.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	parsed, err := mail.ReadMessage(strings.NewReader(srv.Messages()[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	dec := new(mime.WordDecoder)
	for h, want := range map[string]string{"Subject": subject, "X-Tag": "=?iso-8859-1?q?caf=E9?="} {
		got, err := dec.DecodeHeader(parsed.Header.Get(h))
		if err != nil || got != want {
			t.Errorf("%s reads back as %q (%v), want %q; raw %q", h, got, err, want, parsed.Header.Get(h))
		}
	}
	for _, h := range []string{"X-Mailer", "User-Agent"} {
		if v := parsed.Header.Get(h); v != "" {
			t.Errorf("%s: %q", h, v)
		}
	}
}

// cc goes to the envelope and the Cc header, bcc to the envelope only.
func TestSMTPCopies(t *testing.T) {
	t.Parallel()
	srv, s := startSender(t)
	m := sender.Message{ID: 8, Channel: "email", Recipient: "ana@example.net", Attempt: 1,
		Payload: json.RawMessage(`{"subject":"s","text":"t","cc":["bo@example.net"],"bcc":["audit@example.net"]}`)}
	if _, err := s.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	got := srv.Messages()[0]
	if strings.Join(got.To, ",") != "ana@example.net,bo@example.net,audit@example.net" {
		t.Fatalf("envelope recipients %v", got.To)
	}
	parsed, err := mail.ReadMessage(strings.NewReader(got.Data))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(parsed.Header.Get("Cc"), "bo@example.net") || parsed.Header.Get("Bcc") != "" || strings.Contains(got.Data, "audit@") {
		t.Fatalf("Cc %q, Bcc %q; the bcc address appears in the message: %v", parsed.Header.Get("Cc"), parsed.Header.Get("Bcc"), strings.Contains(got.Data, "audit@"))
	}
}

// startSender starts the in-process server (STARTTLS, AUTH) and a sender for it,
// closed when the test ends.
func startSender(t *testing.T) (*sendertest.SMTPServer, *smtpsender.Sender) {
	t.Helper()
	srv := sendertest.StartSMTP(t, true)
	s, err := smtpsender.New(sendertest.SMTPConfig(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return srv, s
}

// newSMTP is a sender for cfg, or the end of the test.
func newSMTP(t *testing.T, cfg smtpsender.Config) *smtpsender.Sender {
	t.Helper()
	s, err := smtpsender.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Fields only SendGrid's API can send are refused by the SMTP sender (permanent, code
// unsupported_field) rather than dropped; attachments go out as MIME parts.
func TestSMTPAttachmentsAndProviderOnlyFields(t *testing.T) {
	srv, s := startSender(t)
	_, err := s.Send(context.Background(), sender.Message{ID: 1, Recipient: "a@example.net",
		Payload: json.RawMessage(`{"template_id":"d-0123456789abcdef0123456789abcdef"}`)})
	if f := sendertest.WantClass(t, err, sender.ClassPermanent); f.Code != "unsupported_field" {
		t.Fatalf("template_id over SMTP: code %q", f.Code)
	}
	_, err = s.Send(context.Background(), sender.Message{ID: 2, Recipient: "a@example.net",
		Payload: json.RawMessage(`{"subject":"s","text":"see attached","attachments":[{"filename":"r.csv","content_type":"text/csv","content":"YSxiCjEsMgo="}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 || !strings.Contains(msgs[0].Data, "multipart/mixed") || !strings.Contains(msgs[0].Data, `filename="r.csv"`) ||
		!strings.Contains(msgs[0].Data, "YSxiCjEsMgo=") {
		t.Fatalf("%d messages:\n%s", len(msgs), msgs)
	}
}

// The pool bounds the connections: 40 sends at once over a pool of 3 open at most 3
// connections, each send waiting for one, and all 40 arrive.
func TestSMTPPoolBoundsConnections(t *testing.T) {
	srv := sendertest.StartSMTP(t, true)
	cfg := sendertest.SMTPConfig(t, srv)
	cfg.Pool = 3
	s := newSMTP(t, cfg)
	t.Cleanup(func() { s.Close() })
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Send(context.Background(), sendertest.EmailMessage(int64(i), "a@example.net"))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n, c := len(srv.Messages()), srv.ConnCount(); n != 40 || c > 3 {
		t.Fatalf("%d messages over %d connections, want 40 over at most 3", n, c)
	}
}

// withFrom is an e-mail whose payload sets from.
func withFrom(id int64, to, from string) sender.Message {
	m := sendertest.EmailMessage(id, to)
	m.Payload = json.RawMessage(strings.Replace(string(m.Payload), `{`, `{"from":"`+from+`",`, 1))
	return m
}

// go-mail keeps only the last refused recipient's reply code, so each refusal must be
// read per address. Attacks on that: a cc refused for good and another refused for now
// (its mailbox full) must not have the full one suppressed with the other's 5.1.1;
// a To refused for now (greylisting) with a nonexistent cc after it must not fail,
// nor suppress, the To with the cc's 5.1.1.
func TestSMTPRefusedCopiesEachWithItsReply(t *testing.T) {
	t.Parallel()
	srv, s := startSender(t)
	srv.Reply("nobody", 550, "5.1.1", "The email account that you tried to reach does not exist.")
	srv.Reply("gone", 553, "5.1.3", "bad address syntax, 550 lookalike")
	srv.Reply("full", 452, "4.2.2", "mailbox full")
	send := func(id int64, to string, cc, bcc []string) (sender.Result, error) {
		m := sendertest.EmailMessage(id, to)
		ccJSON, _ := json.Marshal(cc)
		bccJSON, _ := json.Marshal(bcc)
		m.Payload = json.RawMessage(fmt.Sprintf(`{"subject":"s","text":"t","cc":%s,"bcc":%s}`, ccJSON, bccJSON))
		return s.Send(context.Background(), m)
	}
	res, err := send(1, "ana@example.net", []string{"nobody@example.net", "gone@example.net"}, []string{"lu@example.net"})
	if err != nil || fmt.Sprint(res.RefusedCopies) != "[{nobody@example.net 550 5.1.1} {gone@example.net 553 5.1.3}]" {
		t.Fatalf("two copies refused for good: %+v %v", res, err)
	}
	if got := srv.Messages(); len(got) != 1 || strings.Join(got[0].To, " ") != "ana@example.net lu@example.net" {
		t.Fatalf("delivered %+v", got)
	}
	for _, c := range [][2][]string{
		{{"full@example.net", "kim@example.net"}, {"nobody@example.net"}}, // the refusal for good last
		{{"nobody@example.net"}, {"full@example.net"}},                    // the refusal for now last
	} {
		res, err = send(2, "ana@example.net", c[0], c[1])
		if f := sendertest.WantClass(t, err, sender.ClassTransient); f.Code != "452 4.2.2" || len(res.RefusedCopies) != 0 {
			t.Fatalf("%v: a copy refused for now: code %q, refused %v; want the message tried again, nothing recorded", c, f.Code, res.RefusedCopies)
		}
	}
	_, err = send(3, "full@example.net", []string{"nobody@example.net"}, nil)
	if f := sendertest.WantClass(t, err, sender.ClassTransient); f.Code != "452 4.2.2" {
		t.Fatalf("the To refused for now, a cc for good: code %q; want the To's own", f.Code)
	}
	if n := len(srv.Messages()); n != 1 {
		t.Fatalf("%d messages delivered, want only the first", n)
	}
}

// A server's refusal of the sender, as relays and providers send it (at MAIL FROM, or
// after the data as Microsoft 365 and Amazon SES do): a producer's own from fails that
// message only, so that it cannot pause the channel for every producer; the channel's
// default From refused is the runner's configuration, and the check names that From in
// MAIL FROM so that a probe does not resume the channel. A quota reply to MAIL FROM
// A relay that refuses a copy for good (550 5.1.1 for a cc) must not fail the To's
// message, nor hand SQL a code that suppresses the To: the message goes to the To and
// the other copies in the same transaction (its headers as written, as any mail
// client's would be), sent, with a warning naming the copy. A copy refused for now, or
// the To refused, fails the message, and nothing is delivered.
func TestSMTPRefusedCopyIsLeftOut(t *testing.T) {
	t.Parallel()
	srv, s := startSender(t)
	srv.Reply("nobody", 550, "5.1.1", "The email account that you tried to reach does not exist.")
	srv.Reply("later", 450, "4.2.0", "mailbox unavailable")
	withCopies := func(id int64, to, cc, bcc string) sender.Message {
		m := sendertest.EmailMessage(id, to)
		m.Payload = json.RawMessage(fmt.Sprintf(`{"subject":"s","text":"t","cc":[%q,"kim@example.net"],"bcc":[%q]}`, cc, bcc))
		return m
	}
	res, err := s.Send(context.Background(), withCopies(1, "ana@example.net", "nobody@example.net", "lu@example.net"))
	if err != nil || !strings.Contains(res.Warning, "nobody@example.net") ||
		fmt.Sprint(res.RefusedCopies) != "[{nobody@example.net 550 5.1.1}]" {
		t.Fatalf("a refused cc: %+v %v", res, err)
	}
	got := srv.Messages()
	if len(got) != 1 || strings.Join(got[0].To, " ") != "ana@example.net kim@example.net lu@example.net" {
		t.Fatalf("delivered %+v", got)
	}
	_, err = s.Send(context.Background(), withCopies(2, "ana@example.net", "later@example.net", "lu@example.net"))
	sendertest.WantClass(t, err, sender.ClassTransient)
	_, err = s.Send(context.Background(), withCopies(3, "nobody@example.net", "kim@example.net", "lu@example.net"))
	if f := sendertest.WantClass(t, err, sender.ClassPermanent); f.Code != "550 5.1.1" {
		t.Fatalf("the To refused: code %q", f.Code)
	}
	if n := len(srv.Messages()); n != 1 {
		t.Fatalf("%d messages delivered, want the first only (a refused To or a copy refused for now sends nothing)", n)
	}
}

// stays a quota, and SES's sandbox refusal of a recipient stays the recipient's.
func TestSMTPRefusedSender(t *testing.T) {
	t.Parallel()
	srv, s := startSender(t)
	ctx := context.Background()
	srv.RefuseSender("ceo@example.com", false, 550, "5.7.1", "Sender address rejected: not owned by user relay")
	srv.RefuseSender("boss@example.com", true, 550, "5.7.60", "SMTP; Client does not have permissions to send as this sender")
	srv.RefuseSender("ses@example.com", true, 554, "", "Message rejected: Email address is not verified. The following identities failed the check in region EU-WEST-1: ses@example.com")
	srv.RefuseSender("quota@example.com", false, 550, "5.4.5", "Daily user sending limit exceeded.")
	for i, c := range []struct {
		from, code string
		class      sender.Class
	}{
		{"ceo@example.com", "550 5.7.1", sender.ClassPermanent},
		{"Boss <boss@example.com>", "550 5.7.60", sender.ClassPermanent},
		{"ses@example.com", "554", sender.ClassPermanent},
		{"quota@example.com", "550 5.4.5", sender.ClassQuota},
	} {
		_, err := s.Send(ctx, withFrom(int64(200+i), "ana@example.net", c.from))
		if f := sendertest.WantClass(t, err, c.class); f.Code != c.code {
			t.Errorf("from %s: code %q, want %q", c.from, f.Code, c.code)
		}
	}
	srv.Reply("sandboxed", 554, "", "Message rejected: Email address is not verified. The following identities failed the check in region EU-WEST-1: sandboxed@example.net")
	_, err := s.Send(ctx, sendertest.EmailMessage(210, "sandboxed@example.net"))
	sendertest.WantClass(t, err, sender.ClassPermanent)
	if err := s.Check(ctx); err != nil {
		t.Fatalf("check with an accepted From: %v", err)
	}
	if mails := srv.Mails(); mails[len(mails)-1] != "noreply@example.com" {
		t.Fatalf("the check named %q in MAIL FROM, want the channel's From", mails[len(mails)-1])
	}

	for _, c := range []struct {
		from, code string
		atData     bool
		check      bool // the check sees the refusal too
	}{{"relay@example.com", "553 5.7.1", false, true}, {"shared@example.com", "550 5.7.60", true, false}} {
		cfg := sendertest.SMTPConfig(t, srv)
		cfg.Defaults.From = "Shop <" + c.from + ">"
		srv.RefuseSender(c.from, c.atData, 553, "5.7.1", "Sender address rejected: not owned by user relay")
		if c.atData {
			srv.RefuseSender(c.from, c.atData, 550, "5.7.60", "SMTP; Client does not have permissions to send as this sender")
		}
		shop := newSMTP(t, cfg)
		for _, m := range []sender.Message{sendertest.EmailMessage(220, "ana@example.net"), withFrom(221, "ana@example.net", strings.Replace(c.from, "example.com", "EXAMPLE.com", 1))} {
			_, err := shop.Send(ctx, m)
			if f := sendertest.WantClass(t, err, sender.ClassConfiguration); f.Code != c.code {
				t.Errorf("the channel's From %s refused (message %d): code %q, want %q", c.from, m.ID, f.Code, c.code)
			}
		}
		err := shop.Check(ctx)
		if !c.check {
			if err != nil {
				t.Errorf("check of %s: %v", c.from, err)
			}
			continue
		}
		if f := sendertest.WantClass(t, err, sender.ClassConfiguration); f.Code != c.code {
			t.Errorf("check of %s: code %q, want %q", c.from, f.Code, c.code)
		}
	}
	if n := len(srv.Messages()); n != 0 {
		t.Fatalf("%d messages delivered from refused senders or by a check", n)
	}
}

// A channel's return path is the envelope sender (MAIL FROM: where bounces go), the
// From header stays the message's, the Message-ID is signed with the channel's key; the check names the return path in MAIL FROM, and
// a refusal of it there is the channel's configuration even for a producer's from.
func TestSMTPReturnPath(t *testing.T) {
	t.Parallel()
	srv := sendertest.StartSMTP(t, true)
	cfg := sendertest.SMTPConfig(t, srv)
	cfg.Defaults.ReturnPath = "bounces@bounce.example.com"
	key := []byte("the Message-ID key, 32 bytes long")
	cfg.Defaults.MessageIDKey = idtag.StaticKey(key)
	s := newSMTP(t, cfg)
	ctx := context.Background()
	if _, err := s.Send(ctx, withFrom(1, "ana@example.net", "Billing <billing@example.com>")); err != nil {
		t.Fatal(err)
	}
	got := srv.Messages()
	if len(got) != 1 || got[0].From != "bounces@bounce.example.com" || !strings.Contains(got[0].Data, "From: \"Billing\" <billing@example.com>") {
		t.Fatalf("envelope %q, message %.300q", got[0].From, got[0].Data)
	}
	// The Message-ID a bounce will quote is signed (herald mail-report checks it).
	if !strings.Contains(got[0].Data, "Message-ID: "+email.MessageID(1, key, "example.com")) {
		t.Fatalf("the Message-ID is not the signed one: %.500q", got[0].Data)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if mails := srv.Mails(); mails[len(mails)-1] != "bounces@bounce.example.com" {
		t.Fatalf("the check named %q", mails[len(mails)-1])
	}
	srv.RefuseSender("bounces@bounce.example.com", false, 553, "5.7.1", "Sender address rejected: not owned by user relay")
	_, err := s.Send(ctx, withFrom(2, "ana@example.net", "Billing <billing@example.com>"))
	sendertest.WantClass(t, err, sender.ClassConfiguration)
	cfg.Defaults.ReturnPath = "Bounces <not an address"
	if _, err := smtpsender.New(cfg); err == nil {
		t.Fatal("a return path that is not an address was accepted")
	}
}

// scriptedRelay is a plain SMTP relay on loopback that accepts every message and
// then, on its connection's nth message (0: never), drops the session as servers that
// bound the messages per connection do: after "." it answers 250 (the message is
// taken) and then answers the next command with 421 and hangs up ("421"), answers the
// next MAIL with 421 ("421 at MAIL"), answers the reset and then closes the idle
// connection ("idle"), or hangs up at once (""). It counts the messages it took, the
// commands of each verb, and the transactions whose commands after MAIL had arrived
// with it (pipelined). A recipient fwd@… is answered 251 (RFC 5321: accepted, to be
// forwarded).
type scriptedRelay struct {
	relayScript
	addr      string
	mu        sync.Mutex
	accepted  []string // the Message-ID of each message taken
	verbs     map[string]int
	envelope  []string // every MAIL and RCPT line as received
	greeting  string   // the last EHLO or HELO line
	pipelined int
}

// relayScript is how a scriptedRelay behaves: the ending above, and the extensions it
// offers (DSN, PIPELINING).
type relayScript struct {
	nth        int
	hangUp     string
	dsn        bool
	pipelining bool
}

func startScriptedRelay(t *testing.T, script relayScript) *scriptedRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &scriptedRelay{relayScript: script, addr: ln.Addr().String(), verbs: map[string]int{}}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go r.serve(c)
		}
	}()
	return r
}

func (r *scriptedRelay) serve(c net.Conn) {
	defer c.Close()
	tc := textproto.NewConn(c)
	_ = tc.PrintfLine("220 relay.example ESMTP")
	taken := 0
	for {
		line, err := tc.ReadLine()
		if err != nil {
			return
		}
		verb := strings.ToUpper(strings.SplitN(line, " ", 2)[0])
		r.mu.Lock()
		r.verbs[verb]++
		if verb == "MAIL" || verb == "RCPT" {
			r.envelope = append(r.envelope, line)
		}
		if verb == "EHLO" || verb == "HELO" {
			r.greeting = line
		}
		if verb == "MAIL" && tc.R.Buffered() > 0 {
			r.pipelined++
		}
		r.mu.Unlock()
		switch verb {
		case "EHLO", "HELO":
			ext := "250-relay.example\r\n"
			if r.dsn {
				ext += "250-DSN\r\n"
			}
			if r.pipelining {
				ext += "250-PIPELINING\r\n"
			}
			_ = tc.PrintfLine("%s250 8BITMIME", ext)
		case "DATA":
			_ = tc.PrintfLine("354 go ahead")
			body, err := tc.ReadDotBytes()
			if err != nil {
				return
			}
			id := ""
			if m, err := mail.ReadMessage(bytes.NewReader(body)); err == nil {
				id = m.Header.Get("Message-ID")
			}
			r.mu.Lock()
			r.accepted = append(r.accepted, id)
			r.mu.Unlock()
			if r.hangUp == "before the reply" && taken+1 == r.nth {
				return // the message whole, the reply lost
			}
			_ = tc.PrintfLine("250 2.0.0 queued as %d", len(r.accepted))
			if taken++; taken == r.nth {
				switch r.hangUp {
				case "421":
					if _, err := tc.ReadLine(); err == nil {
						_ = tc.PrintfLine("421 4.7.0 too many messages on this connection, closing")
					}
				case "idle": // the reset answered, then the idle connection closed (a server's timeout)
					if _, err := tc.ReadLine(); err == nil {
						_ = tc.PrintfLine("250 2.0.0 ok")
					}
				case "421 at MAIL": // Exim's smtp_accept_max_per_connection
					for {
						line, err := tc.ReadLine()
						if err != nil {
							return
						}
						if strings.HasPrefix(strings.ToUpper(line), "MAIL") {
							_ = tc.PrintfLine("421 4.7.0 too many messages on this connection, closing")
							return
						}
						_ = tc.PrintfLine("250 2.0.0 ok")
					}
				}
				return
			}
		case "QUIT":
			_ = tc.PrintfLine("221 bye")
			return
		case "RCPT":
			if r.hangUp == "at RCPT" {
				return
			}
			if strings.Contains(line, "<fwd@") {
				_ = tc.PrintfLine("251 2.1.5 user not local; will forward")
			} else {
				_ = tc.PrintfLine("250 2.1.5 ok")
			}
		default: // MAIL, RSET, NOOP
			_ = tc.PrintfLine("250 2.0.0 ok")
		}
	}
}

// sender is an SMTP sender of cfg to the relay: plain, one connection, From
// noreply@example.com unless cfg says otherwise.
func (r *scriptedRelay) sender(t *testing.T, cfg smtpsender.Config) *smtpsender.Sender {
	t.Helper()
	host, port, _ := net.SplitHostPort(r.addr)
	cfg.Host, cfg.TLS, cfg.Timeout, cfg.Pool = host, "none", 5*time.Second, 1
	cfg.Port, _ = strconv.Atoi(port)
	if cfg.Defaults.From == "" {
		cfg.Defaults.From = "noreply@example.com"
	}
	if cfg.Defaults.MessageIDKey == nil {
		cfg.Defaults.MessageIDKey = idtag.StaticKey(sendertest.MessageIDKey)
	}
	s := newSMTP(t, cfg)
	t.Cleanup(func() { s.Close() })
	return s
}

func (r *scriptedRelay) taken() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.accepted)
}

// A message the server took ("250" after the data) is delivered, whatever happens to
// the session afterwards: a server that hangs up after its last message (at once, or
// with 421 to the next command) gets each message once — never again on a fresh
// connection, never reported failed for a retry that would send it twice. A 421 to
// the next message's MAIL on a reused connection, or a pooled connection the server
// closed while idle, sends it on a fresh one: no failure.
func TestSMTPTakenMessageIsNeverSentTwice(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		nth    int
		hangUp string
	}{{"421 after the first", 1, "421"}, {"hang-up after the second", 2, ""}, {"421 after the second", 2, "421"},
		{"421 to the next MAIL", 2, "421 at MAIL"}, {"idle connection closed after the second", 2, "idle"}} {
		for _, pipelining := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, PIPELINING %v", c.name, pipelining), func(t *testing.T) {
				r := startScriptedRelay(t, relayScript{nth: c.nth, hangUp: c.hangUp, pipelining: pipelining})
				s := r.sender(t, smtpsender.Config{})
				for i := range 5 {
					if _, err := s.Send(context.Background(), sendertest.EmailMessage(int64(i+1), "ana@example.net")); err != nil {
						t.Fatalf("message %d: %v (taken: %v)", i+1, err, r.taken())
					}
				}
				if got := r.taken(); len(got) != 5 {
					t.Fatalf("the relay took %d messages for 5 sends: %v", len(got), got)
				}
			})
		}
	}
}

// A message on a pooled connection costs MAIL, a RCPT per recipient, DATA and the
// data: no NOOP, no RSET. A relay that offers PIPELINING gets MAIL, RCPT and DATA in
// one write (one round trip of two, each a relay's full round trip away); one that
// does not, one at a time.
func TestSMTPRoundTripsPerMessage(t *testing.T) {
	t.Parallel()
	for _, pipelining := range []bool{true, false} {
		r := startScriptedRelay(t, relayScript{pipelining: pipelining})
		s := r.sender(t, smtpsender.Config{})
		for i := range 10 {
			if _, err := s.Send(context.Background(), sendertest.EmailMessage(int64(i+1), "ana@example.net")); err != nil {
				t.Fatal(err)
			}
		}
		r.mu.Lock()
		got, pipelined := fmt.Sprint(r.verbs), r.pipelined
		r.mu.Unlock()
		want := 0
		if pipelining {
			want = 10
		}
		if got != "map[DATA:10 EHLO:1 MAIL:10 RCPT:10]" || pipelined != want {
			t.Fatalf("PIPELINING offered %v: commands for 10 messages on one connection: %s, %d pipelined (want %d)", pipelining, got, pipelined, want)
		}
	}
}

// HERALD_SMTP_DSN asks a relay that offers DSN for the reports it names on every
// recipient, with the headers returned (the signed Message-ID herald mail-report
// reads) and that Message-ID as the envelope id (for a report that returns no
// headers); a relay that does not offer DSN gets no parameters it would refuse; a
// list that is not one is refused at start.
func TestSMTPRequestsDeliveryReports(t *testing.T) {
	t.Parallel()
	for _, offered := range []bool{true, false} {
		r := startScriptedRelay(t, relayScript{dsn: offered})
		s := r.sender(t, smtpsender.Config{DSN: "success, failure,delay",
			Defaults: email.Defaults{From: "noreply@example.com", ReturnPath: "bounces@example.com"}})
		m := sendertest.EmailMessage(1, "ana@example.net")
		m.Payload = []byte(`{"subject":"s","text":"t","cc":["bo@example.net"]}`)
		if _, err := s.Send(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		r.mu.Lock()
		got := strings.Join(r.envelope, " | ")
		r.mu.Unlock()
		want := "MAIL FROM:<bounces@example.com> BODY=8BITMIME | RCPT TO:<ana@example.net> | RCPT TO:<bo@example.net>"
		if offered {
			want = "MAIL FROM:<bounces@example.com> BODY=8BITMIME RET=HDRS ENVID=" + strings.Trim(email.MessageID(1, sendertest.MessageIDKey, "example.com"), "<>") + " | RCPT TO:<ana@example.net> NOTIFY=SUCCESS,FAILURE,DELAY | " +
				"RCPT TO:<bo@example.net> NOTIFY=SUCCESS,FAILURE,DELAY"
		}
		if got != want {
			t.Fatalf("DSN offered %v: the envelope was\n%s\nwant\n%s", offered, got, want)
		}
	}
	for _, bad := range []string{"always", "success,success", "success,"} {
		if _, err := smtpsender.New(smtpsender.Config{Host: "127.0.0.1", DSN: bad}); err == nil || !strings.Contains(err.Error(), "DSN") {
			t.Fatalf("DSN %q: %v", bad, err)
		}
	}
}

// 251 (user not local, will forward) accepts a recipient as 250 does.
func TestSMTPForwardingReplyAccepts(t *testing.T) {
	t.Parallel()
	for _, pipelining := range []bool{true, false} {
		r := startScriptedRelay(t, relayScript{pipelining: pipelining})
		s := r.sender(t, smtpsender.Config{})
		m := sendertest.EmailMessage(1, "fwd@example.net")
		m.Payload = []byte(`{"subject":"s","text":"t","cc":["fwd@example.org"]}`)
		if res, err := s.Send(context.Background(), m); err != nil || len(res.RefusedCopies) != 0 || len(r.taken()) != 1 {
			t.Fatalf("PIPELINING %v: %+v %v, %d taken", pipelining, res, err, len(r.taken()))
		}
	}
}

// An attack by a producer on the relay (SMTP smuggling, CVE-2023-51764 and kin): a
// body holding end-of-data sequences followed by SMTP commands, sent to a relay that
// ends the data at any of them as lenient servers did. Nothing is smuggled: the relay
// sees one transaction, to the recipient herald was given, and the data herald writes
// has no bare CR or LF and no line of a lone dot before its end (RFC 5321 §2.3.8,
// §4.5.2: the body is quoted-printable and dot-stuffed).
func TestABodyCannotSmuggleSMTPCommands(t *testing.T) {
	t.Parallel()
	relay, s := startLenientRelay(t)
	const smuggled = "MAIL FROM:<ceo@example.com>\r\nRCPT TO:<victim@example.org>\r\nDATA\r\nSubject: wire the money\r\n\r\nnow"
	for i, end := range []string{"\r\n.\r\n", "\n.\n", "\n.\r\n", "\r.\r\n", "\r\n.\n", "\r.\r", "\r\n.\r"} {
		text := "Your order\r\nhas shipped." + end + smuggled + end + "tail"
		payload, _ := json.Marshal(map[string]string{"subject": "Receipt", "text": text, "html": "<p>" + text + "</p>"})
		m := sender.Message{ID: int64(i + 1), Channel: "email", Recipient: "ana@example.net", Attempt: 1, Payload: payload}
		if _, err := s.Send(context.Background(), m); err != nil {
			t.Fatalf("end %q: %v", end, err)
		}
	}
	relay.mu.Lock()
	defer relay.mu.Unlock()
	if want := strings.Repeat("MAIL FROM:<noreply@example.com> RCPT TO:<ana@example.net> ", 7); relay.commands != want {
		t.Fatalf("the relay saw the commands\n%s\nwant\n%s", relay.commands, want)
	}
	for _, data := range relay.data {
		body := data[:len(data)-len("\r\n.\r\n")]
		if i := strings.IndexAny(strings.ReplaceAll(body, "\r\n", ""), "\r\n"); i >= 0 {
			t.Fatalf("a bare CR or LF in the data: %q", body)
		}
		if slices.Contains(strings.Split(body, "\r\n"), ".") {
			t.Fatalf("a line of a lone dot before the end of the data: %q", body)
		}
	}
}

// lenientRelay is an SMTP server as the relays smuggling exploited were: after DATA
// it ends the data at the first of CRLF.CRLF, LF.LF, LF.CRLF, CR.CRLF or CRLF.LF, and
// reads what follows as commands. It records MAIL and RCPT in order, and the data of
// each transaction as sent, up to its end.
type lenientRelay struct {
	addr     string
	mu       sync.Mutex
	commands string
	data     []string
	conns    []net.Conn
	wg       sync.WaitGroup
}

// startLenientRelay listens on loopback until the test ends, then cuts its
// connections (the sender keeps one idle) and waits for them; s sends to it without
// TLS, from noreply@example.com.
func startLenientRelay(t *testing.T) (*lenientRelay, *smtpsender.Sender) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &lenientRelay{addr: ln.Addr().String()}
	t.Cleanup(func() {
		ln.Close()
		r.mu.Lock()
		for _, c := range r.conns {
			c.Close()
		}
		r.mu.Unlock()
		r.wg.Wait()
	})
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			r.conns = append(r.conns, c)
			r.mu.Unlock()
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				r.serve(c)
			}()
		}
	}()
	host, port, _ := net.SplitHostPort(r.addr)
	p, _ := strconv.Atoi(port)
	s, err := smtpsender.New(smtpsender.Config{Host: host, Port: p, TLS: "none", Timeout: 5 * time.Second,
		Defaults: email.Defaults{MessageIDKey: idtag.StaticKey(sendertest.MessageIDKey), From: "noreply@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	return r, s
}

func (r *lenientRelay) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "220 lenient ESMTP\r\n")
	var buf []byte
	chunk := make([]byte, 4096)
	inData := false
	for {
		if inData {
			ends := []string{"\r\n.\r\n", "\n.\n", "\n.\r\n", "\r.\r\n", "\r\n.\n"}
			at, n := -1, 0
			for _, e := range ends {
				if i := bytes.Index(buf, []byte(e)); i >= 0 && (at < 0 || i < at) {
					at, n = i, len(e)
				}
			}
			if at >= 0 {
				r.mu.Lock()
				r.data = append(r.data, string(buf[:at+n]))
				r.mu.Unlock()
				buf, inData = buf[at+n:], false
				io.WriteString(c, "250 2.0.0 queued\r\n")
				continue
			}
		} else if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			line := strings.TrimRight(string(buf[:i]), "\r")
			buf = buf[i+1:]
			verb := strings.ToUpper(strings.SplitN(line, " ", 2)[0])
			switch {
			case verb == "EHLO":
				io.WriteString(c, "250-lenient\r\n250-PIPELINING\r\n250 8BITMIME\r\n")
			case verb == "MAIL" || verb == "RCPT":
				r.mu.Lock()
				r.commands += strings.Join(strings.Fields(line)[:2], " ") + " " // without parameters
				r.mu.Unlock()
				io.WriteString(c, "250 2.1.0 ok\r\n")
			case verb == "DATA":
				inData = true
				io.WriteString(c, "354 go ahead\r\n")
			case verb == "QUIT":
				io.WriteString(c, "221 bye\r\n")
				return
			default:
				io.WriteString(c, "250 ok\r\n")
			}
			continue
		}
		n, err := c.Read(chunk)
		if err != nil {
			return
		}
		buf = append(buf, chunk[:n]...)
	}
}

// No line of a message passes RFC 5322's 998 characters (relays refuse such mail or
// cut the line): bodies are quoted-printable; a subject with a word too long to fold
// at a space, or text that looks like an encoded word, is written as encoded words
// one a line, and reads back as given; a custom header is folded the same when it is
// encoded.
func TestLongHeadersStayWithinTheLineLimit(t *testing.T) {
	t.Parallel()
	relay, s := startLenientRelay(t)
	subjects := []string{
		strings.Repeat("x", 5000),
		"Reset your password: https://example.com/reset?token=" + strings.Repeat("a1", 600),
		"=?" + strings.Repeat("y", 3000),
		strings.TrimSpace(strings.Repeat("word ", 1000)),
		strings.Repeat("é", 3000),
	}
	header := "=?" + strings.Repeat("z", 900)
	for i, subject := range subjects {
		payload, _ := json.Marshal(map[string]any{"subject": subject, "text": strings.Repeat("t", 5000), "html": "<p>" + strings.Repeat("h", 5000) + "</p>",
			"headers": map[string]string{"X-Note": header, "X-A": strings.Repeat("z", 993)}}) // the longest herald takes
		if _, err := s.Send(context.Background(), sender.Message{ID: int64(i + 1), Recipient: "ana@example.net", Attempt: 1, Payload: payload}); err != nil {
			t.Fatalf("subject %d: %v", i, err)
		}
	}
	relay.mu.Lock()
	defer relay.mu.Unlock()
	for i, data := range relay.data {
		for _, line := range strings.Split(data, "\r\n") {
			if len(line) > 998 {
				t.Fatalf("subject %d: a line of %d characters: %.80s…", i, len(line), line)
			}
		}
		m, err := mail.ReadMessage(strings.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		dec := new(mime.WordDecoder)
		got, err := dec.DecodeHeader(m.Header.Get("Subject"))
		if err != nil || got != subjects[i] {
			t.Fatalf("subject %d reads back as %.80q… (%v)", i, got, err)
		}
		if got, err := dec.DecodeHeader(m.Header.Get("X-Note")); err != nil || got != header {
			t.Fatalf("X-Note reads back as %.80q… (%v)", got, err)
		}
	}
}

// The name in EHLO is the operator's when set (a relay may refuse a container's pod
// name, which is not a domain): a domain or an address literal; anything else, a
// line break smuggling a command above all, is refused at start.
func TestSMTPGreetsWithTheConfiguredName(t *testing.T) {
	t.Parallel()
	r := startScriptedRelay(t, relayScript{pipelining: true})
	s := r.sender(t, smtpsender.Config{HELO: "mailer-1.acme.example"})
	if _, err := s.Send(context.Background(), sendertest.EmailMessage(1, "ana@example.net")); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	got := r.greeting
	r.mu.Unlock()
	if got != "EHLO mailer-1.acme.example" {
		t.Fatalf("greeting %q", got)
	}
	for _, name := range []string{"[192.0.2.1]", "[IPv6:2001:db8::1]", "localhost"} {
		if _, err := smtpsender.New(smtpsender.Config{Host: "127.0.0.1", HELO: name}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, name := range []string{"mailer\r\nMAIL FROM:<x@evil.example>", "has space", "-dash.example", "a..b", "under_score.example"} {
		if _, err := smtpsender.New(smtpsender.Config{Host: "127.0.0.1", HELO: name}); err == nil || !strings.Contains(err.Error(), "HELO") {
			t.Errorf("%q: %v", name, err)
		}
	}
}

// A send that fails after the message's final dot, with no reply, is in doubt: the
// relay may have taken it, and the retry may deliver it twice (code in_doubt,
// counted by the runner). One cut off before the data is not.
func TestSMTPNoReplyToTheDataIsInDoubt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		hangUp string
		doubt  bool
	}{{"before the reply", true}, {"at RCPT", false}} {
		r := startScriptedRelay(t, relayScript{nth: 1, hangUp: c.hangUp})
		_, err := r.sender(t, smtpsender.Config{}).Send(context.Background(), sendertest.EmailMessage(1, "ana@example.net"))
		f := sendertest.WantClass(t, err, sender.ClassTransient)
		if sender.InDoubt(err) != c.doubt || (f.Code == "in_doubt") != c.doubt {
			t.Errorf("hang-up %s: in doubt %v, code %q, want %v", c.hangUp, sender.InDoubt(err), f.Code, c.doubt)
		}
	}
}
