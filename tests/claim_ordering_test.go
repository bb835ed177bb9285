package tests

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// enqueueOrdered stores an e-mail with ordering key key, due at runAt, at t0 and
// returns its id.
func enqueueOrdered(t *testing.T, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, key string, runAt time.Time) int64 {
	t.Helper()
	var id int64
	if err := q.QueryRow(context.Background(), `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}',
		ordering_key => $1, run_at => $2, now => $3)`, key, runAt, t0).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// claimedHead enqueues a message with ordering key key and claims it: the key's first
// message, in flight. It returns the message's id and lease token.
func claimedHead(t *testing.T, pool *pgxpool.Pool, key string) (id, token int64) {
	t.Helper()
	id = enqueueOrdered(t, pool, key, t0)
	got := claim(t, pool, 1, t0)
	if !slices.Equal(ids(got), []int64{id}) {
		t.Fatalf("claimed %v, want the head %d", ids(got), id)
	}
	return id, got[0].Token
}

// held reports whether message id is 'held'.
func held(t *testing.T, pool *pgxpool.Pool, id int64) bool {
	t.Helper()
	return scalar[string](t, pool, `SELECT status FROM herald.messages WHERE id = $1`, id) == "held"
}

// An ordering key belongs to the producer that uses it: another producer using the
// same key, with a message scheduled a year ahead, must not hold back the first
// producer's messages (a global key let any producer stop another's sends).
func TestOrderingKeysArePerProducer(t *testing.T) {
	ctx, pool := setup(t)
	alice := loginPool(t, pool, "herald_test_alice", "herald_producer")
	mallory := loginPool(t, pool, "herald_test_mallory", "herald_producer")
	var blocker, mine int64
	if err := mallory.QueryRow(ctx, `SELECT herald.enqueue('email', 'm@example.com', '{"subject":"s","text":"t"}',
		ordering_key => 'user-42', run_at => now() + interval '300 days')`).Scan(&blocker); err != nil {
		t.Fatal(err)
	}
	if err := alice.QueryRow(ctx, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}',
		ordering_key => 'user-42')`).Scan(&mine); err != nil {
		t.Fatal(err)
	}
	if held(t, pool, mine) {
		t.Fatalf("alice's message %d is held behind mallory's %d", mine, blocker)
	}
	got := scalar[[]int64](t, pool, `SELECT coalesce(array_agg(id), '{}') FROM herald.claim_batch('w', 10)`)
	if !slices.Equal(got, []int64{mine}) {
		t.Fatalf("claimed %v, want alice's %d (mallory's %d is scheduled)", got, mine, blocker)
	}
	// Within one producer the key still orders: mallory's next waits for her first.
	var second int64
	if err := mallory.QueryRow(ctx, `SELECT herald.enqueue('email', 'm@example.com', '{"subject":"s","text":"t"}',
		ordering_key => 'user-42')`).Scan(&second); err != nil {
		t.Fatal(err)
	}
	if !held(t, pool, second) {
		t.Fatalf("mallory's second message %d is not held behind her first %d", second, blocker)
	}
}

// A producer's backlog behind one ordering key (here 20,000 messages, the first in
// flight) is held out of the claim index: a claim reads the few messages it takes,
// not the backlog (each claim read and skipped all of it: 85 ms per claim at 100,000).
// Read through auto_explain's buffer counts of the claim's scans.
func TestOrderingKeyBacklogIsNotReadByClaims(t *testing.T) {
	ctx, pool := setup(t)
	claimedHead(t, pool, "tenant-1")
	for i := 0; i < 2; i++ {
		if err := pool.QueryRow(ctx, `SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'email',
			'recipient', 'u' || g || '@example.com', 'payload', '{"subject":"s","text":"t"}'::jsonb, 'ordering_key', 'tenant-1'))
			FROM generate_series(1, 10000) g), now => $1)`, t0).Scan(new([]int64)); err != nil {
			t.Fatal(err)
		}
	}
	enqueueBatch(t, pool, "email", 10, t0)
	// Operators see them as held, not as a late queue.
	if n := scalar[int64](t, pool, `SELECT count FROM herald.queue_depth WHERE channel = 'email' AND status = 'held'`); n != 20000 {
		t.Fatalf("queue_depth shows %d held, want the 20,000 behind the head", n)
	}
	mustExec(t, pool, `ANALYZE herald.messages`)
	conn, notices := explainConn(t, pool)
	for _, s := range []string{`SET auto_explain.log_analyze = on`, `SET auto_explain.log_buffers = on`} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM herald.claim_batch('w', 100, '30 seconds', NULL, $1)`, t0).Scan(&n); err != nil || n != 10 {
		t.Fatalf("claimed %d (%v), want the 10 messages without a key", n, err)
	}
	scans := 0
	for _, m := range *notices {
		if !strings.Contains(m, "messages_claim_idx") {
			continue
		}
		scans++
		for _, b := range regexp.MustCompile(`shared hit=(\d+)`).FindAllStringSubmatch(m, -1) {
			if n, _ := strconv.Atoi(b[1]); n > 50 { // the 20,000 rows are hundreds of pages
				t.Fatalf("a claim read %d buffers of a backlog it could not take:\n%s", n, m)
			}
		}
	}
	if scans == 0 {
		t.Fatal("no plan of a claim scan among the notices")
	}
}

// Whichever way a message with an ordering key finishes, the next message of its key
// is released at once (no reap_stale needed), and only it.
func TestOrderingKeyReleasesOnEveryExit(t *testing.T) {
	exits := []struct {
		name string
		// finish ends message id, claimed (processing) when claimed is true, at t0.
		claimed bool
		finish  func(t *testing.T, pool *pgxpool.Pool, id, token int64)
	}{
		{"sent", true, func(t *testing.T, pool *pgxpool.Pool, id, token int64) {
			mustExec(t, pool, `SELECT herald.complete($1::bigint, $2::bigint, NULL, $3)`, id, token, t0)
		}},
		{"dead (permanent)", true, func(t *testing.T, pool *pgxpool.Pool, id, token int64) {
			mustExec(t, pool, `SELECT herald.fail($1::bigint, $2::bigint, 'no such user', 'permanent', now => $3)`, id, token, t0)
		}},
		{"dead (lease expired, last attempt)", true, func(t *testing.T, pool *pgxpool.Pool, id, token int64) {
			mustExec(t, pool, `UPDATE herald.messages SET max_attempts = 1 WHERE id = $1`, id)
			mustExec(t, pool, `SELECT herald.reap_stale($1)`, t0.Add(time.Hour))
		}},
		{"cancelled", false, func(t *testing.T, pool *pgxpool.Pool, id, token int64) {
			mustExec(t, pool, `SELECT herald.cancel($1, now => $2)`, id, t0)
		}},
		{"expired", false, func(t *testing.T, pool *pgxpool.Pool, id, token int64) {
			mustExec(t, pool, `UPDATE herald.messages SET expires_at = $2 WHERE id = $1`, id, t0.Add(-time.Second))
			mustExec(t, pool, `SELECT herald.reap_stale($1)`, t0)
		}},
		{"suppressed at claim", false, func(t *testing.T, pool *pgxpool.Pool, id, token int64) {
			mustExec(t, pool, `SELECT herald.suppress('email', ARRAY['first@example.com'])`)
			if got := claim(t, pool, 10, t0); len(got) != 0 {
				t.Fatalf("claimed %v, want the first suppressed and nothing sent", ids(got))
			}
		}},
	}
	for _, e := range exits {
		t.Run(e.name, func(t *testing.T) {
			_, pool := setup(t)
			first := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'first@example.com', '{"subject":"s","text":"t"}',
				ordering_key => 'k', now => $1)`, t0)
			second, third := enqueueOrdered(t, pool, "k", t0), enqueueOrdered(t, pool, "k", t0)
			if !held(t, pool, second) || !held(t, pool, third) {
				t.Fatal("the messages behind the first are not held")
			}
			var token int64
			if e.claimed {
				got := claim(t, pool, 10, t0)
				if !slices.Equal(ids(got), []int64{first}) {
					t.Fatalf("claimed %v, want only the first %d", ids(got), first)
				}
				token = got[0].Token
			}
			e.finish(t, pool, first, token)
			if status := scalar[string](t, pool, `SELECT status FROM herald.messages WHERE id = $1`, first); status == "queued" || status == "processing" {
				t.Fatalf("the first is still %s", status)
			}
			if held(t, pool, second) || !held(t, pool, third) {
				t.Fatalf("after the first ended: second held %v, third held %v; want only the third held", held(t, pool, second), held(t, pool, third))
			}
			if got := ids(claim(t, pool, 10, t0.Add(time.Hour))); !slices.Equal(got, []int64{second}) {
				t.Fatalf("claimed %v, want the second %d", got, second)
			}
			if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.ordering_rechecks`); n != 0 {
				t.Fatalf("%d keys noted for a recheck without any concurrent change", n)
			}
		})
	}
}

// An enqueue still in progress stores its message held behind one that finishes
// before the enqueue commits, so the finishing transaction cannot see it: the key is
// noted, reap_stale leaves it while the enqueue is open and releases the message
// once it has committed (it would otherwise wait for ever).
func TestOrderingKeyEnqueueInProgress(t *testing.T) {
	ctx, pool := setup(t)
	head, token := claimedHead(t, pool, "k")
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	next := enqueueOrdered(t, tx, "k", t0)
	mustExec(t, pool, `SELECT herald.complete($1::bigint, $2::bigint, NULL, $3)`, head, token, t0)
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.ordering_rechecks WHERE message_id = $1`, head); n != 1 {
		t.Fatalf("%d notes for the finished head, want 1 (an enqueue holds it)", n)
	}
	mustExec(t, pool, `SELECT herald.reap_stale($1)`, t0)
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.ordering_rechecks`); n != 1 {
		t.Fatalf("reap_stale settled the key while the enqueue is open (%d notes left)", n)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if !held(t, pool, next) {
		t.Fatal("the message enqueued behind the finishing head is not held: nothing to settle")
	}
	if got := claim(t, pool, 10, t0); len(got) != 0 {
		t.Fatalf("claimed %v while the key is unsettled", ids(got))
	}
	mustExec(t, pool, `SELECT herald.reap_stale($1)`, t0)
	if got := ids(claim(t, pool, 10, t0)); !slices.Equal(got, []int64{next}) {
		t.Fatalf("after reap_stale claimed %v, want %d", got, next)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.ordering_rechecks`); n != 0 {
		t.Fatalf("%d notes left after settling", n)
	}
}

// The exit that releases a key's next message wakes a runner waiting on herald_queue
// (it claimed, found the key's next message held, and listens): it need not wait for
// its poll.
func TestOrderingKeyReleaseWakesRunners(t *testing.T) {
	_, pool := setup(t)
	queue := listen(t, pool, "herald_queue")
	conf := pool.Config().Copy()
	conf.ConnConfig.RuntimeParams["herald.notify_interval_ms"] = "3600000"
	lazy, err := pgxpool.NewWithConfig(context.Background(), conf)
	if err != nil {
		t.Fatal(err)
	}
	defer lazy.Close()
	head := enqueueOrdered(t, lazy, "k", t0)
	second := enqueueOrdered(t, lazy, "k", t0)
	got := claim(t, lazy, 10, t0)
	if !slices.Equal(ids(got), []int64{head}) {
		t.Fatalf("claimed %v, want %d", ids(got), head)
	}
	// The runner claims again, gets nothing, and will wait: drain what came so far.
	if n := len(claim(t, lazy, 10, t0)); n != 0 {
		t.Fatalf("claimed %d behind the head", n)
	}
	mustExec(t, pool, `SELECT pg_notify('herald_queue', 'marker')`)
	for next(t, queue) != "herald_queue:marker" {
	}
	mustExec(t, lazy, `SELECT herald.complete($1::bigint, $2::bigint, NULL, $3)`, head, got[0].Token, t0)
	mustExec(t, pool, `SELECT pg_notify('herald_queue', 'marker')`)
	if n := next(t, queue); n != "herald_queue:" {
		t.Fatalf("completing the head did not wake the runners (got %q first)", n)
	}
	if got := ids(claim(t, lazy, 10, t0)); !slices.Equal(got, []int64{second}) {
		t.Fatalf("claimed %v, want %d", got, second)
	}
}

// Producers keep adding to a few ordering keys while workers claim, complete and
// sometimes fail them, all concurrently: per key, at most one message is in flight
// and messages go in id order; every message is sent in the end (none left held),
// with reap_stale on the runners' schedule settling the keys noted in races.
func TestOrderingKeysUnderConcurrency(t *testing.T) {
	ctx, pool := setup(t)
	const keys, perKey, workers = 4, 60, 3
	errs := make(chan error, keys+workers)
	for k := 0; k < keys; k++ {
		go func(key string) {
			for i := 0; i < perKey; i++ {
				if _, err := pool.Exec(ctx, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}',
					ordering_key => $1, metadata => jsonb_build_object('key', $1::text))`, key); err != nil {
					errs <- err
					return
				}
			}
		}(fmt.Sprintf("key-%d", k))
	}
	// mu is held from a message's claim being recorded to its end being reported, so a
	// claim of the next message of its key before that end is seen as two in flight.
	var mu sync.Mutex
	inFlight := map[string]int64{}
	sent := map[string][]int64{}
	total := 0
	allSent := make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				rows, err := pool.Query(ctx, `SELECT id, lease_token, metadata->>'key' FROM herald.claim_batch($1, 3)`, fmt.Sprintf("w%d", w))
				if err != nil {
					errs <- err
					return
				}
				type row struct {
					id, token int64
					key       string
				}
				got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
					var x row
					return x, r.Scan(&x.id, &x.token, &x.key)
				})
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 { // the runner's poll
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
					continue
				}
				mu.Lock()
				for _, r := range got {
					if other, ok := inFlight[r.key]; ok {
						mu.Unlock()
						errs <- fmt.Errorf("key %s: %d claimed while %d is in flight", r.key, r.id, other)
						return
					}
					inFlight[r.key] = r.id
				}
				mu.Unlock()
				for j, r := range got {
					mu.Lock()
					if (i+j)%7 == 3 { // a transient failure, retried at once: still first of its key
						err = reported(pool.QueryRow(ctx, `SELECT herald.fail($1::bigint, $2::bigint, 'busy', 'transient', retry_at => now())`, r.id, r.token))
					} else {
						err = reported(pool.QueryRow(ctx, `SELECT herald.complete($1::bigint, $2::bigint)`, r.id, r.token))
						sent[r.key] = append(sent[r.key], r.id)
						if total++; total == keys*perKey {
							close(allSent)
						}
					}
					delete(inFlight, r.key)
					mu.Unlock()
					if err != nil {
						errs <- err
						return
					}
				}
			}
		}(w)
	}
	defer func() { close(stop); wg.Wait() }()
	reap := time.NewTicker(200 * time.Millisecond) // the runners' reap_stale, sped up
	defer reap.Stop()
	timeout := time.After(60 * time.Second)
	for waiting := true; waiting; {
		select {
		case <-allSent:
			waiting = false
		case err := <-errs:
			t.Fatal(err)
		case <-reap.C:
			mustExec(t, pool, `SELECT herald.reap_stale()`)
		case <-timeout:
			mu.Lock()
			n := total
			mu.Unlock()
			t.Fatalf("%d of %d sent; left: %s", n, keys*perKey,
				scalar[string](t, pool, `SELECT coalesce(string_agg(format('%s %s', id, status), ', '), '') FROM herald.messages WHERE status <> 'sent'`))
		}
	}
	for key, s := range sent {
		if !slices.IsSorted(s) {
			t.Fatalf("key %s sent out of id order: %v", key, s)
		}
	}
}

// reported scans the boolean answer of complete or fail: false (the lease is gone) is
// an error here, where no lease may expire.
func reported(row pgx.Row) error {
	var ok bool
	if err := row.Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("a report matched no lease")
	}
	return nil
}

// Under REPEATABLE READ an enqueue cannot see a message finish after its snapshot, so
// it stores nothing held behind a message of the table (it could wait for ever); the
// claims' own check still keeps the key's order.
func TestOrderingKeyRepeatableReadEnqueue(t *testing.T) {
	ctx, pool := setup(t)
	head, token := claimedHead(t, pool, "k")
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var stored []int64
	if err := tx.QueryRow(ctx, `SELECT herald.enqueue_batch(jsonb_build_array(
		jsonb_build_object('channel', 'email', 'recipient', 'a@example.com', 'payload', '{"subject":"s","text":"t"}'::jsonb, 'ordering_key', 'k'),
		jsonb_build_object('channel', 'email', 'recipient', 'a@example.com', 'payload', '{"subject":"s","text":"t"}'::jsonb, 'ordering_key', 'k')), now => $1)`, t0).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if held(t, pool, stored[0]) || !held(t, pool, stored[1]) {
		t.Fatalf("held: first %v, second %v; want only the second (behind the first of its call)", held(t, pool, stored[0]), held(t, pool, stored[1]))
	}
	if got := claim(t, pool, 10, t0); len(got) != 0 {
		t.Fatalf("claimed %v while the head %d is in flight", ids(got), head)
	}
	mustExec(t, pool, `SELECT herald.complete($1::bigint, $2::bigint, NULL, $3)`, head, token, t0)
	first := claim(t, pool, 10, t0)
	if !slices.Equal(ids(first), stored[:1]) {
		t.Fatalf("claimed %v, want %d", ids(first), stored[0])
	}
	mustExec(t, pool, `SELECT herald.complete($1::bigint, $2::bigint, NULL, $3)`, stored[0], first[0].Token, t0)
	if got := ids(claim(t, pool, 10, t0)); !slices.Equal(got, stored[1:]) {
		t.Fatalf("claimed %v, want %d", got, stored[1])
	}
}
