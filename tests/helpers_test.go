package tests

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald/herald/runner/sender/email"
	"github.com/herald/herald/tests/testdb"
)

// t0 is the fixed clock passed as `now` to every time-dependent function.
var t0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

// setup gives the test its own migrated database.
func setup(t *testing.T) (context.Context, *pgxpool.Pool) {
	t.Helper()
	t.Parallel()
	return context.Background(), testdb.NewPool(t)
}

// wantPgError fails unless err is a PostgreSQL error with the given SQLSTATE and,
// when field is not empty, the given COLUMN field.
func wantPgError(t *testing.T, err error, code, field string) *pgconn.PgError {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Fatalf("want SQLSTATE %s (field %q), got %v", code, field, err)
	}
	if pgErr.Code != code || (field != "" && pgErr.ColumnName != field) {
		t.Fatalf("want SQLSTATE %s field %q, got %s field %q: %s", code, field, pgErr.Code, pgErr.ColumnName, pgErr.Message)
	}
	return pgErr
}

// scalar runs a query that returns one value.
func scalar[T any](t *testing.T, pool *pgxpool.Pool, sql string, args ...any) T {
	t.Helper()
	var v T
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// mustExec runs a statement and fails the test on error.
// messageIDKey is the key herald signs e-mail Message-IDs with: the newest of
// herald.message_id_keys.
func messageIDKey(t *testing.T, pool *pgxpool.Pool) []byte {
	t.Helper()
	return scalar[[]byte](t, pool, `SELECT key FROM herald.message_id_keys ORDER BY created_at DESC LIMIT 1`)
}

// heraldMessageID is the Message-ID a runner of this database gives message id (the
// From domain example.com).
func heraldMessageID(t *testing.T, pool *pgxpool.Pool, id int64) string {
	t.Helper()
	return email.MessageID(id, messageIDKey(t, pool), "example.com")
}

func mustExec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// grantPriority lets producer (the pool's role when empty) enqueue with priorities
// down to minPriority (a herald.producers row).
func grantPriority(t *testing.T, pool *pgxpool.Pool, producer string, minPriority int) {
	t.Helper()
	mustExec(t, pool, `INSERT INTO herald.producers (producer, min_priority) VALUES (coalesce(nullif($1, ''), current_user), $2)
		ON CONFLICT (producer) DO UPDATE SET min_priority = excluded.min_priority`, producer, minPriority)
}

// grantSenders lets producer (the pool's role when empty) set these e-mail From
// addresses or domains (herald.producers.senders).
func grantSenders(t *testing.T, pool *pgxpool.Pool, producer string, senders ...string) {
	t.Helper()
	mustExec(t, pool, `INSERT INTO herald.producers (producer, senders) VALUES (coalesce(nullif($1, ''), current_user), $2)
		ON CONFLICT (producer) DO UPDATE SET senders = excluded.senders`, producer, senders)
}

// enqueueEmail stores a valid e-mail at t0 and returns its id.
func enqueueEmail(t *testing.T, pool *pgxpool.Pool, to string) int64 {
	t.Helper()
	return scalar[int64](t, pool,
		`SELECT herald.enqueue('email', $1, '{"subject":"Hi","text":"Hello"}', now => $2)`, to, t0)
}

// enqueueBatch stores n messages of channel ('email': to u1@example.com, u2@…;
// 'sms': to +14155550001, …) with one enqueue_batch call at now: one statement, so one
// herald.log_statements row holding n 'accepted' events.
func enqueueBatch(t *testing.T, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, channel string, n int, now time.Time) {
	t.Helper()
	var ids []int64
	if err := q.QueryRow(context.Background(), `SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', $1::text,
		'recipient', CASE $1 WHEN 'sms' THEN '+1415555' || lpad(g::text, 4, '0') ELSE 'u' || g || '@example.com' END,
		'payload', CASE $1 WHEN 'sms' THEN '{"text":"t"}' ELSE '{"subject":"s","text":"t"}' END::jsonb))
		FROM generate_series(1, $2) g), now => $3)`, channel, n, now).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	if len(ids) != n {
		t.Fatalf("enqueue_batch stored %d of %d", len(ids), n)
	}
}

// claimed is one row of herald.claim_batch.
type claimed struct {
	ID      int64
	Channel string
	Attempt int32
	Token   int64
	Expires time.Time
}

// claim calls herald.claim_batch at `now` for every channel with a 30-second lease,
// and returns the rows in the order given.
func claim(t *testing.T, pool *pgxpool.Pool, n int, now time.Time) []claimed {
	t.Helper()
	return claimOn(t, pool, nil, "30 seconds", n, now)
}

// claimOn calls herald.claim_batch at now as a runner that serves the given channels
// (nil: all), with lease (nil: each channel's), and returns the rows in the order
// given.
func claimOn(t *testing.T, pool *pgxpool.Pool, channels []string, lease any, n int, now time.Time) []claimed {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT id, channel, attempt, lease_token, lease_expires_at
		   FROM herald.claim_batch('test-worker', $1, $2::interval, $3, $4)`, n, lease, channels, now)
	if err != nil {
		t.Fatalf("claim_batch: %v", err)
	}
	defer rows.Close()
	var out []claimed
	for rows.Next() {
		var c claimed
		if err := rows.Scan(&c.ID, &c.Channel, &c.Attempt, &c.Token, &c.Expires); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("claim_batch: %v", err)
	}
	return out
}

func ids(cs []claimed) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func leaseTokens(cs []claimed) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.Token
	}
	return out
}

// explain returns the plan of query (EXPLAIN (COSTS OFF)), one line per node.
func explain(t *testing.T, pool *pgxpool.Pool, query string) string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `EXPLAIN (COSTS OFF) `+query)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// loginPool returns a pool on pool's database that logs in as role, a login role
// created on first use (roles are cluster-wide; tests share them) with exactly the
// memberships given, so that herald sees a real, unprivileged caller.
func loginPool(t *testing.T, pool *pgxpool.Pool, role string, memberOf ...string) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	mustExec(t, pool, fmt.Sprintf(`DO $$
		BEGIN
		  CREATE ROLE %[1]s LOGIN PASSWORD 'herald-test';
		EXCEPTION WHEN duplicate_object OR unique_violation THEN
		  NULL;
		END $$`, pgx.Identifier{role}.Sanitize()))
	for _, m := range memberOf {
		if _, err := pool.Exec(ctx, fmt.Sprintf(`GRANT %s TO %s`, pgx.Identifier{m}.Sanitize(), pgx.Identifier{role}.Sanitize())); err != nil {
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "23505" { // granted meanwhile by another test
				t.Fatal(err)
			}
		}
	}
	conf := pool.Config().Copy()
	conf.ConnConfig.User, conf.ConnConfig.Password = role, "herald-test"
	conf.MaxConns = 16
	p, err := pgxpool.NewWithConfig(ctx, conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}
