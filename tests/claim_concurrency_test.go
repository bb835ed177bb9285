package tests

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// 10,000 messages drained by 2, 4 and 8 concurrent claimers on separate connections:
// every message is claimed exactly once and ends sent; none is missed.
func TestConcurrentClaimersDrainExactlyOnce(t *testing.T) {
	t.Parallel()
	for _, workers := range []int{2, 4, 8} {
		t.Run(fmt.Sprintf("%d claimers", workers), func(t *testing.T) {
			ctx, pool := setup(t)
			const total = 10000
			enqueueThousands(t, pool, total/1000)
			seen := drain(t, ctx, pool, workers)
			if len(seen) != total {
				t.Fatalf("claimed %d distinct messages, want %d", len(seen), total)
			}
			for id, n := range seen {
				if n != 1 {
					t.Fatalf("message %d claimed %d times", id, n)
				}
			}
			var sent, attempts1 int64
			if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'sent'), count(*) FILTER (WHERE attempts = 1)
				FROM herald.messages`).Scan(&sent, &attempts1); err != nil || sent != total || attempts1 != total {
				t.Fatalf("sent %d, attempts=1 %d, want %d (%v)", sent, attempts1, total, err)
			}
		})
	}
}

// Producers' shares under contention: 10,000 messages of seven producers with uneven
// backlogs (one holds 4,000), drained by 4 concurrent claimers whose claims skip each
// other's rows and go round again after a producer that had fewer than its share:
// every message is claimed exactly once (no claim returns one twice) and sent at its
// first attempt.
func TestConcurrentClaimersShareProducersExactlyOnce(t *testing.T) {
	ctx, pool := setup(t)
	const total = 10000
	enqueueThousands(t, pool, total/1000)
	mustExec(t, pool, `UPDATE herald.messages SET producer = 'p' || least(id % 10, 6)`)
	seen := drain(t, ctx, pool, 4)
	if len(seen) != total {
		t.Fatalf("claimed %d distinct messages, want %d", len(seen), total)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("message %d claimed %d times", id, n)
		}
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE status <> 'sent' OR attempts <> 1`); n != 0 {
		t.Fatalf("%d messages not sent at their first attempt", n)
	}
}

// enqueueThousands stores k × 1,000 e-mails, 1,000 to a call of enqueue_batch.
func enqueueThousands(t *testing.T, pool *pgxpool.Pool, k int) {
	t.Helper()
	for range k {
		mustExec(t, pool, `SELECT herald.enqueue_batch(
			(SELECT jsonb_agg(jsonb_build_object('channel', 'email', 'recipient', 'u' || g || '@example.com',
			        'payload', '{"subject":"s","text":"t"}'::jsonb))
			 FROM generate_series(1, 1000) g))`)
	}
}

// drain runs `workers` claimers, each on its own connection, looping
// claim_batch → complete until a claim comes back empty; it returns how many times
// each id was claimed.
func drain(t *testing.T, ctx context.Context, pool *pgxpool.Pool, workers int) map[int64]int {
	t.Helper()
	var (
		mu   sync.Mutex
		seen = map[int64]int{}
		wg   sync.WaitGroup
		errs = make(chan error, workers)
	)
	start := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := pool.Acquire(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Release()
			<-start
			name := fmt.Sprintf("claimer-%d", w)
			for {
				rows, err := conn.Query(ctx, `SELECT id, lease_token FROM herald.claim_batch($1, 50)`, name)
				if err != nil {
					errs <- err
					return
				}
				var batchIDs, tokens []int64
				for rows.Next() {
					var id, tok int64
					if err := rows.Scan(&id, &tok); err != nil {
						errs <- err
						return
					}
					batchIDs, tokens = append(batchIDs, id), append(tokens, tok)
				}
				if err := rows.Err(); err != nil {
					errs <- err
					return
				}
				if len(batchIDs) == 0 {
					return
				}
				mu.Lock()
				for _, id := range batchIDs {
					seen[id]++
				}
				mu.Unlock()
				var n int
				if err := conn.QueryRow(ctx, `SELECT herald.complete($1::bigint[], $2::bigint[])`, batchIDs, tokens).Scan(&n); err != nil {
					errs <- err
					return
				}
				if n != len(batchIDs) {
					errs <- fmt.Errorf("%s: complete changed %d of %d", name, n, len(batchIDs))
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return seen
}

// A producer's bound under contention: claims that run at the same moment see each
// other's claimed rows only once those commit, so each would hand out the bound again;
// claims of a bounded channel are taken one at a time. Four claimers at once, five
// rounds: each producer has exactly its bound of messages being sent after each.
func TestConcurrentClaimersKeepProducersBound(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `UPDATE herald.channels SET producer_concurrency = 5 WHERE name = 'email'`)
	for _, p := range []string{"mallory", "alice", "bob"} {
		enqueueNewsletter(t, loginPool(t, pool, "herald_test_"+p, "herald_producer"), 50)
	}
	for round := range 5 {
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, 4)
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if _, err := pool.Exec(ctx, `SELECT herald.claim_batch($1, 100)`, fmt.Sprintf("claimer-%d", w)); err != nil {
					errs <- err
				}
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		rows, err := pool.Query(ctx, `SELECT producer, count(*) FROM herald.messages WHERE status = 'processing' GROUP BY producer`)
		if err != nil {
			t.Fatal(err)
		}
		sending := map[string]int64{}
		for rows.Next() {
			var p string
			var n int64
			if err := rows.Scan(&p, &n); err != nil {
				t.Fatal(err)
			}
			sending[p] = n
		}
		if len(sending) != 3 || sending["herald_test_mallory"] != 5 || sending["herald_test_alice"] != 5 || sending["herald_test_bob"] != 5 {
			t.Fatalf("round %d: four claims at once left %v being sent, want 5 of each producer", round, sending)
		}
		mustExec(t, pool, `SELECT herald.complete(array_agg(id), array_agg(lease_token)) FROM herald.messages WHERE status = 'processing'`)
	}
}

// Claims take a bounded channel's lock only when they take from it: while another
// claim holds the lock of 'hooks' (bounded, nothing due there), a claim of every
// channel takes the e-mails without waiting for it (lock_timeout would fail it); once
// 'hooks' has a due message, a claim waits for the lock.
func TestClaimsWaitOnlyForBoundedChannelsTheyTake(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, producer_concurrency) VALUES ('hooks', 'webhook', 5)`)
	enqueueNewsletter(t, loginPool(t, pool, "herald_test_alice", "herald_producer"), 10)
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_xact_lock(1213612877, hashtext('hooks'))`); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET lock_timeout = '200ms'`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), `RESET lock_timeout`)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM herald.claim_batch('w', 100)`).Scan(&n); err != nil || n != 10 {
		t.Fatalf("a claim with nothing due on the locked bounded channel: %d claimed, %v", n, err)
	}
	mustExec(t, pool, `SELECT herald.enqueue('hooks', 'https://hooks.example.com/in', '{"n": 1}')`)
	err = conn.QueryRow(ctx, `SELECT count(*) FROM herald.claim_batch('w', 100)`).Scan(&n)
	wantPgError(t, err, "55P03", "")
}
