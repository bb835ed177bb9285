package tests

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Every validation error of herald.enqueue: the documented SQLSTATE, the field in
// COLUMN, and nothing stored.
func TestEnqueueRejectsBadInput(t *testing.T) {
	ctx, pool := setup(t)
	email := `{"subject":"Hi","text":"Hello"}`
	big := fmt.Sprintf(`{"subject":"Hi","text":"%s"}`, strings.Repeat("x", 70000))
	bigMeta := fmt.Sprintf(`{"k":"%s"}`, strings.Repeat("x", 9000))
	cases := []struct {
		name, channel, recipient, payload string
		opts                              string // extra named arguments
		args                              []any  // for $4…
		code, field                       string
	}{
		{"unknown channel", "fax", "ana@example.com", email, "", nil, "22V01", "channel"},
		{"null channel", "", "ana@example.com", email, "", nil, "22V01", "channel"},
		{"empty recipient", "email", "", email, "", nil, "22V02", "recipient"},
		{"not an e-mail", "email", "ana.example.com", email, "", nil, "22V02", "recipient"},
		{"double dot e-mail", "email", "ana..b@example.com", email, "", nil, "22V02", "recipient"},
		{"e-mail with space", "email", "ana b@example.com", email, "", nil, "22V02", "recipient"},
		{"not E.164", "sms", "4155550100", `{"text":"hi"}`, "", nil, "22V02", "recipient"},
		{"E.164 leading zero", "sms", "+04155550100", `{"text":"hi"}`, "", nil, "22V02", "recipient"},
		{"E.164 too short", "sms", "+1", `{"text":"hi"}`, "", nil, "22V02", "recipient"},
		{"payload not object", "email", "ana@example.com", `["Hi"]`, "", nil, "22V03", "payload"},
		{"e-mail without subject", "email", "ana@example.com", `{"text":"Hello"}`, "", nil, "22V03", "payload"},
		{"e-mail without body", "email", "ana@example.com", `{"subject":"Hi"}`, "", nil, "22V03", "payload"},
		{"e-mail with empty text", "email", "ana@example.com", `{"subject":"Hi","text":""}`, "", nil, "22V03", "payload"},
		{"sms without text", "sms", "+14155550100", `{"subject":"hi"}`, "", nil, "22V03", "payload"},
		{"sms text not a string", "sms", "+14155550100", `{"text":5}`, "", nil, "22V03", "payload"},
		{"payload too large", "email", "ana@example.com", big, "", nil, "22V04", "payload"},
		{"run_at far future", "email", "ana@example.com", email, "run_at => $4", []any{t0.AddDate(2, 0, 0)}, "22V05", "run_at"},
		{"run_at far past", "email", "ana@example.com", email, "run_at => $4", []any{t0.AddDate(-2, 0, 0)}, "22V05", "run_at"},
		{"priority too high", "email", "ana@example.com", email, "priority => 101", nil, "22V06", "priority"},
		{"priority too low", "email", "ana@example.com", email, "priority => -101", nil, "22V06", "priority"},
		{"max_attempts zero", "email", "ana@example.com", email, "max_attempts => 0", nil, "22V07", "max_attempts"},
		{"max_attempts too many", "email", "ana@example.com", email, "max_attempts => 101", nil, "22V07", "max_attempts"},
		{"metadata not object", "email", "ana@example.com", email, `metadata => '[1]'`, nil, "22V08", "metadata"},
		{"metadata too large", "email", "ana@example.com", email, "metadata => $4", []any{bigMeta}, "22V08", "metadata"},
		{"empty idempotency key", "email", "ana@example.com", email, "idempotency_key => ''", nil, "22V09", "idempotency_key"},
		{"long idempotency key", "email", "ana@example.com", email, "idempotency_key => $4", []any{strings.Repeat("k", 256)}, "22V09", "idempotency_key"},
		{"empty ordering key", "email", "ana@example.com", email, "ordering_key => ''", nil, "22V10", "ordering_key"},
		{"long ordering key", "email", "ana@example.com", email, "ordering_key => $4", []any{strings.Repeat("k", 256)}, "22V10", "ordering_key"},
	}
	for _, c := range cases {
		opts := ", now => $4"
		if c.opts != "" {
			opts = ", " + c.opts + fmt.Sprintf(", now => $%d", 4+len(c.args))
		}
		sql := fmt.Sprintf(`SELECT herald.enqueue(nullif($1, ''), $2, $3::jsonb%s)`, opts)
		args := append([]any{c.channel, c.recipient, c.payload}, c.args...)
		args = append(args, t0)
		var id int64
		err := pool.QueryRow(ctx, sql, args...).Scan(&id)
		t.Run(c.name, func(t *testing.T) {
			e := wantPgError(t, err, c.code, c.field)
			if !strings.HasPrefix(e.Message, c.field+": ") {
				t.Errorf("message %q does not start with the field", e.Message)
			}
		})
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 0 {
		t.Fatalf("rejected enqueues stored %d rows", n)
	}
}

// A valid enqueue stores the row with the channel's defaults.
func TestEnqueueStoresMessage(t *testing.T) {
	ctx, pool := setup(t)
	grantPriority(t, pool, "", -3) // exactly the priority used
	id := scalar[int64](t, pool, `SELECT herald.enqueue('sms', '+14155550100', '{"text":"hi"}',
		priority => -3, ordering_key => 'acct-1', metadata => '{"tenant":"t1"}', now => $1)`, t0)
	var (
		status, channel, recipient, key string
		prio, attempts, maxAttempts     int32
		runAt, createdAt                time.Time
		meta                            map[string]any
	)
	err := pool.QueryRow(ctx, `SELECT status, channel, recipient, ordering_key, priority, attempts, max_attempts,
		run_at, created_at, metadata FROM herald.messages WHERE id = $1`, id).
		Scan(&status, &channel, &recipient, &key, &prio, &attempts, &maxAttempts, &runAt, &createdAt, &meta)
	if err != nil {
		t.Fatal(err)
	}
	if status != "queued" || channel != "sms" || recipient != "+14155550100" || key != "acct-1" ||
		prio != -3 || attempts != 0 || maxAttempts != 5 || !runAt.Equal(t0) || !createdAt.Equal(t0) || meta["tenant"] != "t1" {
		t.Fatalf("stored row: %v %v %v %v %v %v %v %v %v %v", status, channel, recipient, key, prio, attempts, maxAttempts, runAt, createdAt, meta)
	}
	// Scheduled, and an explicit max_attempts.
	id2 := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"s","html":"<p>x</p>"}',
		run_at => $1, max_attempts => 2, now => $2)`, t0.Add(time.Hour), t0)
	if id2 <= id {
		t.Fatalf("ids not increasing: %d then %d", id, id2)
	}
	if got := scalar[time.Time](t, pool, `SELECT run_at FROM herald.messages WHERE id = $1`, id2); !got.Equal(t0.Add(time.Hour)) {
		t.Fatalf("run_at = %v", got)
	}
}

// enqueue_batch: ids in input order, all or nothing, errors name index and field.
func TestEnqueueBatch(t *testing.T) {
	ctx, pool := setup(t)
	batch := `[
	  {"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"}},
	  {"channel":"sms","recipient":"+14155550100","payload":{"text":"t"},"priority":"2","max_attempts":3,
	   "run_at":"2030-01-01T12:05:00Z","metadata":{"a":1},"ordering_key":"k","idempotency_key":"i-1"},
	  {"channel":"email","recipient":"b@example.com","payload":{"subject":"s","body":"t"},"priority":null}
	]`
	var got []int64
	if err := pool.QueryRow(ctx, `SELECT herald.enqueue_batch($1, $2)`, batch, t0).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !slices.IsSorted(got) {
		t.Fatalf("ids %v", got)
	}
	if r := scalar[string](t, pool, `SELECT recipient FROM herald.messages WHERE id = $1`, got[2]); r != "b@example.com" {
		t.Fatalf("third id holds %s", r)
	}
	var prio, maxA int32
	var runAt time.Time
	if err := pool.QueryRow(ctx, `SELECT priority, max_attempts, run_at FROM herald.messages WHERE id = $1`, got[1]).
		Scan(&prio, &maxA, &runAt); err != nil || prio != 2 || maxA != 3 || !runAt.Equal(t0.Add(5*time.Minute)) {
		t.Fatalf("second row: %v %v %v %v", prio, maxA, runAt, err)
	}

	bad := []struct{ name, batch, code, field string }{
		{"not an array", `{"channel":"email"}`, "22V11", "messages"},
		{"empty", `[]`, "22V11", "messages"},
		{"element not object", `[1]`, "22V11", "messages[0]"},
		{"unknown field", `[{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"colour":"red"}]`, "22V11", "messages[0].colour"},
		{"channel not a string", `[{"channel":5,"recipient":"a@example.com","payload":{}}]`, "22V11", "messages[0].channel"},
		{"run_at not a time", `[{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"run_at":"soon"}]`, "22V05", "messages[0].run_at"},
		{"priority not an integer", `[{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"priority":1.5}]`, "22V06", "messages[0].priority"},
		{"max_attempts not an integer", `[{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"max_attempts":"x"}]`, "22V07", "messages[0].max_attempts"},
		{"second item bad", `[{"channel":"email","recipient":"ok@example.com","payload":{"subject":"s","text":"t"}},
		                      {"channel":"email","recipient":"nope","payload":{"subject":"s","text":"t"}}]`, "22V02", "messages[1].recipient"},
		{"third item unknown channel", `[{"channel":"email","recipient":"ok@example.com","payload":{"subject":"s","text":"t"}},
		                      {"channel":"email","recipient":"ok2@example.com","payload":{"subject":"s","text":"t"}},
		                      {"channel":"pigeon","recipient":"x","payload":{}}]`, "22V01", "messages[2].channel"},
	}
	before := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`)
	for _, b := range bad {
		_, err := pool.Exec(ctx, `SELECT herald.enqueue_batch($1, $2)`, b.batch, t0)
		t.Run(b.name, func(t *testing.T) { wantPgError(t, err, b.code, b.field) })
	}
	tooMany := "[" + strings.TrimSuffix(strings.Repeat(`{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"}},`, 10001), ",") + "]"
	_, err := pool.Exec(ctx, `SELECT herald.enqueue_batch($1, $2)`, tooMany, t0)
	wantPgError(t, err, "22V11", "messages")
	if after := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); after != before {
		t.Fatalf("rejected batches stored %d rows", after-before)
	}
}

// A repeated idempotency key returns the first id and stores nothing new, within
// one batch and across calls; the key names one notification, so a repeat with
// another channel, recipient or payload is refused (22V20), naming the first id, and
// stores nothing: a key reused for a different notification would otherwise drop it
// in silence. What a retry may compute afresh (run_at, priority, metadata, key order
// in the payload) is not compared.
func TestEnqueueIdempotency(t *testing.T) {
	ctx, pool := setup(t)
	first := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}', idempotency_key => 'order-1', now => $1)`, t0)
	again := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'a@example.com', '{"text": "t", "subject": "s"}', idempotency_key => 'order-1',
		run_at => $1::timestamptz + interval '1 minute', priority => 3, metadata => '{"traceparent":"x"}', now => $1)`, t0)
	if again != first {
		t.Fatalf("repeat got id %d, first was %d", again, first)
	}
	for _, other := range []string{
		`SELECT herald.enqueue('email', 'b@example.com', '{"subject":"s","text":"t"}', idempotency_key => 'order-1', now => $1)`,
		`SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"other"}', idempotency_key => 'order-1', now => $1)`,
		`SELECT herald.enqueue('sms', '+14155550100', '{"text":"t"}', idempotency_key => 'order-1', now => $1)`,
	} {
		_, err := pool.Exec(ctx, other, t0)
		if e := wantPgError(t, err, "22V20", "idempotency_key"); !strings.Contains(e.Message, fmt.Sprintf("message %d", first)) {
			t.Fatalf("the refusal does not name the first message: %s", e.Message)
		}
	}
	var got []int64
	err := pool.QueryRow(ctx, `SELECT herald.enqueue_batch($1, $2)`, `[
	  {"channel":"email","recipient":"c@example.com","payload":{"subject":"s","text":"t"},"idempotency_key":"order-9"},
	  {"channel":"email","recipient":"c@example.com","payload":{"subject":"s","text":"u"},"idempotency_key":"order-9"}]`, t0).Scan(&got)
	wantPgError(t, err, "22V20", "messages[1].idempotency_key")
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 1 {
		t.Fatalf("%d rows stored, want 1", n)
	}
	err = pool.QueryRow(ctx, `SELECT herald.enqueue_batch($1, $2)`, `[
	  {"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"idempotency_key":"order-2"},
	  {"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"}},
	  {"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"idempotency_key":"order-2"},
	  {"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"},"idempotency_key":"order-1"}]`, t0).Scan(&got)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != got[2] || got[3] != first || got[1] == got[0] {
		t.Fatalf("batch ids %v (first %d)", got, first)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 3 {
		t.Fatalf("%d rows stored, want 3", n)
	}
	if r := scalar[string](t, pool, `SELECT recipient FROM herald.messages WHERE id = $1`, first); r != "a@example.com" {
		t.Fatalf("the repeat overwrote the first message: %s", r)
	}
	// The batch's 'accepted' row lists the two messages it stored, not the repeats.
	if ev := scalar[string](t, pool, `SELECT array_to_string(message_ids, ',') FROM herald.log_statements
		WHERE kind = 'accepted' ORDER BY seq DESC LIMIT 1`); ev != fmt.Sprintf("%d,%d", got[0], got[1]) {
		t.Fatalf("accepted events %s, want %d,%d", ev, got[0], got[1])
	}
	// A repeat is still checked: a bad one is named (before the reuse of its key) and
	// the call stores nothing; so is a reuse after a message stored by the same call.
	err = pool.QueryRow(ctx, `SELECT herald.enqueue_batch($1, $2)`, `[
	  {"channel":"email","recipient":"c@example.com","payload":{"subject":"s","text":"t"}},
	  {"channel":"email","recipient":"not-an-address","payload":{"subject":"s","text":"t"},"idempotency_key":"order-1"}]`, t0).Scan(&got)
	wantPgError(t, err, "22V02", "messages[1].recipient")
	err = pool.QueryRow(ctx, `SELECT herald.enqueue_many(ARRAY['email', 'email'], ARRAY['c@example.com', 'a@example.com'],
		ARRAY['{"subject":"s","text":"t"}', '{"subject":"s","text":"x"}']::jsonb[], idempotency_keys => ARRAY[NULL, 'order-1'], now => $1)`, t0).Scan(&got)
	wantPgError(t, err, "22V20", "messages[1].idempotency_key")
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 3 {
		t.Fatalf("%d rows stored after a refused call, want 3", n)
	}
}

// 8 connections enqueue the same key at the same moment: one row, one id for all.
// In the later rounds half of them carry another text under the key: whichever text
// is stored, every call with it gets its id and every call with the other 22V20.
func TestEnqueueIdempotencyConcurrent(t *testing.T) {
	ctx, pool := setup(t)
	const n = 8
	conns := make([]*pgx.Conn, n)
	for i := range conns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
		conns[i] = c.Conn()
	}
	for round := 0; round < 10; round++ {
		key := fmt.Sprintf("same-key-%d", round)
		text := func(i int) string { // rounds 5..9: two notifications under one key
			if round >= 5 && i%2 == 1 {
				return "other"
			}
			return "t"
		}
		start := make(chan struct{})
		got := make([]int64, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = conns[i].QueryRow(ctx, `SELECT herald.enqueue('email', 'a@example.com',
					jsonb_build_object('subject', 's', 'text', $2::text), idempotency_key => $1)`, key, text(i)).Scan(&got[i])
			}()
		}
		close(start)
		wg.Wait()
		stored := scalar[string](t, pool, `SELECT payload ->> 'text' FROM herald.messages WHERE idempotency_key = $1`, key)
		id := scalar[int64](t, pool, `SELECT id FROM herald.messages WHERE idempotency_key = $1`, key)
		for i := range got {
			if text(i) != stored {
				wantPgError(t, errs[i], "22V20", "idempotency_key")
			} else if errs[i] != nil || got[i] != id {
				t.Fatalf("round %d, connection %d: id %d, %v; the stored message is %d", round, i, got[i], errs[i], id)
			}
		}
		if c := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE idempotency_key = $1`, key); c != 1 {
			t.Fatalf("round %d: %d rows for one key", round, c)
		}
	}
	_ = context.Background()
}

// Under REPEATABLE READ, a key inserted by a transaction that committed after the
// snapshot was taken cannot be answered with its id: 23505 on the key's index, retry;
// nothing is stored twice.
func TestEnqueueIdempotencySerializationFailure(t *testing.T) {
	ctx, pool := setup(t)
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT count(*) FROM herald.channels`); err != nil { // takes the snapshot
		t.Fatal(err)
	}
	enqueue := `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}', idempotency_key => 'rr-key')`
	mustExec(t, pool, enqueue) // another connection, committed after the snapshot
	_, err = tx.Exec(ctx, enqueue)
	wantPgError(t, err, "23505", "")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.ConstraintName != "messages_idempotency_key_idx" {
		t.Fatalf("want the idempotency key's index in the error, got %v", err)
	}
}

// enqueue_batch's fast path stores exactly what the element-by-element path
// (herald._message_specs) stores.
func TestEnqueueBatchPathsAgree(t *testing.T) {
	ctx, pool := setup(t)
	grantPriority(t, pool, "", -7)
	items := []string{
		`{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","html":"<p>h</p>"},"priority":"-7","max_attempts":3,"metadata":{"k":"v"},"ordering_key":"o1"}`,
		`{"channel":"sms","recipient":"+14155550100","payload":{"body":"b"},"priority":null,"idempotency_key":null}`,
		`{"channel":"email","recipient":"b@example.com","payload":{"subject":"s","text":"t"},"max_attempts":"9"}`,
	}
	batch := "[" + strings.Join(items, ",") + "]"
	var a, b []int64
	if err := pool.QueryRow(ctx, `SELECT herald.enqueue_batch($1, $2)`, batch, t0).Scan(&a); err != nil {
		t.Fatal(err)
	}
	row := func(id int64) string {
		return scalar[string](t, pool, `SELECT concat_ws('|', channel, recipient, payload, metadata, priority, run_at, ordering_key,
			idempotency_key, max_attempts, status, created_at) FROM herald.messages WHERE id = $1`, id)
	}
	stored := make([]string, len(a))
	for i := range a {
		stored[i] = row(a[i])
	}
	// The same ordering key again would be held behind the first: end those first.
	mustExec(t, pool, `SELECT herald.cancel(id, now => $2) FROM unnest($1::bigint[]) AS id`, a, t0)
	if err := pool.QueryRow(ctx, `SELECT herald._enqueue(herald._message_specs($1), $2, false)`, batch, t0).Scan(&b); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if stored[i] != row(b[i]) {
			t.Fatalf("element %d: fast path stored %q, slow path %q", i, stored[i], row(b[i]))
		}
	}
	if !slices.IsSorted(a) || a[len(a)-1] >= b[0] {
		t.Fatalf("ids not in input order: %v then %v", a, b)
	}
	// One pending row per statement, holding its events in id order.
	if got := scalar[string](t, pool, `SELECT string_agg(array_to_string(message_ids, ','), ';' ORDER BY seq)
		FROM herald.log_statements WHERE kind = 'accepted'`); got != fmt.Sprintf("%d,%d,%d;%d,%d,%d", a[0], a[1], a[2], b[0], b[1], b[2]) {
		t.Fatalf("accepted events pending: %s, want the two batches' ids %v and %v", got, a, b)
	}
}

// enqueue_batch's fast path (one SQL/JSON test of the elements' shape, then
// jsonb_populate_recordset) must give every batch the outcome of the element-by-element
// path (herald._message_specs): the same error (SQLSTATE and COLUMN) or the same stored
// rows. Each element goes between two good ones, after an e-mail (recipients matched
// as one list) and after a message to a custom channel. pg_stat_get_xact_function_calls
// (or the error's context) says whether enqueue_batch fell back to herald._message_specs, so the cases the fast
// path must refuse are shown to be refused and the others to be taken.
func TestEnqueueBatchFastPathAgrees(t *testing.T) {
	ctx, pool := setup(t)
	grantPriority(t, pool, "", -7)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('true', 'custom'), ('note', 'custom')`)
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	const p = `"payload":{"subject":"s","text":"t"}`
	// run gives the outcome of enqueue_batch (or, slow, of herald._enqueue over
	// herald._message_specs) and whether herald._message_specs was called.
	run := func(batch string, slow bool) (outcome string, fallback bool) {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		// The counts are the backend's not yet reported (possibly of earlier
		// transactions too), so compare before and after.
		const calls = `SELECT coalesce(pg_stat_get_xact_function_calls('herald._message_specs'::regproc), 0)`
		var before, after int64
		if _, err := tx.Exec(ctx, `SET LOCAL track_functions = 'pl'; SAVEPOINT s`); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRow(ctx, calls).Scan(&before); err != nil {
			t.Fatal(err)
		}
		var ids []int64
		call := `SELECT herald.enqueue_batch($1, $2)`
		if slow {
			call = `SELECT herald._enqueue(herald._message_specs($1), $2, false)`
		}
		if err := tx.QueryRow(ctx, call, batch, t0).Scan(&ids); err != nil {
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) {
				t.Fatalf("%s: %v", batch, err)
			}
			outcome = fmt.Sprintf("error %s %s", pgErr.Code, pgErr.ColumnName)
			// A function that raises is not counted: its frame is in the error's context.
			fallback = strings.Contains(pgErr.Where, "herald._message_specs(")
			if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT s`); err != nil {
				t.Fatal(err)
			}
		} else if len(ids) != 3 {
			t.Fatalf("%s: ids %v, want 3", batch, ids)
		} else if err := tx.QueryRow(ctx, `SELECT string_agg(concat_ws('|', channel, recipient, payload, metadata,
				priority, ordering_key, idempotency_key, max_attempts, status), ' ; ' ORDER BY id)
				FROM herald.messages WHERE id = ANY ($1)`, ids[:2]).Scan(&outcome); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRow(ctx, calls).Scan(&after); err != nil {
			t.Fatal(err)
		}
		return outcome, fallback || after > before
	}
	leads := []string{
		`{"channel":"email","recipient":"lead@b.c",` + p + `}`,
		`{"channel":"note","recipient":"lead",` + p + `}`,
	}
	const tail = `{"channel":"email","recipient":"tail@b.c",` + p + `}`
	for _, c := range []struct {
		item string
		fast bool // whether the fast path must take the batch
	}{
		{`{"channel":"email","recipient":"a@b.c",` + p + `}`, true},
		{`{"channel":"true","recipient":"12345",` + p + `}`, true},
		{`{"channel":"email","recipient":"a@b.c",` + p + `,"priority":"-7","max_attempts":3,"idempotency_key":"k"}`, true},
		{`{"channel":"email","recipient":"a@b.c",` + p + `,"metadata":{"k":1},"ordering_key":"o","idempotency_key":null}`, true},
		{`{"channel":"email","recipient":"a@b.c",` + p + `,"run_at":"2030-01-01T12:10:00Z"}`, true},
		{`{"channel":"email","recipient":"a@b.c",` + p + `,"run_at":"2030-13-01T12:10:00Z"}`, false},
		{`{"channel":"email","recipient":"a@b.c",` + p + `,"run_at":"infinity"}`, true},
		{`{"channel":"email","recipient":"a@b.c",` + p + `,"run_at":5}`, false},
		{`{"channel":"email","recipient":"a@b.c",` + p + `,"priority":"x"}`, false},
		{`{"channel":"email","recipient":"a@b.c",` + p + `,"max_attempts":1e20}`, false},
		{`{"channel":"email","recipient":"a@b.c",` + p + `,"max_attempts":true}`, false},
		{`{"channel":"email","recipient":"a@b.c",` + p + `,"metadata":"m"}`, true},
		{`{"channel":"email","recipient":"a@b.c",` + p + `,"ordering_key":1}`, false},
		{`{"channel":"email","recipient":"a@b.c","payload":null}`, true},
		{`{"channel":"email","recipient":"a@b.c"}`, true},
		{`{"channel":"email","recipient":"a@b.c","colour":"red"}`, false},
		{`{"channel":"email","recipient":"a@b.c","priority":1,"max_attempts":2}`, true},
		{`{"channel":["email"],"recipient":"a@b.c",` + p + `}`, false},
		{`{"channel":{"email":"email"},"recipient":"a@b.c",` + p + `}`, false},
		{`{"channel":null,"recipient":"a@b.c",` + p + `}`, true},
		{`{"recipient":"a@b.c",` + p + `}`, true},
		{`{"channel":"email","recipient":"nope",` + p + `}`, true}, // strings: the SQL/JSON path passes them
		{`{"channel":"","recipient":"",` + p + `}`, true},
		{`{"channel":true,"recipient":"a@b.c",` + p + `}`, false},
		{`{"channel":"true","recipient":12345,` + p + `}`, false},
		{`{"channel":"true","recipient":true,` + p + `}`, false},
		{`{"channel":"true","recipient":{"a@b.c":1},` + p + `}`, false},
		{`{"channel":"true","recipient":["a@b.c"],` + p + `}`, false},
		{`{"channel":"email","recipient":null,` + p + `}`, true},
		{`{"channel":"email",` + p + `}`, true},
		{`{"channel":"email","recipient":"a@b.c",` + p + `,"priority":1.5}`, false},
		{`{"channel":"email","recipient":"a@b.c",` + p + `,"colour":"red"}`, false},
		{`{"":null,"channel":"email","recipient":"a@b.c",` + p + `}`, false},
		{`{"":null,"0":1,"1":1,"2":1}`, false},
		{`[{"channel":"email","recipient":"a@b.c",` + p + `}]`, false},
		{`["channel","recipient","payload"]`, false},
		{`{}`, true},
		{`12`, false},
		{`null`, false},
	} {
		for i, lead := range leads {
			batch := "[" + lead + "," + c.item + "," + tail + "]"
			want, _ := run(batch, true)
			got, fallback := run(batch, false)
			if got != want {
				t.Errorf("lead %d, %s: enqueue_batch gave %q, element by element %q", i, c.item, got, want)
			}
			if fallback == c.fast {
				t.Errorf("%s: fast path taken %v, want %v", c.item, !fallback, c.fast)
			}
		}
	}
}

// A payload field the channel kind's senders do not use is refused at enqueue,
// named, instead of being stored and silently dropped at send time; the fields a kind
// takes are checked by their rules (herald._payload_problem), so an attachment that
// is not base64 or a header that would inject another is refused too; an attachment
// over the channel's payload limit is 22V04. Webhook payloads are free.
func TestUnknownPayloadFieldsAreRefused(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('hooks', 'webhook')`)
	for _, c := range []struct{ sql, field string }{
		{`SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t","cc":"b@example.com"}')`, "payload.cc"},
		{`SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t","bcc":["b@example.com", "not an address"]}')`, "payload.bcc"},
		{`SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t","cc":[]}')`, "payload.cc"},
		{`SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t","attachments":[{"filename":"a.pdf"}]}')`, "payload.attachments[0].content"},
		{`SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t","attachments":[{"filename":"a.pdf","content":"%%%"}]}')`, "payload.attachments[0].content"},
		// Executables from the company's domain (malware with its reputation), however named.
		{`SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t","attachments":[{"filename":"a.pdf","content":"aGk="},{"filename":"Invoice.PDF.exe","content":"aGk="}]}')`, "payload.attachments[1].filename"},
		{`SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t","attachments":[{"filename":"invoice.js. . ","content":"aGk="}]}')`, "payload.attachments[0].filename"},
		{`SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t","attachments":[{"filename":"setup.MSI","content":"aGk=","content_type":"application/pdf"}]}')`, "payload.attachments[0].filename"},
		{`SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t","headers":{"Subject":"x"}}')`, "payload.headers.Subject"},
		{`SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t","headers":{"X-A":"1\r\nBcc: x@evil.example"}}')`, "payload.headers.X-A"},
		{`SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s\nBcc: x@evil.example","text":"t"}')`, "payload.subject"},
		{`SELECT herald.enqueue('sms', '+14155550100', '{"text":"t","media_urls":["ftp://example.com/a.png"]}')`, "payload.media_urls[0]"},
		{`SELECT herald.enqueue('sms', '+14155550100', '{"text":"t","mediaUrl":"https://example.com/a.png"}')`, "payload.mediaUrl"},
		{`SELECT herald.enqueue_batch('[{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t"}},
			{"channel":"email","recipient":"a@example.com","payload":{"subject":"s","text":"t","cc":["b@example.com", 7]}}]')`, "messages[1].payload.cc"},
		{`SELECT herald.enqueue_many('{email}', '{a@example.com}', ARRAY['{"subject":"s","text":"t","template_id":"d-1"}'::jsonb])`, "messages[0].payload.template_id"},
	} {
		_, err := pool.Exec(ctx, c.sql)
		wantPgError(t, err, "22V03", c.field)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages`); n != 0 {
		t.Fatalf("%d messages stored", n)
	}
	_, err := pool.Exec(ctx, `SELECT herald.enqueue('email', 'a@example.com', jsonb_build_object('subject', 's', 'text', 't',
		'attachments', jsonb_build_array(jsonb_build_object('filename', 'big.bin', 'content', (SELECT encode(convert_to(string_agg(md5(g::text), ''), 'UTF8'), 'base64') FROM generate_series(1, 2000) g)))))`)
	wantPgError(t, err, "22V04", "payload")
	grantSenders(t, pool, "", "a@example.com")
	mustExec(t, pool, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","html":"<p>h</p>","from":"A <a@example.com>","reply_to":"r@example.com","headers":{"X-A":"1"}}')`)
	mustExec(t, pool, `SELECT herald.enqueue('hooks', 'https://hooks.example.com/x', '{"anything":{"goes":true}}')`)
	mustExec(t, pool, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t","attachments":[{"filename":"report.exe.pdf","content":"aGk="},{"filename":"notes.json","content":"aGk="}]}')`)
	mustExec(t, pool, `SELECT herald.enqueue_batch('[{"channel":"email","recipient":"a@example.com",
		"payload":{"subject":"s","text":"t","cc":["b@example.com"],"bcc":["c@example.com","d@example.com"]}}]')`)
}
