package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/herald/herald/runner/events"
	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/sendertest"
	smtpsender "github.com/herald/herald/runner/sender/smtp"
	"github.com/herald/herald/runner/unsubscribe"
)

// One-click unsubscribe (RFC 8058), end to end: an e-mail of a channel with an
// unsubscribe URL reaches the SMTP server with List-Unsubscribe and
// List-Unsubscribe-Post headers; a GET of the link changes nothing (scanners fetch
// links); the mail client's POST suppresses the recipient, whose next message is not
// sent; a forged or altered link is 404 and records nothing; a link of a purged
// message is 410, not a false "unsubscribed"; a payload's own List-Unsubscribe is
// kept; a message with copies gets no link (a copy's recipient who clicked it would
// unsubscribe the To, and not themselves).
func TestOneClickUnsubscribe(t *testing.T) {
	ctx, pool := setup(t)
	key := []byte(strings.Repeat("k", 32))
	base := eventsServer(t, pool, func(string) events.Config { return events.Config{UnsubscribeKeys: [][]byte{key}} })
	smtpSrv := sendertest.StartSMTP(t, true)
	cfg := sendertest.SMTPConfig(t, smtpSrv)
	cfg.Defaults.UnsubscribeURL, cfg.Defaults.UnsubscribeKey = base+events.UnsubscribePath, key
	s, err := smtpsender.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	send := func(recipient, payload string) (int64, string) {
		t.Helper()
		id := scalar[int64](t, pool, `SELECT herald.enqueue('email', $1, $2::jsonb)`, recipient, payload)
		m := sender.Message{ID: id, Channel: "email", Recipient: recipient, Payload: json.RawMessage(payload), Attempt: 1}
		if _, err := s.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
		got := smtpSrv.Messages()
		return id, got[len(got)-1].Data
	}
	header := regexp.MustCompile(`(?m)^List-Unsubscribe:\s*<([^>]+)>`) // folded or not
	post := func(link string) int {
		t.Helper()
		resp, err := http.Post(link, "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	suppressed := func() string {
		return scalar[string](t, pool, `SELECT coalesce(string_agg(recipient || ':' || reason || ':' || source, ' ' ORDER BY recipient), '') FROM herald.suppressions`)
	}

	id, data := send("ana@example.com", `{"subject":"News","text":"Hello"}`)
	m := header.FindStringSubmatch(data)
	if m == nil || !strings.Contains(data, "List-Unsubscribe-Post: List-Unsubscribe=One-Click") {
		t.Fatalf("no one-click headers in:\n%s", data)
	}
	link := m[1]
	if want := unsubscribe.Link(base+events.UnsubscribePath, key, id); link != want {
		t.Fatalf("link %q, want %q", link, want)
	}

	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || suppressed() != "" {
		t.Fatalf("GET: %d, suppressions %q: a GET must change nothing", resp.StatusCode, suppressed())
	}
	// Forged and altered links: nothing recorded.
	other := unsubscribe.Link(base+events.UnsubscribePath, []byte(strings.Repeat("x", 32)), id)
	_, mac, _ := strings.Cut(link[strings.LastIndex(link, "/")+1:], ".")
	for _, bad := range []string{other, base + events.UnsubscribePath + fmt.Sprint(id+1) + "." + mac, link + "A", base + events.UnsubscribePath + "ana@example.com"} {
		if code := post(bad); code != 404 {
			t.Fatalf("POST %s: %d, want 404", bad, code)
		}
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.delivery_events`); n != 0 || suppressed() != "" {
		t.Fatalf("forged links recorded %d events, suppressions %q", n, suppressed())
	}

	for i := 0; i < 2; i++ { // the second POST changes nothing
		if code := post(link); code != 200 {
			t.Fatalf("POST %d: %d", i+1, code)
		}
	}
	if got := suppressed(); got != "ana@example.com:unsubscribed:unsubscribe" {
		t.Fatalf("suppressions %q", got)
	}
	if o := scalar[string](t, pool, `SELECT outcome FROM herald.messages WHERE id = $1`, id); o != "unsubscribed" {
		t.Fatalf("outcome %q", o)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.delivery_events WHERE source = 'unsubscribe'`); n != 1 {
		t.Fatalf("%d unsubscribe events, want 1", n)
	}
	next := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'Ana@Example.com', '{"subject":"More news","text":"Hello"}')`)
	if st := scalar[string](t, pool, `SELECT status FROM herald.messages WHERE id = $1`, next); st != "suppressed" {
		t.Fatalf("the next message to the unsubscribed address is %s", st)
	}

	// A purged message's link says so instead of claiming success.
	gone, data := send("bo@example.com", `{"subject":"News","text":"Hello"}`)
	goneLink := header.FindStringSubmatch(data)[1]
	mustExec(t, pool, `DELETE FROM herald.messages WHERE id = $1`, gone)
	if code := post(goneLink); code != 410 || strings.Contains(suppressed(), "bo@") {
		t.Fatalf("purged message: %d, suppressions %q", code, suppressed())
	}

	// A message with copies: one link would name the To for every recipient.
	for _, copies := range []string{`"cc":["dee@example.com"]`, `"bcc":["dee@example.com"]`} {
		_, data = send("cy@example.com", `{"subject":"News","text":"Hello",`+copies+`}`)
		if strings.Contains(data, "List-Unsubscribe") {
			t.Fatalf("a message with %s carries one-click headers:\n%s", copies, data)
		}
	}

	// The producer's own List-Unsubscribe (its preference centre) is kept, alone.
	_, data = send("cy@example.com", `{"subject":"News","text":"Hello","headers":{"List-Unsubscribe":"<https://prefs.example.com/u/7>"}}`)
	if got := header.FindAllStringSubmatch(data, -1); len(got) != 1 || got[0][1] != "https://prefs.example.com/u/7" {
		t.Fatalf("List-Unsubscribe headers %v", got)
	}
}

// Only a delivery-event receiver (herald_events) and admins may record an
// unsubscribe: a producer that could would unsubscribe any recipient by guessing ids.
func TestUnsubscribeIsNotForProducers(t *testing.T) {
	ctx, pool := setup(t)
	id := enqueueEmail(t, pool, "ana@example.com")
	producer := loginPool(t, pool, "herald_test_mallory", "herald_producer")
	_, err := producer.Exec(ctx, `SELECT herald.unsubscribe($1)`, id)
	wantPgError(t, err, "42501", "")
	receiver := loginPool(t, pool, "herald_test_receiver", "herald_events")
	var taken bool
	if err := receiver.QueryRow(context.Background(), `SELECT herald.unsubscribe($1)`, id).Scan(&taken); err != nil || !taken {
		t.Fatalf("herald_events: %v %v", taken, err)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.suppressions`); n != 1 {
		t.Fatalf("%d suppressions, want 1", n)
	}
}
