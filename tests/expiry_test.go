package tests

import (
	"testing"
	"time"
)

// A message's deadline: the least of the producer's expires_at and its due time plus
// the channel's ttl. A bad expires_at is 22V17 and stores nothing.
func TestExpiresAtIsCappedByTheChannelTTL(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `UPDATE herald.channels SET ttl = '1 hour' WHERE name = 'email'`)
	own := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}',
		expires_at => $1::timestamptz + interval '5 minutes', now => $1)`, t0)
	long := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}',
		expires_at => $1::timestamptz + interval '3 hours', now => $1)`, t0)
	later := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}',
		run_at => $1::timestamptz + interval '1 day', now => $1)`, t0)
	for id, want := range map[int64]time.Duration{own: 5 * time.Minute, long: time.Hour, later: 25 * time.Hour} {
		if got := scalar[time.Time](t, pool, `SELECT expires_at FROM herald.messages WHERE id = $1`, id); !got.Equal(t0.Add(want)) {
			t.Errorf("message %d expires at %v, want t0 + %v", id, got, want)
		}
	}
	for _, c := range []struct{ sql, field string }{
		{`SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}', expires_at => $1, now => $1)`, "expires_at"},
		{`SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}', run_at => $1::timestamptz + interval '1 hour',
			expires_at => $1::timestamptz + interval '1 minute', now => $1)`, "expires_at"},
		{`SELECT herald.enqueue_batch('[{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"expires_at":"soon"}]', now => $1)`,
			"messages[0].expires_at"},
		{`SELECT herald.enqueue_many('{email}', '{a@example.com}', ARRAY['{"subject":"s","text":"t"}'::jsonb],
			expires_ats => ARRAY[$1::timestamptz - interval '1 second'], now => $1)`, "messages[0].expires_at"},
	} {
		_, err := pool.Exec(ctx, c.sql, t0)
		wantPgError(t, err, "22V17", c.field)
	}
	if n := countWhere(t, pool, `true`); n != 3 {
		t.Fatalf("%d messages stored, want 3", n)
	}
	// enqueue_batch reads expires_at as a timestamp string.
	ids := scalar[[]int64](t, pool, `SELECT herald.enqueue_batch(jsonb_build_array(jsonb_build_object('channel', 'email',
		'recipient', 'a@example.com', 'payload', '{"subject":"s","text":"t"}'::jsonb, 'expires_at', $1::timestamptz + interval '10 minutes')), now => $1)`, t0)
	if got := scalar[time.Time](t, pool, `SELECT expires_at FROM herald.messages WHERE id = $1`, ids[0]); !got.Equal(t0.Add(10 * time.Minute)) {
		t.Fatalf("batch message expires at %v", got)
	}
}

// Past its deadline a message is never handed out; the reaper ends it expired with an
// 'expired' log event, whether it waited for its turn, on a paused channel or behind
// an ordering key, and the message behind it in that key goes on.
func TestExpiredMessagesAreNeverClaimed(t *testing.T) {
	_, pool := setup(t)
	mustExec(t, pool, `SELECT herald.create_consumer_group('receipts', 1, 'earliest')`)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('otp', 'sms')`)
	enq := func(channel, key string, expiresIn time.Duration) int64 {
		return scalar[int64](t, pool, `SELECT herald.enqueue($1, '+14155550100', '{"text":"123456"}', ordering_key => nullif($2, ''),
			expires_at => $3::timestamptz + $4::interval, now => $3)`, channel, key, t0, expiresIn.String())
	}
	waiting := enq("sms", "", time.Minute)
	first := enq("sms", "k", time.Minute) // blocks the next one of key k
	next := enq("sms", "k", time.Hour)    // behind it
	paused := enq("otp", "", time.Minute) // its channel is paused
	mustExec(t, pool, `SELECT herald.pause_channel('otp', 'maintenance')`)
	late := t0.Add(2 * time.Minute)
	if got := claim(t, pool, 10, late); len(got) != 0 {
		t.Fatalf("claimed %d expired messages", len(got))
	}
	if n := scalar[int32](t, pool, `SELECT herald.reap_stale($1)`, late); n != 3 {
		t.Fatalf("reap_stale ended %d messages, want 3", n)
	}
	for _, id := range []int64{waiting, first, paused} {
		var status string
		var finished time.Time
		if err := pool.QueryRow(t.Context(), `SELECT status, finished_at FROM herald.messages WHERE id = $1`, id).Scan(&status, &finished); err != nil ||
			status != "expired" || !finished.Equal(late) {
			t.Errorf("message %d: %s at %v, %v", id, status, finished, err)
		}
	}
	got := claim(t, pool, 10, late)
	if len(got) != 1 || got[0].ID != next {
		t.Fatalf("after expiry the next message of key k should be claimable: %+v", got)
	}
	mustExec(t, pool, `SELECT herald.log_sequence()`)
	events := readLog(t, pool, "receipts", 0, 100)
	expired := map[int64]bool{}
	for _, e := range events {
		if e.Kind == "expired" {
			expired[e.MessageID] = true
		}
	}
	if len(expired) != 3 || !expired[waiting] || !expired[first] || !expired[paused] {
		t.Fatalf("expired events %v", expired)
	}
	if s := scalar[string](t, pool, `SELECT status || ' ' || (expires_at = $2)::text FROM herald.status($1)`, waiting, t0.Add(time.Minute)); s != "expired true" {
		t.Fatalf("herald.status: %s", s)
	}
}

// A retry or a lease taken back that would come at or after the deadline ends the
// message expired instead of queueing it: never retried past its time.
func TestRetriesStopAtTheDeadline(t *testing.T) {
	_, pool := setup(t)
	a := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}',
		expires_at => $1::timestamptz + interval '10 minutes', now => $1)`, t0)
	b := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'b@example.com', '{"subject":"s","text":"t"}',
		expires_at => $1::timestamptz + interval '10 minutes', now => $1)`, t0)
	c := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'c@example.com', '{"subject":"s","text":"t"}',
		expires_at => $1::timestamptz + interval '10 minutes', now => $1)`, t0)
	cs := claim(t, pool, 3, t0)
	tok := map[int64]int64{}
	for _, x := range cs {
		tok[x.ID] = x.Token
	}
	// a: rate limited until past its deadline (a daily quota); b: retried in time.
	mustExec(t, pool, `SELECT herald.fail($1, $2, 'quota', 'rate_limited', retry_at => $3::timestamptz + interval '1 hour', now => $3)`, a, tok[a], t0)
	mustExec(t, pool, `SELECT herald.fail($1, $2, 'busy', 'transient', retry_at => $3::timestamptz + interval '1 minute', now => $3)`, b, tok[b], t0)
	if s := scalar[string](t, pool, `SELECT string_agg(status, ',' ORDER BY id) FROM herald.messages WHERE id IN ($1, $2)`, a, b); s != "expired,queued" {
		t.Fatalf("after fail: %s", s)
	}
	// c: its runner died; the lease lapses after the deadline.
	if n := scalar[int32](t, pool, `SELECT herald.reap_stale($1::timestamptz + interval '11 minutes')`, t0); n != 2 {
		t.Fatalf("reap_stale changed %d, want 2 (c's lease, b's deadline)", n)
	}
	if s := scalar[string](t, pool, `SELECT string_agg(status, ',' ORDER BY id) FROM herald.messages`); s != "expired,expired,expired" {
		t.Fatalf("after the deadline: %s", s)
	}
	_ = c
}
