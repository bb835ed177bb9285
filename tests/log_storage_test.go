package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A statement's events share one herald.log_statements row; sequencing numbers the
// row (first_offset) and herald.log shows one row per event. Reads that stop inside
// a statement go on from the next event of that statement, for every partition.
func TestLogReadsInsideStatements(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `SELECT herald.create_consumer_group('one', 1, 'earliest')`)
	mustExec(t, pool, `SELECT herald.create_consumer_group('two', 2, 'earliest')`)
	enqueueBatch(t, pool, "email", 7, t0)  // offsets 1..7
	enqueueEmail(t, pool, "x@example.com") // 8
	enqueueBatch(t, pool, "email", 5, t0)  // 9..13
	sequenceAll(t, pool)
	if got := scalar[string](t, pool, `SELECT string_agg(first_offset || '+' || cardinality(message_ids), ' ' ORDER BY first_offset)
		FROM herald.log_statements`); got != "1+7 8+1 9+5" {
		t.Fatalf("statement rows (first_offset+events): %s, want 1+7 8+1 9+5", got)
	}
	if got := scalar[string](t, pool, `SELECT string_agg("offset"::text, ',' ORDER BY "offset") FROM herald.log`); got != "1,2,3,4,5,6,7,8,9,10,11,12,13" {
		t.Fatalf("herald.log offsets %s", got)
	}
	// The view's rows agree with the messages they describe.
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.log l JOIN herald.messages m ON m.id = l.message_id
		WHERE l.kind = 'accepted' AND l.channel = m.channel AND l.key_hash = hashtext(m.recipient)`); n != 13 {
		t.Fatalf("%d of 13 log rows match their message", n)
	}

	// One partition, read 3 at a time: every offset once, in order.
	var got []int64
	for len(got) < 13 {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		evs := readLog(t, tx, "one", 0, 3)
		if len(evs) == 0 {
			t.Fatalf("read nothing after %v", got)
		}
		got = append(got, offsets(evs)...)
		if _, err := tx.Exec(ctx, `SELECT herald.log_ack('one', 0, $1)`, evs[len(evs)-1].Offset); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if want := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}; !slices.Equal(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}

	// Two partitions, read 2 at a time each: together every offset once, each
	// partition in order and only its own keys.
	var all []int64
	for p := 0; p < 2; p++ {
		var mine []int64
		for {
			evs := readLog(t, pool, "two", p, 2)
			if len(evs) == 0 {
				break
			}
			mine = append(mine, offsets(evs)...)
			mustExec(t, pool, `SELECT herald.log_ack('two', $1, $2)`, p, evs[len(evs)-1].Offset)
		}
		if !slices.IsSorted(mine) {
			t.Fatalf("partition %d read out of order: %v", p, mine)
		}
		if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.log WHERE "offset" = ANY($1) AND (key_hash & 2147483647) % 2 <> $2`, mine, p); n != 0 {
			t.Fatalf("partition %d got %d events of the other partition", p, n)
		}
		all = append(all, mine...)
	}
	slices.Sort(all)
	if want := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}; !slices.Equal(all, want) {
		t.Fatalf("two partitions read %v, want %v", all, want)
	}
}

// herald._log_after (what log_read and log_dead_letter read) returns what the view
// herald.log holds, filtered and cut the same way, wherever a read starts: inside a
// statement of 10,000 events, at its edges, in small statements, in 'sent' receipts
// whose detail is built and a 'dead' event whose detail is stored, for one partition
// and for each of three.
func TestLogAfterMatchesTheLogView(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `SELECT herald.enqueue_many(array_fill('email'::text, ARRAY[10000]),
		ARRAY(SELECT 'u' || g || '@example.com' FROM generate_series(1, 10000) g),
		array_fill('{"subject":"s","text":"t"}'::jsonb, ARRAY[10000]))`) // offsets 1..10,000
	enqueueEmail(t, pool, "x@example.com")                             // 10,001
	enqueueBatch(t, pool, "email", 5, t0)                              // 10,002..10,006
	sentMessages(t, pool, "sms", "SM", "+14155550100", "+14155550101") // accepted, then sent with receipts
	mustExec(t, pool, `SELECT herald.enqueue('sms', '+14155550102', '{"text":"t"}')`)
	mustExec(t, pool, `SELECT herald.fail(id, lease_token, 'no such number', 'permanent')
		FROM herald.claim_batch('w', 10, channels => ARRAY['sms'])`) // dead, with its detail stored
	sequenceAll(t, pool)
	last := scalar[int64](t, pool, `SELECT max("offset") FROM herald.log`)
	if last != 10012 {
		t.Fatalf("the log ends at %d, want 10012", last)
	}
	const row = `string_agg(concat_ws(' ', "offset", message_id, kind, channel, key_hash, at, detail), E'\n' ORDER BY "offset")`
	n := 0
	for _, after := range []int64{0, 1, 4999, 9998, 9999, 10000, 10001, 10006, 10008, 10010, last - 1, last} {
		for _, parts := range []int{1, 3} {
			for p := 0; p < parts; p++ {
				for _, max := range []int{1, 3, 100, 10000} {
					var got, want *string
					if err := pool.QueryRow(ctx, `SELECT `+row+` FROM herald._log_after($1, $2, $3, $4)`, after, parts, p, max).Scan(&got); err != nil {
						t.Fatal(err)
					}
					if err := pool.QueryRow(ctx, `SELECT `+row+` FROM (SELECT * FROM herald.log
						WHERE "offset" > $1 AND (key_hash & 2147483647) % $2 = $3 ORDER BY "offset" LIMIT $4) l`, after, parts, p, max).Scan(&want); err != nil {
						t.Fatal(err)
					}
					if (got == nil) != (want == nil) || (got != nil && *got != *want) {
						t.Fatalf("_log_after(%d, %d, %d, %d) differs from herald.log:\n%.600s\nwant\n%.600s", after, parts, p, max, deref(got), deref(want))
					}
					n++
				}
			}
		}
	}
	t.Logf("%d reads compared", n)
}

// log_truncate removes whole statements below its bound and cuts the one that holds
// it: the log then starts exactly at the bound, and readers and a new 'earliest'
// group go on from there.
func TestLogTruncateCutsAStatement(t *testing.T) {
	_, pool := setup(t)
	mustExec(t, pool, `SELECT herald.create_consumer_group('g', 1, 'earliest')`)
	enqueueBatch(t, pool, "email", 4, t0) // 1..4
	enqueueBatch(t, pool, "email", 6, t0) // 5..10
	sequenceAll(t, pool)
	mustExec(t, pool, `SELECT herald.log_ack('g', 0, 6)`)
	// The bound is the group's committed offset + 1 = 7: 1..4 (a whole statement) and
	// 5, 6 (the head of the next) go.
	if n := scalar[int64](t, pool, `SELECT herald.log_truncate(100)`); n != 6 {
		t.Fatalf("truncate removed %d events, want 6", n)
	}
	if got := scalar[string](t, pool, `SELECT string_agg("offset"::text, ',' ORDER BY "offset") FROM herald.log`); got != "7,8,9,10" {
		t.Fatalf("after truncate the log holds %s, want 7,8,9,10", got)
	}
	if got := scalar[string](t, pool, `SELECT first_offset || '+' || cardinality(message_ids) || '+' || cardinality(channels) || '+' || cardinality(key_hashes)
		FROM herald.log_statements`); got != "7+4+4+4" {
		t.Fatalf("the cut statement is %s, want 7+4+4+4", got)
	}
	// The cut row kept the right events: its messages are the batch's last four.
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.log l JOIN herald.messages m ON m.id = l.message_id
		WHERE m.recipient IN ('u3@example.com', 'u4@example.com', 'u5@example.com', 'u6@example.com') AND l."offset" >= 7`); n != 4 {
		t.Fatalf("%d of the batch's last four messages at offsets 7..10", n)
	}
	if evs := readLog(t, pool, "g", 0, 100); !slices.Equal(offsets(evs), []int64{7, 8, 9, 10}) {
		t.Fatalf("after truncate g reads %v", offsets(evs))
	}
	mustExec(t, pool, `SELECT herald.create_consumer_group('late', 1, 'earliest')`)
	if evs := readLog(t, pool, "late", 0, 2); !slices.Equal(offsets(evs), []int64{7, 8}) {
		t.Fatalf("a new earliest group reads %v, want 7 8", offsets(evs))
	}
	// Truncating again at the same bound changes nothing.
	if n := scalar[int64](t, pool, `SELECT herald.log_truncate(7)`); n != 0 {
		t.Fatalf("a second truncate removed %d", n)
	}
}

// threeEventStatements writes n sequenced statements of 3 events each: statement g
// holds offsets 3g-2 .. 3g, for messages of the same ids.
func threeEventStatements(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	mustExec(t, pool, `INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes, first_offset)
		SELECT 'accepted', now(), ARRAY[3*g-2, 3*g-1, 3*g], ARRAY['email', 'email', 'email'], ARRAY[1, 2, 3], 3*g-2
		FROM generate_series(1, $1::integer) g`, n)
}

// Two truncates at once: the second waits for the first's lock on the row holding
// both bounds, then cuts what the first left of it, not the row as it read it.
func TestLogTruncateConcurrentCuts(t *testing.T) {
	ctx, pool := setup(t)
	threeEventStatements(t, pool, 100)
	first, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx)
	var firstPID int32
	var n int64
	// Statements 1..10 go and 11 (31..33) loses 31.
	if err := first.QueryRow(ctx, `SELECT pg_backend_pid(), herald.log_truncate(32)`).Scan(&firstPID, &n); err != nil || n != 31 {
		t.Fatalf("first truncate removed %d (%v), want 31", n, err)
	}
	second, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Release()
	var secondPID int32
	if err := second.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&secondPID); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var removed int64
	go func() { done <- second.QueryRow(ctx, `SELECT herald.log_truncate(33)`).Scan(&removed) }()
	eventually(t, 10*time.Second, "the second truncate waiting for the first", func() bool {
		return scalar[bool](t, pool, `SELECT $1::integer = ANY (pg_blocking_pids($2))`, firstPID, secondPID)
	})
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || removed != 1 {
		t.Fatalf("second truncate removed %d (%v), want 1 (offset 32)", removed, err)
	}
	if got := scalar[string](t, pool, `SELECT string_agg("offset"::text || ':' || message_id, ',' ORDER BY "offset")
		FROM herald.log WHERE "offset" < 37`); got != "33:33,34:34,35:35,36:36" {
		t.Fatalf("after both truncates the log starts %s, want 33:33,34:34,35:35,36:36", got)
	}
}

// A malformed statement row (arrays of different lengths; only a bug in herald's
// own functions could write one) stops log_sequence with XX000 and gets no offsets.
func TestLogSequenceRefusesMalformedRow(t *testing.T) {
	ctx, pool := setup(t)
	enqueueEmail(t, pool, "a@example.com")
	mustExec(t, pool, `INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes)
		VALUES ('accepted', now(), ARRAY[1, 2]::bigint[], ARRAY['email'], ARRAY[1, 2])`)
	_, err := pool.Exec(ctx, `SELECT herald.log_sequence(10000)`)
	wantPgError(t, err, "XX000", "")
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.log_statements WHERE first_offset IS NOT NULL`); n != 0 {
		t.Fatalf("%d rows numbered by a failed run", n)
	}
	if n := scalar[int64](t, pool, `SELECT next_offset FROM herald.log_counter`); n != 1 {
		t.Fatalf("the counter moved to %d", n)
	}
}

// Migration 012: a statement's event arrays are compressed with lz4 when the server
// has it (they are big enough to be compressed at 1,000 events), and read back whole.
func TestLogArraysUseLZ4(t *testing.T) {
	ctx, pool := setup(t)
	if !scalar[bool](t, pool, `SELECT 'lz4' = ANY (enumvals) FROM pg_settings WHERE name = 'default_toast_compression'`) {
		t.Skip("this server is built without lz4: the schema keeps pglz")
	}
	enqueueBatch(t, pool, "email", 1000, t0)
	var methods string
	if err := pool.QueryRow(ctx, `SELECT concat_ws(' ', pg_column_compression(message_ids), pg_column_compression(channels))
		FROM herald.log_statements`).Scan(&methods); err != nil {
		t.Fatal(err)
	}
	if methods != "lz4 lz4" {
		t.Fatalf("the 1,000-event row's arrays are compressed with %q, want lz4", methods)
	}
	sequenceAll(t, pool)
	if n := scalar[int64](t, pool, `SELECT count(DISTINCT message_id) FROM herald.log WHERE kind = 'accepted' AND channel = 'email'`); n != 1000 {
		t.Fatalf("herald.log shows %d of the 1,000 events", n)
	}
}

// complete writes its 'sent' events in id order whatever the order of the ids it is
// given, and each event's channel, key hash and detail belong to its own message
// (the four arrays of the row are filled from one sorted stream).
func TestCompleteLogsInIDOrder(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `SELECT herald.enqueue('email', 'u' || g || '@example.com', '{"subject":"s","text":"t"}', now => $1)
		FROM generate_series(1, 6) g`, t0)
	mustExec(t, pool, `SELECT herald.enqueue('sms', '+1415555010' || g, '{"text":"t"}', ordering_key => 'k' || g, now => $1)
		FROM generate_series(1, 6) g`, t0)
	c := claim(t, pool, 12, t0)
	if len(c) != 12 {
		t.Fatalf("claimed %d of 12", len(c))
	}
	// Reported in descending id order, with a receipt naming each message. The plan
	// is pinned to probe the table for each id in the order given (on a table this
	// small the planner would rather hash it, and return the rows in heap order, which
	// is id order already).
	slices.SortFunc(c, func(a, b claimed) int { return int(b.ID - a.ID) })
	var receipts []string
	for _, m := range c {
		receipts = append(receipts, fmt.Sprintf("p-%d", m.ID))
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var n int32
	if _, err := tx.Exec(ctx, `SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off; SET LOCAL enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `SELECT herald.complete($1::bigint[], $2::bigint[], $3::text[], $4)`,
		ids(c), leaseTokens(c), receipts, t0).Scan(&n); err != nil || n != 12 {
		t.Fatalf("complete changed %d of 12: %v", n, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	mustExec(t, pool, `SELECT herald.log_sequence()`)
	rows, err := pool.Query(ctx, `SELECT l.message_id, l.detail ->> 'provider_message_id', (l.detail ->> 'attempts')::int,
		l.channel = m.channel AND l.key_hash = hashtext(coalesce(m.ordering_key, m.recipient))
		FROM herald.log l JOIN herald.messages m ON m.id = l.message_id
		WHERE l.kind = 'sent' ORDER BY l."offset"`)
	if err != nil {
		t.Fatal(err)
	}
	var order []int64
	for rows.Next() {
		var id int64
		var receipt string
		var attempts int32
		var same bool
		if err := rows.Scan(&id, &receipt, &attempts, &same); err != nil {
			t.Fatal(err)
		}
		if receipt != fmt.Sprintf("p-%d", id) || attempts != 1 || !same {
			t.Fatalf("sent event of message %d: receipt %s, attempts %d, channel and key hash its own: %v", id, receipt, attempts, same)
		}
		order = append(order, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(order) != 12 || !slices.IsSorted(order) {
		t.Fatalf("sent events in offset order: %v, want the 12 ids ascending", order)
	}
}

// herald._event_detail gives a 'sent' event only its non-null members, as
// jsonb_strip_nulls would.
func TestSentEventDetail(t *testing.T) {
	_, pool := setup(t)
	for _, c := range []struct {
		receipt  *string
		attempts *int32
		want     string
	}{
		{ptr("p-1"), ptr[int32](2), `{"attempts": 2, "provider_message_id": "p-1"}`},
		{nil, ptr[int32](2), `{"attempts": 2}`},
		{ptr("p-1"), nil, `{"provider_message_id": "p-1"}`},
		{nil, nil, `{}`},
	} {
		if got := scalar[string](t, pool, `SELECT herald._event_detail('sent', $1, NULL, NULL, $2)::text`, c.receipt, c.attempts); got != c.want {
			t.Errorf("_event_detail('sent', %v, %v) = %s, want %s", c.receipt, c.attempts, got, c.want)
		}
	}
}

// complete stores its 'sent' events' receipts and attempts as typed arrays and no
// JSON; herald.log (read as herald_consumer too) and herald.log_read build the same
// detail from them, a row whose detail is stored as JSON reads the same, log_truncate keeps the arrays aligned when it cuts a row, and
// log_sequence refuses a row whose new arrays have the wrong length.
func TestSentReceiptsStoredAsArrays(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `SELECT herald.create_consumer_group('g', 1, 'earliest')`)
	enqueueBatch(t, pool, "email", 4, t0) // 1..4
	c := claim(t, pool, 4, t0.Add(time.Minute))
	slices.SortFunc(c, func(a, b claimed) int { return int(a.ID - b.ID) })
	if n := scalar[int32](t, pool, `SELECT herald.complete($1::bigint[], $2::bigint[], ARRAY['p-1', NULL, 'p-3', NULL])`,
		ids(c), leaseTokens(c)); n != 4 {
		t.Fatalf("complete changed %d of 4", n)
	}
	enqueueBatch(t, pool, "email", 2, t0) // 5, 6
	c = claim(t, pool, 2, t0.Add(time.Minute))
	if n := scalar[int32](t, pool, `SELECT herald.complete($1::bigint[], $2::bigint[])`, ids(c), leaseTokens(c)); n != 2 {
		t.Fatalf("complete changed %d of 2", n)
	}
	// A 'sent' row with its detail stored as JSON (the form other kinds use).
	mustExec(t, pool, `INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes, details)
		VALUES ('sent', now(), ARRAY[101, 102]::bigint[], ARRAY['email', 'email'], ARRAY[1, 2],
		        ARRAY['{"provider_message_id": "old-1", "attempts": 3}', '{"attempts": 2}']::jsonb[])`)
	stored := scalar[[]string](t, pool, `SELECT array_agg(concat_ws(' ', details IS NULL, provider_message_ids::text, attempts::text) ORDER BY seq)
		FROM herald.log_statements WHERE kind = 'sent'`)
	if want := []string{"t {p-1,NULL,p-3,NULL} {1,1,1,1}", "t {1,1}", "f"}; !slices.Equal(stored, want) {
		t.Fatalf("sent rows store %q, want %q", stored, want)
	}
	sequenceAll(t, pool)
	want := map[int64]string{
		1: `{"attempts": 1, "provider_message_id": "p-1"}`, 2: `{"attempts": 1}`,
		3: `{"attempts": 1, "provider_message_id": "p-3"}`, 4: `{"attempts": 1}`,
		5: `{"attempts": 1}`, 6: `{"attempts": 1}`,
		101: `{"attempts": 3, "provider_message_id": "old-1"}`, 102: `{"attempts": 2}`,
	}
	// checkView compares the sent details herald.log shows (to q) for messages from
	// `from` on with want.
	checkView := func(what string, q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}, from int64) {
		t.Helper()
		var got map[string]any
		if err := q.QueryRow(ctx, `SELECT coalesce(jsonb_object_agg(message_id, detail), '{}') FROM herald.log
			WHERE kind = 'sent' AND message_id >= $1`, from).Scan(&got); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(got) == 0 {
			t.Errorf("%s: no sent events", what)
		}
		for id, d := range want {
			var w any
			if err := json.Unmarshal([]byte(d), &w); err != nil {
				t.Fatal(err)
			}
			if g := got[fmt.Sprint(id)]; id >= from && !reflect.DeepEqual(g, w) {
				t.Errorf("%s: message %d's sent detail is %v, want %s", what, id, g, d)
			}
		}
	}
	checkView("herald.log", pool, 0)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL ROLE herald_consumer`); err != nil {
		t.Fatal(err)
	}
	checkView("herald.log as herald_consumer", tx, 0)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, e := range readLog(t, pool, "g", 0, 100) {
		if e.Kind != "sent" {
			continue
		}
		read++
		var w map[string]any
		if err := json.Unmarshal([]byte(want[e.MessageID]), &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(e.Detail, w) {
			t.Errorf("log_read: message %d's sent detail is %v, want %s", e.MessageID, e.Detail, want[e.MessageID])
		}
	}
	if read != 8 {
		t.Errorf("log_read gave %d sent events, want 8", read)
	}
	// Cut the first 'sent' row after its second event: 3 and 4 keep their own details.
	bound := scalar[int64](t, pool, `SELECT "offset" FROM herald.log WHERE kind = 'sent' AND message_id = 3`)
	mustExec(t, pool, `SELECT herald.log_ack('g', 0, $1)`, bound-1)
	mustExec(t, pool, `SELECT herald.log_truncate($1)`, bound)
	if got := scalar[string](t, pool, `SELECT concat_ws(' ', provider_message_ids::text, attempts::text) FROM herald.log_statements
		WHERE kind = 'sent' AND first_offset = $1`, bound); got != "{p-3,NULL} {1,1}" {
		t.Fatalf("the cut row holds %q, want {p-3,NULL} {1,1}", got)
	}
	checkView("herald.log after log_truncate", pool, 3)

	mustExec(t, pool, `INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes, attempts)
		VALUES ('sent', now(), ARRAY[201, 202]::bigint[], ARRAY['email', 'email'], ARRAY[1, 2], ARRAY[1])`)
	_, err = pool.Exec(ctx, `SELECT herald.log_sequence(10000)`)
	wantPgError(t, err, "XX000", "")
}
