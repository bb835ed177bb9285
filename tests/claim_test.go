package tests

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// claim_batch hands out only ready rows, in (priority, run_at, id) order, at most
// batch_size, with a fresh lease token per call.
func TestClaimBatch(t *testing.T) {
	ctx, pool := setup(t)
	grantPriority(t, pool, "", -100)
	enq := func(prio int, runAt time.Time) int64 {
		return scalar[int64](t, pool, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}',
			run_at => $1, priority => $2, now => $3)`, runAt, prio, t0)
	}
	late := enq(0, t0.Add(-time.Minute))
	normal := enq(0, t0)
	urgent := enq(-10, t0)
	lowEarly := enq(5, t0.Add(-time.Hour))
	future := enq(-50, t0.Add(time.Minute))

	first := claim(t, pool, 2, t0)
	if got, want := ids(first), []int64{urgent, late}; !slices.Equal(got, want) {
		t.Fatalf("first claim %v, want %v", got, want)
	}
	second := claim(t, pool, 10, t0)
	if got, want := ids(second), []int64{normal, lowEarly}; !slices.Equal(got, want) {
		t.Fatalf("second claim %v, want %v (the future message must wait)", got, want)
	}
	if first[0].Token == second[0].Token {
		t.Fatal("two claims got the same lease token")
	}
	for _, c := range append(first, second...) {
		if c.Attempt != 1 || !c.Expires.Equal(t0.Add(30*time.Second)) || c.Token != first[0].Token && c.Token != second[0].Token {
			t.Fatalf("claimed row %+v", c)
		}
	}
	if n := len(claim(t, pool, 10, t0)); n != 0 {
		t.Fatalf("claimed %d rows from an empty queue", n)
	}
	later := claim(t, pool, 10, t0.Add(time.Minute))
	if len(later) != 1 || later[0].ID != future {
		t.Fatalf("scheduled message not claimed when due: %v", ids(later))
	}
	var status, by string
	if err := pool.QueryRow(ctx, `SELECT status, leased_by FROM herald.messages WHERE id = $1`, future).Scan(&status, &by); err != nil ||
		status != "processing" || by != "test-worker" {
		t.Fatalf("claimed row: %s %s %v", status, by, err)
	}
}

// Channel filter, paused channels, and a NULL lease taking the channel's lease.
func TestClaimChannels(t *testing.T) {
	ctx, pool := setup(t)
	mail := enqueueEmail(t, pool, "a@example.com")
	sms := scalar[int64](t, pool, `SELECT herald.enqueue('sms', '+14155550100', '{"text":"hi"}', now => $1)`, t0)
	mustExec(t, pool, `UPDATE herald.channels SET paused = true WHERE name = 'email'`)
	mustExec(t, pool, `UPDATE herald.channels SET lease = '2 minutes' WHERE name = 'sms'`)

	var id int64
	var exp time.Time
	err := pool.QueryRow(ctx, `SELECT id, lease_expires_at FROM herald.claim_batch('w', 10, NULL, NULL, $1)`, t0).Scan(&id, &exp)
	if err != nil || id != sms || !exp.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("claim with email paused: id %d (sms %d) expires %v, %v", id, sms, exp, err)
	}
	mustExec(t, pool, `UPDATE herald.channels SET paused = false WHERE name = 'email'`)
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.claim_batch('w', 10, '1 minute', ARRAY['sms'], $1)`, t0); n != 0 {
		t.Fatalf("sms-only claim took %d rows", n)
	}
	if got := scalar[int64](t, pool, `SELECT id FROM herald.claim_batch('w', 10, '1 minute', ARRAY['email'], $1)`, t0); got != mail {
		t.Fatalf("email claim got %d", got)
	}
}

// A backlog on one channel does not hold back another: within a priority the channels
// take turns being claimed first, one claim after the next, and each gives its
// messages in (run_at, id) order. Two claims of 100 from 300 older e-mails and 300
// newer SMS take 100 of each (one scan in (priority, run_at, id) order took 200
// e-mails); a more urgent priority still comes first whatever its channel.
func TestClaimChannelsTakeTurns(t *testing.T) {
	_, pool := setup(t)
	grantPriority(t, pool, "", -1)
	enqueueBatch(t, pool, "email", 300, t0.Add(-time.Hour))
	enqueueBatch(t, pool, "sms", 300, t0)
	got := map[string]int{}
	for i := 0; i < 2; i++ {
		for _, c := range claim(t, pool, 100, t0) {
			got[c.Channel]++
		}
	}
	if got["email"] != 100 || got["sms"] != 100 {
		t.Fatalf("two claims of 100 took %v, want 100 of each", got)
	}
	// Each channel in its own order: the oldest of each were taken.
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages p WHERE p.status = 'processing' AND EXISTS (
		SELECT FROM herald.messages q WHERE q.status = 'queued' AND q.channel = p.channel AND q.id < p.id)`); n != 0 {
		t.Fatalf("%d claimed messages had an older queued message of their channel", n)
	}
	// Priority before turns: whichever channel's turn it is, the urgent message first.
	for _, m := range [][3]string{{"sms", "+14155550999", `{"text":"t"}`}, {"email", "urgent@example.com", `{"subject":"s","text":"t"}`}} {
		urgent := scalar[int64](t, pool, `SELECT herald.enqueue($1, $2, $3::jsonb, priority => -1, now => $4)`, m[0], m[1], m[2], t0)
		if first := claim(t, pool, 10, t0); len(first) != 10 || first[0].ID != urgent {
			t.Fatalf("claim after the urgent %s %d: %v", m[0], urgent, ids(first))
		}
	}
}

// Bad arguments to claim_batch: 22V12 with the argument named.
func TestClaimRejectsBadArguments(t *testing.T) {
	ctx, pool := setup(t)
	for _, c := range []struct{ sql, field string }{
		{`SELECT * FROM herald.claim_batch('', 10)`, "worker"},
		{`SELECT * FROM herald.claim_batch(NULL, 10)`, "worker"},
		{`SELECT * FROM herald.claim_batch('w', 0)`, "batch_size"},
		{`SELECT * FROM herald.claim_batch('w', 10001)`, "batch_size"},
		{`SELECT * FROM herald.claim_batch('w', 10, '0 seconds')`, "lease"},
		{`SELECT * FROM herald.claim_batch('w', 10, '2 days')`, "lease"},
	} {
		_, err := pool.Exec(ctx, c.sql)
		wantPgError(t, err, "22V12", c.field)
	}
}

// Messages sharing an ordering key go out one at a time, in id order; a later one
// waits while an earlier one is queued (even scheduled) or processing, and goes once
// the earlier one is sent, dead or cancelled.
func TestClaimOrderingKey(t *testing.T) {
	_, pool := setup(t)
	a1, a2, a3 := enqueueOrdered(t, pool, "A", t0), enqueueOrdered(t, pool, "A", t0), enqueueOrdered(t, pool, "A", t0)
	b1 := enqueueOrdered(t, pool, "B", t0.Add(time.Hour)) // scheduled: blocks b2 until it is done
	b2 := enqueueOrdered(t, pool, "B", t0)

	got := claim(t, pool, 10, t0)
	if !slices.Equal(ids(got), []int64{a1}) {
		t.Fatalf("first claim %v, want only %d", ids(got), a1)
	}
	// a1 fails transiently: back to queued (at a later run_at) and a2 still waits.
	mustExec(t, pool, `SELECT herald.fail($1::bigint, $2::bigint, 'timeout', 'transient', now => $3)`, a1, got[0].Token, t0)
	if n := len(claim(t, pool, 10, t0)); n != 0 {
		t.Fatalf("claimed %d rows while a1 waits for its retry", n)
	}
	again := claim(t, pool, 10, t0.Add(time.Hour)) // a1 retried; b1 is due as well
	if !slices.Equal(ids(again), []int64{b1, a1}) && !slices.Equal(ids(again), []int64{a1, b1}) {
		t.Fatalf("claim at +1h %v, want a1 %d and b1 %d", ids(again), a1, b1)
	}
	for _, c := range again {
		mustExec(t, pool, `SELECT herald.complete($1::bigint, $2::bigint, NULL, $3)`, c.ID, c.Token, t0.Add(time.Hour))
	}
	next := claim(t, pool, 10, t0.Add(time.Hour))
	if !slices.Equal(ids(next), []int64{a2, b2}) && !slices.Equal(ids(next), []int64{b2, a2}) {
		t.Fatalf("after a1 and b1 were sent: %v, want a2 %d and b2 %d", ids(next), a2, b2)
	}
	// a2 dies: a3 may go.
	for _, c := range next {
		if c.ID == a2 {
			mustExec(t, pool, `SELECT herald.fail($1::bigint, $2::bigint, 'bad address', 'permanent', now => $3)`, c.ID, c.Token, t0.Add(time.Hour))
		}
	}
	if got := ids(claim(t, pool, 10, t0.Add(time.Hour))); !slices.Equal(got, []int64{a3}) {
		t.Fatalf("after a2 died: %v, want a3 %d", got, a3)
	}
}

// The ordering key also releases on cancel.
func TestClaimOrderingKeyAfterCancel(t *testing.T) {
	_, pool := setup(t)
	first := enqueueOrdered(t, pool, "k", t0.Add(time.Hour))
	second := enqueueOrdered(t, pool, "k", t0)
	if n := len(claim(t, pool, 10, t0)); n != 0 {
		t.Fatal("second message claimed while the first is scheduled")
	}
	if scalar[string](t, pool, `SELECT herald.cancel($1, now => $2)`, first, t0) != "cancelled" {
		t.Fatal("a queued message was not cancelled")
	}
	if got := ids(claim(t, pool, 10, t0)); !slices.Equal(got, []int64{second}) {
		t.Fatalf("after cancel: %v", got)
	}
}

// planOf returns the last plan among notices that contains marker.
func planOf(t *testing.T, notices []string, marker string) string {
	t.Helper()
	var plan string
	for _, m := range notices {
		if strings.Contains(m, marker) {
			plan = m
		}
	}
	if plan == "" {
		t.Fatalf("no plan containing %q among %d notices", marker, len(notices))
	}
	return plan
}

// enqueueNewsletter stores n e-mails as the producer q logs in as, with one
// enqueue_batch call at the database's clock (a producer may not pass one), and
// returns their ids.
func enqueueNewsletter(t *testing.T, q *pgxpool.Pool, n int) []int64 {
	t.Helper()
	var got []int64
	if err := q.QueryRow(context.Background(), `SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object(
		'channel', 'email', 'recipient', 'u' || g || '@example.com', 'payload', '{"subject":"s","text":"t"}'::jsonb))
		FROM generate_series(1, $1) g))`, n).Scan(&got); err != nil {
		t.Fatal(err)
	}
	return got
}

// Producers of a channel take turns within a priority, as channels do: one
// producer's backlog (a newsletter of 2,000 enqueued first) must not hold another
// producer's password resets back for the 20 claims of 100 it takes to drain, and
// every producer with a backlog gets its share of each claim. Within a producer,
// messages keep their (run_at, id) order.
func TestClaimProducersTakeTurns(t *testing.T) {
	ctx, pool := setup(t)
	mallory := loginPool(t, pool, "herald_test_mallory", "herald_producer")
	alice := loginPool(t, pool, "herald_test_alice", "herald_producer")
	bob := loginPool(t, pool, "herald_test_bob", "herald_producer")
	enqueueNewsletter(t, mallory, 2000)
	var resets []int64
	for i := range 3 {
		var id int64
		if err := alice.QueryRow(ctx, `SELECT herald.enqueue('email', $1, '{"subject":"Reset","text":"t"}')`,
			fmt.Sprintf("reset%d@example.com", i)).Scan(&id); err != nil {
			t.Fatal(err)
		}
		resets = append(resets, id)
	}
	at := time.Now().Add(time.Minute)
	first := ids(claim(t, pool, 100, at))
	if len(first) != 100 {
		t.Fatalf("a claim of 100 took %d", len(first))
	}
	for _, id := range resets {
		if !slices.Contains(first, id) {
			t.Fatalf("alice's reset %d is not in the first claim of 100 behind mallory's 2,000 (claimed %v…)", id, first[:5])
		}
	}

	// Three backlogs: each claim of 10 shares itself among them (4, 3, 3), and the
	// one that gets the extra one takes turns.
	enqueueNewsletter(t, alice, 500)
	enqueueNewsletter(t, bob, 500)
	total := map[string]int{}
	for range 3 {
		got := ids(claim(t, pool, 10, at))
		per := producerCounts(t, pool, got)
		for p, k := range per {
			total[p] += k
		}
		if len(got) != 10 || per["mallory"] < 3 || per["alice"] < 3 || per["bob"] < 3 {
			t.Fatalf("a claim of 10 from three backlogs took %v", per)
		}
	}
	if total["mallory"] != 10 || total["alice"] != 10 || total["bob"] != 10 {
		t.Fatalf("three claims of 10 from three backlogs took %v, want 10 each", total)
	}
	// Each producer in its own order: the oldest of each were taken.
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages p WHERE p.status = 'processing' AND EXISTS (
		SELECT FROM herald.messages q WHERE q.status = 'queued' AND q.producer = p.producer AND q.id < p.id)`); n != 0 {
		t.Fatalf("%d claimed messages had an older queued message of their producer", n)
	}
}

// A producer's share goes on, round after round, past the rows another claim holds
// and the rows this claim took: with mallory's ten oldest locked by a claim in
// progress, a claim of 100 beside alice's three takes those three and mallory's next
// 97, each once.
func TestClaimProducersTakeTurnsPastLockedRows(t *testing.T) {
	ctx, pool := setup(t)
	mallory := loginPool(t, pool, "herald_test_mallory", "herald_producer")
	alice := loginPool(t, pool, "herald_test_alice", "herald_producer")
	backlog := enqueueNewsletter(t, mallory, 200)
	resets := enqueueNewsletter(t, alice, 3)
	other, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx)
	if _, err := other.Exec(ctx, `SELECT id FROM herald.messages WHERE id = ANY ($1) FOR NO KEY UPDATE`, backlog[:10]); err != nil {
		t.Fatal(err)
	}
	for range 2 { // both producers first in turn, one claim each
		got := ids(claim(t, pool, 100, time.Now().Add(time.Minute)))
		slices.Sort(got)
		want := slices.Concat(backlog[10:107], resets)
		if !slices.Equal(got, want) {
			t.Fatalf("claimed %d: %v\nwant %d: %v", len(got), got, len(want), want)
		}
		mustExec(t, pool, `UPDATE herald.messages SET status = 'queued', lease_token = NULL, lease_expires_at = NULL,
			leased_by = NULL, attempts = 0 WHERE id = ANY ($1)`, got)
	}
}

// producerCounts is how many of the given messages each producer has.
func producerCounts(t *testing.T, pool *pgxpool.Pool, ids []int64) map[string]int {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT producer FROM herald.messages WHERE id = ANY ($1)`, ids)
	if err != nil {
		t.Fatal(err)
	}
	producers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, p := range producers {
		n[strings.TrimPrefix(p, "herald_test_")]++
	}
	return n
}

// Attack: one producer's messages that take long to send (slow receivers) would fill
// every send slot. A channel's producer_concurrency bounds how many of one producer's
// messages are being sent at once: a claim hands out no more, in any priority, and a
// producer's room comes back as its messages are reported.
func TestClaimProducerConcurrency(t *testing.T) {
	ctx, pool := setup(t)
	mallory := loginPool(t, pool, "herald_test_mallory", "herald_producer")
	alice := loginPool(t, pool, "herald_test_alice", "herald_producer")
	bob := loginPool(t, pool, "herald_test_bob", "herald_producer")
	mustExec(t, pool, `UPDATE herald.channels SET producer_concurrency = 3 WHERE name = 'email'`)
	backlog := enqueueNewsletter(t, mallory, 200)
	enqueueNewsletter(t, alice, 2)
	enqueueNewsletter(t, bob, 5)
	// Two of bob's less urgent: his bound counts what the claim gave him at priority 0.
	if _, err := bob.Exec(ctx, `SELECT herald.enqueue('email', 'later' || g || '@example.com', '{"subject":"s","text":"t"}', priority => 50)
		FROM generate_series(1, 2) g`); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Minute)
	first := claim(t, pool, 100, at)
	if got := producerCounts(t, pool, ids(first)); len(first) != 8 || got["mallory"] != 3 || got["alice"] != 2 || got["bob"] != 3 {
		t.Fatalf("a claim of 100 under a bound of 3 took %d: %v, want mallory 3, alice 2, bob 3", len(first), got)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE status = 'processing' AND priority = 50`); n != 0 {
		t.Fatalf("bob's less urgent messages claimed past his bound: %d", n)
	}
	if got := claim(t, pool, 100, at); len(got) != 0 {
		t.Fatalf("every producer at its bound, a claim took %d: %v", len(got), producerCounts(t, pool, ids(got)))
	}
	// Two of mallory's sent: she may have two more sent at once, her oldest.
	var done []int64
	var tokens []int64
	for _, c := range first {
		if slices.Contains(backlog, c.ID) && len(done) < 2 {
			done, tokens = append(done, c.ID), append(tokens, c.Token)
		}
	}
	mustExec(t, pool, `SELECT herald.complete($1::bigint[], $2::bigint[])`, done, tokens)
	next := ids(claim(t, pool, 100, at))
	if !slices.Equal(next, backlog[3:5]) {
		t.Fatalf("after two of mallory's were sent, a claim took %v, want her next two %v", next, backlog[3:5])
	}
	// Lifted, the bound holds nothing back.
	mustExec(t, pool, `UPDATE herald.channels SET producer_concurrency = NULL WHERE name = 'email'`)
	if got := producerCounts(t, pool, ids(claim(t, pool, 100, at))); got["mallory"] != 98 || got["bob"] != 2 {
		t.Fatalf("with no bound a claim of 100 took %v, want mallory 98 and bob 2", got)
	}
	// Bad input: refused, the channel unchanged.
	for _, bad := range []int{0, -1, 100001} {
		_, err := pool.Exec(ctx, `UPDATE herald.channels SET producer_concurrency = $1 WHERE name = 'email'`, bad)
		if pe := wantPgError(t, err, "23514", ""); pe.ConstraintName != "channels_producer_concurrency_range" {
			t.Fatalf("producer_concurrency %d: %v", bad, err)
		}
	}
	if n := scalar[*int32](t, pool, `SELECT producer_concurrency FROM herald.channels WHERE name = 'email'`); n != nil {
		t.Fatalf("producer_concurrency %d after refused updates", *n)
	}
}

// A producer's own concurrency (herald.producers) takes the place of the channel's
// producer_concurrency: a busy tenant gets a larger share of the sends in flight, a
// suspect one a smaller; the others keep the channel's. It does not bound a producer
// on a channel without one.
func TestClaimProducerOwnConcurrency(t *testing.T) {
	ctx, pool := setup(t)
	mallory := loginPool(t, pool, "herald_test_mallory", "herald_producer")
	alice := loginPool(t, pool, "herald_test_alice", "herald_producer")
	bob := loginPool(t, pool, "herald_test_bob", "herald_producer")
	mustExec(t, pool, `UPDATE herald.channels SET producer_concurrency = 3 WHERE name = 'email'`)
	mustExec(t, pool, `INSERT INTO herald.producers (producer, concurrency) VALUES ('herald_test_alice', 6), ('herald_test_mallory', 1)`)
	for _, p := range []*pgxpool.Pool{mallory, alice, bob} {
		enqueueNewsletter(t, p, 10)
	}
	if _, err := mallory.Exec(ctx, `SELECT herald.enqueue('sms', '+14155550100', '{"text":"t"}') FROM generate_series(1, 4)`); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Minute)
	got := claim(t, pool, 100, at)
	var emails []int64
	sms := 0
	for _, c := range got {
		if c.Channel == "sms" {
			sms++
		} else {
			emails = append(emails, c.ID)
		}
	}
	if n := producerCounts(t, pool, emails); n["alice"] != 6 || n["mallory"] != 1 || n["bob"] != 3 || sms != 4 {
		t.Fatalf("a claim took e-mails %v and %d SMS, want alice 6, mallory 1, bob 3 and mallory's 4 SMS (no bound there)", n, sms)
	}
	// An admin sees each producer's sends in flight against its bound.
	for _, c := range []struct {
		producer, channel string
		processing        int64
		bound             *int32
	}{{"alice", "email", 6, ptr[int32](6)}, {"mallory", "email", 1, ptr[int32](1)}, {"bob", "email", 3, ptr[int32](3)}, {"mallory", "sms", 4, nil}} {
		var processing int64
		var bound *int32
		if err := pool.QueryRow(ctx, `SELECT processing, concurrency FROM herald.producer_backlog WHERE producer = $1 AND channel = $2`,
			"herald_test_"+c.producer, c.channel).Scan(&processing, &bound); err != nil {
			t.Fatal(err)
		}
		if processing != c.processing || (bound == nil) != (c.bound == nil) || (bound != nil && *bound != *c.bound) {
			t.Fatalf("producer_backlog for %s on %s: processing %d, concurrency %v; want %d, %v", c.producer, c.channel, processing, bound, c.processing, c.bound)
		}
	}
	// Bad input: refused, the row unchanged.
	_, err := pool.Exec(ctx, `UPDATE herald.producers SET concurrency = 0 WHERE producer = 'herald_test_alice'`)
	if pe := wantPgError(t, err, "23514", ""); pe.ConstraintName != "producers_concurrency_range" {
		t.Fatalf("concurrency 0: %v", err)
	}
	if n := scalar[int32](t, pool, `SELECT concurrency FROM herald.producers WHERE producer = 'herald_test_alice'`); n != 6 {
		t.Fatalf("alice's concurrency %d after a refused update", n)
	}
}
