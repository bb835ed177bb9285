package tests

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald/herald/runner"
	"github.com/herald/herald/runner/idtag"
	"github.com/herald/herald/runner/intake"
	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/egress"
	"github.com/herald/herald/runner/sender/sendertest"
	smtpsender "github.com/herald/herald/runner/sender/smtp"
	"github.com/herald/herald/runner/sender/webhook"
	"github.com/herald/herald/tests/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A producer cannot put its messages ahead of every other producer's by asking for
// the most urgent priority: below 0 needs a herald.producers row, which only
// herald_admin writes. Every enqueue path refuses with 42501 naming the field, and
// stores and logs nothing.
func TestPriorityIsGrantedNotTaken(t *testing.T) {
	ctx, pool := setup(t)
	mallory := loginPool(t, pool, "herald_test_mallory", "herald_producer")
	alice := loginPool(t, pool, "herald_test_alice", "herald_producer")
	for _, attack := range []struct{ sql, field string }{
		{`SELECT herald.enqueue('email', 'm@example.com', '{"subject":"s","text":"t"}', priority => -100)`, "priority"},
		{`SELECT herald.enqueue('email', 'm@example.com', '{"subject":"s","text":"t"}', priority => -1)`, "priority"},
		{`SELECT herald.enqueue_batch('[{"channel":"email","recipient":"m@example.com","payload":{"subject":"s","text":"t"}},
			{"channel":"email","recipient":"m@example.com","payload":{"subject":"s","text":"t"},"priority":-100}]')`, "messages[1].priority"},
		{`SELECT herald.enqueue_batch('[{"channel":"email","recipient":"m@example.com","payload":{"subject":"s","text":"t"},"priority":"-5"}]')`,
			"messages[0].priority"},
		{`SELECT herald.enqueue_many(ARRAY['email', 'email'], ARRAY['m@example.com', 'n@example.com'],
			ARRAY['{"subject":"s","text":"t"}', '{"subject":"s","text":"t"}']::jsonb[], priorities => ARRAY[0, -50])`, "messages[1].priority"},
	} {
		_, err := mallory.Exec(ctx, attack.sql)
		wantPgError(t, err, "42501", attack.field)
	}
	// Nor can she grant herself, or borrow a granted producer's name.
	grantPriority(t, pool, "herald_test_alice", -50)
	for _, attack := range []string{
		`INSERT INTO herald.producers (producer, min_priority) VALUES ('herald_test_mallory', -100)`,
		`UPDATE herald.producers SET min_priority = -100`,
		`SELECT min_priority FROM herald.producers`,
	} {
		_, err := mallory.Exec(ctx, attack)
		wantPgError(t, err, "42501", "")
	}
	tx, err := mallory.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(ctx, `SELECT set_config('herald.producer', 'herald_test_alice', true),
		herald.enqueue('email', 'm@example.com', '{"subject":"s","text":"t"}', priority => -50)`)
	wantPgError(t, err, "42501", "herald.producer")
	tx.Rollback(ctx)
	if n := scalar[int64](t, pool, `SELECT (SELECT count(*) FROM herald.messages) + (SELECT count(*) FROM herald.log_statements)`); n != 0 {
		t.Fatalf("refused enqueues left %d messages and log rows", n)
	}

	// Granted: down to the grant, and no further.
	grantPriority(t, pool, "herald_test_mallory", -10)
	if p := enqueuedPriority(t, pool, mallory, `priority => -10`); p != -10 {
		t.Fatalf("granted -10, stored %d", p)
	}
	_, err = mallory.Exec(ctx, `SELECT herald.enqueue('email', 'm@example.com', '{"subject":"s","text":"t"}', priority => -11)`)
	wantPgError(t, err, "42501", "priority")
	// A repeat of a stored idempotency key is checked like a first enqueue, not
	// answered with the first id.
	first := scalar[int64](t, mallory, `SELECT herald.enqueue('email', 'm@example.com', '{"subject":"s","text":"t"}', idempotency_key => 'r')`)
	for _, repeat := range []string{
		`SELECT herald.enqueue('email', 'm@example.com', '{"subject":"s","text":"t"}', idempotency_key => 'r', priority => -50)`,
		`SELECT herald.enqueue_batch('[{"channel":"email","recipient":"m@example.com","payload":{"subject":"s","text":"t"},"idempotency_key":"r","priority":-50}]')`,
	} {
		_, err = mallory.Exec(ctx, repeat)
		wantPgError(t, err, "42501", "")
	}
	if p := scalar[int16](t, pool, `SELECT priority FROM herald.messages WHERE id = $1`, first); p != 0 {
		t.Fatalf("the first message's priority became %d", p)
	}
	// 0..100 is everyone's, and the default stays 0.
	for arg, want := range map[string]int{`priority => 100`: 100, `priority => 0`: 0, `run_at => NULL`: 0} {
		if p := enqueuedPriority(t, pool, alice, arg); p != want {
			t.Fatalf("alice with %s: stored priority %d, want %d", arg, p, want)
		}
	}
}

// An operator demotes a producer that floods a channel: with min_priority 50 its
// messages, sent with no priority, are stored at 50, behind every other producer's
// default, without a change in its code; asking for more urgency is refused.
func TestDemotedProducerRunsBehindOthers(t *testing.T) {
	ctx, pool := setup(t)
	bulk := loginPool(t, pool, "herald_test_bulk", "herald_producer")
	alice := loginPool(t, pool, "herald_test_alice", "herald_producer")
	grantPriority(t, pool, "herald_test_bulk", 50)
	if _, err := bulk.Exec(ctx, `SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'email',
		'recipient', 'u' || g || '@example.com', 'payload', '{"subject":"s","text":"t"}'::jsonb)) FROM generate_series(1, 500) g))`); err != nil {
		t.Fatal(err)
	}
	if got := scalar[[]int16](t, pool, `SELECT array_agg(DISTINCT priority) FROM herald.messages`); !slices.Equal(got, []int16{50}) {
		t.Fatalf("the demoted producer's messages have priorities %v, want [50]", got)
	}
	// Operators see who fills the channel; producers do not.
	if n := scalar[int64](t, pool, `SELECT queued FROM herald.producer_backlog WHERE producer = 'herald_test_bulk' AND channel = 'email'`); n != 500 {
		t.Fatalf("producer_backlog shows %d queued for the bulk producer, want 500", n)
	}
	_, err := bulk.Exec(ctx, `SELECT * FROM herald.producer_backlog`)
	wantPgError(t, err, "42501", "")
	_, err = bulk.Exec(ctx, `SELECT herald.enqueue('email', 'b@example.com', '{"subject":"s","text":"t"}', priority => 0)`)
	wantPgError(t, err, "42501", "priority")
	if p := enqueuedPriority(t, pool, bulk, `priority => 60`); p != 60 {
		t.Fatalf("less urgent than its floor: stored %d, want 60", p)
	}
	mine := scalar[int64](t, alice, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}')`)
	if got := scalar[[]int64](t, pool, `SELECT array_agg(id) FROM herald.claim_batch('w', 1)`); !slices.Equal(got, []int64{mine}) {
		t.Fatalf("claimed %v, want alice's %d ahead of 500 older messages of the demoted producer", got, mine)
	}

	// A backlog stored before the demotion is moved behind the others as docs/sql.md
	// says, and claims follow at once.
	mustExec(t, pool, `UPDATE herald.producers SET min_priority = 0 WHERE producer = 'herald_test_bulk'`)
	mustExec(t, pool, `UPDATE herald.messages SET priority = 0 WHERE producer = 'herald_test_bulk'`)
	if _, err := bulk.Exec(ctx, `SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'email',
		'recipient', 'w' || g || '@example.com', 'payload', '{"subject":"s","text":"t"}'::jsonb)) FROM generate_series(1, 100) g))`); err != nil {
		t.Fatal(err)
	}
	var later []int64
	for range 4 {
		later = append(later, scalar[int64](t, alice, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}')`))
	}
	// Before the move, one priority: the two producers share each claim.
	if got := scalar[[]int64](t, pool, `SELECT array_agg(id ORDER BY id) FROM herald.claim_batch('w', 2)`); len(got) != 2 || got[1] != later[0] || got[0] >= later[0] {
		t.Fatalf("claimed %v before the backlog was moved, want one of the backlog and alice's %d", got, later[0])
	}
	mustExec(t, pool, `UPDATE herald.messages SET priority = 50 WHERE producer = 'herald_test_bulk' AND status IN ('queued', 'held')`)
	if got := scalar[[]int64](t, pool, `SELECT array_agg(id ORDER BY id) FROM herald.claim_batch('w', 2)`); !slices.Equal(got, later[1:3]) {
		t.Fatalf("claimed %v after the backlog was moved, want alice's %v", got, later[1:3])
	}
}

// enqueuedPriority enqueues an e-mail through producer with the extra argument arg
// and returns the priority it was stored with (read through pool).
func enqueuedPriority(t *testing.T, pool, producer *pgxpool.Pool, arg string) int {
	t.Helper()
	id := scalar[int64](t, producer, `SELECT herald.enqueue('email', 'p@example.com', '{"subject":"s","text":"t"}', `+arg+`)`)
	return int(scalar[int16](t, pool, `SELECT priority FROM herald.messages WHERE id = $1`, id))
}

// A producer cannot send as someone else: an e-mail payload's from must be an address,
// or at a domain, listed in its herald.producers row (none without a row, and then the
// runner's configured From is used). Without that, any service could mail the
// company's customers as ceo@ the company's own domain, signed by its provider.
// Mailboxes whose display name could be read as another address are not mailboxes.
func TestSenderIsGrantedNotTaken(t *testing.T) {
	ctx, pool := setup(t)
	mallory := loginPool(t, pool, "herald_test_mallory", "herald_producer")
	const ceo = `{"subject":"Wire the funds","text":"t","from":"CEO <ceo@acme.test>"}`
	for _, attack := range []struct{ sql, field string }{
		{`SELECT herald.enqueue('email', 'cfo@acme.test', '` + ceo + `')`, "payload.from"},
		{`SELECT herald.enqueue_batch('[{"channel":"email","recipient":"a@acme.test","payload":{"subject":"s","text":"t"}},
			{"channel":"email","recipient":"cfo@acme.test","payload":` + ceo + `}]')`, "messages[1].payload.from"},
		{`SELECT herald.enqueue_many(ARRAY['email'], ARRAY['cfo@acme.test'], ARRAY['` + ceo + `']::jsonb[])`, "messages[0].payload.from"},
	} {
		_, err := mallory.Exec(ctx, attack.sql)
		wantPgError(t, err, "42501", attack.field)
	}
	if n := scalar[int64](t, pool, `SELECT (SELECT count(*) FROM herald.messages) + (SELECT count(*) FROM herald.log_statements)`); n != 0 {
		t.Fatalf("refused enqueues left %d messages and log rows", n)
	}

	grantSenders(t, pool, "herald_test_mallory", "newsletter@acme.test")
	enqueueFrom := func(from string) error {
		_, err := mallory.Exec(ctx, `SELECT herald.enqueue('email', 'cfo@acme.test', jsonb_build_object('subject', 's', 'text', 't', 'from', $1::text))`, from)
		return err
	}
	for _, from := range []string{"News <newsletter@acme.test>", "NEWSLETTER@acme.test", "Acme Security Team <newsletter@acme.test>"} {
		if err := enqueueFrom(from); err != nil {
			t.Fatalf("granted from %q: %v", from, err)
		}
	}
	for from, code := range map[string]string{
		"ceo@acme.test":                                      "42501",
		"newsletter@acme.test.evil.example":                  "42501",
		"newsletter@mail.acme.test":                          "42501",
		`"newsletter@acme.test" <ceo@acme.test>`:             "22V03", // the name is not an address
		"newsletter@acme.test <ceo@acme.test>":               "22V03",
		"News <newsletter@acme.test>, ceo@acme.test":         "22V03", // one mailbox, not a list
		"News (newsletter@acme.test) <ceo@acme.test>":        "22V03",
		"News <newsletter@acme.test> (ceo@acme.test)":        "22V03",
		"News <newsletter@acme.test>\r\nBcc: x@evil.example": "22V03",
	} {
		wantPgError(t, enqueueFrom(from), code, "payload.from")
	}
	// Nor can a header name the sender instead.
	for _, h := range []string{"Sender", "resent-from", "Resent-Sender", "Return-Path"} {
		_, err := mallory.Exec(ctx, `SELECT herald.enqueue('email', 'cfo@acme.test', jsonb_build_object('subject', 's', 'text', 't',
			'headers', jsonb_build_object($1::text, 'CEO <ceo@acme.test>')))`, h)
		wantPgError(t, err, "22V03", "payload.headers."+h)
	}
	// A domain grants every address there, and only there.
	grantSenders(t, pool, "herald_test_mallory", "acme.test")
	if err := enqueueFrom("CEO <ceo@acme.test>"); err != nil {
		t.Fatalf("from at a granted domain: %v", err)
	}
	grantSenders(t, pool, "herald_test_mallory", "@acme.test") // written as an address's right-hand side
	if err := enqueueFrom("CEO <ceo@acme.test>"); err != nil {
		t.Fatalf("from at a granted @domain: %v", err)
	}
	wantPgError(t, enqueueFrom("ceo@acme.test.evil.example"), "42501", "payload.from")
	// reply_to is the producer's to choose (a contact form answers the customer).
	if _, err := mallory.Exec(ctx, `SELECT herald.enqueue('email', 'cfo@acme.test', '{"subject":"s","text":"t","reply_to":"Ana <ana@customer.example>"}')`); err != nil {
		t.Fatalf("reply_to: %v", err)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 6 {
		t.Fatalf("%d messages stored, want the 6 allowed", n)
	}

	// What was allowed is what the SMTP server is told, in the header and the envelope.
	srv := sendertest.StartSMTP(t, true)
	s, err := smtpsender.New(sendertest.SMTPConfig(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var m sender.Message
	if err := pool.QueryRow(ctx, `SELECT id, recipient, payload FROM herald.messages WHERE payload ->> 'from' = 'News <newsletter@acme.test>'`).
		Scan(&m.ID, &m.Recipient, &m.Payload); err != nil {
		t.Fatal(err)
	}
	m.Channel, m.Attempt = "email", 1
	if _, err := s.Send(ctx, m); err != nil {
		t.Fatal(err)
	}
	got := srv.Messages()
	if len(got) != 1 || got[0].From != "newsletter@acme.test" || !strings.Contains(got[0].Data, "From: \"News\" <newsletter@acme.test>") {
		t.Fatalf("the SMTP server got %+v", got)
	}
}

// A producer cannot get someone suppressed by copying an address that does not exist:
// a relay's 550 5.1.1 for the cc leaves the cc out, the To receives the message (sent),
// and the To is not on the suppression list, so another producer's mail to it goes out;
// the cc that does not exist is (herald.record_copy_refusal), so the next message
// copying it is sent without asking the relay for it again. A worker cannot use the
// call to suppress a message's own recipient, or an address it was never sent to.
func TestACopyThatDoesNotExistSuppressesNobody(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	mallory := loginPool(t, pool, "herald_test_copy_mallory", "herald_producer")
	srv := sendertest.StartSMTP(t, true)
	srv.Reply("nobody", 550, "5.1.1", "The email account that you tried to reach does not exist.")
	s, err := smtpsender.New(sendertest.SMTPConfig(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	attack := scalar[int64](t, mallory, `SELECT herald.enqueue('email', 'victim@example.net', '{"subject":"s","text":"t","cc":["nobody@example.net"]}')`)
	startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"email": s}, PollInterval: 50 * time.Millisecond})
	eventually(t, 20*time.Second, "the attack's message to be reported", func() bool {
		return scalar[string](t, pool, `SELECT status FROM herald.messages WHERE id = $1`, attack) != "queued" &&
			scalar[string](t, pool, `SELECT status FROM herald.messages WHERE id = $1`, attack) != "processing"
	})
	if st := scalar[string](t, pool, `SELECT status || ' ' || coalesce(last_error_code, '-') FROM herald.messages WHERE id = $1`, attack); st != "sent -" {
		t.Fatalf("the To's message with a bad cc: %s, want sent", st)
	}
	eventually(t, 20*time.Second, "the refused copy to be recorded", func() bool {
		return scalar[int64](t, pool, `SELECT count(*) FROM herald.suppressions`) > 0
	})
	if sup := scalar[string](t, pool, `SELECT string_agg(recipient || ':' || reason || ':' || source, ' ') FROM herald.suppressions`); sup != "nobody@example.net:bounced:send" {
		t.Fatalf("suppressions after a refused cc: %s (the cc, not the To)", sup)
	}
	asked := len(srv.Rcpts())
	next := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'victim@example.net', '{"subject":"Your password reset","text":"t","cc":["nobody@example.net"]}')`)
	eventually(t, 20*time.Second, "the next message to the To to go out", func() bool {
		return scalar[string](t, pool, `SELECT status FROM herald.messages WHERE id = $1`, next) == "sent"
	})
	if got := srv.Rcpts()[asked:]; strings.Join(got, " ") != "victim@example.net" {
		t.Fatalf("the next message asked the relay for %v, want the To only", got)
	}
	worker := loginPool(t, pool, "herald_test_copy_worker", "herald_worker")
	for _, who := range []string{"victim@example.net", "Victim@Example.net", "stranger@example.net"} {
		if scalar[bool](t, worker, `SELECT herald.record_copy_refusal($1, $2, '550 5.1.1')`, attack, who) {
			t.Fatalf("record_copy_refusal took %s, which is no copy of the message", who)
		}
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.suppressions`); n != 1 {
		t.Fatalf("%d suppressions after refusals of no copy", n)
	}
}

// One producer's bad list must not get the account suspended for everyone: with a
// max_bounce_rate or max_complaint_rate (an admin's herald.producers row), once
// herald.count_producers finds more of its messages of the last rate_window bounced
// for good, or drew a complaint, than the rate allows (with at least rate_min_sent
// sent), the producer is suspended for rate_window: its enqueues are refused (53400,
// with the counts), its queued messages wait out the suspension while other
// producers' go out, and a later count does not extend it. Too few sends suspend
// nobody; the producer can neither count nor lift its own suspension.
func TestProducerSuspendedForItsBounceRate(t *testing.T) {
	ctx, pool := setup(t)
	bulk := loginPool(t, pool, "herald_test_rate_bulk", "herald_producer")
	small := loginPool(t, pool, "herald_test_rate_small", "herald_producer")
	news := loginPool(t, pool, "herald_test_rate_news", "herald_producer")
	worker := loginPool(t, pool, "herald_test_rate_worker", "herald_worker")
	_, err := pool.Exec(ctx, `INSERT INTO herald.producers (producer, max_bounce_rate) VALUES ('herald_test_rate_bulk', 1.5)`)
	wantPgError(t, err, "23514", "")
	mustExec(t, pool, `INSERT INTO herald.producers (producer, max_bounce_rate, max_complaint_rate, rate_min_sent) VALUES
		('herald_test_rate_bulk', 0.1, NULL, 20), ('herald_test_rate_small', 0.1, NULL, 20), ('herald_test_rate_news', NULL, 0.01, 20)`)
	send := func(producer *pgxpool.Pool, prefix string, n int) []int64 {
		t.Helper()
		return scalar[[]int64](t, producer, `SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'email',
			'recipient', $1 || g || '@example.com', 'payload', '{"subject":"s","text":"t"}'::jsonb)) FROM generate_series(1, $2) g))`, prefix, n)
	}
	// deliver claims every queued e-mail and completes it, but fails those in bounced
	// with 550 5.1.1.
	deliver := func(bounced []int64) {
		t.Helper()
		mustExec(t, pool, `WITH c AS (SELECT m.id, m.lease_token FROM herald.claim_batch('w', 1000, channels => ARRAY['email']) AS m)
			SELECT herald.complete(array_agg(id), array_agg(lease_token)) FROM c WHERE NOT id = ANY (coalesce($1::bigint[], '{}'))`, bounced)
		if len(bounced) > 0 {
			mustExec(t, pool, `SELECT herald.fail(array_agg(id), array_agg(lease_token), array_agg('550 5.1.1 unknown user'::text),
				array_agg('permanent'::text), NULL, array_agg('550 5.1.1'::text)) FROM herald.messages WHERE id = ANY ($1)`, bounced)
		}
	}
	b := send(bulk, "b", 30)
	deliver(b[:5]) // 5 of 30 bounce: 17 %
	s := send(small, "s", 3)
	deliver(s[:2]) // 2 of 3: too few to judge
	n := send(news, "n", 20)
	deliver(nil)
	b = send(bulk, "c", 10) // queued when the suspension comes
	keyed := scalar[[]int64](t, bulk, `SELECT herald.enqueue_batch('[{"channel":"email","recipient":"k@example.com","payload":{"subject":"s","text":"t"},"ordering_key":"k"},
		{"channel":"email","recipient":"k@example.com","payload":{"subject":"s","text":"t"},"ordering_key":"k"}]')`) // queued, then held
	mustExec(t, pool, `SELECT herald.record_delivery_events('generic', jsonb_build_array(jsonb_build_object('event_id', 'c1',
		'message_id', $1::bigint, 'event', 'complained')))`, n[0]) // 1 of 20: 5 %
	if _, err := bulk.Exec(ctx, `SELECT herald.count_producers()`); err == nil {
		t.Fatal("a producer could count")
	}
	if got := scalar[int32](t, worker, `SELECT suspended FROM herald.count_producers()`); got != 2 {
		t.Fatalf("%d producers suspended, want 2 (bulk and news)", got)
	}
	rows := scalar[string](t, pool, `SELECT string_agg(producer || ' ' || sent_recent || '/' || bounced_recent || '/' || complained_recent
		|| ' ' || coalesce(round(extract(epoch FROM suspended_until - rated_at))::text, '-') || ' ' || coalesce(suspended_reason, '-'), '; ' ORDER BY producer)
		FROM herald.producers`)
	if want := "herald_test_rate_bulk 30/5/0 3600 5 of 30 messages in the last 01:00:00 bounced, over max_bounce_rate 0.1; " +
		"herald_test_rate_news 20/0/1 3600 1 of 20 messages in the last 01:00:00 drew a complaint, over max_complaint_rate 0.01; " +
		"herald_test_rate_small 3/2/0 - -"; rows != want {
		t.Fatalf("producers:\n%s\nwant\n%s", rows, want)
	}
	until := scalar[time.Time](t, pool, `SELECT suspended_until FROM herald.producers WHERE producer = 'herald_test_rate_bulk'`)
	if k := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE id = ANY ($1) AND status = 'queued' AND run_at = $2`, b, until); k != 10 {
		t.Fatalf("%d of bulk's 10 queued messages wait out the suspension", k)
	}
	if st := scalar[string](t, pool, `SELECT string_agg(status || ' ' || (run_at = $2), ', ' ORDER BY id) FROM herald.messages WHERE id = ANY ($1)`, keyed, until); st != "queued true, held true" {
		t.Fatalf("bulk's keyed messages: %s (a held one must wait too, once released)", st)
	}
	before := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`)
	for _, attack := range []string{
		`SELECT herald.enqueue('email', 'x@example.com', '{"subject":"s","text":"t"}')`,
		`SELECT herald.enqueue_batch('[{"channel":"email","recipient":"x@example.com","payload":{"subject":"s","text":"t"}}]')`,
	} {
		_, err := bulk.Exec(ctx, attack)
		wantPgError(t, err, "53400", "producer")
	}
	if got := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); got != before {
		t.Fatalf("a suspended producer's enqueues stored %d messages", got-before)
	}
	if _, err := bulk.Exec(ctx, `UPDATE herald.producers SET suspended_until = NULL WHERE producer = 'herald_test_rate_bulk'`); err == nil {
		t.Fatal("a producer lifted its own suspension")
	}
	// Others still send: small's and a new producer's messages are claimed, bulk's are not.
	other := send(small, "t", 1)
	got := scalar[[]int64](t, pool, `SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM herald.claim_batch('w', 100, channels => ARRAY['email'])`)
	if len(got) != 1 || got[0] != other[0] {
		t.Fatalf("claimed %v during bulk's suspension, want only %v", got, other)
	}
	// A later count (rates are recounted each 60th of the window), still over, does not
	// extend the suspension.
	mustExec(t, pool, `SELECT herald.count_producers(now() + interval '2 minutes')`)
	if at := scalar[time.Time](t, pool, `SELECT rated_at FROM herald.producers WHERE producer = 'herald_test_rate_bulk'`); !at.After(until.Add(-time.Hour)) {
		t.Fatalf("the later count did not count the rates again (rated at %v)", at)
	}
	if again := scalar[time.Time](t, pool, `SELECT suspended_until FROM herald.producers WHERE producer = 'herald_test_rate_bulk'`); !again.Equal(until) {
		t.Fatalf("a later count moved the end from %v to %v", until, again)
	}
	// An admin may end it early (herald.end_suspension): the producer is let in again
	// and its held-back messages are due at once. The producer may not.
	if _, err := bulk.Exec(ctx, `SELECT herald.end_suspension('herald_test_rate_bulk')`); err == nil {
		t.Fatal("a producer ended its own suspension")
	}
	if !scalar[bool](t, pool, `SELECT herald.end_suspension('herald_test_rate_bulk')`) {
		t.Fatal("end_suspension found no suspension")
	}
	if scalar[bool](t, pool, `SELECT herald.end_suspension('herald_test_rate_bulk')`) {
		t.Fatal("end_suspension of a producer no longer suspended said true")
	}
	if _, err := bulk.Exec(ctx, `SELECT herald.enqueue('email', 'x@example.com', '{"subject":"s","text":"t"}')`); err != nil {
		t.Fatalf("after the suspension: %v", err)
	}
	if due := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE id = ANY ($1) AND run_at <= now()`, append(b, keyed...)); due != 12 {
		t.Fatalf("%d of bulk's 12 held-back messages due after the end, want 12", due)
	}
}

// A producer cannot fill the queue without end: with a max_pending (an admin's
// herald.producers row), once herald.count_producers has counted its unfinished
// messages at or over it, its enqueues are refused on every path (53400 naming the
// producer, nothing stored) until a later count finds fewer; a repeat of an
// idempotency key is still answered with its id; other producers are untouched. Only
// workers and admins count, one at a time; a runner counts on its own.
func TestProducerQuota(t *testing.T) {
	ctx, pool := setup(t)
	mallory := loginPool(t, pool, "herald_test_flood_mallory", "herald_producer")
	alice := loginPool(t, pool, "herald_test_flood_alice", "herald_producer")
	worker := loginPool(t, pool, "herald_test_flood_worker", "herald_worker")
	_, err := pool.Exec(ctx, `INSERT INTO herald.producers (producer, max_pending) VALUES ('herald_test_flood_mallory', 0)`)
	wantPgError(t, err, "23514", "")
	mustExec(t, pool, `INSERT INTO herald.producers (producer, max_pending) VALUES ('herald_test_flood_mallory', 100)`)
	if n := scalar[int32](t, worker, `SELECT at_max_pending FROM herald.count_producers()`); n != 0 {
		t.Fatalf("count_producers with an empty queue: %d over", n)
	}
	keyed := scalar[int64](t, mallory, `SELECT herald.enqueue('email', 'k@example.com', '{"subject":"s","text":"t"}', idempotency_key => 'k')`)
	mustExec(t, mallory, `SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'email',
		'recipient', 'u' || g || '@example.com', 'payload', '{"subject":"s","text":"t"}'::jsonb)) FROM generate_series(1, 149) g))`)
	if _, err := mallory.Exec(ctx, `SELECT herald.count_producers()`); err == nil {
		t.Fatal("a producer could count")
	}
	if n := scalar[int32](t, worker, `SELECT at_max_pending FROM herald.count_producers()`); n != 1 {
		t.Fatalf("count_producers: %d producers over, want 1", n)
	}
	if p := scalar[int64](t, pool, `SELECT pending FROM herald.producers WHERE producer = 'herald_test_flood_mallory'`); p != 150 {
		t.Fatalf("pending %d, want 150", p)
	}
	before := scalar[int64](t, pool, `SELECT (SELECT count(*) FROM herald.messages) + (SELECT count(*) FROM herald.log_statements)`)
	for _, attack := range []string{
		`SELECT herald.enqueue('email', 'm@example.com', '{"subject":"s","text":"t"}')`,
		`SELECT herald.enqueue_batch('[{"channel":"email","recipient":"m@example.com","payload":{"subject":"s","text":"t"}}]')`,
		`SELECT herald.enqueue_many(ARRAY['email'], ARRAY['m@example.com'], ARRAY['{"subject":"s","text":"t"}']::jsonb[])`,
		`SELECT herald.enqueue_batch('[{"channel":"email","recipient":"k@example.com","payload":{"subject":"s","text":"t"},"idempotency_key":"k"},
			{"channel":"email","recipient":"m@example.com","payload":{"subject":"s","text":"t"}}]')`,
	} {
		_, err := mallory.Exec(ctx, attack)
		wantPgError(t, err, "53400", "producer")
	}
	if got := scalar[int64](t, pool, `SELECT (SELECT count(*) FROM herald.messages) + (SELECT count(*) FROM herald.log_statements)`); got != before {
		t.Fatalf("refused enqueues stored %d rows", got-before)
	}
	if id := scalar[int64](t, mallory, `SELECT herald.enqueue('email', 'k@example.com', '{"subject":"s","text":"t"}', idempotency_key => 'k')`); id != keyed {
		t.Fatalf("a repeat over the quota: %d, want %d", id, keyed)
	}
	if _, err := alice.Exec(ctx, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}')`); err != nil {
		t.Fatalf("another producer: %v", err)
	}
	// Another caller counting meanwhile: this one does not wait for it.
	tx, err := worker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var first int64
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM herald.count_producers()`).Scan(&first); err != nil || first != 1 {
		t.Fatalf("first count: %d rows %v", first, err)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.count_producers()`); n != 0 {
		t.Fatalf("a count while another runs: %d rows, want none", n)
	}
	tx.Rollback(ctx)
	// The backlog goes out; the next count lets the producer in again.
	mustExec(t, pool, `WITH c AS (SELECT id, lease_token FROM herald.claim_batch('w', 60, channels => ARRAY['email']))
		SELECT herald.complete(array_agg(id), array_agg(lease_token)) FROM c`)
	if n := scalar[int32](t, worker, `SELECT at_max_pending FROM herald.count_producers()`); n != 0 {
		t.Fatalf("count after the drain: %d over", n)
	}
	if _, err := mallory.Exec(ctx, `SELECT herald.enqueue('email', 'm@example.com', '{"subject":"s","text":"t"}')`); err != nil {
		t.Fatalf("below max_pending again: %v", err)
	}
}

// Attack: a stolen producer credential, or a runaway loop, sending as fast as it can.
// max_pending bounds the backlog, not the spend: messages that go out leave room for
// more. A send_limit (10 a day here) bounds what the producer enqueues per window on
// every path together, SQL and HTTP (53400 producer; HTTP 429 quota_exceeded with
// Retry-After, the wait for one more: a tenth of a day); a refused call stores nothing;
// repeats and suppressed messages spend nothing; other producers are untouched; twelve
// connections at once against a limit of 5 store exactly 5; the budget refills.
func TestSendLimitBoundsWhatAProducerSpends(t *testing.T) {
	ctx, pool := setup(t)
	mallory := loginPool(t, pool, "herald_test_spend_mallory", "herald_producer")
	alice := loginPool(t, pool, "herald_test_spend_alice", "herald_producer")
	role := loginPool(t, pool, "herald_test_intake", "herald_intake")
	srv := httptest.NewServer(intake.Handler(role, intake.Config{Tokens: []intake.Token{{Name: "stolen", Secret: "tok-stolen"}}}))
	defer srv.Close()
	mustExec(t, pool, `INSERT INTO herald.producers (producer, send_limit, send_window) VALUES
		('herald_test_spend_mallory', 10, '1 day'), ('intake:stolen', 10, '1 day')`)
	mustExec(t, pool, `SELECT herald.suppress('email', ARRAY['gone@example.com'])`)
	const msg = `'{"subject":"s","text":"t"}'`
	// Eight from eight connections at once, then a repeat and a suppressed one (free).
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := mallory.Exec(ctx, fmt.Sprintf(`SELECT herald.enqueue('email', 'u%d@example.com', %s, idempotency_key => 'k%d')`, i, msg, i)); err != nil {
				t.Errorf("enqueue %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	mustExec(t, mallory, `SELECT herald.enqueue('email', 'u0@example.com', `+msg+`, idempotency_key => 'k0')`)
	mustExec(t, mallory, `SELECT herald.enqueue('email', 'gone@example.com', `+msg+`)`)
	before := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`)
	_, err := mallory.Exec(ctx, `SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'email',
		'recipient', 'b' || g || '@example.com', 'payload', '{"subject":"s","text":"t"}'::jsonb)) FROM generate_series(1, 3) g))`)
	if e := wantPgError(t, err, "53400", "producer"); !strings.Contains(e.Message, "send_limit") {
		t.Fatalf("refusal: %s", e.Message)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != before {
		t.Fatalf("a refused batch stored %d messages", n-before)
	}
	mustExec(t, mallory, `SELECT herald.enqueue_many(ARRAY['email', 'email'], ARRAY['c1@example.com', 'c2@example.com'],
		ARRAY[`+msg+`, `+msg+`]::jsonb[])`)
	_, err = mallory.Exec(ctx, `SELECT herald.enqueue('sms', '+14155550100', '{"text":"t"}')`)
	wantPgError(t, err, "53400", "producer")
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE producer = 'herald_test_spend_mallory' AND status = 'queued'`); n != 10 {
		t.Fatalf("%d of mallory's messages queued, want the limit, 10", n)
	}
	wait := scalar[int32](t, mallory, `SELECT herald.producer_wait()`)
	if wait < 8600 || wait > 8640 {
		t.Fatalf("producer_wait %d s, want about a tenth of a day (8640)", wait)
	}
	if _, err := alice.Exec(ctx, `SELECT herald.enqueue('email', 'a@example.com', `+msg+`)`); err != nil {
		t.Fatalf("another producer: %v", err)
	}
	// The stolen intake token: 10, then 429 with the wait.
	auth := map[string]string{"Authorization": "Bearer tok-stolen"}
	batch := "[" + strings.TrimSuffix(strings.Repeat(goodEmail+",", 10), ",") + "]"
	if code := do(t, "POST", srv.URL+"/v1/messages/batch", "application/json", batch, auth, nil); code != 202 {
		t.Fatalf("the token's first 10: %d", code)
	}
	var e apiError
	code, h := doHeader(t, "POST", srv.URL+"/v1/messages", "application/json", goodEmail, auth, &e)
	if ra, _ := strconv.Atoi(h.Get("Retry-After")); code != 429 || e.Error.Code != "quota_exceeded" || ra < 8600 || ra > 8640 {
		t.Fatalf("the 11th over HTTP: %d %+v Retry-After %q", code, e.Error, h.Get("Retry-After"))
	}
	// The budget refills: a tenth of a day later, one more (the admin's clock shows it).
	mustExec(t, pool, `UPDATE herald.producer_buckets SET clear_at = clear_at - interval '2 hours 25 minutes'
		WHERE producer = 'herald_test_spend_mallory'`)
	if _, err := mallory.Exec(ctx, `SELECT herald.enqueue('email', 'later@example.com', `+msg+`)`); err != nil {
		t.Fatalf("after the refill: %v", err)
	}
	// Twelve connections at once against a limit of 5: exactly 5 stored.
	burst := loginPool(t, pool, "herald_test_spend_burst", "herald_producer")
	mustExec(t, pool, `INSERT INTO herald.producers (producer, send_limit) VALUES ('herald_test_spend_burst', 5)`)
	var refused atomic.Int32
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := burst.Exec(ctx, fmt.Sprintf(`SELECT herald.enqueue('email', 'v%d@example.com', %s)`, i, msg))
			if err != nil {
				refused.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE producer = 'herald_test_spend_burst'`); n != 5 || refused.Load() != 7 {
		t.Fatalf("%d stored and %d refused at once, want 5 and 7", n, refused.Load())
	}
}

// Budgets count at the real time, not at the enqueue transaction's start: a producer
// enqueuing in a transaction older than its window (a long business transaction,
// here 1.2 s against 1-second windows), after another of its enqueues spent from the
// same producer and recipient budgets, is not refused while both have room (before,
// its stale now() made the budgets look a second overdrawn: 53400).
func TestBudgetsCountAtTheRealTime(t *testing.T) {
	ctx, pool := setup(t)
	slow := loginPool(t, pool, "herald_test_budget_slow", "herald_producer")
	mustExec(t, pool, `INSERT INTO herald.producers (producer, send_limit, send_window) VALUES ('herald_test_budget_slow', 10, '1 second')`)
	mustExec(t, pool, `UPDATE herald.channels SET recipient_limit = 10, recipient_window = '1 second' WHERE name = 'email'`)
	const enqueue = `SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"s","text":"t"}')`
	tx, err := slow.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// The transaction's work: it ages its now() past the windows (the sleep is the
	// long transaction itself, not a wait for another party).
	if _, err := tx.Exec(ctx, `SELECT pg_sleep(1.2)`); err != nil {
		t.Fatal(err)
	}
	mustExec(t, slow, enqueue) // another enqueue of the producer, to the same recipient, meanwhile
	if _, err := tx.Exec(ctx, enqueue); err != nil {
		t.Fatalf("an enqueue in a transaction older than the window, with 8 of 10 left: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countWhere(t, pool, `producer = 'herald_test_budget_slow'`); n != 2 {
		t.Fatalf("%d stored, want 2", n)
	}
}

// A producer cannot run up the bill with texts to premium-rate numbers (SMS pumping)
// on a channel an admin limited to some countries, nor send a channel's signed
// webhooks to a host outside its receivers: herald.channels.recipient_prefixes,
// checked on every enqueue path (42501 naming the recipient, nothing stored). A host
// name cannot be extended past a listed prefix, and the prefixes' own form is checked.
func TestChannelSendsOnlyWhereAllowed(t *testing.T) {
	ctx, pool := setup(t)
	mallory := loginPool(t, pool, "herald_test_pumping_mallory", "herald_producer")
	before := scalar[int64](t, mallory, `SELECT herald.enqueue('sms', '+88213000001', '{"text":"t"}')`)
	mustExec(t, pool, `UPDATE herald.channels SET recipient_prefixes = '{+1,+44}' WHERE name = 'sms'`)
	// What was stored before the list goes as docs/security.md says.
	mustExec(t, pool, `SELECT herald.cancel(id) FROM herald.messages WHERE channel = 'sms' AND status IN ('queued', 'held')
		AND NOT recipient ^@ ANY ('{+1,+44}')`)
	if s := scalar[string](t, pool, `SELECT status FROM herald.messages WHERE id = $1`, before); s != "cancelled" {
		t.Fatalf("the message stored before the list: %s", s)
	}
	mustExec(t, pool, `DELETE FROM herald.messages; DELETE FROM herald.log_statements`)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, recipient_prefixes) VALUES ('hooks', 'webhook', '{https://hooks.example.com/}')`)
	sms := `{"text":"Your code is 123456"}`
	for _, attack := range []struct{ sql, field string }{
		{`SELECT herald.enqueue('sms', '+88213000000', '` + sms + `')`, "recipient"},
		{`SELECT herald.enqueue('sms', '+2693311234', '` + sms + `')`, "recipient"},
		{`SELECT herald.enqueue_batch('[{"channel":"sms","recipient":"+14155550100","payload":` + sms + `},
			{"channel":"sms","recipient":"+37281234567","payload":` + sms + `}]')`, "messages[1].recipient"},
		{`SELECT herald.enqueue_many(ARRAY['sms', 'sms'], ARRAY['+4412345678', '+8810000000'],
			ARRAY['` + sms + `', '` + sms + `']::jsonb[])`, "messages[1].recipient"},
		{`SELECT herald.enqueue('hooks', 'https://hooks.example.com.evil.example/paid', '{}')`, "recipient"},
		{`SELECT herald.enqueue('hooks', 'http://hooks.example.com/paid', '{}')`, "recipient"},
	} {
		_, err := mallory.Exec(ctx, attack.sql)
		wantPgError(t, err, "42501", attack.field)
	}
	if n := scalar[int64](t, pool, `SELECT (SELECT count(*) FROM herald.messages) + (SELECT count(*) FROM herald.log_statements)`); n != 0 {
		t.Fatalf("refused enqueues left %d messages and log rows", n)
	}
	for _, ok := range []string{`SELECT herald.enqueue('sms', '+14155550100', '` + sms + `')`,
		`SELECT herald.enqueue('sms', '+442071838750', '` + sms + `')`,
		`SELECT herald.enqueue('hooks', 'https://hooks.example.com/orders?id=7', '{}')`} {
		if _, err := mallory.Exec(ctx, ok); err != nil {
			t.Fatalf("%s: %v", ok, err)
		}
	}
	// The prefixes' form: E.164 prefixes for sms, URL prefixes up to a '/' for webhooks,
	// none for e-mail; each refused with the table's CHECK.
	for _, bad := range []string{
		`UPDATE herald.channels SET recipient_prefixes = '{+0}' WHERE name = 'sms'`,
		`UPDATE herald.channels SET recipient_prefixes = '{44}' WHERE name = 'sms'`,
		`UPDATE herald.channels SET recipient_prefixes = '{}' WHERE name = 'sms'`,
		`UPDATE herald.channels SET recipient_prefixes = '{+1,NULL}' WHERE name = 'sms'`,
		`UPDATE herald.channels SET recipient_prefixes = '{https://hooks.example.com}' WHERE name = 'hooks'`,
		`UPDATE herald.channels SET recipient_prefixes = '{https://hooks.example.com.}' WHERE name = 'hooks'`,
		`UPDATE herald.channels SET recipient_prefixes = '{HTTPS://Hooks.example.com/}' WHERE name = 'hooks'`,
		`UPDATE herald.channels SET recipient_prefixes = '{@example.com}' WHERE name = 'email'`,
	} {
		_, err := pool.Exec(ctx, bad)
		wantPgError(t, err, "23514", "")
	}
}

// A producer cannot steer the provider behind the runner with a header: SendGrid's
// X-SMTPAPI would fan one message out to 10,000 addresses herald never checked and
// skip the suppression lists (bypass_list_management), Mandrill's X-MC-BccAddress
// copies every mail elsewhere, SES's X-SES-SOURCE-ARN sends as another identity; nor
// forge the trace and authentication headers receivers read (a replayed
// DKIM-Signature, Authentication-Results: dmarc=pass). Refused in any letter case on
// every enqueue path, with nothing stored; headers that only look alike pass.
func TestProviderControlHeadersAreRefused(t *testing.T) {
	ctx, pool := setup(t)
	mallory := loginPool(t, pool, "herald_test_header_mallory", "herald_producer")
	fanOut := `{"to":["a@victim.example","b@victim.example"],"filters":{"bypass_list_management":{"settings":{"enable":1}}}}`
	for _, h := range []string{"X-SMTPAPI", "x-smtpapi", "X-SG-EID", "X-MC-BccAddress", "X-Mailgun-Recipient-Variables",
		"X-SES-SOURCE-ARN", "x-ses-configuration-set", "X-MSYS-API", "X-PM-Message-Stream", "X-MJ-TemplateID",
		"X-Mailjet-Campaign", "X-Mailin-custom", "X-MS-Exchange-Organization-BypassClutter", "DKIM-Signature",
		"DomainKey-Signature", "ARC-Seal", "ARC-Authentication-Results", "Authentication-Results", "Received",
		"Received-SPF", "Delivered-To"} {
		headers := fmt.Sprintf(`{%q: %q}`, h, fanOut)
		for _, attack := range []struct{ sql, field string }{
			{`SELECT herald.enqueue('email', 'm@example.com', jsonb_build_object('subject', 's', 'text', 't', 'headers', $1::jsonb))`,
				"payload.headers." + h},
			{`SELECT herald.enqueue_batch(jsonb_build_array(jsonb_build_object('channel', 'email', 'recipient', 'm@example.com',
				'payload', jsonb_build_object('subject', 's', 'text', 't', 'headers', $1::jsonb))))`, "messages[0].payload.headers." + h},
			{`SELECT herald.enqueue_many(ARRAY['email'], ARRAY['m@example.com'],
				ARRAY[jsonb_build_object('subject', 's', 'text', 't', 'headers', $1::jsonb)])`, "messages[0].payload.headers." + h},
		} {
			_, err := mallory.Exec(ctx, attack.sql, headers)
			wantPgError(t, err, "22V03", attack.field)
		}
	}
	if n := scalar[int64](t, pool, `SELECT (SELECT count(*) FROM herald.messages) + (SELECT count(*) FROM herald.log_statements)`); n != 0 {
		t.Fatalf("refused headers left %d messages and log rows", n)
	}
	alike := `{"X-Campaign": "spring", "X-SMTPAPI-Note": "n", "X-Mailgunner": "m", "X-PMS": "p", "List-Unsubscribe": "<https://example.com/u>"}`
	if _, err := mallory.Exec(ctx, `SELECT herald.enqueue('email', 'm@example.com', jsonb_build_object('subject', 's', 'text', 't', 'headers', $1::jsonb))`,
		alike); err != nil {
		t.Fatalf("ordinary headers: %v", err)
	}
}

// herald._mailbox and the runner's parser (net/mail, which go-mail and the SendGrid
// sender use) must read the same address from every from that SQL accepts: a
// mailbox SQL judged by one address and the runner sent from another would undo the
// senders check. Built from the pieces that make parsers disagree.
func TestMailboxAgreesWithTheRunnersParser(t *testing.T) {
	ctx, pool := setup(t)
	names := []string{"", "Ana", "Ana Lima", "J. Doe", "O'Brien", "José Ñ", "=?utf-8?q?CEO?=", "\"Ana\"", "Ana (x)", "a@b.example",
		"Doe, John", "Ana;", "Ana:", "[Ana]", "Ana\\", " Ana", "Ana ", "Ana\t", "\u202eanA", "a+b=c", "<Ana>", "Ana\u00a0Lima"}
	addrs := []string{"ana@example.com", "ANA@Example.COM", "a.b@example.com", "a..b@example.com", "\"a b\"@example.com",
		"a@[127.0.0.1]", "a@b@example.com", "a@example.com.", "a@-example.com", "a@example.com (x)", "<a@example.com>", "a"}
	var corpus []string
	for _, a := range addrs {
		corpus = append(corpus, a)
		for _, n := range names {
			for _, sep := range []string{" ", "", "  "} {
				corpus = append(corpus, n+sep+"<"+a+">", n+sep+"<"+a+"> ", n+sep+"<"+a+">, b@example.com")
			}
		}
	}
	rows, err := pool.Query(ctx, `SELECT v, herald._mailbox(v) FROM unnest($1::text[]) AS v`, corpus)
	if err != nil {
		t.Fatal(err)
	}
	accepted := 0
	for rows.Next() {
		var v string
		var addr *string
		if err := rows.Scan(&v, &addr); err != nil {
			t.Fatal(err)
		}
		if addr == nil {
			continue
		}
		accepted++
		parsed, err := mail.ParseAddress(v)
		if err != nil || parsed.Address != *addr {
			t.Errorf("%q: SQL reads %q, net/mail %v %v", v, *addr, parsed, err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("SQL accepted %d of %d", accepted, len(corpus))
	if accepted < 20 || accepted > len(corpus)/2 {
		t.Fatalf("SQL accepted %d of %d: the corpus should hold both kinds", accepted, len(corpus))
	}
}

// A channel with producers is open to those producers only: a webhook receiver that
// trusts its channel's signature trusts them, not every service that may enqueue.
// Another producer is refused on every path (42501 channel), and what it can still
// send to the receiver through an open channel is signed with that channel's secret,
// which the receiver refuses.
func TestChannelIsOpenOnlyToItsProducers(t *testing.T) {
	ctx, pool := setup(t)
	alice := loginPool(t, pool, "herald_test_alice", "herald_producer")
	mallory := loginPool(t, pool, "herald_test_mallory", "herald_producer")
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, producers) VALUES ('ledger', 'webhook', '{herald_test_alice}'), ('hooks', 'webhook', NULL)`)
	ledgerSecret, hooksSecret := "whsec_"+strings.Repeat("TGVkZ2Vy", 4), "whsec_"+strings.Repeat("SG9va3Nz", 4)
	var trusted []string
	var mu sync.Mutex
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify([]string{ledgerSecret}, r.Header, body, 5*time.Minute, time.Now()); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		trusted = append(trusted, string(body))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	url := strings.Replace(receiver.URL, "127.0.0.1", "localhost", 1) + "/ledger"
	const paid = `{"event":"paid","order":42}`

	for _, attack := range []struct{ sql, field string }{
		{`SELECT herald.enqueue('ledger', $1, '` + paid + `')`, "channel"},
		{`SELECT herald.enqueue_batch(jsonb_build_array(jsonb_build_object('channel', 'hooks', 'recipient', $1::text, 'payload', '{}'::jsonb),
			jsonb_build_object('channel', 'ledger', 'recipient', $1::text, 'payload', '` + paid + `'::jsonb)))`, "messages[1].channel"},
		{`SELECT herald.enqueue_many(ARRAY['ledger'], ARRAY[$1::text], ARRAY['` + paid + `']::jsonb[])`, "messages[0].channel"},
	} {
		_, err := mallory.Exec(ctx, attack.sql, url)
		wantPgError(t, err, "42501", attack.field)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 0 {
		t.Fatalf("refused enqueues stored %d messages", n)
	}
	mine := scalar[int64](t, alice, `SELECT herald.enqueue('ledger', $1, '`+paid+`')`, url)
	forged := scalar[int64](t, mallory, `SELECT herald.enqueue('hooks', $1, '`+paid+`')`, url)

	// Each channel's runner signs with the channel's secret.
	loopback := egress.Policy{Allow: []string{"127.0.0.1/32", "::1/128"}}
	for id, secret := range map[int64]string{mine: ledgerSecret, forged: hooksSecret} {
		s, err := webhook.New(webhook.Config{IDKey: idtag.StaticKey([]byte("a webhook-id key")), Secrets: []string{secret}, Egress: loopback})
		if err != nil {
			t.Fatal(err)
		}
		var m sender.Message
		if err := pool.QueryRow(ctx, `SELECT id, channel, recipient, payload FROM herald.messages WHERE id = $1`, id).
			Scan(&m.ID, &m.Channel, &m.Recipient, &m.Payload); err != nil {
			t.Fatal(err)
		}
		m.Attempt = 1
		_, err = s.Send(ctx, m)
		if (id == mine) != (err == nil) {
			t.Fatalf("message %d (ledger's: %v): send error %v", id, id == mine, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(trusted) != 1 || !strings.Contains(trusted[0], fmt.Sprintf(`"id":%d`, mine)) {
		t.Fatalf("the ledger receiver trusted %q, want only alice's message %d", trusted, mine)
	}
}
