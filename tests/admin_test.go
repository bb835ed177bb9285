// The administration surface: cancel, redrive, purge, status and the views.
package tests

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// cancel only queued messages; redrive dead ones; purge finished ones by age.
func TestCancelRedrivePurge(t *testing.T) {
	ctx, pool := setup(t)
	queued := enqueueEmail(t, pool, "q@example.com")
	cancel := func(id int64) *string {
		return scalar[*string](t, pool, `SELECT herald.cancel($1, now => $2)`, id, t0)
	}
	if s := cancel(queued); s == nil || *s != "cancelled" {
		t.Fatalf("cancel of queued: %v", s)
	}
	if s := cancel(queued); s == nil || *s != "cancelled" {
		t.Fatalf("second cancel: %v, want cancelled again", s)
	}
	if s := cancel(424242); s != nil {
		t.Fatalf("cancel of an unknown id: %v, want NULL", *s)
	}
	busy := enqueueEmail(t, pool, "p@example.com")
	c := claim(t, pool, 1, t0)
	if s := cancel(busy); s == nil || *s != "processing" {
		t.Fatalf("cancel of a processing message: %v, want processing", s)
	}
	mustExec(t, pool, `SELECT herald.fail($1::bigint, $2::bigint, 'no', 'permanent', now => $3)`, busy, c[0].Token, t0)

	if n := scalar[int32](t, pool, `SELECT herald.redrive($1, $2)`, []int64{busy, queued, 999}, t0.Add(time.Hour)); n != 1 {
		t.Fatalf("redrive changed %d, want 1 (only the dead one)", n)
	}
	var status string
	var attempts int32
	var fin *time.Time
	if err := pool.QueryRow(ctx, `SELECT status, attempts, finished_at FROM herald.messages WHERE id = $1`, busy).Scan(&status, &attempts, &fin); err != nil ||
		status != "queued" || attempts != 0 || fin != nil {
		t.Fatalf("redriven: %s %d %v %v", status, attempts, fin, err)
	}
	c = claim(t, pool, 1, t0.Add(time.Hour))
	mustExec(t, pool, `SELECT herald.complete($1::bigint, $2::bigint, NULL, $3)`, busy, c[0].Token, t0.Add(2*time.Hour))
	pending := enqueueEmail(t, pool, "later@example.com")

	// cancelled at t0, sent at t0+2h; purge at t0+3h of what finished over 90 minutes ago.
	if n := scalar[int64](t, pool, `SELECT herald.purge('90 minutes', $1)`, t0.Add(3*time.Hour)); n != 1 {
		t.Fatalf("purge deleted %d, want 1", n)
	}
	var left []int64
	rows, _ := pool.Query(ctx, `SELECT id FROM herald.messages ORDER BY id`)
	for rows.Next() {
		var id int64
		_ = rows.Scan(&id)
		left = append(left, id)
	}
	if len(left) != 2 || left[0] != busy || left[1] != pending {
		t.Fatalf("left after purge: %v", left)
	}
}

// Retention goes in batches, each call its own transaction: at most batch_size each
// of messages, delivery events and whole budgets, returning the most of one kind, so
// a caller repeats it while that is batch_size; unfinished messages and recent rows
// stay. Two purges at once share the work without error. A batch_size outside
// 1..1,000,000 is refused naming it, and deletes nothing.
func TestPurgeGoesInBatches(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `UPDATE herald.channels SET recipient_limit = 5 WHERE name = 'sms'`)
	mustExec(t, pool, `SELECT herald.enqueue('sms', '+1415555' || lpad(g::text, 4, '0'), '{"text":"x"}', now => $1)
		FROM generate_series(1, 3) g`, t0)
	mustExec(t, pool, `SELECT herald.enqueue('email', 'u' || g || '@example.com', '{"subject":"s","text":"t"}', now => $1)
		FROM generate_series(1, 22) g`, t0)
	mustExec(t, pool, `UPDATE herald.messages SET status = 'cancelled', finished_at = $1 WHERE channel = 'email'`, t0)
	mustExec(t, pool, `INSERT INTO herald.delivery_events (source, event_id, event, at, received_at)
		SELECT 'generic', 'e' || g, 'delivered', $1, $1 FROM generate_series(1, 14) g`, t0)
	later := t0.Add(48 * time.Hour)
	_, err := pool.Exec(ctx, `SELECT herald.purge('1 day', $1, 0)`, later)
	wantPgError(t, err, "22V12", "batch_size")
	var got []int64
	for {
		n := scalar[int64](t, pool, `SELECT herald.purge('1 day', $1, 10)`, later)
		if got = append(got, n); n < 10 || len(got) > 5 {
			break
		}
	}
	if !slices.Equal(got, []int64{10, 10, 2}) {
		t.Fatalf("purge in batches of 10 returned %v, want [10 10 2] (22 messages, 14 events, 3 budgets)", got)
	}
	if left := scalar[string](t, pool, `SELECT concat_ws(' ', (SELECT count(*) FROM herald.messages WHERE finished_at IS NOT NULL),
		(SELECT count(*) FROM herald.messages), (SELECT count(*) FROM herald.delivery_events), (SELECT count(*) FROM herald.recipient_buckets))`); left != "0 3 0 0" {
		t.Fatalf("left: finished, messages, events, budgets %s, want 0 3 0 0", left)
	}
	mustExec(t, pool, `UPDATE herald.messages SET status = 'cancelled', finished_at = $1`, t0)
	errs := make(chan error, 2)
	for range 2 {
		go func() { _, err := pool.Exec(ctx, `SELECT herald.purge('1 day', $1, 2)`, later); errs <- err }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("two purges at once: %v", err)
		}
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n > 1 {
		t.Fatalf("%d of 3 messages left after two purges of 2", n)
	}
}

// Purge reads only the ids inserted before its bound, found by bisecting the primary
// key on created_at (received_at for delivery events), which rise with the ids; what
// it deletes it still checks row by row. Clocks out of step with the ids — one row
// stored with a clock years ahead in the middle, a backfill stored with an admin's
// past `now` after newer rows — never get a row deleted before its time, and never
// keep one for good: the backfill waits for the rows stored before it to be old
// enough (docs/sql.md), the rows around the forged one go at their time.
func TestPurgeWithClocksOutOfStep(t *testing.T) {
	_, pool := setup(t)
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	// ids 1..300, a minute apart; then 301..340 backfilled two days earlier.
	mustExec(t, pool, `INSERT INTO herald.messages (id, producer, channel, recipient, payload, run_at, status, max_attempts, created_at, finished_at, expires_at)
		SELECT g, 'test', 'email', 'a@example.com', '{}', c, 'sent', 5, c, c + interval '1 second', 'infinity'
		FROM (SELECT g, CASE WHEN g <= 300 THEN $1::timestamptz + g * interval '1 minute'
		                     ELSE $1::timestamptz - interval '2 days' + g * interval '1 second' END AS c
		      FROM generate_series(1, 340) g) s`, base)
	mustExec(t, pool, `UPDATE herald.messages SET created_at = created_at + interval '10 years', finished_at = finished_at + interval '10 years' WHERE id = 150`)
	mustExec(t, pool, `INSERT INTO herald.delivery_events (source, event_id, event, at, received_at)
		SELECT 'generic', 'e' || g, 'delivered', c, c FROM (SELECT g, CASE WHEN g <= 30 THEN $1::timestamptz + g * interval '10 minutes'
		ELSE $1::timestamptz - interval '1 day' END AS c FROM generate_series(1, 40) g) s`, base)
	purgeAt := func(at time.Time) {
		t.Helper()
		for n := int64(-1); n != 0; {
			n = scalar[int64](t, pool, `SELECT herald.purge('1 hour', now => $1, batch_size => 7)`, at)
		}
		if early := countWhere(t, pool, `finished_at >= $1`, at.Add(-time.Hour)); early != scalar[int64](t, pool,
			`SELECT count(*) FROM generate_series(1, 340) g WHERE g = 150 OR (g <= 300 AND $1::timestamptz + g * interval '1 minute' + interval '1 second' >= $2)`, base, at.Add(-time.Hour)) {
			t.Fatalf("purge at %s deleted messages that finished after its bound", at)
		}
	}
	purgeAt(base.Add(260 * time.Minute)) // the bound: base + 200 minutes
	if left := scalar[string](t, pool, `SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM herald.messages WHERE id < 200`); left != "150" {
		t.Fatalf("messages below id 200 left: %s, want the forged 150", left)
	}
	if kept := scalar[int64](t, pool, `SELECT count(*) FROM herald.delivery_events WHERE id <= 19`); kept != 0 {
		t.Fatalf("%d of the delivery events received before the bound kept", kept)
	}
	purgeAt(base.Add(400 * time.Minute)) // past every row but the forged one
	if left := scalar[string](t, pool, `SELECT string_agg(id::text, ',' ORDER BY id) FROM herald.messages`); left != "150" {
		t.Fatalf("messages left: %s, want the forged 150", left)
	}
	if kept := scalar[int64](t, pool, `SELECT count(*) FROM herald.delivery_events`); kept != 0 {
		t.Fatalf("%d delivery events kept", kept)
	}
}

// herald.status tells what happened; queue_stats counts per channel and status.
func TestStatusAndQueueStats(t *testing.T) {
	ctx, pool := setup(t)
	id := enqueueEmail(t, pool, "a@example.com")
	c := claim(t, pool, 1, t0)
	mustExec(t, pool, `SELECT herald.fail($1::bigint, $2::bigint, 'timeout', 'transient', error_code => 'etimedout', now => $3)`, id, c[0].Token, t0)
	// queue_stats reads the real clock: one e-mail ready now, one SMS scheduled.
	mustExec(t, pool, `SELECT herald.enqueue('email', 'b@example.com', '{"subject":"s","text":"t"}')`)
	mustExec(t, pool, `SELECT herald.enqueue('sms', '+14155550100', '{"text":"x"}', run_at => now() + interval '1 hour')`)

	var (
		channel, status, lastErr, class string
		attempts, maxAttempts           int32
		created                         time.Time
		finished                        *time.Time
	)
	err := pool.QueryRow(ctx, `SELECT channel, status, attempts, max_attempts, created_at, finished_at, last_error_code, last_error_class
		FROM herald.status($1)`, id).Scan(&channel, &status, &attempts, &maxAttempts, &created, &finished, &lastErr, &class)
	if err != nil || channel != "email" || status != "queued" || attempts != 1 || maxAttempts != 5 || !created.Equal(t0) ||
		finished != nil || lastErr != "etimedout" || class != "transient" {
		t.Fatalf("status: %s %s %d/%d %v %v %s %s %v", channel, status, attempts, maxAttempts, created, finished, lastErr, class, err)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.status(987654)`); n != 0 {
		t.Fatalf("status of an unknown id gave %d rows", n)
	}

	stats := map[string][2]int64{}
	rows, err := pool.Query(ctx, `SELECT channel || '/' || status, count, ready FROM herald.queue_stats`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		var n, ready int64
		if err := rows.Scan(&k, &n, &ready); err != nil {
			t.Fatal(err)
		}
		stats[k] = [2]int64{n, ready}
	}
	// Both e-mails are queued: the failed one waits for its backoff (in 2030), the
	// other is ready; the scheduled SMS is not ready.
	if stats["email/queued"] != [2]int64{2, 1} || stats["sms/queued"] != [2]int64{1, 0} || len(stats) != 2 {
		b, _ := json.Marshal(stats)
		t.Fatalf("queue_stats %s", b)
	}
}

// herald.queue_depth counts queued (due), scheduled, held and processing messages per
// channel (0 where there are none, for every channel), and reads them through the
// partial indexes: with a long history of sent messages kept, its plan scans no table.
func TestQueueDepth(t *testing.T) {
	ctx, pool := setup(t)
	enqueueMany(t, pool, 3000, "email")
	mustExec(t, pool, `SELECT herald.complete(array_agg(id), array_agg(lease_token))
		FROM herald.claim_batch('w', 2990, '30 seconds', NULL, now())`)
	mustExec(t, pool, `SELECT count(*) FROM herald.claim_batch('w', 4, '30 seconds', NULL, now())`)
	mustExec(t, pool, `SELECT herald.enqueue('sms', '+14155550100', '{"text":"x"}', run_at => now() + interval '1 hour', ordering_key => 'k')`)
	mustExec(t, pool, `SELECT herald.enqueue('sms', '+14155550100', '{"text":"x"}', ordering_key => 'k')`)
	mustExec(t, pool, `ANALYZE herald.messages`)

	depth := map[string]int64{}
	rows, err := pool.Query(ctx, `SELECT channel || '/' || status, count FROM herald.queue_depth`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		depth[k] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	channels := scalar[int64](t, pool, `SELECT count(*) FROM herald.channels`)
	if depth["email/queued"] != 6 || depth["email/processing"] != 4 || depth["sms/scheduled"] != 1 || depth["sms/queued"] != 0 ||
		depth["sms/held"] != 1 || depth["sms/processing"] != 0 || depth["email/held"] != 0 || depth["email/scheduled"] != 0 ||
		int64(len(depth)) != 4*channels {
		b, _ := json.Marshal(depth)
		t.Fatalf("queue_depth %s (want every one of %d channels four times)", b, channels)
	}

	plan := explain(t, pool, `SELECT * FROM herald.queue_depth`)
	// queued and held rows: a partial index on status = 'queued' (claim or expiry), held
	// ones the expiry index
	if strings.Contains(plan, "Seq Scan on messages") ||
		!(strings.Contains(plan, "messages_claim_idx") || strings.Contains(plan, "messages_expiry_idx")) ||
		!(strings.Contains(plan, "messages_expiry_idx") || strings.Contains(plan, "messages_ordering_key_idx")) ||
		!strings.Contains(plan, "messages_in_flight_idx") {
		t.Fatalf("queue_depth should read the partial indexes, not the table:\n%s", plan)
	}
}

// herald.throughput counts finished messages per channel and minute of the last hour.
func TestThroughputView(t *testing.T) {
	_, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, status, max_attempts, created_at, finished_at, expires_at)
		SELECT 'test', 'email', 'a@example.com', '{}', now(), s, 5, now(), f, 'infinity'
		FROM (VALUES ('sent', now()), ('sent', now()), ('dead', now()), ('cancelled', now()),
		             ('sent', now() - interval '2 hours')) AS v(s, f)`)
	var sent, dead, cancelled int64
	if err := pool.QueryRow(context.Background(), `SELECT sum(sent), sum(dead), sum(cancelled) FROM herald.throughput WHERE channel = 'email'`).
		Scan(&sent, &dead, &cancelled); err != nil || sent != 2 || dead != 1 || cancelled != 1 {
		t.Fatalf("throughput: sent %d dead %d cancelled %d (%v)", sent, dead, cancelled, err)
	}
}
