package tests

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A runner's connection that planned claim_batch and complete while herald.messages
// was small keeps scanning the whole table as it grows (the generic plans PL/pgSQL
// settles on after five calls stay until the statistics change). The test first
// shows that happening, on a table autovacuum is kept away from, then that
// herald.refresh_statistics analyzes the grown table, after which the same
// connection's claim and complete probe the primary key; a second call finds nothing
// to do.
func TestRefreshStatisticsReplansGrownTable(t *testing.T) {
	_, pool := setup(t)
	mustExec(t, pool, `ALTER TABLE herald.messages SET (autovacuum_enabled = off)`)
	conn, notices := explainConn(t, pool)

	// Plan while the table is small: one message per round, claimed and completed.
	for range 8 {
		enqueueEmail(t, pool, "a@example.com")
		claimAndComplete(t, conn, 1)
	}
	if got := refreshStatistics(t, pool); len(got) != 0 {
		t.Fatalf("refresh_statistics on a small table analyzed %v", got)
	}

	addQueued(t, pool, 5000)
	*notices = nil
	claimAndComplete(t, conn, 10)
	if claimPlan := planOf(t, *notices, "WITH ready AS"); !strings.Contains(claimPlan, "Seq Scan on messages") {
		t.Fatalf("the stale plan was not reproduced (the test proves nothing); claim plan:\n%s", claimPlan)
	}

	if got := refreshStatistics(t, pool); !slices.Equal(got, []string{"herald.messages"}) {
		t.Fatalf("refresh_statistics analyzed %v, want [herald.messages]", got)
	}
	if pages := scalar[int32](t, pool, `SELECT relpages FROM pg_class WHERE oid = 'herald.messages'::regclass`); pages < 32 {
		t.Fatalf("relpages = %d after the ANALYZE, want the grown size", pages)
	}
	*notices = nil
	claimAndComplete(t, conn, 10)
	for marker, what := range map[string]string{"WITH ready AS": "claim_batch", "WITH sent AS": "complete"} {
		plan := planOf(t, *notices, marker)
		if !strings.Contains(plan, "Index Scan using messages_pkey") || strings.Contains(plan, "Seq Scan on messages") {
			t.Fatalf("%s's plan after refresh_statistics does not probe the primary key:\n%s", what, plan)
		}
	}
	if got := refreshStatistics(t, pool); len(got) != 0 {
		t.Fatalf("a second refresh_statistics analyzed %v, want nothing", got)
	}
}

// refresh_statistics does not wait for a table that a VACUUM or ANALYZE holds (here
// a transaction holding the same lock): it leaves it for the next call.
func TestRefreshStatisticsSkipsLockedTable(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `ALTER TABLE herald.messages SET (autovacuum_enabled = off)`)
	addQueued(t, pool, 2000)

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE herald.messages IN SHARE UPDATE EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	// On a connection of its own with a statement timeout: a wait would end in the
	// timeout's error rather than hang the test.
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SET statement_timeout = '10s'`); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := conn.QueryRow(ctx, `SELECT herald.refresh_statistics()`).Scan(&got); err != nil {
		t.Fatalf("refresh_statistics with the table locked: %v", err)
	}
	if len(got) != 0 {
		t.Fatalf("refresh_statistics analyzed %v while the table was locked", got)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := refreshStatistics(t, pool); !slices.Equal(got, []string{"herald.messages"}) {
		t.Fatalf("after the lock was released refresh_statistics analyzed %v, want [herald.messages]", got)
	}
}

// ANALYZE of herald.log_statements skips the event arrays (statistics target 0): no
// statement plans on them, and element statistics over every event of every sampled
// row made analysing the log cost time in proportion to the events it held. The
// other columns keep their statistics.
func TestAnalyzeSkipsLogEventArrays(t *testing.T) {
	_, pool := setup(t)
	enqueueBatch(t, pool, "email", 50, t0)
	cs := claim(t, pool, 50, t0.Add(time.Minute))
	if n := scalar[int32](t, pool, `SELECT herald.complete($1::bigint[], $2::bigint[])`, ids(cs), leaseTokens(cs)); n != 50 {
		t.Fatalf("complete changed %d rows, want 50", n)
	}
	mustExec(t, pool, `ANALYZE herald.log_statements`)
	got := scalar[[]string](t, pool, `SELECT coalesce(array_agg(attname::text ORDER BY attname), '{}') FROM pg_stats
		WHERE schemaname = 'herald' AND tablename = 'log_statements'`)
	if !slices.Contains(got, "kind") || !slices.Contains(got, "first_offset") {
		t.Fatalf("ANALYZE left statistics for %v; want kind and first_offset among them (the test proves nothing)", got)
	}
	for _, col := range []string{"message_ids", "channels", "key_hashes", "details", "provider_message_ids", "attempts"} {
		if slices.Contains(got, col) {
			t.Errorf("ANALYZE computed statistics for %s (columns with statistics: %v)", col, got)
		}
	}
}

// refreshStatistics calls herald.refresh_statistics and returns what it analyzed.
func refreshStatistics(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	return scalar[[]string](t, pool, `SELECT herald.refresh_statistics()`)
}

// addQueued inserts n ready e-mails straight into herald.messages.
func addQueued(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at)
		SELECT 'test', 'email', 'a@example.com', '{"subject":"s","text":"t"}', $1::timestamptz, 5, $1::timestamptz, 'infinity'
		FROM generate_series(1, $2::integer)`, t0, n)
}

// claimAndComplete claims n messages on conn and completes them there, failing the
// test unless n were claimed and completed.
func claimAndComplete(t *testing.T, conn *pgx.Conn, n int) {
	t.Helper()
	ctx := context.Background()
	rows, err := conn.Query(ctx, `SELECT id, lease_token FROM herald.claim_batch('w', $1, '30 seconds', NULL, $2)`, n, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var idList, tokens []int64
	for rows.Next() {
		var id, token int64
		if err := rows.Scan(&id, &token); err != nil {
			t.Fatal(err)
		}
		idList, tokens = append(idList, id), append(tokens, token)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(idList) != n {
		t.Fatalf("claimed %d, want %d", len(idList), n)
	}
	var done int
	if err := conn.QueryRow(ctx, `SELECT herald.complete($1::bigint[], $2::bigint[])`, idList, tokens).Scan(&done); err != nil || done != n {
		t.Fatalf("complete changed %d of %d (%v)", done, n, err)
	}
}
