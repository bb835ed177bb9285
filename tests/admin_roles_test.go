package tests

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// asRole runs fn on a connection whose role is switched to `role` for the duration
// of one transaction (rolled back afterwards).
func asRole(t *testing.T, ctx context.Context, conn *pgx.Conn, role string, sql string, args ...any) error {
	t.Helper()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+role); err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(ctx, sql, args...)
	return err
}

// Producers may only enqueue and read status; workers only claim and report;
// consumers only read the log; none touches the queue tables. Admins do everything.
func TestRolePrivileges(t *testing.T) {
	ctx, pool := setup(t)
	id := enqueueEmail(t, pool, "a@example.com")
	mustExec(t, pool, `SELECT herald.create_consumer_group('receipts', 2)`)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	c := conn.Conn()

	allowed := map[string][]string{
		"herald_producer": {
			`SELECT herald.enqueue('email', 'p@example.com', '{"subject":"s","text":"t"}')`,
			`SELECT herald.enqueue_batch('[{"channel":"sms","recipient":"+14155550100","payload":{"text":"t"}}]')`,
			`SELECT * FROM herald.status(1)`,
			`SELECT herald.cancel(1)`,
			`SELECT herald.cancel(idempotency_key => 'k')`,
		},
		"herald_worker": {
			`SELECT * FROM herald.claim_batch('w', 10)`,
			`SELECT herald.complete(ARRAY[1]::bigint[], ARRAY[1]::bigint[])`,
			`SELECT herald.fail(ARRAY[1]::bigint[], ARRAY[1]::bigint[], ARRAY['e'], ARRAY['transient'])`,
			`SELECT herald.extend_lease(ARRAY[1]::bigint[], ARRAY[1]::bigint[], '1 minute')`,
			`SELECT herald.reap_stale()`,
			`SELECT herald.refresh_statistics()`,
			`SELECT * FROM herald.queue_stats`,
			`SELECT * FROM herald.queue_depth`,
			`SELECT * FROM herald.quiet_channels()`,
			`SELECT * FROM herald.dispatch_callbacks()`,
			`SELECT * FROM herald.consumer_lag`,
		},
		"herald_admin": {
			`SELECT herald.enqueue('email', 'p@example.com', '{"subject":"s","text":"t"}')`,
			`SELECT * FROM herald.claim_batch('w', 10)`,
			`SELECT herald.cancel(1)`,
			`SELECT herald.redrive(ARRAY[1]::bigint[])`,
			`SELECT herald.purge('30 days')`,
			`SELECT count(*) FROM herald.messages`,
			`SELECT * FROM herald.dead_letters`,
			`SELECT * FROM herald.queue_depth`,
			`SELECT * FROM herald.quiet_channels()`,
			`UPDATE herald.channels SET paused = false`,
			`SELECT herald.log_truncate(1)`,
		},
		"herald_consumer": {
			`SELECT herald.create_consumer_group('audit', 2)`,
			`SELECT * FROM herald.log_read('receipts', 1)`,
			`SELECT herald.log_ack('receipts', 1, 0)`,
			`SELECT herald.log_sequence()`,
			`SELECT * FROM herald.consumer_lag`,
			`SELECT count(*) FROM herald.log`,
		},
	}
	denied := map[string][]string{
		"herald_producer": {
			`SELECT count(*) FROM herald.messages`,
			`INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at) VALUES ('test', 'email', 'x', '{}', now(), 1, now(), 'infinity')`,
			`SELECT * FROM herald.claim_batch('w', 10)`,
			`SELECT herald.complete(ARRAY[1]::bigint[], ARRAY[1]::bigint[])`,
			`SELECT herald.refresh_statistics()`,
			`SELECT * FROM herald.queue_stats`,
			`SELECT * FROM herald.queue_depth`,
			`SELECT * FROM herald.quiet_channels()`,
			`SELECT herald._validate(ROW('email', 'a@example.com', '{}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)::herald.message_spec, jsonb_populate_record(NULL::herald.producers, '{"producer":"p"}'), now(), '')`,
			`SELECT herald._enqueue(ARRAY[ROW('email', 'a@example.com', '{"subject":"s","text":"t"}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)]::herald.message_spec[], now(), true)`,
			`SELECT herald.create_consumer_group('g')`,
			`SELECT * FROM herald.log_read('g', 0)`,
			`SELECT * FROM herald.dispatch_callbacks()`,
			`UPDATE herald.producers SET callback_url = 'https://evil.example.com/'`,
		},
		"herald_worker": {
			`SELECT count(*) FROM herald.messages`,
			`UPDATE herald.messages SET status = 'sent'`,
			`SELECT herald.enqueue('email', 'p@example.com', '{"subject":"s","text":"t"}')`,
			`SELECT herald.redrive(ARRAY[1]::bigint[])`,
			`SELECT herald.purge('30 days')`,
			`SELECT * FROM herald.dead_letters`,
			`SELECT * FROM herald.log_read('g', 0)`,
		},
		"herald_consumer": {
			`SELECT count(*) FROM herald.messages`,
			`SELECT herald.enqueue('email', 'p@example.com', '{"subject":"s","text":"t"}')`,
			`SELECT * FROM herald.claim_batch('w', 10)`,
			`SELECT herald.log_truncate(1)`,
			`DELETE FROM herald.log_statements`,
			`SELECT * FROM herald.dispatch_callbacks()`,
		},
	}
	for role, stmts := range allowed {
		for _, s := range stmts {
			if err := asRole(t, ctx, c, role, s); err != nil {
				t.Errorf("%s should be allowed %s: %v", role, s, err)
			}
		}
	}
	for role, stmts := range denied {
		for _, s := range stmts {
			err := asRole(t, ctx, c, role, s)
			if err == nil {
				t.Errorf("%s was allowed %s", role, s)
				continue
			}
			wantPgError(t, err, "42501", "")
		}
	}
	_ = id
}
