package tests

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
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
	if mailProv != fmt.Sprintf("<herald-%d@example.com>", mailID) || !strings.HasPrefix(smsProv, "SM") {
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
