package tests

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// nullMeans lists the arguments for which NULL is a documented value (docs/sql.md);
// every other argument of every public function must refuse NULL with a herald
// SQLSTATE naming it.
var nullMeans = map[string]bool{
	"enqueue.run_at": true, "enqueue.priority": true, "enqueue.idempotency_key": true,
	"enqueue.ordering_key": true, "enqueue.max_attempts": true, "enqueue.metadata": true, "enqueue.expires_at": true, "enqueue.recipient_zone": true,
	"enqueue_many.run_ats": true, "enqueue_many.priorities": true, "enqueue_many.idempotency_keys": true,
	"enqueue_many.ordering_keys": true, "enqueue_many.max_attempts": true, "enqueue_many.metadata": true,
	"enqueue_many.expires_ats": true, "enqueue_many.recipient_zones": true, "suppress.expires_at": true,
	"claim_batch.lease": true, "claim_batch.channels": true,
	"complete.provider_message_id": true, "complete.provider_message_ids": true,
	"fail.retry_at": true, "fail.error_code": true, "fail.error_codes": true,
	"pause_channel.until": true, "cancel.id": true, "cancel.idempotency_key": true, "status.id": true, "status.idempotency_key": true,
	"history.id": true, "history.idempotency_key": true,
}

// nullSamples gives a valid value for each argument, by name (then function.name).
var nullSamples = map[string]string{
	"channel": "'email'", "recipient": "'a@example.com'", "payload": `'{"subject":"s","text":"t"}'`,
	"run_at": "now()", "priority": "0", "idempotency_key": "'k'", "ordering_key": "'o'",
	"max_attempts": "3", "metadata": "'{}'", "now": "now()",
	"messages": `'[{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"}}]'`,
	"channels": "'{email}'", "recipients": "'{a@example.com}'", "payloads": `ARRAY['{"subject":"s","text":"t"}'::jsonb]`,
	"run_ats": "ARRAY[now()]", "priorities": "'{0}'", "idempotency_keys": "'{k}'", "ordering_keys": "'{o}'",
	"enqueue_many.max_attempts": "'{3}'", "enqueue_many.metadata": "ARRAY['{}'::jsonb]",
	"worker": "'w'", "batch_size": "10", "lease": "'30 seconds'",
	"id": "1", "ids": "'{1}'", "lease_token": "1", "lease_tokens": "'{1}'",
	"provider_message_id": "'p'", "provider_message_ids": "'{p}'",
	"error": "'e'", "errors": "'{e}'", "error_class": "'transient'", "error_classes": "'{transient}'",
	"retry_at": "now()", "fail.retry_at": "now()", "error_code": "'500'", "error_codes": "'{500}'",
	"fail.ids.retry_at": "ARRAY[now()]",
	"group":             "'g'", "partitions": "1", "start": "'latest'", "partition": "0", "upto": "0", "offset": "0",
	"max": "10", "before_offset": "0", "older_than": "'1 day'",
	"expires_at": "(now() + interval '1 hour')", "expires_ats": "ARRAY[now() + interval '1 hour']",
	"recipient_zone": "'Europe/Berlin'", "recipient_zones": "'{Europe/Berlin}'",
	"reason": "'r'", "by": "'operator'", "pause_channel.until": "NULL", // an operator's pause has no end
	"events": `'[{"event_id":"e1","event":"delivered","message_id":1}]'`, "source": "'generic'", "record_copy_refusal.code": "'550 5.1.1'",
	"end_suspension.producer": "'p'", "kind": "'email'",
	"suppress.reason": "'manual'", "message_id": "1", "opted_out": "true",
	"suppress.expires_at": "(now() + interval '1 day')",
}

// A NULL in any argument of any public function is refused with a herald SQLSTATE
// (22Vxx) naming that argument, unless NULL has a documented meaning there; never
// an internal error or a constraint violation. The functions are read from the
// catalog, so a new function is checked as soon as it exists.
func TestNullArgumentsAreNamed(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `SELECT herald.create_consumer_group('g', 1)`)
	rows, err := pool.Query(ctx, `
		SELECT p.proname, p.proargnames, p.pronargs,
		       array(SELECT format_type(t, NULL) FROM unnest(p.proargtypes) AS t)
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'herald' AND p.proname !~ '^_' AND p.prokind = 'f'
		ORDER BY 1, 3`)
	if err != nil {
		t.Fatal(err)
	}
	type fn struct {
		name  string
		args  []string
		types []string
	}
	var fns []fn
	for rows.Next() {
		var f fn
		var n int
		if err := rows.Scan(&f.name, &f.args, &n, &f.types); err != nil {
			t.Fatal(err)
		}
		f.args = f.args[:n]
		fns = append(fns, f)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(fns) < 20 {
		t.Fatalf("found %d public functions; the catalog query is wrong", len(fns))
	}
	checked := 0
	for _, f := range fns {
		arrays := len(f.types) > 0 && strings.HasSuffix(f.types[0], "[]")
		for i, arg := range f.args {
			call := make([]string, len(f.args))
			for j, a := range f.args {
				v := "NULL"
				if j != i {
					v = sample(f.name, a, arrays)
					if v == "" {
						t.Fatalf("no sample value for %s.%s", f.name, a)
					}
				}
				call[j] = fmt.Sprintf("%q => %s::%s", a, v, f.types[j])
			}
			sql := fmt.Sprintf("SELECT * FROM herald.%s(%s)", f.name, strings.Join(call, ", "))
			err := inRolledBack(t, pool, sql)
			key := f.name + "." + arg
			checked++
			if err == nil {
				if !nullMeans[key] {
					t.Errorf("%s: NULL %s accepted; it has no documented meaning", f.name, arg)
				}
				continue
			}
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) {
				t.Fatalf("%s: %v", sql, err)
			}
			if !strings.HasPrefix(pgErr.Code, "22V") || pgErr.ColumnName != arg {
				t.Errorf("%s: NULL %s gives %s (column %q): %s", f.name, arg, pgErr.Code, pgErr.ColumnName, pgErr.Message)
			}
		}
	}
	t.Logf("%d arguments of %d functions checked", checked, len(fns))
}

// sample is a valid value for argument arg of function fn.
func sample(fn, arg string, arrays bool) string {
	if arrays {
		if v, ok := nullSamples[fn+".ids."+arg]; ok {
			return v
		}
	}
	if v, ok := nullSamples[fn+"."+arg]; ok {
		return v
	}
	return nullSamples[arg]
}

// inRolledBack runs sql in a transaction that is rolled back.
func inRolledBack(t *testing.T, pool interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}, sql string) error {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, sql)
	if err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}
