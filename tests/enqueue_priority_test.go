package tests

import (
	"slices"
	"testing"

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
	_, err := bulk.Exec(ctx, `SELECT herald.enqueue('email', 'b@example.com', '{"subject":"s","text":"t"}', priority => 0)`)
	wantPgError(t, err, "42501", "priority")
	if p := enqueuedPriority(t, pool, bulk, `priority => 60`); p != 60 {
		t.Fatalf("less urgent than its floor: stored %d, want 60", p)
	}
	mine := scalar[int64](t, alice, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}')`)
	if got := scalar[[]int64](t, pool, `SELECT array_agg(id) FROM herald.claim_batch('w', 1)`); !slices.Equal(got, []int64{mine}) {
		t.Fatalf("claimed %v, want alice's %d ahead of 500 older messages of the demoted producer", got, mine)
	}
}

// enqueuedPriority enqueues an e-mail through producer with the extra argument arg
// and returns the priority it was stored with (read through pool).
func enqueuedPriority(t *testing.T, pool, producer *pgxpool.Pool, arg string) int {
	t.Helper()
	id := scalar[int64](t, producer, `SELECT herald.enqueue('email', 'p@example.com', '{"subject":"s","text":"t"}', `+arg+`)`)
	return int(scalar[int16](t, pool, `SELECT priority FROM herald.messages WHERE id = $1`, id))
}
