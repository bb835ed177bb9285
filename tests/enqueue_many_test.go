package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald/herald/runner/intake"
)

func ptr[T any](v T) *T { return &v }

// The Go bulk path (intake.EnqueueMany → herald.enqueue_many) stores exactly what
// enqueue_batch stores for the same messages, in input order, with their 'accepted'
// events; it honours idempotency keys and runs inside the caller's transaction.
func TestEnqueueMany(t *testing.T) {
	ctx, pool := setup(t)
	grantPriority(t, pool, "", -7)
	runAt := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	msgs := []intake.Message{
		{Channel: "email", Recipient: "a@example.com", Payload: json.RawMessage(`{"subject":"s","html":"<p>h</p>"}`),
			Priority: ptr(-7), MaxAttempts: ptr(3), Metadata: json.RawMessage(`{"k":"v"}`), OrderingKey: ptr("o1")},
		{Channel: "sms", Recipient: "+14155550100", Payload: json.RawMessage(`{"body":"b"}`), RunAt: &runAt},
		{Channel: "email", Recipient: "b@example.com", Payload: json.RawMessage(`{"subject":"s","text":"t"}`), IdempotencyKey: ptr("k1")},
	}
	batch := `[{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","html":"<p>h</p>"},"priority":-7,"max_attempts":3,"metadata":{"k":"v"},"ordering_key":"o1"},
		{"channel":"sms","recipient":"+14155550100","payload":{"body":"b"},"run_at":"` + runAt.Format(time.RFC3339Nano) + `"},
		{"channel":"email","recipient":"b@example.com","payload":{"subject":"s","text":"t"},"idempotency_key":"k2"}]`

	// A rolled-back transaction stores nothing.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) // releases the connection if a check below fails first
	if _, err := intake.EnqueueMany(ctx, tx, msgs); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 0 {
		t.Fatalf("a rolled-back EnqueueMany left %d messages", n)
	}

	many, err := intake.EnqueueMany(ctx, pool, msgs)
	if err != nil {
		t.Fatal(err)
	}
	row := func(id int64) string {
		// run_at: the explicit one exactly; a default (the call's now) as "now".
		return scalar[string](t, pool, `SELECT concat_ws('|', channel, recipient, payload, metadata, priority,
			CASE WHEN run_at = created_at THEN 'now' ELSE run_at::text END, ordering_key, max_attempts, status)
			FROM herald.messages WHERE id = $1`, id)
	}
	stored := make([]string, len(many))
	for i := range many {
		stored[i] = row(many[i])
	}
	// The same ordering key again would be held behind the first: end those first.
	mustExec(t, pool, `SELECT herald.cancel(id) FROM unnest($1::bigint[]) AS id`, many)
	var fromBatch []int64
	if err := pool.QueryRow(ctx, `SELECT herald.enqueue_batch($1)`, batch).Scan(&fromBatch); err != nil {
		t.Fatal(err)
	}
	for i := range many {
		if stored[i] != row(fromBatch[i]) {
			t.Fatalf("message %d: EnqueueMany stored %q, enqueue_batch %q", i, stored[i], row(fromBatch[i]))
		}
		if i > 0 && many[i] <= many[i-1] {
			t.Fatalf("ids not in input order: %v", many)
		}
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.log_statements p, unnest(p.message_ids) AS id
		WHERE p.kind = 'accepted' AND id = ANY($1)`, many); n != 3 {
		t.Fatalf("%d accepted events for EnqueueMany's messages, want 3", n)
	}

	// A repeated idempotency key gives the first id and stores nothing new.
	again, err := intake.EnqueueMany(ctx, pool, msgs[2:])
	if err != nil {
		t.Fatal(err)
	}
	if again[0] != many[2] {
		t.Fatalf("repeat of key k1 gave id %d, want %d", again[0], many[2])
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 6 {
		t.Fatalf("%d messages after a repeated key, want 6", n)
	}
}

// Without idempotency keys, herald._enqueue checks and stores in one statement,
// joining each message to its channel: the ids still follow the input order when
// channels alternate, defaults are filled in, and the one 'accepted' row lists the
// ids in that order, through enqueue_many and enqueue_batch alike.
func TestEnqueueManyWithoutKeysKeepsInputOrder(t *testing.T) {
	_, pool := setup(t)
	var msgs []intake.Message
	var items []string
	for i := range 40 {
		m := intake.Message{Channel: "email", Recipient: fmt.Sprintf("u%d@example.com", i), Payload: json.RawMessage(`{"subject":"s","text":"t"}`)}
		if i%3 == 1 {
			m = intake.Message{Channel: "sms", Recipient: fmt.Sprintf("+1415555%04d", i), Payload: json.RawMessage(`{"text":"t"}`)}
		}
		msgs = append(msgs, m)
		items = append(items, fmt.Sprintf(`{"channel":%q,"recipient":%q,"payload":%s}`, m.Channel, m.Recipient, m.Payload))
	}
	for _, ids := range enqueueBoth(t, pool, msgs, items) {
		if len(ids) != len(msgs) {
			t.Fatalf("%d ids for %d messages", len(ids), len(msgs))
		}
		for i, id := range ids {
			got := scalar[string](t, pool, `SELECT concat_ws('|', channel, recipient, priority, run_at = created_at,
				max_attempts = (SELECT c.max_attempts FROM herald.channels c WHERE c.name = m.channel))
				FROM herald.messages m WHERE id = $1`, id)
			if want := msgs[i].Channel + "|" + msgs[i].Recipient + "|0|t|t"; got != want {
				t.Fatalf("id %d (input %d): stored %q, want %q", id, i, got, want)
			}
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("ids not ascending in input order: %v", ids)
			}
		}
		if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.log_statements
			WHERE kind = 'accepted' AND message_ids = $1
			  AND channels = (SELECT array_agg(m.channel ORDER BY m.id) FROM herald.messages m WHERE m.id = ANY($1))
			  AND key_hashes = (SELECT array_agg(hashtext(m.recipient) ORDER BY m.id) FROM herald.messages m WHERE m.id = ANY($1))`,
			ids); n != 1 {
			t.Fatalf("%d accepted rows listing the call's ids, channels and key hashes in input order, want 1", n)
		}
	}
}

// A call whose messages share one channel and leave every optional field at its
// default (the usual bulk send): each message gets the channel's own max_attempts,
// priority 0, run_at and created_at the call's now, in input order, with one
// 'accepted' row; a bad message anywhere, or an unknown channel, is named and nothing
// is stored. Both enqueue_many and enqueue_batch (its plain-element path).
func TestOneChannelBatchStoresDefaultsAndRefusesBadMessages(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, max_attempts) VALUES ('bulk', 'email', 7)`)
	const payload = `{"subject":"s","text":"t"}`
	msgs := make([]intake.Message, 30)
	items := make([]string, len(msgs))
	for i := range msgs {
		msgs[i] = intake.Message{Channel: "bulk", Recipient: fmt.Sprintf("u%d@example.com", i), Payload: json.RawMessage(payload)}
		items[i] = fmt.Sprintf(`{"channel":"bulk","recipient":"u%d@example.com","payload":%s}`, i, payload)
	}
	for _, ids := range enqueueBoth(t, pool, msgs, items) {
		if len(ids) != len(msgs) {
			t.Fatalf("%d ids for %d messages", len(ids), len(msgs))
		}
		for i, id := range ids {
			got := scalar[string](t, pool, `SELECT concat_ws('|', channel, recipient, payload = $2::jsonb, coalesce(metadata::text, '-'),
				priority, run_at = created_at, coalesce(ordering_key, '-'), coalesce(idempotency_key, '-'), max_attempts,
				status, attempts) FROM herald.messages WHERE id = $1`, id, payload)
			if want := fmt.Sprintf("bulk|u%d@example.com|t|-|0|t|-|-|7|queued|0", i); got != want {
				t.Fatalf("id %d (input %d): stored %q, want %q", id, i, got, want)
			}
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("ids not ascending in input order: %v", ids)
			}
		}
		if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.log_statements
			WHERE kind = 'accepted' AND message_ids = $1 AND channels = array_fill('bulk'::text, ARRAY[30])
			  AND key_hashes = (SELECT array_agg(hashtext(m.recipient) ORDER BY m.id) FROM herald.messages m WHERE m.id = ANY($1))`,
			ids); n != 1 {
			t.Fatalf("%d accepted rows listing the call's ids, channel and key hashes in input order, want 1", n)
		}
	}

	before := scalar[int64](t, pool, `SELECT (SELECT count(*) FROM herald.messages) + (SELECT count(*) FROM herald.log_statements)`)
	for _, c := range []struct {
		mutate      func(m *intake.Message)
		code, field string
	}{
		{func(m *intake.Message) { m.Payload = json.RawMessage(`{"subject":"s"}`) }, "invalid_payload", "payload"},
		{func(m *intake.Message) { m.Recipient = "u@" }, "invalid_recipient", "recipient"},
		{func(m *intake.Message) {
			m.Payload = json.RawMessage(`{"subject":"s","text":"` + strings.Repeat("x", 70000) + `"}`)
		},
			"payload_too_large", "payload"},
	} {
		bad := slices.Clone(msgs)
		c.mutate(&bad[17])
		_, err := intake.EnqueueMany(ctx, pool, bad)
		var ie *intake.InputError
		if !errors.As(err, &ie) || ie.Code != c.code || ie.Field != c.field || ie.Index == nil || *ie.Index != 17 {
			t.Fatalf("want %s in field %s of message 17, got %v", c.code, c.field, err)
		}
	}
	unknown := slices.Clone(msgs)
	for i := range unknown {
		unknown[i].Channel = "nope"
	}
	_, err := intake.EnqueueMany(ctx, pool, unknown)
	var ie *intake.InputError
	if !errors.As(err, &ie) || ie.Code != "unknown_channel" || ie.Field != "channel" || ie.Index == nil || *ie.Index != 0 {
		t.Fatalf("want unknown_channel at message 0, got %v", err)
	}
	if n := scalar[int64](t, pool, `SELECT (SELECT count(*) FROM herald.messages) + (SELECT count(*) FROM herald.log_statements)`); n != before {
		t.Fatalf("refused calls changed the message and log row count from %d to %d", before, n)
	}
}

// A bad message in the bulk path names its index and field, and nothing is stored;
// so do arrays of the wrong length.
func TestEnqueueManyRejectsBadInput(t *testing.T) {
	ctx, pool := setup(t)
	good := intake.Message{Channel: "email", Recipient: "a@example.com", Payload: json.RawMessage(`{"subject":"s","text":"t"}`)}
	bad := good
	bad.Recipient = "not-an-address"
	_, err := intake.EnqueueMany(ctx, pool, []intake.Message{good, bad, good})
	var ie *intake.InputError
	if !errors.As(err, &ie) {
		t.Fatalf("want an InputError, got %v", err)
	}
	if ie.Code != "invalid_recipient" || ie.Field != "recipient" || ie.Index == nil || *ie.Index != 1 {
		t.Fatalf("got code %q field %q index %v, want invalid_recipient, recipient, 1", ie.Code, ie.Field, ie.Index)
	}
	wantPgError(t, pool.QueryRow(ctx, `SELECT herald.enqueue_many(ARRAY['email'], ARRAY['a@example.com', 'b@example.com'],
		ARRAY['{}'::jsonb])`).Scan(new([]int64)), "22V11", "recipients")
	wantPgError(t, pool.QueryRow(ctx, `SELECT herald.enqueue_many('{}', '{}', '{}')`).Scan(new([]int64)), "22V11", "channels")
	if n := scalar[int64](t, pool, `SELECT (SELECT count(*) FROM herald.messages) + (SELECT count(*) FROM herald.log_statements)`); n != 0 {
		t.Fatalf("rejected calls stored %d messages and log rows", n)
	}
}

// herald._valid, the set-based check the enqueue functions insert with, agrees with
// herald._validate, the check that names the field: on every rule's boundary, valid
// and invalid. (_valid false where _validate passes would reject good messages;
// true where it raises would store bad ones.)
func TestValidAgreesWithValidate(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, max_payload_bytes) VALUES ('hook', 'webhook', 64), ('other', 'custom', 65536)`)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, producers) VALUES ('mine', 'email', '{p}'), ('theirs', 'email', '{q,r}')`)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, max_segments) VALUES ('nocap', 'sms', NULL)`)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, recipient_prefixes) VALUES ('us', 'sms', '{+1,+4420}'),
		('hooks', 'webhook', '{https://hooks.example.com/,https://example.org/in/}')`)
	type c struct {
		channel, recipient, payload string
		extra                       string // named arguments of both functions' remaining parameters
	}
	email, sms := `{"subject":"s","text":"t"}`, `{"text":"t"}`
	cases := []c{
		{"email", "ana@example.com", email, ""},
		{"email", strings.Repeat("a", 64) + "@" + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + ".com", email, ""},
		{"email", strings.Repeat("a", 243) + "@example.com", email, ""}, // 255 characters
		{"email", "a.b+c@ex-ample.co.uk", email, ""},
		{"email", ".a@example.com", email, ""},
		{"email", "a.@example.com", email, ""},
		{"email", "a@-example.com", email, ""},
		{"email", "a@example.com", `{"subject":"s","html":"h"}`, ""},
		{"email", "a@example.com", `{"subject":"s","body":""}`, ""},
		{"email", "a@example.com", `{"subject":"","text":"t"}`, ""},
		{"email", "a@example.com", `[]`, ""},
		// each kind of JSON value where a non-empty string is needed (_valid tests
		// the payload with an SQL/JSON path, _validate key by key)
		{"email", "a@example.com", `{"text":"t"}`, ""},
		{"email", "a@example.com", `{"subject":null,"text":"t"}`, ""},
		{"email", "a@example.com", `{"subject":1,"text":"t"}`, ""},
		{"email", "a@example.com", `{"subject":true,"text":"t"}`, ""},
		{"email", "a@example.com", `{"subject":["s"],"text":"t"}`, ""},
		{"email", "a@example.com", `{"subject":{"s":"s"},"text":"t"}`, ""},
		{"email", "a@example.com", `{"subject":"s"}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":["t"],"html":"","body":1}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"","html":null,"body":"b"}`, ""},
		{"email", "a@example.com", `{"subject":" ","text":"\u00e9"}`, ""},
		{"email", "a@example.com", `"s"`, ""},
		{"email", "a@example.com", `[{"subject":"s","text":"t"}]`, ""},
		{"sms", "+1234567", sms, ""},
		{"sms", "+123456", sms, ""},
		{"sms", "+123456789012345", sms, ""},
		{"sms", "+1234567890123456", sms, ""},
		{"sms", "+14155550100", `{"body":"b"}`, ""},
		{"sms", "+14155550100", `{"text":1}`, ""},
		{"sms", "+14155550100", `{"text":"","body":"b"}`, ""},
		{"sms", "+14155550100", `{"text":["t"]}`, ""},
		{"sms", "+14155550100", `{"body":{"t":"t"}}`, ""},
		{"sms", "+14155550100", `{"subject":"s"}`, ""},
		// the types of the fields a sender decodes, on the usual paths too
		{"email", "a@example.com", `{"subject":"s","text":"t","html":{"h":1}}`, ""},
		{"email", "a@example.com", `{"subject":"s","html":"h","body":[1]}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","body":null}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","html":5,"cc":["b@example.com"]}`, ""},
		{"sms", "+14155550100", `{"text":"t","body":{"b":1}}`, ""},
		{"sms", "+14155550100", `{"text":"t","body":null}`, ""},
		{"sms", "+14155550100", `{"text":false,"media_urls":["https://example.com/a.png"]}`, ""},
		// a custom header's line, name and value, within 998 bytes
		{"email", "a@example.com", `{"subject":"s","text":"t","headers":{"X-A":"` + strings.Repeat("z", 993) + `"}}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","headers":{"X-A":"` + strings.Repeat("z", 994) + `"}}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","headers":{"X-A":"` + strings.Repeat("é", 497) + `"}}`, ""},
		// nesting: 32 levels below the top at most, in payloads and metadata
		{"other", "r", `{"a":` + strings.Repeat("[", 32) + strings.Repeat("]", 32) + `}`, ""},
		{"other", "r", `{"a":` + strings.Repeat("[", 33) + strings.Repeat("]", 33) + `}`, ""},
		{"other", "r", `{"a":` + strings.Repeat(`{"b":`, 31) + `1` + strings.Repeat("}", 31) + `}`, ""},
		{"other", "r", `{"a":` + strings.Repeat(`{"b":`, 32) + `1` + strings.Repeat("}", 32) + `}`, ""},
		{"email", "a@example.com", `{"template_id":"d-0123456789abcdef0123456789abcdef","dynamic_template_data":{"d":` + strings.Repeat("[", 32) + strings.Repeat("]", 32) + `}}`, ""},
		{"email", "a@example.com", email, `metadata => '{"m":` + strings.Repeat("[", 33) + strings.Repeat("]", 33) + `}'`},
		{"email", "a@example.com", email, `metadata => '{"m":` + strings.Repeat("[", 31) + strings.Repeat("]", 31) + `}'`},
		{"hook", "https://example.com/x?y", `{}`, ""},
		// a webhook URL of up to 2048 bytes (a Power Automate URL, a token in the query)
		{"hook", "https://example.com/?t=" + strings.Repeat("a", 2048-23), `{}`, ""},
		{"hook", "https://example.com/?t=" + strings.Repeat("a", 2049-23), `{}`, ""},
		{"hook", "https://example.com/?t=" + strings.Repeat("é", 1020), `{}`, ""},
		{"hook", "https://example.com/?t=" + strings.Repeat("é", 1012), `{}`, ""},
		{"hook", "ftp://example.com", `{}`, ""},
		// a host, and a port of 1 to 65535 if any (a URL the runner could not dial is refused here)
		{"hook", "https://example.com:65535/x", `{}`, ""},
		{"hook", "https://example.com:65536/x", `{}`, ""},
		{"hook", "https://example.com:0/x", `{}`, ""},
		{"hook", "https://example.com:99999", `{}`, ""},
		{"hook", "https://example.com:80:80/", `{}`, ""},
		{"hook", "https://:443/", `{}`, ""},
		{"hook", "https://[2001:db8::1]:8443/x", `{}`, ""},
		{"hook", "https://user:pw@example.com:8443/x", `{}`, ""},
		{"hook", "https://example.com", `{"k":"` + strings.Repeat("x", 60) + `"}`, ""},
		{"other", strings.Repeat("r", 320), `{}`, ""},
		{"other", strings.Repeat("r", 321), `{}`, ""},
		{"other", "", `{}`, ""},
		// the e-mail and SMS branches leave the length and object tests to their own
		// rules; webhook and custom keep them (characters, not octets)
		{"email", strings.Repeat("a", 242) + "@example.com", email, ""}, // 254 characters
		{"email", "a@" + strings.Repeat("b", 63), email, ""},            // 65: under the label test
		{"email", "a@" + strings.Repeat("b", 64), email, ""},            // 66: a 64-character label
		{"email", strings.Repeat("a", 64) + "@b", email, ""},            // 66: 64 characters before the '@'
		{"email", "é@example.com", email, ""},
		{"sms", "+14155550100", `[{"text":"t"}]`, ""},
		{"sms", "+14155550100", `"t"`, ""},
		{"hook", "https://example.com/" + strings.Repeat("x", 300), `{}`, ""}, // 320 characters
		{"hook", "https://example.com/" + strings.Repeat("x", 301), `{}`, ""},
		{"hook", "https://example.com/" + strings.Repeat("é", 300), `{}`, ""}, // 320 characters, 620 octets
		{"hook", "https://example.com", `[]`, ""},
		{"other", strings.Repeat("é", 320), `{}`, ""},
		{"other", strings.Repeat("é", 321), `{}`, ""},
		{"other", "r", `[{}]`, ""},
		{"other", "r", `"s"`, ""},
		{"nope", "x", `{}`, ""},
		{"email", "a@example.com", email, "run_at => $4::timestamptz + interval '364 days'"},
		{"email", "a@example.com", email, "run_at => $4::timestamptz - interval '366 days'"},
		{"email", "a@example.com", email, "priority => 100"},
		{"email", "a@example.com", email, "priority => -101"},
		{"email", "a@example.com", email, "priority => -1"},                       // below the default min_priority 0
		{"email", "a@example.com", email, "priority => -5; min_priority => -5"},   // granted
		{"email", "a@example.com", email, "priority => -6; min_priority => -5"},   // beyond the grant
		{"email", "a@example.com", email, "priority => 49; min_priority => 50"},   // a demoted producer
		{"email", "a@example.com", email, "priority => NULL; min_priority => 50"}, // takes the default
		{"email", "a@example.com", email, "max_attempts => 100"},
		{"email", "a@example.com", email, "max_attempts => 0"},
		{"email", "a@example.com", email, `metadata => '{"a":1}'`},
		{"email", "a@example.com", email, `metadata => '"a"'`},
		{"email", "a@example.com", email, "idempotency_key => repeat('k', 255)"},
		{"email", "a@example.com", email, "idempotency_key => ''"},
		{"email", "a@example.com", email, "ordering_key => repeat('k', 256)"},
		{"email", "a@example.com", email, "expires_at => $4::timestamptz + interval '1 second'"},
		{"email", "a@example.com", email, "expires_at => $4::timestamptz"},
		{"email", "a@example.com", email, "expires_at => $4::timestamptz - interval '1 second'"},
		// recipient_zone: an IANA name PostgreSQL has; not a POSIX specification it would also take
		{"email", "a@example.com", email, "recipient_zone => 'America/New_York'"},
		{"email", "a@example.com", email, "recipient_zone => 'Etc/GMT-14'"},
		{"email", "a@example.com", email, "recipient_zone => 'UTC'"},
		{"email", "a@example.com", email, "recipient_zone => 'UTC+3'"},
		{"email", "a@example.com", email, "recipient_zone => 'Abc/5'"},
		{"email", "a@example.com", email, "recipient_zone => 'Mars/Olympus_Mons'"},
		{"email", "a@example.com", email, "recipient_zone => ''"},
		// the optional fields (herald._payload_problem)
		{"email", "a@example.com", `{"subject":"s\r\nBcc: x@evil.example","text":"t"}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","headers":{"X-A":"1"}}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","headers":{"X-A":"1\r\nBcc: x@evil.example"}}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","headers":{"Bcc":"x@evil.example"}}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","headers":{"X A":"1"}}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","attachments":[{"filename":"a.txt","content":"aGk="}]}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","attachments":[{"filename":"a.txt","content":"aGk"}]}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","attachments":[{"filename":"a.txt","content":"a!k="}]}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","attachments":[{"filename":"a\r\n.txt","content":"aGk="}]}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","attachments":[{"filename":"a.txt","content":"aGk=","content_type":"text/plain","disposition":"inline","content_id":"logo"}]}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","attachments":[{"filename":"a.txt","content":"aGk=","size":2}]}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","attachments":[]}`, ""},
		{"email", "a@example.com", `{"template_id":"d-0123456789abcdef0123456789abcdef","dynamic_template_data":{"name":"Ana"}}`, ""},
		{"email", "a@example.com", `{"template_id":"d-0123456789abcdef0123456789abcdef","subject":7}`, ""},
		{"email", "a@example.com", `{"template_id":"tmpl"}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","dynamic_template_data":{}}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","categories":["welcome"],"custom_args":{"user":"42"}}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","categories":[""]}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","custom_args":{"user":42}}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","custom_args":{"herald_id":"1"}}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","from":"Ana <ana@example.com>","reply_to":"b@example.com"}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","from":"a@example.com\r\nBcc: x@evil.example"}`, ""},
		// from: a mailbox the producer may use (herald.producers.senders)
		{"email", "a@example.com", `{"subject":"s","text":"t","from":"Ana <ana@example.com>"}`, "senders => ARRAY['example.com']"},
		{"email", "a@example.com", `{"subject":"s","text":"t","from":"ana@EXAMPLE.com"}`, "senders => ARRAY['Ana@example.com']"},
		{"email", "a@example.com", `{"subject":"s","text":"t","from":"bo@example.com"}`, "senders => ARRAY['ana@example.com']"},
		{"email", "a@example.com", `{"subject":"s","text":"t","from":"bo@example.com"}`, "senders => ARRAY['@Example.com']"},
		{"email", "a@example.com", `{"subject":"s","text":"t","from":"ana@example.com.evil.test"}`, "senders => ARRAY['example.com']"},
		{"email", "a@example.com", `{"subject":"s","text":"t","from":"\"ana@example.com\" <ceo@example.org>"}`, "senders => ARRAY['ana@example.com']"},
		{"email", "a@example.com", `{"subject":"s","text":"t","from":"ana@example.com (x) <ceo@example.org>"}`, "senders => ARRAY['example.com']"},
		{"email", "a@example.com", `{"subject":"s","text":"t","from":"Ana <ana@example.com>, ceo@example.org"}`, "senders => ARRAY['example.com']"},
		{"email", "a@example.com", `{"subject":"s","text":"t","reply_to":"Bo Lima <bo@elsewhere.example>"}`, ""},
		{"email", "a@example.com", `{"subject":"s","text":"t","reply_to":"not an address"}`, ""},
		{"hook", "https://example.com/h", `{"from":"anything"}`, ""},
		// the channel's producers (herald.channels.producers; the producer is 'p')
		{"mine", "a@example.com", email, ""},
		{"theirs", "a@example.com", email, ""},
		// where the channel may send (herald.channels.recipient_prefixes)
		{"us", "+14155550100", sms, ""},
		{"us", "+442071838750", sms, ""},
		{"us", "+441632960000", sms, ""},
		{"us", "+88213000000", sms, ""},
		{"us", "+1", sms, ""},
		{"hooks", "https://hooks.example.com/in", `{}`, ""},
		{"hooks", "https://hooks.example.com.evil.example/in", `{}`, ""},
		{"hooks", "https://example.org/in/x", `{}`, ""},
		{"hooks", "https://example.org/inbox", `{}`, ""},
		{"hooks", "http://hooks.example.com/in", `{}`, ""},
		{"nocap", "+14155550100", `{"text":"` + strings.Repeat("x", 1600) + `"}`, ""},
		{"nocap", "+14155550100", `{"text":"` + strings.Repeat("é", 1600) + `"}`, ""}, // characters, not octets
		{"nocap", "+14155550100", `{"text":"` + strings.Repeat("x", 1601) + `"}`, ""},
		{"nocap", "+14155550100", `{"text":"t","body":"` + strings.Repeat("x", 1601) + `"}`, ""},
		{"sms", "+14155550100", `{"media_urls":["https://example.com/a.png"]}`, ""},
		{"sms", "+14155550100", `{"content_sid":"HX0123456789abcdef0123456789abcdef"}`, ""},
		{"sms", "+14155550100", `{"content_sid":"HX0123456789abcdef0123456789abcdef","content_variables":{"1":"Ana"}}`, ""},
		{"sms", "+14155550100", `{"content_sid":"HX0123456789ABCDEF0123456789ABCDEF","content_variables":{"1":"x","2":"y"}}`, ""},
		{"sms", "+14155550100", `{"content_sid":"HX0123"}`, ""},
		{"sms", "+14155550100", `{"content_sid":42}`, ""},
		{"sms", "+14155550100", `{"content_sid":""}`, ""},
		{"sms", "+14155550100", `{"content_variables":{"1":"Ana"}}`, ""},
		{"sms", "+14155550100", `{"text":"t","content_variables":{"1":"Ana"}}`, ""},
		{"sms", "+14155550100", `{"text":"t","content_sid":"HX0123456789abcdef0123456789abcdef"}`, ""},
		{"sms", "+14155550100", `{"media_urls":["https://example.com/a.png"],"content_sid":"HX0123456789abcdef0123456789abcdef"}`, ""},
		{"sms", "+14155550100", `{"content_sid":"HX0123456789abcdef0123456789abcdef","content_variables":{}}`, ""},
		{"sms", "+14155550100", `{"content_sid":"HX0123456789abcdef0123456789abcdef","content_variables":{"1":1}}`, ""},
		{"sms", "+14155550100", `{"content_sid":"HX0123456789abcdef0123456789abcdef","content_variables":["Ana"]}`, ""},
		{"sms", "+14155550100", `{"text":"t","media_urls":["ftp://example.com/a.png"]}`, ""},
		{"sms", "+14155550100", `{"text":"t","media_urls":[]}`, ""},
		// max_segments (10 on the seeded channel): GSM-7 153 characters a segment,
		// UCS-2 67; the extension table's characters count two; MMS not counted
		{"sms", "+14155550100", `{"text":"` + strings.Repeat("x", 1530) + `"}`, ""},
		{"sms", "+14155550100", `{"text":"` + strings.Repeat("x", 1531) + `"}`, ""},
		{"sms", "+14155550100", `{"text":"` + strings.Repeat("{", 765) + `"}`, ""},
		{"sms", "+14155550100", `{"text":"` + strings.Repeat("{", 766) + `"}`, ""},
		{"sms", "+14155550100", `{"body":"` + strings.Repeat("“", 670) + `"}`, ""},
		{"sms", "+14155550100", `{"body":"` + strings.Repeat("“", 671) + `"}`, ""},
		{"sms", "+14155550100", `{"text":"","body":"` + strings.Repeat("😀", 335) + `"}`, ""},
		{"sms", "+14155550100", `{"text":"","body":"` + strings.Repeat("😀", 336) + `"}`, ""},
		{"sms", "+14155550100", `{"text":"` + strings.Repeat("😀", 400) + `","media_urls":["https://example.com/a.png"]}`, ""},
		{"nocap", "+14155550100", `{"text":"` + strings.Repeat("😀", 800) + `"}`, ""},
		// the length under which a text fits whatever it holds (2n <= 67 * 10)
		{"sms", "+14155550100", `{"text":"` + strings.Repeat("😀", 335) + `"}`, ""},
		{"sms", "+14155550100", `{"text":"` + strings.Repeat("{", 336) + `"}`, ""},
		{"sms", "+14155550100", `{"text":"` + strings.Repeat("😀", 336) + `"}`, ""},
	}
	valids, invalids := 0, 0
	for _, k := range cases {
		args := map[string]string{"run_at": "NULL", "priority": "NULL", "min_priority": "0", "senders": "NULL", "max_attempts": "NULL",
			"metadata": "NULL", "idempotency_key": "NULL", "ordering_key": "NULL", "expires_at": "NULL", "recipient_zone": "NULL"}
		for _, pair := range strings.Split(k.extra, "; ") {
			if name, value, ok := strings.Cut(pair, " => "); ok {
				args[name] = value
			}
		}
		policy := fmt.Sprintf("jsonb_populate_record(NULL::herald.producers, jsonb_build_object('producer', 'p', 'min_priority', %s, 'senders', %s::text[]))", args["min_priority"], args["senders"])
		list := fmt.Sprintf("%s, %s, %s, c.producers, c.recipient_prefixes, %s, %s::jsonb, %s, %s, %s, %s", args["run_at"], args["priority"], policy,
			args["max_attempts"], args["metadata"], args["idempotency_key"], args["ordering_key"], args["expires_at"], args["recipient_zone"])
		var valid bool
		if err := pool.QueryRow(ctx, `SELECT herald._valid(c.kind, c.max_payload_bytes, c.max_segments, c.max_recipients, $2, $3::jsonb, `+list+`, $4)
			FROM (SELECT $1::text AS name) x LEFT JOIN herald.channels c ON c.name = x.name`,
			k.channel, k.recipient, k.payload, t0).Scan(&valid); err != nil {
			t.Fatalf("%+v: %v", k, err)
		}
		spec := fmt.Sprintf("ROW($1, $2, $3::jsonb, %s, %s, %s, %s, %s, %s::jsonb, %s, %s)::herald.message_spec", args["run_at"],
			args["priority"], args["idempotency_key"], args["ordering_key"], args["max_attempts"], args["metadata"], args["expires_at"],
			args["recipient_zone"])
		_, err := pool.Exec(ctx, `SELECT herald._validate(`+spec+`, `+policy+`, $4, '')`, k.channel, k.recipient, k.payload, t0)
		if valid != (err == nil) {
			t.Errorf("%s %q %s %s: _valid says %v, _validate says %v", k.channel, k.recipient, k.payload, k.extra, valid, err)
		}
		if valid {
			valids++
		} else {
			invalids++
		}
	}
	if valids < 10 || invalids < 10 {
		t.Fatalf("the cases should cover both sides: %d valid, %d invalid", valids, invalids)
	}
}

// enqueueBoth stores msgs through intake.EnqueueMany and the same messages, as the
// JSON elements items, through herald.enqueue_batch; it returns both calls' ids.
func enqueueBoth(t *testing.T, pool *pgxpool.Pool, msgs []intake.Message, items []string) [][]int64 {
	t.Helper()
	many, err := intake.EnqueueMany(t.Context(), pool, msgs)
	if err != nil {
		t.Fatal(err)
	}
	var fromBatch []int64
	if err := pool.QueryRow(t.Context(), `SELECT herald.enqueue_batch($1)`, "["+strings.Join(items, ",")+"]").Scan(&fromBatch); err != nil {
		t.Fatal(err)
	}
	return [][]int64{many, fromBatch}
}

// The Go producer API joins the caller's transaction: Enqueue and GetStatus on a
// pgx.Tx see the message before the commit, a rollback leaves nothing, and a bad
// message is an *InputError naming the field.
func TestProducerAPIInCallersTransaction(t *testing.T) {
	ctx, pool := setup(t)
	grantPriority(t, pool, "", -3)
	m := intake.Message{Channel: "email", Recipient: "ana@example.com", Payload: json.RawMessage(`{"subject":"s","text":"t"}`),
		IdempotencyKey: ptr("tx-1"), Priority: ptr(-3)}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	id, err := intake.Enqueue(ctx, tx, m)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := intake.GetStatus(ctx, tx, id); err != nil || s.Status != "queued" {
		t.Fatalf("status inside the transaction: %+v %v", s, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := intake.GetStatus(ctx, pool, id); !errors.Is(err, intake.ErrNotFound) {
		t.Fatalf("after the rollback: %v", err)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 0 {
		t.Fatalf("%d rows after a rollback", n)
	}
	id, err = intake.Enqueue(ctx, pool, m)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := intake.Enqueue(ctx, pool, m); err != nil || again != id {
		t.Fatalf("a repeat of the key: %d %v, want %d", again, err, id)
	}
	if p := scalar[int32](t, pool, `SELECT priority FROM herald.messages WHERE id = $1`, id); p != -3 {
		t.Fatalf("priority %d", p)
	}
	m.Recipient, m.IdempotencyKey = "not-an-address", nil
	_, err = intake.Enqueue(ctx, pool, m)
	var ie *intake.InputError
	if !errors.As(err, &ie) || ie.Code != "invalid_recipient" || ie.Field != "recipient" || ie.Index != nil {
		t.Fatalf("bad recipient: %v", err)
	}
}
