package tests

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald/herald/runner/sender/sendertest"
	"github.com/herald/herald/tests/testdb"
)

// herald run sending e-mail through the Amazon SES v2 API (HERALD_SENDER_EMAIL=ses)
// with the AWS SDK's credentials from the environment: a stand-in that checks every
// request's Signature Version 4 takes the message raw, with the configuration set and
// herald_id tag; herald stores the Message-ID as the provider id (SES reports it in
// its event notifications, which TestSESNotifications matches by it). An unverified
// channel From pauses the channel with the message given back.
func TestSendingThroughTheSESAPI(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	srv, reqs := sendertest.FakeSES(t)
	none := filepath.Join(t.TempDir(), "none")
	env := []string{"AWS_ACCESS_KEY_ID=" + sendertest.SESAccessKey, "AWS_SECRET_ACCESS_KEY=" + sendertest.SESSecretKey,
		"AWS_CONFIG_FILE=" + none, "AWS_SHARED_CREDENTIALS_FILE=" + none, "AWS_EC2_METADATA_DISABLED=true",
		"HERALD_SENDER_EMAIL=ses", "HERALD_SES_REGION=" + sendertest.SESRegion, "HERALD_SES_URL=" + srv.URL,
		"HERALD_SES_CONFIGURATION_SET=herald-events", "HERALD_EMAIL_FROM=Acme <noreply@example.com>", "HERALD_POLL_INTERVAL=100ms"}
	id := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'ana@example.net', '{"subject":"Your code","text":"123456"}')`)
	cmd, logs := runnerProcess(t, dbURL, env...)
	eventually(t, 20*time.Second, "the message sent", func() bool { return countWhere(t, pool, `id = $1 AND status = 'sent'`, id) == 1 })
	sent := reqs.Sent()
	msgID := scalar[string](t, pool, `SELECT provider_message_id FROM herald.messages WHERE id = $1`, id)
	if len(sent) != 1 || msgID != heraldMessageID(t, pool, id) || !strings.Contains(sent[0].Raw, "Message-ID: "+msgID) ||
		sent[0].ConfigurationSet != "herald-events" || sent[0].Tags["herald_id"] == "" {
		t.Fatalf("stored %q; SES got %+v", msgID, sent)
	}
	waitExit(t, cmd, logs, 15*time.Second)

	// An unverified channel From: SES's MessageRejected pauses the channel, the attempt given back.
	id = scalar[int64](t, pool, `SELECT herald.enqueue('email', 'bo@example.net', '{"subject":"s","text":"t"}')`)
	cmd, logs = runnerProcess(t, dbURL, append(env, "HERALD_EMAIL_FROM=news@unverified.example", "HERALD_START_CHECK=off")...)
	eventually(t, 20*time.Second, "the channel paused", func() bool {
		return scalar[bool](t, pool, `SELECT paused FROM herald.channels WHERE name = 'email'`)
	})
	if s := scalar[string](t, pool, `SELECT status || ' ' || attempts FROM herald.messages WHERE id = $1`, id); s != "queued 0" {
		t.Fatalf("the message after the channel's From was refused: %s\n%s", s, logs.String())
	}
	waitExit(t, cmd, logs, 15*time.Second)
}
