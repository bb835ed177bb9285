package tests

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// indexesHolding returns, sorted, the indexes of herald.messages whose predicate the
// row `id` satisfies (every index without one): the indexes that got an entry for
// the row's current version.
func indexesHolding(t *testing.T, pool *pgxpool.Pool, id int64) []string {
	t.Helper()
	ctx := context.Background()
	rows, err := pool.Query(ctx, `SELECT c.relname, coalesce(pg_get_expr(i.indpred, i.indrelid), 'true')
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE i.indrelid = 'herald.messages'::regclass`)
	if err != nil {
		t.Fatal(err)
	}
	type index struct{ Name, Predicate string }
	indexes, err := pgx.CollectRows(rows, pgx.RowToStructByPos[index])
	if err != nil {
		t.Fatal(err)
	}
	var holding []string
	for _, ix := range indexes {
		var in bool
		if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT (%s) IS TRUE FROM herald.messages WHERE id = $1`, ix.Predicate), id).Scan(&in); err != nil {
			t.Fatalf("%s: %v", ix.Name, err)
		}
		if in {
			holding = append(holding, ix.Name)
		}
	}
	slices.Sort(holding)
	return holding
}

// Release 16: a delivered message is in no index but the primary key, so complete
// writes one index entry per message (026_finished_index.sql dropped
// messages_finished_idx, which took every sent row); a dead one is also in
// messages_dead_idx, which herald.dead_letters reads. Checked against every index of
// herald.messages, so an index added later that takes sent rows fails here.
func TestDeliveredMessagesOnlyInPrimaryKey(t *testing.T) {
	_, pool := setup(t)
	enqueueMany(t, pool, 2, "email")
	mustExec(t, pool, `SELECT herald.complete(array_agg(id), array_agg(lease_token))
		FROM herald.claim_batch('w', 1, '30 seconds', NULL, now())`)
	mustExec(t, pool, `SELECT herald.fail(array_agg(id), array_agg(lease_token), array_fill('bounced'::text, ARRAY[count(*)::int]),
		array_fill('permanent'::text, ARRAY[count(*)::int])) FROM herald.claim_batch('w', 1, '30 seconds', NULL, now())`)
	sent := scalar[int64](t, pool, `SELECT id FROM herald.messages WHERE status = 'sent'`)
	dead := scalar[int64](t, pool, `SELECT id FROM herald.messages WHERE status = 'dead'`)

	if got := indexesHolding(t, pool, sent); !slices.Equal(got, []string{"messages_pkey"}) {
		t.Errorf("a sent message is in %v, want only messages_pkey", got)
	}
	if got := indexesHolding(t, pool, dead); !slices.Equal(got, []string{"messages_dead_idx", "messages_pkey"}) {
		t.Errorf("a dead message is in %v, want messages_dead_idx and messages_pkey", got)
	}
}

// herald.dead_letters reads messages_dead_idx, not the table, however many sent
// messages are kept; and the index README "Indexes" tells a DBA to re-create for
// purge and throughput is used by them once it exists (their SQL is unchanged).
func TestFinishedRowsPlans(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.messages (channel, recipient, payload, run_at, status, max_attempts, created_at, finished_at)
		SELECT 'email', 'a@example.com', '{}', now(), CASE WHEN g % 1000 = 0 THEN 'dead' ELSE 'sent' END, 5,
		       now() - interval '30 days', now() - g * interval '1 minute'
		FROM generate_series(1, 20000) g`)
	mustExec(t, pool, `ANALYZE herald.messages`)

	plan := explain(t, pool, `SELECT * FROM herald.dead_letters`)
	if !strings.Contains(plan, "messages_dead_idx") || strings.Contains(plan, "Seq Scan") {
		t.Fatalf("dead_letters should read messages_dead_idx:\n%s", plan)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.dead_letters`); n != 20 {
		t.Fatalf("dead_letters has %d rows, want 20", n)
	}
	// Without the DBA's index the throughput view scans the table (documented); with
	// it, a range scan from an hour ago.
	if plan := explain(t, pool, `SELECT * FROM herald.throughput`); strings.Contains(plan, "messages_finished_idx") {
		t.Fatalf("messages_finished_idx should not exist:\n%s", plan)
	}
	mustExec(t, pool, `CREATE INDEX CONCURRENTLY messages_finished_idx ON herald.messages (finished_at)
		WHERE status IN ('sent', 'dead', 'cancelled')`)
	mustExec(t, pool, `ANALYZE herald.messages`)
	if plan := explain(t, pool, `SELECT * FROM herald.throughput`); !strings.Contains(plan, "messages_finished_idx") {
		t.Fatalf("throughput should use the re-created messages_finished_idx:\n%s", plan)
	}
	// purge's own DELETE, read through auto_explain.
	conn, notices := explainConn(t, pool)
	var n int64
	if err := conn.QueryRow(ctx, `SELECT herald.purge('330 hours 30 seconds')`).Scan(&n); err != nil || n != 200 {
		t.Fatalf("purge deleted %d (%v), want the 200 finished over 330 hours ago", n, err)
	}
	if plan := planOf(t, *notices, "Delete on messages"); !strings.Contains(plan, "messages_finished_idx") {
		t.Fatalf("purge should use the re-created messages_finished_idx:\n%s", plan)
	}
}
