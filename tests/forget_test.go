// A person's right to erasure: herald.forget, and what must not remain readable.
package tests

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// After herald.forget, the address (in any letter case, with any +tag) is nowhere in
// herald's tables but the suppression list, which keeps it from being sent to again:
// not in a message, a copy, a delivery event, a log event's detail (the dead
// message's error text named it), a consumer's set-aside event or a recipient budget.
// Its unsent message is cancelled and the next message of its ordering key goes on;
// a message being sent is left and counted, and a second call once it is sent erases
// it too. Other recipients' messages stay, less the address in their cc and bcc.
func TestForgetLeavesNoTrace(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `UPDATE herald.channels SET recipient_limit = 100 WHERE name = 'email'`)
	enq := func(to, payload string, args ...any) int64 {
		t.Helper()
		q := `SELECT herald.enqueue('email', $1, $2::jsonb)`
		if len(args) > 0 {
			q = `SELECT herald.enqueue('email', $1, $2::jsonb, ordering_key => $3)`
		}
		return scalar[int64](t, pool, q, append([]any{to, payload}, args...)...)
	}
	const body = `{"subject":"Hi","text":"Hello"}`
	// Sent, with a receipt naming her; dead, with an error naming her; being sent.
	sent := enq("ana@example.com", body)
	mustExec(t, pool, `SELECT herald.complete(id, lease_token, 'pm-ana') FROM herald.claim_batch('w', 10)`)
	mustExec(t, pool, `SELECT herald.record_delivery_events('generic', jsonb_build_array(jsonb_build_object(
		'event_id', 'd1', 'message_id', $1::bigint, 'event', 'delivered', 'reason', '250 ok for ana@example.com')))`, sent)
	mustExec(t, pool, `SELECT herald.log_sequence()`)
	mustExec(t, pool, `SELECT herald.create_consumer_group('audit', 1, 'latest')`)
	dead := enq("Ana@Example.com", body)
	mustExec(t, pool, `SELECT herald.fail(id, lease_token, '550 5.1.1 <ana@example.com>: no such user', 'permanent', error_code => '550')
		FROM herald.claim_batch('w', 10)`)
	mustExec(t, pool, `SELECT herald.log_sequence()`)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var offset int64
	if err := tx.QueryRow(ctx, `SELECT "offset" FROM herald.log_read('audit', 0, 1)`).Scan(&offset); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT herald.log_dead_letter('audit', 0, $1, 'could not mail ana@example.com')`, offset); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	inFlight := enq("ana+news@example.com", body)
	mustExec(t, pool, `SELECT count(*) FROM herald.claim_batch('w', 10)`)
	// Others' mail that copied her, whose failures name her: Eve's died of her copy's
	// refusal (its dead event's detail, set aside by the audit group, says so too);
	// Fay's waits to be tried again.
	eve := enq("eve@example.com", `{"subject":"Hi","text":"Hello","cc":["ana@example.com"]}`)
	mustExec(t, pool, `SELECT herald.fail(id, lease_token, 'SMTP RCPT <Ana@example.com>: 550 5.7.1 ana@example.com. is blocked', 'permanent',
		error_code => '550 5.7.1') FROM herald.claim_batch('w', 10)`)
	fay := enq("fay@example.com", `{"subject":"Hi","text":"Hello","bcc":["ana+x@example.com"]}`)
	mustExec(t, pool, `SELECT herald.fail(id, lease_token, 'copy ana+x@example.com refused for now: 452 4.2.2 <ana+x@example.com> full; xana@example.com fine',
		'transient', error_code => '452 4.2.2') FROM herald.claim_batch('w', 10)`)
	mustExec(t, pool, `SELECT herald.log_sequence()`)
	// The audit group acknowledges what comes before Eve's dead event and sets it aside.
	mustExec(t, pool, `SELECT herald.log_ack('audit', 0, l."offset" - 1), herald.log_dead_letter('audit', 0, l."offset", 'no such copy: ana@example.com')
		FROM herald.log l WHERE l.message_id = $1 AND l.kind = 'dead'`, eve)
	// Unsent: hers heads an ordering key, Bo's waits behind it; Cy's copies her.
	queued := enq("ana@example.com", body, "k1")
	behind := enq("bo@example.com", body, "k1")
	copied := enq("cy@example.com", `{"subject":"Hi","text":"Hello","cc":["ana+x@example.com","di@example.com"],"bcc":["ANA@example.com"]}`)
	mustExec(t, pool, `SELECT herald.record_delivery_events('generic', jsonb_build_array(jsonb_build_object(
		'event_id', 'c1', 'message_id', $1::bigint, 'recipient', 'ana+x@example.com', 'event', 'bounced', 'type', 'soft')))`, copied)

	// She asked to be unsubscribed, and then to be forgotten.
	mustExec(t, pool, `SELECT herald.suppress('email', ARRAY['ana@example.com'], 'unsubscribed')`)

	var got [6]int
	forget := func() [6]int {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT * FROM herald.forget('email', 'ANA@example.com')`).
			Scan(&got[0], &got[1], &got[2], &got[3], &got[4], &got[5]); err != nil {
			t.Fatal(err)
		}
		return got
	}
	// messages (sent, dead, the queued one), copies (Cy's, Eve's, Fay's), delivery
	// events (her receipt and her copy's bounce), log events (accepted, sent and
	// delivered; accepted and dead; accepted and cancelled), in flight, texts (Eve's
	// and Fay's errors, Eve's dead event, its set-aside copy).
	if got := forget(); got != [6]int{3, 3, 2, 7, 1, 4} {
		t.Fatalf("forget = %v, want [3 3 2 7 1 4]", got)
	}
	if s := scalar[string](t, pool, `SELECT string_agg(id || ' ' || status, ', ' ORDER BY id) FROM herald.messages`); s != fmt.Sprintf(
		"%d processing, %d dead, %d queued, %d queued, %d queued", inFlight, eve, fay, behind, copied) {
		t.Fatalf("messages left: %s", s)
	}
	if s := scalar[string](t, pool, `SELECT last_error FROM herald.messages WHERE id = $1`, fay); s !=
		"copy [forgotten] refused for now: 452 4.2.2 <[forgotten]> full; xana@example.com fine" {
		t.Fatalf("Fay's error after forget: %s", s)
	}
	if cc := scalar[string](t, pool, `SELECT payload::text FROM herald.messages WHERE id = $1`, copied); cc != `{"cc": ["di@example.com"], "text": "Hello", "subject": "Hi"}` {
		t.Fatalf("Cy's message after forget: %s", cc)
	}
	mustExec(t, pool, `SELECT herald.log_sequence()`)
	if k := scalar[string](t, pool, `SELECT string_agg(kind, ',' ORDER BY "offset") FROM herald.log WHERE message_id = $1`, queued); k != "accepted,cancelled" {
		t.Fatalf("the unsent message's events: %s", k)
	}

	// Once the message in flight is sent, a second call erases it too.
	mustExec(t, pool, `SELECT herald.complete(id, lease_token) FROM herald.messages WHERE id = $1`, inFlight)
	if got := forget(); got[0] != 1 || got[4] != 0 {
		t.Fatalf("the second forget = %v", got)
	}
	mustExec(t, pool, `SELECT herald.log_sequence()`)

	// Attack: read every table of the schema for her address.
	tables, err := pool.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'herald' AND c.relkind = 'r' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(tables, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range append(names, "log") {
		n := scalar[int64](t, pool, `SELECT count(*) FROM herald.`+pgx.Identifier{table}.Sanitize()+` x WHERE x::text ~* '(^|[^a-z])ana(\+[a-z]*)?@example\.com'`)
		want := int64(0)
		if table == "suppressions" {
			want = 1 // her unsubscribe: it keeps her from being mailed again
		}
		if n != want {
			t.Errorf("herald.%s still holds the address in %d rows", table, n)
		}
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.log WHERE message_id = $1 AND detail <> '{}'`, dead); n != 0 {
		t.Fatal("the dead message's log events kept their detail")
	}
}

// Bad arguments are refused with the field named and change nothing; a producer may
// not erase anyone (it is the admin's act).
func TestForgetArguments(t *testing.T) {
	ctx, pool := setup(t)
	id := enqueueNow(t, pool, "ana@example.com")
	for _, c := range []struct{ kind, recipient, field string }{
		{"mail", "ana@example.com", "kind"}, {"email", "", "recipient"},
	} {
		_, err := pool.Exec(ctx, `SELECT * FROM herald.forget($1, $2)`, c.kind, c.recipient)
		wantPgError(t, err, "22V12", c.field)
	}
	producer := loginPool(t, pool, "herald_test_forget_producer", "herald_producer")
	_, err := producer.Exec(ctx, `SELECT * FROM herald.forget('email', 'ana@example.com')`)
	wantPgError(t, err, "42501", "")
	if s := scalar[string](t, pool, `SELECT status FROM herald.messages WHERE id = $1`, id); s != "queued" {
		t.Fatalf("after refused calls the message is %s", s)
	}
}

// herald.subject_access answers a person's request for what herald holds about them
// (right of access): every message to their mailbox (any case, any +tag; with the time
// zone its producer gave) and every e-mail that copied them, with its state and
// payload, oldest first; not a lookalike address's; nothing once they are forgotten.
// Only an admin may ask.
func TestSubjectAccessListsWhatHeraldHolds(t *testing.T) {
	ctx, pool := setup(t)
	to := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'ANA+news@example.com', '{"subject":"Weekly","text":"t"}',
		recipient_zone => 'Europe/Lisbon')`)
	copied := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'cy@example.com', '{"subject":"Team","text":"t","bcc":["ana@example.com"]}')`)
	mustExec(t, pool, `SELECT herald.enqueue('email', 'xana@example.com', '{"subject":"Not hers","text":"t"}')`)
	mustExec(t, pool, `SELECT herald.enqueue('sms', '+14155550100', '{"text":"Not an e-mail"}')`)
	mustExec(t, pool, `SELECT herald.suppress('email', ARRAY['ana@example.com'], 'unsubscribed')`)
	got := scalar[string](t, pool, `SELECT string_agg(concat_ws(' ', message_id, role, status, recipient_zone, payload->>'subject', suppressed), '; ')
		FROM herald.subject_access('email', 'Ana@Example.com')`)
	if want := fmt.Sprintf("%d to queued Europe/Lisbon Weekly t; %d copy queued Team t", to, copied); got != want {
		t.Fatalf("subject access: %s\nwant %s", got, want)
	}
	producer := loginPool(t, pool, "herald_test_access_producer", "herald_producer")
	_, err := producer.Exec(ctx, `SELECT * FROM herald.subject_access('email', 'ana@example.com')`)
	wantPgError(t, err, "42501", "")
	mustExec(t, pool, `SELECT * FROM herald.forget('email', 'ana@example.com')`)
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.subject_access('email', 'ana@example.com')`); n != 0 {
		t.Fatalf("%d messages listed after forget", n)
	}
}
