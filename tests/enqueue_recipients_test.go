package tests

import (
	"errors"
	"strings"
	"testing"

	"github.com/herald/herald/runner/intake"
)

// herald._recipient_list_kind answers for a whole batch what matching each recipient
// against its kind's expression would answer: 'email' exactly when every line is an
// e-mail address by herald._recipient_pattern('email'), on every string of up to 7
// characters over an alphabet with the e-mail rule's characters and a newline (so
// "a@a\na@a", two addresses in one recipient, is among them), each put in a list
// beside good addresses. A list it calls 'email' when one recipient is not
// an address would let herald._enqueue store that recipient.
func TestRecipientListKindAgreesWithEachRecipient(t *testing.T) {
	ctx, pool := setup(t)
	var n, differ, accepted int64
	var example *string
	err := pool.QueryRow(ctx, shortStrings(`ARRAY['a', '.', '-', '@', E'\n']`, 7)+`, cases AS (
		  SELECT v,
		         v ~ ('^(?:' || herald._recipient_pattern('email') || ')$') AS one,
		         herald._recipient_list_kind(array_to_string(ARRAY[v, 'b@c.d'], E'\n', ''), 2) IS NOT DISTINCT FROM 'email' AS list,
		         herald._recipient_list_kind(array_to_string(ARRAY['b@c.d', v, 'e@f'], E'\n', ''), 3) IS NOT DISTINCT FROM 'email' AS list3
		  FROM s)
		SELECT count(*), count(*) FILTER (WHERE one <> list OR one <> list3),
		       min(v) FILTER (WHERE one <> list OR one <> list3), count(*) FILTER (WHERE list)
		FROM cases`).Scan(&n, &differ, &example, &accepted)
	if err != nil {
		t.Fatal(err)
	}
	wantSameVerdicts(t, n, differ, accepted, example, 90000, 50, "in a list than alone")

	for _, c := range []struct {
		list []any // text elements, nil for NULL
		want string
	}{
		{[]any{"a@b.c", "d@e.f"}, "email"},
		{[]any{"a@b.c"}, "email"},
		{[]any{"a@b.c\nd@e.f", "g@h.i"}, ""}, // a newline inside a recipient
		{[]any{"a@b.c\nd@e.f", nil}, ""},     // … with a NULL making up the count
		{[]any{"a@b.c", nil}, ""},            // a NULL recipient
		{[]any{"a@b.c", ""}, ""},             // an empty one
		{[]any{"a@b.c", "+14155550100"}, ""}, // mixed kinds
		{[]any{"+14155550100", "+4930123456"}, "sms"},
		{[]any{"+14155550100", "+0123456789"}, ""}, // a leading zero
		{[]any{"+14155550100", "+14155550100\n"}, ""},
		{[]any{"https://example.com/a?b", "http://x"}, "webhook"},
		{[]any{"https://example.com/a b"}, ""},
		{[]any{"http@example.com", "https://x"}, ""}, // one e-mail, one URL
	} {
		var got *string
		if err := pool.QueryRow(ctx, `SELECT herald._recipient_list_kind(array_to_string($1::text[], E'\n', ''), cardinality($1::text[]))`,
			c.list).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if g := deref(got); g != c.want {
			t.Errorf("_recipient_list_kind(%q) = %q, want %q", c.list, g, c.want)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// A batch whose recipients are matched together (herald._recipient_list_kind) still
// rejects each bad recipient by name, stores nothing of the batch, and stores batches
// of mixed kinds (matched one by one) and of one kind alike; with and without
// idempotency keys, which take different statements.
func TestBatchRecipientsMatchedTogether(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('hook', 'webhook'), ('other', 'custom')`)
	email, sms := `{"subject":"s","text":"t"}`, `{"text":"t"}`
	msg := func(channel, recipient, payload string) intake.Message {
		return intake.Message{Channel: channel, Recipient: recipient, Payload: []byte(payload)}
	}
	for _, keyed := range []bool{false, true} {
		for _, c := range []struct {
			name string
			msgs []intake.Message
			bad  int // index of the bad message, -1 for none
		}{
			{"e-mails", []intake.Message{msg("email", "a@b.c", email), msg("email", "d@e.f", email)}, -1},
			{"an e-mail holding a newline", []intake.Message{msg("email", "a@b.c\nd@e.f", email), msg("email", "g@h.i", email)}, 0},
			{"a bad e-mail", []intake.Message{msg("email", "a@b.c", email), msg("email", "a..b@c.d", email)}, 1},
			{"a long e-mail label", []intake.Message{msg("email", "a@b.c", email), msg("email", "a@"+strings.Repeat("b", 64)+".c", email)}, 1},
			{"phones", []intake.Message{msg("sms", "+14155550100", sms), msg("sms", "+4930123456", sms)}, -1},
			{"a bad phone", []intake.Message{msg("sms", "+14155550100", sms), msg("sms", "+14155550100\n+14155550100", sms)}, 1},
			{"URLs", []intake.Message{msg("hook", "https://example.com/x", `{}`), msg("hook", "http://y", `{}`)}, -1},
			{"mixed kinds", []intake.Message{msg("email", "a@b.c", email), msg("sms", "+14155550100", sms), msg("other", "any\nthing", `{}`)}, -1},
			{"an address on the SMS channel", []intake.Message{msg("email", "a@b.c", email), msg("sms", "d@e.f", sms)}, 1},
			{"a phone on the e-mail channel", []intake.Message{msg("sms", "+14155550100", sms), msg("email", "+14155550100", email)}, 1},
		} {
			mustExec(t, pool, `TRUNCATE herald.messages, herald.log_statements`)
			msgs := c.msgs
			if keyed {
				msgs = append([]intake.Message(nil), c.msgs...)
				for i := range msgs {
					msgs[i].IdempotencyKey = ptr(c.name + string(rune('a'+i)))
				}
			}
			ids, err := intake.EnqueueMany(ctx, pool, msgs)
			stored := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`)
			if c.bad < 0 {
				if err != nil || len(ids) != len(msgs) || stored != int64(len(msgs)) {
					t.Errorf("%s (keys %v): ids %v, %d stored, error %v; want all stored", c.name, keyed, ids, stored, err)
				}
				continue
			}
			var ie *intake.InputError
			if !errors.As(err, &ie) || ie.Field != "recipient" || ie.Index == nil || *ie.Index != c.bad {
				t.Errorf("%s (keys %v): got %v, want the recipient of message %d named", c.name, keyed, err, c.bad)
			}
			if stored != 0 {
				t.Errorf("%s (keys %v): a rejected batch stored %d messages", c.name, keyed, stored)
			}
		}
	}
}
