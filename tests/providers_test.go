package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald/herald/runner/sender/sendertest"
	"github.com/herald/herald/runner/sender/webhook"
	"github.com/herald/herald/tests/testdb"
)

// End to end through `herald run`: an e-mail enqueued from SQL reaches the in-process
// SMTP server, an SMS the Twilio fake, and a permanent failure ends in
// herald.dead_letters with its error; provider ids are stored.
func TestProvidersEndToEnd(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	smtpSrv := sendertest.StartSMTP(t, true)
	tw, rec := sendertest.FakeTwilio(t)
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
	if mailProv != heraldMessageID(t, pool, mailID) || !strings.HasPrefix(smsProv, "SM") { // signed with the database's key
		t.Fatalf("provider ids %q %q", mailProv, smsProv)
	}
	msgs := smtpSrv.Messages()
	if len(msgs) != 1 || msgs[0].To[0] != "ana@example.net" || !strings.Contains(msgs[0].Data, "Hello Ana") {
		t.Fatalf("SMTP server got %+v", msgs)
	}
	if len(rec.Sent()) != 1 || rec.Sent()[0] != "+14155550100" {
		t.Fatalf("Twilio got %v", rec.Sent())
	}
	var class, lastErr string
	if err := pool.QueryRow(context.Background(), `SELECT last_error_class, last_error FROM herald.dead_letters WHERE id = $1`, deadID).
		Scan(&class, &lastErr); err != nil || class != "permanent" || !strings.Contains(lastErr, "550") {
		t.Fatalf("dead letter: %s %q %v", class, lastErr, err)
	}
	if strings.Contains(logs.String(), smtpSrv.Password) || strings.Contains(logs.String(), "tw-token") {
		t.Fatal("a secret appears in the runner's logs")
	}
	// The 550 5.1.1 put the address on the suppression list: the next message to it
	// ends suppressed and the server is not asked again.
	if sup := scalar[string](t, pool, `SELECT reason || ':' || source FROM herald.suppressions WHERE recipient = 'unknown@example.net'`); sup != "bounced:send" {
		t.Fatalf("suppression of the unknown mailbox: %q", sup)
	}
	againID := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'unknown@example.net', '{"subject":"Hi","text":"Hello again"}')`)
	eventually(t, 30*time.Second, "the next message to the unknown mailbox settled", func() bool {
		return scalar[string](t, pool, `SELECT status FROM herald.messages WHERE id = $1`, againID) == "suppressed"
	})
	asked := 0
	for _, r := range smtpSrv.Rcpts() {
		if r == "unknown@example.net" {
			asked++
		}
	}
	if asked != 1 {
		t.Fatalf("the SMTP server was asked for unknown@example.net %d times, want once", asked)
	}
	waitExit(t, cmd, logs, 15*time.Second)
	_ = errors.New
}

// End to end through `herald run` with HERALD_HOOKS_WEBHOOK_PER_ENDPOINT=true: each
// receiver URL of the channel verifies its request with its own secret (what
// `herald webhook-secret` prints), and only its own.
func TestPerEndpointWebhookSecretsEndToEnd(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('hooks', 'webhook')`)
	channelSecret := "whsec_" + strings.Repeat("SG9va3Nz", 4)
	var mu sync.Mutex
	verified := map[string]string{} // path → which receiver's secret verified it
	var base string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		for _, path := range []string{"/a", "/b"} {
			secret, _ := webhook.EndpointSecret(channelSecret, base+path)
			if webhook.Verify([]string{secret}, r.Header, body, 5*time.Minute, time.Now()) == nil {
				mu.Lock()
				verified[r.URL.Path] += path
				mu.Unlock()
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	base = strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	cmd, logs := runnerProcess(t, url, "HERALD_SENDER_HOOKS=webhook", "HERALD_HOOKS_WEBHOOK_SECRETS="+channelSecret,
		"HERALD_HOOKS_WEBHOOK_PER_ENDPOINT=true", "HERALD_WEBHOOK_ALLOW=127.0.0.1/32,::1/128", "HERALD_POLL_INTERVAL=100ms")
	for _, path := range []string{"/a", "/b"} {
		mustExec(t, pool, `SELECT herald.enqueue('hooks', $1, '{"event":"paid"}')`, base+path)
	}
	eventually(t, 30*time.Second, "both webhooks sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 2 })
	mu.Lock()
	got := fmt.Sprint(verified)
	mu.Unlock()
	if got != "map[/a:/a /b:/b]" {
		t.Fatalf("which secret verified each request: %s\n%s", got, logs.String())
	}
	waitExit(t, cmd, logs, 15*time.Second)
}

// Two herald installations (two regions, each with its own database) deliver to one
// customer's endpoint with the same channel secret, and the receiver keeps the first
// request of each webhook-id, as Standard Webhooks tells receivers to: both
// installations' message 1 must be kept. With webhook-ids of the bare message id
// (msg_1) the second was dropped as a repeat of the first, though it was another
// event. A repeat of one installation's message still carries its id.
func TestTwoInstallationsShareAReceiver(t *testing.T) {
	t.Parallel()
	secret := "whsec_" + strings.Repeat("UmVnaW9u", 4)
	var mu sync.Mutex
	kept := map[string]string{} // webhook-id -> the first body
	arrivals := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if webhook.Verify([]string{secret}, r.Header, body, 5*time.Minute, time.Now()) != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		arrivals++
		if id := r.Header.Get(webhook.HeaderID); kept[id] == "" {
			kept[id] = string(body)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	endpoint := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/events"
	var ids []string
	for _, region := range []string{"eu", "us"} {
		url := testdb.EmptyDatabase(t)
		migrateURL(t, url, false)
		pool := testdb.Pool(t, url)
		mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('hooks', 'webhook')`)
		id := scalar[int64](t, pool, `SELECT herald.enqueue('hooks', $1, jsonb_build_object('region', $2::text))`, endpoint, region)
		runnerProcess(t, url, "HERALD_SENDER_HOOKS=webhook", "HERALD_HOOKS_WEBHOOK_SECRETS="+secret,
			"HERALD_WEBHOOK_ALLOW=127.0.0.1/32,::1/128", "HERALD_POLL_INTERVAL=100ms")
		eventually(t, 30*time.Second, region+"'s webhook sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 1 })
		ids = append(ids, webhook.ID(id, messageIDKey(t, pool)))
	}
	mu.Lock()
	defer mu.Unlock()
	if arrivals != 2 || len(kept) != 2 || !strings.Contains(kept[ids[0]], `"region":"eu"`) || !strings.Contains(kept[ids[1]], `"region":"us"`) {
		t.Fatalf("%d arrivals, the receiver kept %d: %v (want the ids %v)", arrivals, len(kept), kept, ids)
	}
}

// Slack's incoming webhooks take the message itself as the body ({"text": …} or
// {"blocks": …}) and refuse anything else with 400: herald's envelope cannot post to
// them. A channel with HERALD_<CHANNEL>_WEBHOOK_BODY=payload posts the payload alone
// and is delivered; the same text on an envelope channel dies with 400; a payload
// Slack refuses (no text) dies with 400, and an archived channel's 410 suppresses
// its URL.
func TestSlackIncomingWebhooks(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('slack', 'webhook'), ('hooks', 'webhook')`)
	slack, posts := sendertest.FakeSlack(t)
	base := strings.Replace(slack.URL, "127.0.0.1", "localhost", 1) + "/services/T0ACME/"
	secret := "whsec_" + strings.Repeat("U2xhY2tT", 4)
	cmd, logs := runnerProcess(t, url, "HERALD_SENDER_SLACK=webhook", "HERALD_SLACK_WEBHOOK_SECRETS="+secret, "HERALD_SLACK_WEBHOOK_BODY=payload",
		"HERALD_SENDER_HOOKS=webhook", "HERALD_HOOKS_WEBHOOK_SECRETS="+secret, "HERALD_WEBHOOK_ALLOW=127.0.0.1/32,::1/128", "HERALD_POLL_INTERVAL=100ms")
	enqueue := func(channel, token, payload string) int64 {
		return scalar[int64](t, pool, `SELECT herald.enqueue($1, $2, $3::jsonb)`, channel, base+token, payload)
	}
	text := enqueue("slack", "B0/good", `{"text":"Deploy finished"}`)
	blocks := enqueue("slack", "B0/good", `{"blocks":[{"type":"section","text":{"type":"mrkdwn","text":"*Deploy* finished"}}]}`)
	enveloped := enqueue("hooks", "B1/good", `{"text":"Deploy finished"}`)
	noText := enqueue("slack", "B0/good", `{"attachments":[]}`)
	archived := enqueue("slack", "B2/archived", `{"text":"Deploy finished"}`)
	eventually(t, 30*time.Second, "all settled", func() bool { return countWhere(t, pool, `status IN ('sent', 'dead')`) == 5 })
	for id, want := range map[int64]string{text: "sent -", blocks: "sent -", enveloped: "dead 400", noText: "dead 400", archived: "dead 410"} {
		if got := scalar[string](t, pool, `SELECT status || ' ' || coalesce(last_error_code, '-') FROM herald.messages WHERE id = $1`, id); got != want {
			t.Errorf("message %d: %s, want %s\n%s", id, got, want, logs.String())
		}
	}
	got := posts.Of("/services/T0ACME/B0/good")
	if len(got) != 2 || !jsonEqual(got[0], `{"text":"Deploy finished"}`) && !jsonEqual(got[1], `{"text":"Deploy finished"}`) {
		t.Fatalf("Slack got %q", got)
	}
	if !scalar[bool](t, pool, `SELECT herald.is_suppressed('slack', $1)`, base+"B2/archived") {
		t.Fatal("the archived channel's webhook URL is not suppressed")
	}
	waitExit(t, cmd, logs, 15*time.Second)
}

// WhatsApp through Twilio, as a channel of kind sms with its own Twilio settings
// (HERALD_WHATSAPP_TWILIO_*, WHATSAPP=true): the recipient is the E.164 number herald
// validates, limits and suppresses, and Twilio gets whatsapp: addresses; a message
// outside WhatsApp's 24-hour window is an approved Content template, which SQL checks
// at enqueue (content_sid, content_variables) and Twilio gets as ContentSid and
// ContentVariables.
func TestWhatsAppThroughTwilio(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('whatsapp', 'sms')`)
	tw, rec := sendertest.FakeTwilio(t)
	cmd, logs := runnerProcess(t, url, "HERALD_SENDER_WHATSAPP=twilio", "HERALD_WHATSAPP_TWILIO_URL="+tw.URL,
		"HERALD_WHATSAPP_TWILIO_ACCOUNT_SID=AC0123", "HERALD_WHATSAPP_TWILIO_AUTH_TOKEN=tw-token",
		"HERALD_WHATSAPP_TWILIO_FROM=+15005550006", "HERALD_WHATSAPP_TWILIO_WHATSAPP=true", "HERALD_POLL_INTERVAL=100ms")
	id := scalar[int64](t, pool, `SELECT herald.enqueue('whatsapp', '+14155550100',
		'{"content_sid":"HX0123456789abcdef0123456789abcdef","content_variables":{"1":"Ana","2":"4 p.m."}}')`)
	_, err := pool.Exec(context.Background(), `SELECT herald.enqueue('whatsapp', '+14155550100',
		'{"text":"Hi","content_sid":"HX0123456789abcdef0123456789abcdef"}')`)
	wantPgError(t, err, "22V03", "payload.text")
	eventually(t, 30*time.Second, "the template sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 1 })
	forms := rec.Forms()
	if len(forms) != 1 || forms[0].Get("To") != "whatsapp:+14155550100" || forms[0].Get("From") != "whatsapp:+15005550006" ||
		forms[0].Get("ContentSid") != "HX0123456789abcdef0123456789abcdef" || !jsonEqual(forms[0].Get("ContentVariables"), `{"1":"Ana","2":"4 p.m."}`) {
		t.Fatalf("Twilio got %v\n%s", forms, logs.String())
	}
	if got := scalar[string](t, pool, `SELECT provider_message_id FROM herald.messages WHERE id = $1`, id); !strings.HasPrefix(got, "SM") {
		t.Fatalf("receipt %q", got)
	}
	if strings.Contains(logs.String(), "does not read") {
		t.Fatalf("a WhatsApp setting went unread:\n%s", logs.String())
	}
	waitExit(t, cmd, logs, 15*time.Second)
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// smtpEnv is the runner's environment for reaching s as an SMTP account whose
// variables start with prefix (HERALD_SMTP_, HERALD_<CHANNEL>_SMTP_).
func smtpEnv(prefix string, s *sendertest.SMTPServer) []string {
	host, port, _ := net.SplitHostPort(s.Addr)
	return []string{prefix + "HOST=" + host, prefix + "PORT=" + port, prefix + "CA_FILE=" + s.CAFile,
		prefix + "USERNAME=" + s.User, prefix + "PASSWORD=" + s.Password}
}

// Two accounts of one provider, each for channels of its own: 'alerts' (e-mail) goes
// through a second SMTP relay and 'otp' (SMS) through a second Twilio account with a
// messaging service, configured as HERALD_<CHANNEL>_<PROVIDER>_*; 'email' and 'sms'
// keep the shared HERALD_<PROVIDER>_* settings, and nothing of one account is used
// for the other (each relay has its own CA; the second Twilio account sends with an
// API key and a messaging service, no From). The events endpoint verifies the
// status callbacks of both Twilio accounts, and refuses a third.
func TestPerChannelProviderAccounts(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('alerts', 'email'), ('otp', 'sms')`)
	relayA, relayB := sendertest.StartSMTP(t, true), sendertest.StartSMTP(t, true)
	twA, recA := sendertest.FakeTwilio(t)
	twB, recB := sendertest.FakeTwilio(t)
	addr := freeAddr(t)
	callback := "http://" + addr + "/v1/events/twilio"
	env := append(append(smtpEnv("HERALD_SMTP_", relayA), smtpEnv("HERALD_ALERTS_SMTP_", relayB)...),
		"HERALD_SENDER_EMAIL=smtp", "HERALD_SENDER_ALERTS=smtp", "HERALD_SENDER_SMS=twilio", "HERALD_SENDER_OTP=twilio",
		"HERALD_EMAIL_FROM=noreply@example.com", "HERALD_ALERTS_FROM=alerts@example.com",
		"HERALD_TWILIO_URL="+twA.URL, "HERALD_TWILIO_ACCOUNT_SID=AC0123", "HERALD_TWILIO_AUTH_TOKEN=tw-token",
		"HERALD_TWILIO_FROM=+15005550006", "HERALD_TWILIO_STATUS_CALLBACK="+callback,
		"HERALD_OTP_TWILIO_URL="+twB.URL, "HERALD_OTP_TWILIO_ACCOUNT_SID=AC0123", "HERALD_OTP_TWILIO_API_KEY_SID=SK0123",
		"HERALD_OTP_TWILIO_API_KEY_SECRET=sk-secret", "HERALD_OTP_TWILIO_AUTH_TOKEN=otp-token",
		"HERALD_OTP_TWILIO_MESSAGING_SERVICE_SID=MG0123456789abcdef0123456789abcdef", "HERALD_OTP_TWILIO_STATUS_CALLBACK="+callback,
		"HERALD_POLL_INTERVAL=100ms", "HERALD_HTTP_ADDR="+addr, "HERALD_INTAKE=off")
	cmd, logs := runnerProcess(t, dbURL, env...)
	waitHTTP(t, addr)
	ids := map[string]int64{}
	for ch, q := range map[string]string{
		"email":  `SELECT herald.enqueue('email', 'ana@example.net', '{"subject":"Hi","text":"to A"}')`,
		"alerts": `SELECT herald.enqueue('alerts', 'ops@example.net', '{"subject":"Disk","text":"to B"}')`,
		"sms":    `SELECT herald.enqueue('sms', '+14155550100', '{"text":"from the number"}')`,
		"otp":    `SELECT herald.enqueue('otp', '+14155550101', '{"text":"code 123456"}')`,
	} {
		ids[ch] = scalar[int64](t, pool, q)
	}
	eventually(t, 30*time.Second, "all four sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 4 })
	if a, b := relayA.Rcpts(), relayB.Rcpts(); fmt.Sprint(a, b) != "[ana@example.net] [ops@example.net]" {
		t.Fatalf("relay A got %v, relay B %v\n%s", a, b, logs.String())
	}
	fa, fb := recA.Forms(), recB.Forms()
	if len(fa) != 1 || len(fb) != 1 || fa[0].Get("To") != "+14155550100" || fa[0].Get("From") != "+15005550006" ||
		fb[0].Get("To") != "+14155550101" || fb[0].Get("From") != "" || fb[0].Get("MessagingServiceSid") == "" {
		t.Fatalf("Twilio account A got %v, account B %v", fa, fb)
	}
	to := map[string]string{"sms": "+14155550100", "otp": "+14155550101"}
	post := func(ch, token string) int {
		u := fmt.Sprintf("%s?herald_id=%d", callback, ids[ch])
		sid := scalar[string](t, pool, `SELECT provider_message_id FROM herald.messages WHERE id = $1`, ids[ch])
		code, _ := postTwilio(t, u, url.Values{"MessageSid": {sid}, "MessageStatus": {"delivered"},
			"AccountSid": {"AC0123"}, "To": {to[ch]}, "ApiVersion": {"2010-04-01"}}, token)
		return code
	}
	if code := post("otp", "someone-elses-token"); code != 401 {
		t.Fatalf("a callback signed with a third account's token: %d", code)
	}
	if a, b := post("sms", "tw-token"), post("otp", "otp-token"); a != 200 || b != 200 {
		t.Fatalf("the accounts' callbacks: %d %d\n%s", a, b, logs.String())
	}
	if n := countWhere(t, pool, `outcome = 'delivered'`); n != 2 {
		t.Fatalf("%d messages delivered by the callbacks, want 2: %s\n%s", n,
			scalar[string](t, pool, `SELECT coalesce(json_agg(d)::text, 'none') FROM herald.delivery_events d`), logs.String())
	}
	for _, secret := range []string{relayA.Password, "tw-token", "sk-secret", "otp-token"} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("a secret appears in the runner's logs")
		}
	}
	waitExit(t, cmd, logs, 15*time.Second)
}

// What herald.enqueue takes, the senders send: an attack by payloads each sender's
// decoder would choke on (a field of the wrong JSON type, nesting past what JSON
// readers take) must be refused at enqueue, naming the field, and store nothing; before,
// such messages were stored and ended dead at their first attempt ("json: cannot
// unmarshal", "exceeded max depth"), hours after the producer was told they were taken.
// Everything taken is sent through `herald run` to the in-process SMTP server, a
// SendGrid v3 receiver, the Twilio fake and a webhook receiver.
func TestWhatEnqueueTakesTheSendersSend(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('marketing', 'email'), ('hooks', 'webhook')`)
	nest := func(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }
	smtpSrv := sendertest.StartSMTP(t, true)
	tw, _ := sendertest.FakeTwilio(t)
	var mu sync.Mutex
	received := 0
	receiver := func(ok func(body []byte) bool) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if r.URL.Path == "/v3/scopes" { // the runner's start check of its SendGrid key
				io.WriteString(w, `{"scopes":["mail.send"]}`)
				return
			}
			if !ok(body) {
				t.Errorf("%s: a request herald should not have sent: %.200s", r.URL.Path, body)
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			mu.Lock()
			received++
			mu.Unlock()
			w.Header().Set("X-Message-Id", "sg-1")
			w.WriteHeader(http.StatusAccepted)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	sendgrid := receiver(func(body []byte) bool {
		var req struct {
			Personalizations []json.RawMessage `json:"personalizations"`
		}
		return json.Unmarshal(body, &req) == nil && len(req.Personalizations) == 1
	})
	hooks := receiver(func(body []byte) bool { return json.Valid(body) })
	hookURL := strings.Replace(hooks.URL, "127.0.0.1", "localhost", 1) + "/h"
	const template = `"template_id":"d-0123456789abcdef0123456789abcdef","dynamic_template_data":`
	for _, c := range []struct {
		channel, payload, metadata string
		refused                    string // the error's field; "" when it must be taken and sent
	}{
		{"email", `{"subject":"s","text":"t"}`, ``, ""},
		{"email", `{"subject":"s","text":"t","html":null}`, ``, ""},
		{"email", `{"subject":"s","text":"t","html":{"p":"x"}}`, ``, "payload.html"},
		{"email", `{"subject":"s","html":"<p>h</p>","body":[1]}`, ``, "payload.body"},
		{"email", `{"subject":"s","text":"t","body":5}`, ``, "payload.body"},
		{"email", `{"subject":"s","text":"t","html":true,"cc":["bo@example.net"]}`, ``, "payload.html"},
		{"email", `{"subject":"Caf\u00e9 \u2028 \t \u001b","text":"` + strings.Repeat("x", 3000) + `"}`, ``, ""},
		{"email", `{"subject":"s","text":"t","headers":{"X-Note":"\u00e9t\u00e9"}}`, `{"m":` + nest(32) + `}`, ""},
		{"email", `{"subject":"s","text":"t"}`, `{"m":` + nest(33) + `}`, "metadata"},
		{"marketing", `{` + template + `{"a":` + nest(31) + `}}`, ``, ""},
		{"marketing", `{` + template + `{"a":` + nest(32) + `}}`, ``, "payload"},
		{"marketing", `{"subject":"s","text":"t","categories":["c"],"custom_args":{"k":"v"}}`, ``, ""},
		{"sms", `{"text":"t"}`, ``, ""},
		{"sms", `{"body":"b","text":null}`, ``, ""},
		{"sms", `{"text":"t","body":{"a":1}}`, ``, "payload.body"},
		{"sms", `{"text":7,"media_urls":["https://example.com/a.png"]}`, ``, "payload.text"},
		{"sms", `{"content_sid":"HX0123456789abcdef0123456789abcdef","content_variables":{"1":"Ana"}}`, ``, ""},
		{"sms", `{"content_sid":"HX0123456789abcdef0123456789abcdef","content_variables":{"1":["Ana"]}}`, ``, "payload.content_variables"},
		{"sms", `{"content_variables":{"1":"Ana"}}`, ``, "payload"},
		{"hooks", `{"data":` + nest(32) + `}`, `{"m":` + nest(32) + `}`, ""},
		{"hooks", `{"data":` + nest(33) + `}`, ``, "payload"},
		{"hooks", `{"data":` + nest(5000) + `}`, ``, "payload"},
		{"hooks", `{"n":1e400,"k\u0001":"\ud83d\ude00"}`, ``, ""},
		{"hooks", `{}`, ``, ""},
		{"hooks", `{"a":"b"}`, `{"m":` + nest(33) + `}`, "metadata"},
	} {
		recipient := map[string]string{"email": "ana@example.net", "marketing": "ana@example.net", "sms": "+14155550100", "hooks": hookURL}[c.channel]
		var metadata any
		if c.metadata != "" {
			metadata = c.metadata
		}
		_, err := pool.Exec(context.Background(), `SELECT herald.enqueue(channel => $1, recipient => $2, payload => $3, metadata => $4)`,
			c.channel, recipient, c.payload, metadata)
		if c.refused == "" && err != nil {
			t.Errorf("%s %.120s: refused: %v", c.channel, c.payload, err)
		} else if c.refused != "" {
			if err == nil {
				t.Errorf("%s %.120s (metadata %.60s): taken, want refused on %s", c.channel, c.payload, c.metadata, c.refused)
				continue
			}
			code := map[bool]string{true: "22V08", false: "22V03"}[c.refused == "metadata"]
			wantPgError(t, err, code, c.refused)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	taken := countWhere(t, pool, `true`)
	cmd, logs := runnerProcess(t, dbURL, append(smtpEnv("HERALD_SMTP_", smtpSrv),
		"HERALD_SENDER_EMAIL=smtp", "HERALD_EMAIL_FROM=noreply@example.com",
		"HERALD_SENDER_MARKETING=sendgrid", "HERALD_MARKETING_SENDGRID_API_KEY=SG.test-key",
		"HERALD_MARKETING_SENDGRID_URL="+sendgrid.URL, "HERALD_MARKETING_FROM=noreply@example.com",
		"HERALD_SENDER_SMS=twilio", "HERALD_TWILIO_URL="+tw.URL, "HERALD_TWILIO_ACCOUNT_SID=AC0123",
		"HERALD_TWILIO_AUTH_TOKEN=tw-token", "HERALD_TWILIO_FROM=+15005550006",
		"HERALD_SENDER_HOOKS=webhook", "HERALD_HOOKS_WEBHOOK_SECRETS=whsec_"+strings.Repeat("SG9va3Nz", 4),
		"HERALD_WEBHOOK_ALLOW=127.0.0.1/32,::1/128", "HERALD_POLL_INTERVAL=100ms")...)
	eventually(t, 30*time.Second, "every message taken settled", func() bool {
		return countWhere(t, pool, `status NOT IN ('queued', 'processing')`) == taken
	})
	if failed := scalar[string](t, pool, `SELECT coalesce(string_agg(channel || ' ' || status || ': ' || coalesce(last_error, ''), '; '), '')
		FROM herald.messages WHERE status <> 'sent'`); failed != "" {
		t.Fatalf("taken but not sent: %s\n%s", failed, logs.String())
	}
	mu.Lock()
	n := received
	mu.Unlock()
	if smtp := int64(len(smtpSrv.Messages())); smtp+int64(n)+countWhere(t, pool, `channel = 'sms'`) != taken {
		t.Fatalf("%d messages taken; the SMTP server got %d, the HTTP receivers %d", taken, smtp, n)
	}
	waitExit(t, cmd, logs, 15*time.Second)
}
