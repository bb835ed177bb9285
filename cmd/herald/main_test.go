package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald/herald/runner/sender/sendertest"
	"github.com/herald/herald/runner/sender/webhook"
	heraldsql "github.com/herald/herald/sql"
	"github.com/herald/herald/tests/testdb"
	"github.com/jackc/pgx/v5"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := dispatch(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// herald migrate installs herald into an empty database, is idempotent, and tells
// usage errors and an unreachable database apart by exit code.
func TestMigrateCommand(t *testing.T) {
	url := testdb.EmptyDatabase(t)
	t.Setenv("DATABASE_URL", url)

	code, out, errOut := run(t, "migrate", "--status")
	var latest int
	if _, err := fmt.Sscanf(out, "herald schema at version 0 (latest %d)", &latest); code != exitOK || err != nil || latest < 1 {
		t.Fatalf("migrate --status on an empty database: %d %q %q", code, out, errOut)
	}
	done := fmt.Sprintf("version %d (latest %d); code current", latest, latest)
	for i := 0; i < 2; i++ {
		code, out, errOut = run(t, "migrate")
		if code != exitOK || !strings.Contains(out, done) {
			t.Fatalf("migrate run %d: %d %q %q", i+1, code, out, errOut)
		}
	}
	if code, out, errOut = run(t, "migrate", "--reinstall-code"); code != exitOK {
		t.Fatalf("migrate --reinstall-code: %d %q %q", code, out, errOut)
	}
	if code, _, _ = run(t, "migrate", "--bogus"); code != exitUsage {
		t.Fatalf("bad flag: exit %d, want %d", code, exitUsage)
	}
	if code, _, _ = run(t, "frobnicate"); code != exitUsage {
		t.Fatalf("unknown command: exit %d, want %d", code, exitUsage)
	}
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
	if code, _, errOut = run(t, "migrate"); code != exitDatabase || !strings.Contains(errOut, "cannot reach the database") {
		t.Fatalf("unreachable database: exit %d %q, want %d", code, errOut, exitDatabase)
	}
}

// herald enqueue / status / stats / cancel: an id printed and the row stored; bad input a
// non-zero exit with a one-line reason; an unreachable database exit 3.
func TestEnqueueStatusStatsCommands(t *testing.T) {
	url := testdb.New(t)
	t.Setenv("DATABASE_URL", url)

	code, out, errOut := run(t, "enqueue", "--channel", "email", "--recipient", "ana@example.com",
		"--payload", `{"subject":"Hi","text":"Hello"}`, "--priority", "3", "--idempotency-key", "cli-1")
	id := strings.TrimSpace(out)
	if code != exitOK || id == "" || errOut != "" {
		t.Fatalf("enqueue: %d %q %q", code, out, errOut)
	}
	if code, out, _ = run(t, "enqueue", "--channel", "email", "--recipient", "ana@example.com",
		"--payload", `{"subject":"Hi","text":"Hello"}`, "--idempotency-key", "cli-1"); code != exitOK || strings.TrimSpace(out) != id {
		t.Fatalf("idempotent repeat: %d %q, want id %s", code, out, id)
	}
	if code, out, errOut = run(t, "enqueue", "--channel", "email", "--recipient", "bo@example.com",
		"--payload", `{"subject":"Hi","text":"Hello"}`, "--idempotency-key", "cli-1"); code != exitUsage || out != "" ||
		!strings.Contains(errOut, "idempotency_key_reused") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("a key reused for another recipient: %d %q %q", code, out, errOut)
	}

	stdin = strings.NewReader(`[{"channel":"sms","recipient":"+14155550100","payload":{"text":"a"}},
		{"channel":"sms","recipient":"+14155550101","payload":{"text":"b"}}]`)
	defer func() { stdin = os.Stdin }()
	if code, out, errOut = run(t, "enqueue"); code != exitOK || len(strings.Fields(out)) != 2 {
		t.Fatalf("enqueue from stdin: %d %q %q", code, out, errOut)
	}
	// A message's flag beside a message on stdin is refused, not dropped unseen (a
	// retry with --idempotency-key would otherwise store the message twice).
	stdin = strings.NewReader(`{"channel":"sms","recipient":"+14155550102","payload":{"text":"c"}}`)
	if code, out, errOut = run(t, "enqueue", "--idempotency-key", "k-1"); code != exitUsage || out != "" ||
		!strings.Contains(errOut, "--idempotency-key") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("a flag with a message on stdin: %d %q %q", code, out, errOut)
	}

	for _, bad := range [][]string{
		{"enqueue", "--channel", "sms", "--recipient", "555-0100", "--payload", `{"text":"x"}`},
		{"enqueue", "--channel", "email", "--recipient", "a@example.com", "--payload", `{"subject":`},
		{"enqueue", "--channel", "fax", "--recipient", "a@example.com", "--payload", `{}`},
		// more urgent than the default without a herald.producers row
		{"enqueue", "--channel", "email", "--recipient", "a@example.com", "--payload", `{"subject":"s","text":"t"}`, "--priority", "-1"},
		{"enqueue", "--channel", "sms", "--recipient", "+14155550100", "--payload", `{"text":"x"}`, "--recipient-zone", "GMT+5"},
	} {
		code, out, errOut = run(t, bad...)
		if code != exitUsage || out != "" || strings.Count(errOut, "\n") != 1 {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q: want exit 2 and one line", bad, code, out, errOut)
		}
		if slices.Contains(bad, "--priority") && !strings.HasPrefix(errOut, "herald enqueue: priority_not_granted: priority: ") {
			t.Fatalf("%v: stderr %q, want the priority refused as not granted", bad, errOut)
		}
		if slices.Contains(bad, "--recipient-zone") && !strings.HasPrefix(errOut, "herald enqueue: invalid_recipient_zone: recipient_zone: ") {
			t.Fatalf("%v: stderr %q, want the zone refused naming it", bad, errOut)
		}
	}
	stdin = strings.NewReader(`[{"channel":"sms","recipient":"+14155550100","payload":{"text":"a"}},{"channel":"sms","recipient":"x","payload":{"text":"b"}}]`)
	if code, _, errOut = run(t, "enqueue"); code != exitUsage || !strings.Contains(errOut, "(message 1)") {
		t.Fatalf("bad batch on stdin: %d %q", code, errOut)
	}

	if code, out, _ = run(t, "status", id); code != exitOK || !strings.Contains(out, "queued") || !strings.Contains(out, "email") {
		t.Fatalf("status: %d %q", code, out)
	}
	if code, _, _ = run(t, "status", "999999"); code != exitFailure {
		t.Fatalf("status of an unknown id: exit %d", code)
	}
	if code, _, _ = run(t, "status", "nope"); code != exitUsage {
		t.Fatalf("status of a bad id: exit %d", code)
	}
	if code, out, _ = run(t, "stats"); code != exitOK || !strings.Contains(out, "email") || !strings.Contains(out, "sms") {
		t.Fatalf("stats: %d %q", code, out)
	}
	// Exactly the rows the good calls stored: 1 e-mail and 2 SMS.
	code, out, _ = run(t, "stats")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "email") || !strings.Contains(lines[2], " 2 ") {
		t.Fatalf("stats table:\n%s", out)
	}

	deadline := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	code, out, errOut = run(t, "enqueue", "--channel", "sms", "--recipient", "+14155550199", "--payload", `{"text":"code 1"}`,
		"--expires-at", deadline.Format(time.RFC3339))
	if code != exitOK {
		t.Fatalf("enqueue --expires-at: %d %q", code, errOut)
	}
	if code, out, _ = run(t, "status", strings.TrimSpace(out)); code != exitOK || !strings.Contains(out, "expires_at           "+deadline.Format(time.RFC3339Nano)) {
		t.Fatalf("status of a message with --expires-at %s: %q", deadline.Format(time.RFC3339), out)
	}
	if code, _, _ = run(t, "enqueue", "--channel", "sms", "--recipient", "+14155550199", "--payload", `{"text":"x"}`,
		"--expires-at", "tomorrow"); code != exitUsage {
		t.Fatalf("enqueue --expires-at tomorrow: exit %d", code)
	}
	// herald cancel: by key, again by id (still cancelled), a message being sent (exit
	// 1, saying so), an unknown one, bad input.
	if code, out, errOut = run(t, "cancel", "--idempotency-key", "cli-1"); code != exitOK || out != "cancelled\n" {
		t.Fatalf("cancel by key: %d %q %q", code, out, errOut)
	}
	if code, out, _ = run(t, "cancel", id); code != exitOK || out != "cancelled\n" {
		t.Fatalf("cancel again: %d %q", code, out)
	}
	if code, out, _ = run(t, "status", "--idempotency-key", "cli-1"); code != exitOK || !strings.Contains(out, "cancelled") ||
		!strings.Contains(out, "id                   "+id+"\n") {
		t.Fatalf("status by key after cancel: %d %q", code, out)
	}
	if code, _, _ = run(t, "status", "--idempotency-key", "no-such-key"); code != exitFailure {
		t.Fatalf("status of an unknown key: exit %d", code)
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var busy int64
	if err := conn.QueryRow(context.Background(), `SELECT id FROM herald.claim_batch('w', 1)`).Scan(&busy); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut = run(t, "cancel", fmt.Sprint(busy)); code != exitFailure || out != "" ||
		errOut != fmt.Sprintf("herald cancel: message %d is processing\n", busy) {
		t.Fatalf("cancel of a message being sent: %d %q %q", code, out, errOut)
	}
	if code, _, errOut = run(t, "cancel", "999999"); code != exitFailure || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("cancel of an unknown id: %d %q", code, errOut)
	}
	for _, bad := range [][]string{{"cancel"}, {"cancel", "nope"}, {"cancel", "--idempotency-key", "k", "1"},
		{"cancel", "--idempotency-key", strings.Repeat("k", 256)}} {
		if code, out, _ = run(t, bad...); code != exitUsage || out != "" {
			t.Fatalf("%v: exit %d %q, want 2", bad[:min(len(bad), 3)], code, out)
		}
	}

	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
	for _, args := range [][]string{
		{"enqueue", "--channel", "email", "--recipient", "a@example.com", "--payload", `{"subject":"s","text":"t"}`},
		{"status", "1"}, {"stats"}, {"cancel", "1"},
	} {
		if code, _, errOut = run(t, args...); code != exitDatabase || strings.Count(errOut, "\n") != 1 {
			t.Fatalf("%v with the database down: exit %d %q", args, code, errOut)
		}
	}
}

// A setting in the environment that does not parse is refused (exit 2, the variable
// named), never silently replaced by its default.
func TestBadEnvironmentIsRefused(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	t.Setenv("HERALD_SENDER_EMAIL", "noop")
	for _, c := range []struct{ name, value, cmd string }{
		{"HERALD_LEASE", "soon", "run"},
		{"HERALD_CONCURRENCY", "many", "run"},
		{"HERALD_INTAKE_MAX_BODY", "lots", "run"},
		{"HERALD_INTAKE_MAX_BATCH", "1k", "serve"},
		{"HERALD_INTAKE_RATE", "fast", "serve"},
		{"HERALD_INTAKE_RATE", "-1", "serve"},
		{"HERALD_INTAKE_MAX_IN_FLIGHT", "-1", "serve"},
		{"HERALD_INTAKE_MAX_IN_FLIGHT", "some", "serve"},
		{"HERALD_DB_POOL", "3", "run"},
		{"HERALD_DB_POOL", "big", "run"},
		{"HERALD_HTTP_DB_POOL", "0", "run"},
		{"HERALD_HTTP_TIMEOUT", "0s", "run"},
		{"HERALD_HTTP_TIMEOUT", "soon", "serve"},
		{"HERALD_HTTP_IDLE_TIMEOUT", "500ms", "run"},
		{"HERALD_SES_TOPIC_ARNS", "arn:aws:sns:eu-west-1:123456789012:ses https://sns.example/topic", "run"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(c.name, c.value)
			code, _, errOut := run(t, c.cmd, "--http-addr", "off")
			if code != exitUsage || !strings.Contains(errOut, c.name) {
				t.Fatalf("%s=%s: exit %d %q, want %d naming the variable", c.name, c.value, code, errOut, exitUsage)
			}
		})
	}
}

// Tracing is OpenTelemetry's variables; what herald cannot do with them (another
// exporter, OTLP over gRPC) is refused at start with the variable named, not ignored.
func TestTracingSettingsAreChecked(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	t.Setenv("HERALD_SENDER_EMAIL", "noop")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	for _, c := range []struct{ name, value string }{
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"},
		{"OTEL_TRACES_EXPORTER", "zipkin"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(c.name, c.value)
			code, _, errOut := run(t, "run", "--http-addr", "off")
			if code != exitUsage || !strings.Contains(errOut, c.name) || strings.Count(errOut, "\n") != 1 {
				t.Fatalf("%s=%s: exit %d %q, want %d naming the variable in one line", c.name, c.value, code, errOut, exitUsage)
			}
		})
	}
}

// A channel's own provider settings (HERALD_<CHANNEL>_<PROVIDER>_*) are checked as
// the shared ones are, and named when wrong; so is a channel account's SendGrid
// event key.
func TestChannelProviderSettingsAreChecked(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	t.Setenv("HERALD_SENDER_ALERTS", "smtp")
	t.Setenv("HERALD_SMTP_HOST", "127.0.0.1")
	t.Setenv("HERALD_ALERTS_SMTP_HOST", "127.0.0.1")
	for _, c := range []struct{ name, value string }{
		{"HERALD_ALERTS_SMTP_PORT", "smtp"},
		{"HERALD_ALERTS_SMTP_TIMEOUT", "soon"},
		{"HERALD_ALERTS_SENDGRID_EVENT_KEY", "not-a-key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(c.name, c.value)
			code, _, errOut := run(t, "run", "--http-addr", "off")
			if code != exitUsage || !strings.Contains(errOut, c.name) {
				t.Fatalf("%s=%s: exit %d %q, want %d naming the variable", c.name, c.value, code, errOut, exitUsage)
			}
		})
	}
}

// One-click unsubscribe links are signed and https: a channel's unsubscribe URL
// without HERALD_UNSUBSCRIBE_SECRETS, over plain http to another host, or with a
// secret that does not decode is refused at start (exit 2, the variable named).
func TestUnsubscribeSettingsAreChecked(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	t.Setenv("HERALD_SENDER_EMAIL", "smtp")
	t.Setenv("HERALD_SMTP_HOST", "127.0.0.1")
	good := "whsec_" + strings.Repeat("QUJD", 8)
	for _, c := range []struct{ url, secrets, named string }{
		{"https://n.example/v1/unsubscribe", "", "HERALD_UNSUBSCRIBE_SECRETS"},
		{"http://n.example/v1/unsubscribe", good, "HERALD_EMAIL_UNSUBSCRIBE_URL"},
		{"n.example/v1/unsubscribe", good, "HERALD_EMAIL_UNSUBSCRIBE_URL"},
		{"https://n.example/v1/unsubscribe", "whsec_short", "HERALD_UNSUBSCRIBE_SECRETS"},
	} {
		t.Setenv("HERALD_EMAIL_UNSUBSCRIBE_URL", c.url)
		t.Setenv("HERALD_UNSUBSCRIBE_SECRETS", c.secrets)
		code, _, errOut := run(t, "run", "--http-addr", "off")
		if code != exitUsage || !strings.Contains(errOut, c.named) || strings.Count(errOut, "\n") != 1 {
			t.Fatalf("%+v: exit %d %q, want %d naming %s", c, code, errOut, exitUsage, c.named)
		}
	}
}

// A return path is a bare address: anything else is refused at start (exit 2, the
// variable named), never sent in MAIL FROM.
func TestReturnPathIsAnAddress(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	t.Setenv("HERALD_SENDER_EMAIL", "smtp")
	t.Setenv("HERALD_SMTP_HOST", "127.0.0.1")
	for _, rp := range []string{"Bounces <bounces@example.com>", "bounces", "bounces@example.com\r\nRCPT TO:<x@evil.example>"} {
		t.Setenv("HERALD_EMAIL_RETURN_PATH", rp)
		if code, _, errOut := run(t, "run", "--http-addr", "off"); code != exitUsage || !strings.Contains(errOut, "HERALD_EMAIL_RETURN_PATH") {
			t.Fatalf("%q: exit %d %q, want %d naming the variable", rp, code, errOut, exitUsage)
		}
	}
}

// Twilio's inbound messages are signed with the account's auth token: the endpoint's
// URL without it is refused at start (exit 2, naming the token).
func TestTwilioInboundNeedsTheAuthToken(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	t.Setenv("HERALD_SENDER_EMAIL", "noop")
	t.Setenv("HERALD_TWILIO_INBOUND_URL", "https://n.example/v1/events/twilio-inbound")
	if code, _, errOut := run(t, "run"); code != exitUsage || !strings.Contains(errOut, "HERALD_TWILIO_AUTH_TOKEN") {
		t.Fatalf("exit %d %q, want %d naming HERALD_TWILIO_AUTH_TOKEN", code, errOut, exitUsage)
	}
}

// A secret in the environment never reaches usage text or an error: --help and a
// mistyped flag print the flags' defaults, and the intake tokens are not among them.
func TestSecretsStayOutOfUsage(t *testing.T) {
	t.Setenv("HERALD_INTAKE_TOKENS", "billing:tok-SECRET-1")
	t.Setenv("HERALD_SMTP_PASSWORD", "smtp-SECRET-2")
	t.Setenv("HERALD_HOOKS_WEBHOOK_SECRETS", "whsec_SECRET3notbase64")
	t.Setenv("DATABASE_URL", "postgres://herald:db-SECRET-4@127.0.0.1:1/herald?connect_timeout=2")
	for _, args := range [][]string{{"serve", "--help"}, {"run", "--help"}, {"serve", "--bogus"}, {"run", "--intake=maybe"},
		{"run", "--sender", "email=smtp", "--http-addr", "127.0.0.1:1", "--batch-size", "x"},
		{"run", "--sender", "hooks=webhook", "--http-addr", "off"}, {"migrate"}, {"status", "1"}} {
		_, out, errOut := run(t, args...)
		if text := strings.ToLower(out + errOut); !strings.Contains(text, "intake") && !strings.Contains(text, "batch") &&
			!strings.Contains(text, "secret") && !strings.Contains(text, "database") {
			t.Fatalf("%v printed no usage or reason:\n%s%s", args, out, errOut)
		}
		for _, secret := range []string{"SECRET-1", "SECRET-2", "SECRET3", "SECRET-4"} {
			if strings.Contains(out+errOut, secret) {
				t.Fatalf("%v printed a secret:\n%s%s", args, out, errOut)
			}
		}
	}
	// A connection string that does not parse is printed with its password hidden.
	t.Setenv("DATABASE_URL", "postgres://herald:db-SECRET-5@127.0.0.1:notaport/herald")
	if code, out, errOut := run(t, "status", "1"); code == exitOK || strings.Contains(out+errOut, "SECRET-5") || !strings.Contains(errOut, "database") {
		t.Fatalf("a bad DATABASE_URL: %d %q", code, out+errOut)
	}
}

// The intake's tokens may come from a file (HERALD_INTAKE_TOKENS_FILE), and an intake
// with no token refuses to start unless it is explicitly open. (The address cannot be
// listened on, so a serve that passes the check stops there.)
func TestIntakeTokensAndOpenIntake(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
	const badAddr = "256.0.0.1:1"
	code, _, errOut := run(t, "serve", "--http-addr", badAddr)
	if code != exitUsage || !strings.Contains(errOut, "has no token") {
		t.Fatalf("serve with no token: %d %q", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("a:tok-a,b:tok-b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HERALD_INTAKE_TOKENS_FILE", file)
	if code, _, errOut = run(t, "serve", "--http-addr", badAddr); strings.Contains(errOut, "has no token") || !strings.Contains(errOut, "256.0.0.1") {
		t.Fatalf("serve with tokens from a file: %d %q", code, errOut)
	}
	// A token must name its producer; the refusal does not print the token.
	if err := os.WriteFile(file, []byte("a:tok-a,tok-SECRET-b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut = run(t, "serve", "--http-addr", badAddr); code != exitUsage || !strings.Contains(errOut, "entry 2 is not name:token") ||
		strings.Contains(errOut, "SECRET") {
		t.Fatalf("serve with an unnamed token: %d %q", code, errOut)
	}
	t.Setenv("HERALD_INTAKE_TOKENS_FILE", "")
	t.Setenv("HERALD_INTAKE_OPEN", "true")
	if code, _, errOut = run(t, "serve", "--http-addr", badAddr); strings.Contains(errOut, "has no token") || !strings.Contains(errOut, "256.0.0.1") {
		t.Fatalf("serve open: %d %q", code, errOut)
	}
}

// `herald version` says what was built: module version, commit, Go, and the hash of
// the SQL it installs (the value herald migrate stores in herald.installed_code).
func TestVersion(t *testing.T) {
	code, out, _ := run(t, "version")
	if code != exitOK || !strings.HasPrefix(out, "herald ") || !strings.Contains(out, "\ncommit ") ||
		!strings.Contains(out, "sql code "+heraldsql.CodeHash()) {
		t.Fatalf("herald version: %d %q", code, out)
	}
	if code, _, errOut := run(t, "version", "extra"); code != exitUsage || !strings.Contains(errOut, "usage") {
		t.Fatalf("herald version extra: %d %q", code, errOut)
	}
}

// herald serve may serve the console alone (HERALD_INTAKE=off with a console token),
// but not nothing at all. (The address cannot be listened on, so a serve that
// passes the checks stops there.)
func TestServeConsoleAlone(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
	t.Setenv("HERALD_INTAKE", "off")
	if code, _, errOut := run(t, "serve", "--http-addr", "256.0.0.1:1"); code != exitUsage || !strings.Contains(errOut, "would serve nothing") {
		t.Fatalf("serve with nothing to serve: %d %q", code, errOut)
	}
	t.Setenv("HERALD_CONSOLE_TOKEN", "console-SECRET-0123456789")
	code, out, errOut := run(t, "serve", "--http-addr", "256.0.0.1:1")
	if strings.Contains(errOut, "would serve nothing") || !strings.Contains(errOut, "256.0.0.1") || strings.Contains(out+errOut, "SECRET") {
		t.Fatalf("console-only serve: %d %q", code, errOut)
	}
}

// herald webhook-secret prints each receiver URL's own secret under every channel
// secret (current first), the one the per-endpoint sender signs with; bad usage and
// a missing or bad channel secret are exit 2 with one line.
func TestWebhookSecretCommand(t *testing.T) {
	current, old := "whsec_"+strings.Repeat("QUJD", 8), "whsec_"+strings.Repeat("REVG", 8)
	t.Setenv("HERALD_HOOKS_WEBHOOK_SECRETS", current+" "+old)
	code, out, errOut := run(t, "webhook-secret", "--channel", "hooks", "https://a.example/hooks")
	lines := strings.Fields(out)
	wantCurrent, _ := webhook.EndpointSecret(current, "https://a.example/hooks")
	wantOld, _ := webhook.EndpointSecret(old, "https://a.example/hooks")
	if code != exitOK || errOut != "" || len(lines) != 2 || lines[0] != wantCurrent || lines[1] != wantOld {
		t.Fatalf("exit %d, %q %q", code, out, errOut)
	}
	if other, _ := webhook.EndpointSecret(current, "https://b.example/hooks"); other == lines[0] {
		t.Fatal("two receivers got one secret")
	}
	for _, args := range [][]string{
		{"webhook-secret", "https://a.example/hooks"},
		{"webhook-secret", "--channel", "hooks"},
		{"webhook-secret", "https://a.example/hooks", "--channel", "hooks"},
		{"webhook-secret", "--channel", "nohooks", "https://a.example/hooks"},
	} {
		if code, out, errOut := run(t, args...); code != exitUsage || out != "" || strings.Count(errOut, "\n") != 1 {
			t.Fatalf("%v: exit %d, %q %q: want exit 2 and one line", args, code, out, errOut)
		}
	}
	t.Setenv("HERALD_HOOKS_WEBHOOK_SECRETS", "whsec_short")
	if code, _, errOut := run(t, "webhook-secret", "--channel", "hooks", "https://a.example/hooks"); code != exitUsage || strings.Contains(errOut, "whsec_short") {
		t.Fatalf("bad channel secret: exit %d %q (refused, never printed)", code, errOut)
	}
	// A whsk_ signing key: its public key, the same for every receiver, and never the
	// signing key itself.
	signing := "whsk_" + strings.Repeat("S0VZ", 10) + "S0U="
	t.Setenv("HERALD_HOOKS_WEBHOOK_SECRETS", signing)
	code, out, _ = run(t, "webhook-secret", "--channel", "hooks", "https://a.example/hooks")
	public, _ := webhook.PublicKey(signing)
	if code != exitOK || strings.TrimSpace(out) != public || strings.Contains(out, strings.TrimPrefix(signing, "whsk_")) {
		t.Fatalf("a whsk_ key: exit %d %q, want its public key %s", code, out, public)
	}
}

// The delivery-event endpoints' bodies in progress cannot be bounded below one body.
func TestEventsInFlightBytesAreChecked(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	t.Setenv("HERALD_SENDER_EMAIL", "sink")
	t.Setenv("HERALD_EVENTS_MAX_IN_FLIGHT_BYTES", "1000")
	if code, _, errOut := run(t, "run", "--http-addr", "off"); code != exitUsage || !strings.Contains(errOut, "HERALD_EVENTS_MAX_IN_FLIGHT_BYTES") {
		t.Fatalf("an in-flight bound below the body limit: exit %d %q, want %d naming it", code, errOut, exitUsage)
	}
}

// The egress proxy's TLS settings: only for an https proxy, the certificate and its
// key together, files that hold what they say; each refusal names the variable (exit
// 2) and never prints the key file's content.
func TestWebhookProxyTLSSettingsAreChecked(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	t.Setenv("HERALD_SENDER_HOOKS", "webhook")
	t.Setenv("HERALD_HOOKS_WEBHOOK_SECRETS", "whsec_"+strings.Repeat("QUJD", 8))
	dir := t.TempDir()
	certPEM, keyPEM, err := sendertest.SelfSignedPEM()
	if err != nil {
		t.Fatal(err)
	}
	cert, key, badKey := dir+"/cert.pem", dir+"/key.pem", dir+"/bad-key.pem"
	os.WriteFile(cert, certPEM, 0o600)
	os.WriteFile(key, keyPEM, 0o600)
	os.WriteFile(badKey, []byte("s3cret-key-material"), 0o600)
	for _, c := range []struct {
		name string
		env  []string
	}{
		{"WEBHOOK_PROXY_CA_FILE", []string{"HERALD_WEBHOOK_PROXY=http://127.0.0.1:4750", "HERALD_WEBHOOK_PROXY_CA_FILE=" + cert}},
		{"WEBHOOK_PROXY_CERT_FILE", []string{"HERALD_WEBHOOK_PROXY_CERT_FILE=" + cert, "HERALD_WEBHOOK_PROXY_KEY_FILE=" + key}},
		{"WEBHOOK_PROXY_KEY_FILE", []string{"HERALD_WEBHOOK_PROXY=https://127.0.0.1:4750", "HERALD_WEBHOOK_PROXY_CERT_FILE=" + cert}},
		{"WEBHOOK_PROXY_KEY_FILE", []string{"HERALD_WEBHOOK_PROXY=https://127.0.0.1:4750", "HERALD_WEBHOOK_PROXY_CERT_FILE=" + cert,
			"HERALD_WEBHOOK_PROXY_KEY_FILE=" + badKey}},
		{"WEBHOOK_PROXY_CA_FILE", []string{"HERALD_WEBHOOK_PROXY=https://127.0.0.1:4750", "HERALD_WEBHOOK_PROXY_CA_FILE=" + badKey}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, kv := range c.env {
				name, value, _ := strings.Cut(kv, "=")
				t.Setenv(name, value)
			}
			code, _, errOut := run(t, "run", "--http-addr", "off")
			if code != exitUsage || !strings.Contains(errOut, c.name) || strings.Contains(errOut, "s3cret-key-material") {
				t.Fatalf("%v: exit %d %q, want %d naming %s", c.env, code, errOut, exitUsage, c.name)
			}
		})
	}
}

// HERALD_<CHANNEL>_WEBHOOK_PER_ENDPOINT is true or false, HERALD_<CHANNEL>_WEBHOOK_BODY
// envelope or payload, HERALD_WEBHOOK_USER_AGENT one header line; anything else is
// refused (exit 2, the variable named) rather than read as the default.
func TestWebhookSettingsAreChecked(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	t.Setenv("HERALD_SENDER_HOOKS", "webhook")
	t.Setenv("HERALD_HOOKS_WEBHOOK_SECRETS", "whsec_"+strings.Repeat("QUJD", 8))
	for _, c := range []struct{ name, value, beside string }{
		{"HERALD_HOOKS_WEBHOOK_PER_ENDPOINT", "yes", ""},
		{"HERALD_HOOKS_WEBHOOK_BODY", "raw", ""},
		{"HERALD_WEBHOOK_USER_AGENT", "Acme\r\nX-Injected: 1", ""},
		{"HERALD_WEBHOOK_PROXY", "socks5://herald:pr0xy-pa55@127.0.0.1:1080", ""},
		{"HERALD_WEBHOOK_PROXY", "http://herald:pr0xy-pa55@127.0.0.1:4750/egress", ""},
		{"HERALD_WEBHOOK_PROXY", "http://herald:pr0xy-pa55@127.0.0.1:4750", "HERALD_WEBHOOK_ALLOW=10.0.0.0/8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(c.name, c.value)
			if name, value, ok := strings.Cut(c.beside, "="); ok {
				t.Setenv(name, value)
			}
			code, _, errOut := run(t, "run", "--http-addr", "off")
			if code != exitUsage || !strings.Contains(errOut, strings.TrimPrefix(strings.TrimPrefix(c.name, "HERALD_HOOKS_"), "HERALD_")) {
				t.Fatalf("%s=%q: exit %d %q, want %d naming it", c.name, c.value, code, errOut, exitUsage)
			}
			if strings.Contains(errOut, "pr0xy-pa55") {
				t.Fatalf("the proxy's password is printed: %q", errOut)
			}
		})
	}
}
