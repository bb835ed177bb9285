package tests

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// event is one row of herald.log_read.
type event struct {
	Offset    int64
	MessageID int64
	Kind      string
	Detail    map[string]any
}

// readLog calls herald.log_read on q (a pool, connection or transaction).
func readLog(t *testing.T, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, group string, partition, max int) []event {
	t.Helper()
	rows, err := q.Query(context.Background(),
		`SELECT "offset", message_id, kind, detail FROM herald.log_read($1, $2, $3)`, group, partition, max)
	if err != nil {
		t.Fatalf("log_read: %v", err)
	}
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (event, error) {
		var e event
		return e, r.Scan(&e.Offset, &e.MessageID, &e.Kind, &e.Detail)
	})
	if err != nil {
		t.Fatalf("log_read: %v", err)
	}
	return evs
}

func offsets(evs []event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Offset
	}
	return out
}

// sequenceAll gives every committed pending event its offset.
func sequenceAll(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	for scalar[int32](t, pool, `SELECT herald.log_sequence(10000)`) > 0 {
	}
}

// Guarantee 1 — gapless: 8 producer connections, about 10% of their transactions
// rolled back, single and batch enqueues, with a sequencer running alongside: the
// committed events have exactly the offsets 1..N, one 'accepted' event per stored
// message and none for rolled-back ones.
func TestLogGaplessUnderConcurrentProducers(t *testing.T) {
	ctx, pool := setup(t)
	const producers, txPerProducer = 8, 60
	var committed atomic.Int64
	stop := make(chan struct{})
	seqDone := make(chan error, 1)
	go func() { // a sequencer racing the producers
		for {
			select {
			case <-stop:
				seqDone <- nil
				return
			default:
			}
			if _, err := pool.Exec(ctx, `SELECT herald.log_sequence(50)`); err != nil {
				seqDone <- err
				return
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(p)))
			conn, err := pool.Acquire(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Release()
			for i := 0; i < txPerProducer; i++ {
				tx, err := conn.Begin(ctx)
				if err != nil {
					errs <- err
					return
				}
				n := 1
				if rng.Intn(2) == 0 {
					_, err = tx.Exec(ctx, `SELECT herald.enqueue('sms', '+1415555' || lpad($1, 4, '0'), '{"text":"t"}')`, fmt.Sprint(rng.Intn(10000)))
				} else {
					n = 1 + rng.Intn(20)
					_, err = tx.Exec(ctx, `SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object(
						'channel', 'email', 'recipient', 'p' || $1 || '-' || g || '@example.com',
						'payload', '{"subject":"s","text":"t"}'::jsonb)) FROM generate_series(1, $2::int) g))`, fmt.Sprint(p), n)
				}
				if err != nil {
					errs <- err
					return
				}
				if rng.Intn(10) == 0 {
					err = tx.Rollback(ctx)
				} else {
					err = tx.Commit(ctx)
					committed.Add(int64(n))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-seqDone; err != nil {
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sequenceAll(t, pool)

	n := committed.Load()
	var count, minOff, maxOff, distinctMsgs, messages int64
	if err := pool.QueryRow(ctx, `SELECT count(*), coalesce(min("offset"), 0), coalesce(max("offset"), 0), count(DISTINCT message_id),
		(SELECT count(*) FROM herald.messages) FROM herald.log WHERE kind = 'accepted'`).
		Scan(&count, &minOff, &maxOff, &distinctMsgs, &messages); err != nil {
		t.Fatal(err)
	}
	if count != n || minOff != 1 || maxOff != n || distinctMsgs != n || messages != n {
		t.Fatalf("committed %d messages; log has %d accepted events, offsets %d..%d, %d distinct messages, %d stored messages",
			n, count, minOff, maxOff, distinctMsgs, messages)
	}
	if orphans := scalar[int64](t, pool, `SELECT count(*) FROM herald.log l LEFT JOIN herald.messages m ON m.id = l.message_id WHERE m.id IS NULL`); orphans != 0 {
		t.Fatalf("%d events of messages that were rolled back", orphans)
	}
	if next := scalar[int64](t, pool, `SELECT next_offset FROM herald.log_counter`); next != n+1 {
		t.Fatalf("next_offset %d, want %d", next, n+1)
	}
	t.Logf("%d messages committed by %d producers; offsets 1..%d without a gap", n, producers, n)
}

// Guarantee 2 — commit-order visibility. A producer transaction held open never
// holds back the log: its event gets an offset after it commits. A transaction that
// has reserved offsets (a sequencing run) and is held open keeps every consumer from
// reading any later offset; once it commits, a consumer reads everything, in order,
// none skipped.
func TestLogCommitOrderVisibility(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `SELECT herald.create_consumer_group('g', 1, 'earliest')`)

	held, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback(ctx)
	var heldID int64
	if err := held.QueryRow(ctx, `SELECT herald.enqueue('email', 'held@example.com', '{"subject":"s","text":"t"}')`).Scan(&heldID); err != nil {
		t.Fatal(err)
	}
	b := enqueueEmail(t, pool, "b@example.com")
	c := enqueueEmail(t, pool, "c@example.com")
	evs := readLog(t, pool, "g", 0, 100)
	if got := offsets(evs); !slices.Equal(got, []int64{1, 2}) || evs[0].MessageID != b || evs[1].MessageID != c {
		t.Fatalf("with a producer held open: %+v", evs)
	}
	mustExec(t, pool, `SELECT herald.log_ack('g', 0, 2)`)
	if err := held.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	evs = readLog(t, pool, "g", 0, 100)
	if len(evs) != 1 || evs[0].Offset != 3 || evs[0].MessageID != heldID {
		t.Fatalf("after the held producer committed: %+v", evs)
	}
	mustExec(t, pool, `SELECT herald.log_ack('g', 0, 3)`)

	// A sequencing run held open: it reserved offsets 4..5.
	enqueueEmail(t, pool, "d@example.com")
	enqueueEmail(t, pool, "e@example.com")
	seq, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer seq.Rollback(ctx)
	var moved int32
	if err := seq.QueryRow(ctx, `SELECT herald.log_sequence()`).Scan(&moved); err != nil || moved != 2 {
		t.Fatalf("held sequencing run moved %d (%v)", moved, err)
	}
	// Later events commit meanwhile; no consumer may read past the held offsets.
	enqueueEmail(t, pool, "f@example.com")
	enqueueEmail(t, pool, "g@example.com")
	if evs := readLog(t, pool, "g", 0, 100); len(evs) != 0 {
		t.Fatalf("read %v while offsets 4..5 are uncommitted", offsets(evs))
	}
	if n := scalar[int32](t, pool, `SELECT herald.log_sequence()`); n != 0 {
		t.Fatalf("a second sequencing run moved %d events while the first is open", n)
	}
	if err := seq.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	evs = readLog(t, pool, "g", 0, 100)
	if got := offsets(evs); !slices.Equal(got, []int64{4, 5, 6, 7}) {
		t.Fatalf("after the sequencing run committed: offsets %v, want 4..7", got)
	}
}

// Guarantee 3 — every group sees every event exactly once across a consumer that
// crashes between read and ack; groups progress independently; a dead-lettered
// event is skipped by its group only.
func TestLogConsumerGroupsExactlyOnce(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `CREATE TABLE public.receipts (group_name text, "offset" bigint, PRIMARY KEY (group_name, "offset"))`)
	mustExec(t, pool, `SELECT herald.create_consumer_group('billing', 1, 'earliest')`)
	mustExec(t, pool, `SELECT herald.create_consumer_group('audit', 1, 'earliest')`)
	var ids []int64
	for i := 0; i < 6; i++ {
		ids = append(ids, enqueueEmail(t, pool, fmt.Sprintf("u%d@example.com", i)))
	}
	cl := claim(t, pool, 3, t0)
	mustExec(t, pool, `SELECT herald.complete($1::bigint, $2::bigint, 'prov-1', $3)`, cl[0].ID, cl[0].Token, t0)
	mustExec(t, pool, `SELECT herald.fail($1::bigint, $2::bigint, 'no such user', 'permanent', now => $3)`, cl[1].ID, cl[1].Token, t0)
	if scalar[string](t, pool, `SELECT herald.cancel($1, now => $2)`, ids[5], t0) != "cancelled" {
		t.Fatal("cancel failed")
	}
	sequenceAll(t, pool)
	total := scalar[int64](t, pool, `SELECT count(*) FROM herald.log`)
	if total != 9 { // 6 accepted, sent, dead, cancelled
		t.Fatalf("%d events, want 9", total)
	}
	kinds := map[string]map[string]any{}
	for _, e := range readLog(t, pool, "audit", 0, 100) {
		kinds[e.Kind] = e.Detail
	}
	if kinds["sent"]["provider_message_id"] != "prov-1" || kinds["dead"]["error_class"] != "permanent" || kinds["cancelled"] == nil {
		t.Fatalf("terminal events: %v", kinds)
	}

	// billing: a consumer reads 4 events and dies before acking (its connection closes).
	crashed, err := pgx.Connect(ctx, pool.Config().ConnConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	tx, err := crashed.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := readLog(t, tx, "billing", 0, 4)
	if len(first) != 4 {
		t.Fatalf("first read %d events", len(first))
	}
	// The consumer dies: its backend is terminated (pg_terminate_backend with a
	// timeout waits until it is gone) and the transaction with it: no ack.
	if !scalar[bool](t, pool, `SELECT pg_terminate_backend($1, 10000)`, crashed.PgConn().PID()) {
		t.Fatal("could not terminate the consumer's backend")
	}
	crashed.Close(ctx)
	again := readLog(t, pool, "billing", 0, 4)
	if !slices.Equal(offsets(again), offsets(first)) {
		t.Fatalf("after the crash the group read %v, want the same %v", offsets(again), offsets(first))
	}

	// The poison event (the third) is dead-lettered by billing only.
	poison := first[2].Offset
	_, err = pool.Exec(ctx, `SELECT herald.log_dead_letter('billing', 0, $1, 'cannot bill')`, poison)
	wantPgError(t, err, "22V15", "offset") // not the next event yet

	// Exactly-once consumer: read, apply (insert a receipt), ack, in one transaction.
	consume := func(group string) int {
		n := 0
		for {
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			evs := readLog(t, tx, group, 0, 2)
			if len(evs) == 0 {
				tx.Rollback(ctx)
				return n
			}
			last := int64(0)
			for _, e := range evs {
				if group == "billing" && e.Offset == poison {
					if _, err := tx.Exec(ctx, `SELECT herald.log_dead_letter($1, 0, $2, 'cannot bill')`, group, e.Offset); err != nil {
						t.Fatal(err)
					}
					break
				}
				if _, err := tx.Exec(ctx, `INSERT INTO public.receipts VALUES ($1, $2)`, group, e.Offset); err != nil {
					t.Fatal(err)
				}
				last = e.Offset
				n++
			}
			if last > 0 {
				if _, err := tx.Exec(ctx, `SELECT herald.log_ack($1, 0, $2)`, group, last); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := consume("billing"); n != int(total)-1 {
		t.Fatalf("billing applied %d events, want %d (all but the poison one)", n, total-1)
	}
	if c := scalar[int64](t, pool, `SELECT committed_offset FROM herald.consumer_offsets WHERE group_name = 'audit'`); c != 0 {
		t.Fatalf("audit moved to %d while billing consumed", c)
	}
	if n := consume("audit"); n != int(total) {
		t.Fatalf("audit applied %d events, want all %d", n, total)
	}
	if got := scalar[string](t, pool, `SELECT error FROM herald.consumer_dead_letters WHERE group_name = 'billing' AND "offset" = $1`, poison); got != "cannot bill" {
		t.Fatalf("dead letter error %q", got)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.consumer_dead_letters`); n != 1 {
		t.Fatalf("%d dead letters", n)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM public.receipts WHERE group_name = 'billing' AND "offset" = $1`, poison); n != 0 {
		t.Fatal("billing applied its dead-lettered event")
	}
}

// Guarantee 4 — a partition is never processed by two consumers of the same group at
// once: 4 consumers hammer a 2-partition group, each holding its partition from
// log_read to log_ack; a per-partition counter of consumers inside that section
// never exceeds 1, and every event is applied exactly once (a second application
// would violate the receipts primary key).
func TestLogPartitionHeldByOneConsumer(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `CREATE TABLE public.receipts ("offset" bigint PRIMARY KEY, partition int)`)
	mustExec(t, pool, `SELECT herald.create_consumer_group('g', 2, 'earliest')`)
	mustExec(t, pool, `SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'sms',
		'recipient', '+1415555' || lpad(g::text, 4, '0'), 'payload', '{"text":"t"}'::jsonb, 'ordering_key', 'k' || (g % 37)))
		FROM generate_series(1, 600) g))`)
	sequenceAll(t, pool)

	var inside [2]atomic.Int32
	var overlaps, skipped atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for idle := 0; idle < 2; {
				idle++
				for p := 0; p < 2; p++ {
					err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
						rows, err := tx.Query(ctx, `SELECT "offset" FROM herald.log_read('g', $1, 25)`, p)
						if err != nil {
							return err
						}
						offs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
						if err != nil || len(offs) == 0 {
							skipped.Add(1)
							return err
						}
						idle = 0
						if inside[p].Add(1) > 1 {
							overlaps.Add(1)
						}
						defer inside[p].Add(-1)
						for _, o := range offs {
							if _, err := tx.Exec(ctx, `INSERT INTO public.receipts VALUES ($1, $2)`, o, p); err != nil {
								return err
							}
						}
						_, err = tx.Exec(ctx, `SELECT herald.log_ack('g', $1, $2)`, p, offs[len(offs)-1])
						return err
					})
					if err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if overlaps.Load() != 0 {
		t.Fatalf("%d times two consumers held one partition", overlaps.Load())
	}
	var applied, p0, p1, wrong int64
	if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE r.partition = 0), count(*) FILTER (WHERE r.partition = 1),
		count(*) FILTER (WHERE (l.key_hash & 2147483647) % 2 <> r.partition)
		FROM public.receipts r JOIN herald.log l ON l."offset" = r."offset"`).Scan(&applied, &p0, &p1, &wrong); err != nil {
		t.Fatal(err)
	}
	if applied != 600 || p0 == 0 || p1 == 0 || wrong != 0 {
		t.Fatalf("applied %d of 600 (partition 0: %d, 1: %d, in the wrong partition: %d)", applied, p0, p1, wrong)
	}
	// One ordering key's events all land in one partition, in message order.
	if n := scalar[int64](t, pool, `SELECT count(*) FROM (SELECT m.ordering_key FROM herald.log l JOIN herald.messages m ON m.id = l.message_id
		GROUP BY m.ordering_key HAVING count(DISTINCT (l.key_hash & 2147483647) % 2) > 1) s`); n != 0 {
		t.Fatalf("%d ordering keys spread over two partitions", n)
	}
	t.Logf("600 events by 4 consumers over 2 partitions (%d / %d); %d reads found the partition busy or empty", p0, p1, skipped.Load())
}

// The log functions' argument errors, idempotent group creation, forward-only acks,
// and retention that keeps unacknowledged events.
func TestLogContract(t *testing.T) {
	ctx, pool := setup(t)
	for _, c := range []struct{ sql, code, field string }{
		{`SELECT herald.create_consumer_group('')`, "22V12", "group"},
		{`SELECT herald.create_consumer_group('has space')`, "22V12", "group"},
		{`SELECT herald.create_consumer_group('g', 0)`, "22V12", "partitions"},
		{`SELECT herald.create_consumer_group('g', 257)`, "22V12", "partitions"},
		{`SELECT herald.create_consumer_group('g', 1, 'middle')`, "22V12", "start"},
		{`SELECT * FROM herald.log_read('nope', 0)`, "22V13", "group"},
		{`SELECT herald.log_ack('nope', 0, 1)`, "22V13", "group"},
		{`SELECT herald.log_sequence(0)`, "22V12", "max"},
		{`SELECT herald.log_truncate(NULL)`, "22V12", "before_offset"},
	} {
		_, err := pool.Exec(ctx, c.sql)
		wantPgError(t, err, c.code, c.field)
	}
	if !scalar[bool](t, pool, `SELECT herald.create_consumer_group('g', 2)`) {
		t.Fatal("first create returned false")
	}
	if scalar[bool](t, pool, `SELECT herald.create_consumer_group('g', 2)`) {
		t.Fatal("repeated create returned true")
	}
	for _, c := range []struct{ sql, code, field string }{
		{`SELECT herald.create_consumer_group('g', 3)`, "22V16", "partitions"},
		{`SELECT * FROM herald.log_read('g', 2)`, "22V14", "partition"},
		{`SELECT * FROM herald.log_read('g', -1)`, "22V14", "partition"},
		{`SELECT * FROM herald.log_read('g', 0, 0)`, "22V12", "max"},
		{`SELECT herald.log_ack('g', 0, 1)`, "22V15", "upto"},
		{`SELECT herald.log_dead_letter('g', 0, 1, '')`, "22V12", "error"},
		{`SELECT herald.log_dead_letter('g', 0, 1, 'x')`, "22V15", "offset"},
	} {
		_, err := pool.Exec(ctx, c.sql)
		wantPgError(t, err, c.code, c.field)
	}

	for i := 0; i < 4; i++ {
		enqueueEmail(t, pool, fmt.Sprintf("u%d@example.com", i))
	}
	sequenceAll(t, pool)
	mustExec(t, pool, `SELECT herald.create_consumer_group('late', 1)`) // 'latest': starts after offset 4
	if evs := readLog(t, pool, "late", 0, 100); len(evs) != 0 {
		t.Fatalf("a group starting at latest read %v", offsets(evs))
	}
	mustExec(t, pool, `SELECT herald.create_consumer_group('all', 1, 'earliest')`)
	if got := scalar[int64](t, pool, `SELECT herald.log_ack('all', 0, 3)`); got != 3 {
		t.Fatalf("ack returned %d", got)
	}
	if got := scalar[int64](t, pool, `SELECT herald.log_ack('all', 0, 1)`); got != 3 {
		t.Fatalf("a backwards ack moved the offset to %d", got)
	}
	// Group g (2 partitions, started at 0) has acknowledged nothing: nothing may go.
	if n := scalar[int64](t, pool, `SELECT herald.log_truncate(100)`); n != 0 {
		t.Fatalf("truncate removed %d events group g has not read", n)
	}
	mustExec(t, pool, `DELETE FROM herald.consumer_groups WHERE name = 'g'`)
	// Now 'all' (at 3) bounds it: offsets 1..3 go, 4 stays for it.
	if n := scalar[int64](t, pool, `SELECT herald.log_truncate(100)`); n != 3 {
		t.Fatalf("truncate removed %d, want 3", n)
	}
	if evs := readLog(t, pool, "all", 0, 100); !slices.Equal(offsets(evs), []int64{4}) {
		t.Fatalf("after truncate 'all' reads %v", offsets(evs))
	}
	var lag int64
	if err := pool.QueryRow(ctx, `SELECT lag FROM herald.consumer_lag WHERE group_name = 'all'`).Scan(&lag); err != nil || lag != 1 {
		t.Fatalf("consumer_lag %d %v", lag, err)
	}
}

// listen opens a connection that LISTENs on channel.
func listen(t *testing.T, pool *pgxpool.Pool, channel string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pool.Config().ConnConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		t.Fatal(err)
	}
	return conn
}

// next waits (at most 10 s) for the next notification and returns its payload.
func next(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := conn.WaitForNotification(ctx)
	if err != nil {
		t.Fatalf("no notification: %v", err)
	}
	return n.Channel + ":" + n.Payload
}

// NOTIFY herald_queue when messages are inserted or become ready again, herald_log
// when events are appended or sequenced — but only when a listener may be waiting:
// one called claim_batch (herald_queue) or log_read (herald_log) since the last
// notification, or none went out for herald.notify_interval_ms. A manual NOTIFY with
// a marker payload, sent after the action under test, shows whether the action
// notified: one session's notifications arrive in commit order.
func TestNotifications(t *testing.T) {
	_, pool := setup(t)
	queue := listen(t, pool, "herald_queue")
	logs := listen(t, pool, "herald_log")
	marker := func(ch string) { mustExec(t, pool, `SELECT pg_notify($1, 'marker')`, ch) }
	// notified asserts whether the statements just run sent a notification on ch.
	notified := func(conn *pgx.Conn, ch string, want bool, what string) {
		t.Helper()
		marker(ch)
		got := next(t, conn)
		if want && got != ch+":" {
			t.Fatalf("%s: want a notification on %s, got %q", what, ch, got)
		}
		if want && next(t, conn) != ch+":marker" {
			t.Fatalf("%s: more than one notification on %s", what, ch)
		}
		if !want && got != ch+":marker" {
			t.Fatalf("%s: notified %s (%q) though no listener was waiting", what, ch, got)
		}
	}
	const enqueue = `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}')`

	// interval 0: every statement that adds or finishes work notifies.
	conf := pool.Config().Copy()
	conf.ConnConfig.RuntimeParams["herald.notify_interval_ms"] = "0"
	eager, err := pgxpool.NewWithConfig(context.Background(), conf)
	if err != nil {
		t.Fatal(err)
	}
	defer eager.Close()
	for i := 0; i < 2; i++ {
		mustExec(t, eager, enqueue)
		notified(queue, "herald_queue", true, "enqueue")
		notified(logs, "herald_log", true, "enqueue")
	}
	// A reaped lease makes a message ready again: runners are woken.
	mustExec(t, eager, `SELECT * FROM herald.claim_batch('w', 1)`)
	mustExec(t, eager, `UPDATE herald.messages SET lease_expires_at = now() - interval '1 second' WHERE status = 'processing'`)
	if n := scalar[int32](t, eager, `SELECT herald.reap_stale()`); n != 1 {
		t.Fatalf("reaped %d", n)
	}
	notified(queue, "herald_queue", true, "reap_stale")
	// A completion appends a 'sent' event: log consumers are woken.
	mustExec(t, eager, `SELECT herald.complete(id, lease_token) FROM herald.claim_batch('w', 1)`)
	notified(logs, "herald_log", true, "complete")
	// A failure retried at once wakes the runners; one that goes dead, log consumers.
	mustExec(t, eager, `SELECT herald.fail(id, lease_token, 'busy', 'transient', retry_at => now()) FROM herald.claim_batch('w', 1)`)
	notified(queue, "herald_queue", true, "fail, retry now")
	mustExec(t, eager, `SELECT herald.fail(id, lease_token, 'no such user', 'permanent') FROM herald.claim_batch('w', 1)`)
	notified(logs, "herald_log", true, "fail, permanent")
	// Sequencing notifies log consumers.
	if n := scalar[int32](t, eager, `SELECT herald.log_sequence()`); n == 0 {
		t.Fatal("nothing to sequence")
	}
	notified(logs, "herald_log", true, "log_sequence")
	mustExec(t, eager, `SELECT herald.redrive(ARRAY(SELECT id FROM herald.messages WHERE status = 'dead'))`)
	notified(queue, "herald_queue", true, "redrive")

	// A long fallback interval: producers notify only after a listener said it may wait.
	conf = pool.Config().Copy()
	conf.ConnConfig.RuntimeParams["herald.notify_interval_ms"] = "3600000"
	lazy, err := pgxpool.NewWithConfig(context.Background(), conf)
	if err != nil {
		t.Fatal(err)
	}
	defer lazy.Close()
	// No listener has claimed or read since the last notifications (the clocks hold
	// the time of the last one, not 0): every listener is taken to be awake, so an
	// enqueue stays silent.
	mustExec(t, lazy, `SELECT setval('herald.notify_clock_queue', (extract(epoch FROM clock_timestamp()) * 1000000)::bigint),
		setval('herald.notify_clock_log', (extract(epoch FROM clock_timestamp()) * 1000000)::bigint)`)
	mustExec(t, lazy, enqueue)
	notified(queue, "herald_queue", false, "enqueue with no listener waiting")
	notified(logs, "herald_log", false, "enqueue with no log reader waiting")
	// A claim (its caller may wait next) makes the next enqueue wake the runners,
	// once: the one after it is silent again.
	mustExec(t, lazy, `SELECT * FROM herald.claim_batch('w', 100)`)
	mustExec(t, lazy, enqueue)
	notified(queue, "herald_queue", true, "enqueue after a claim")
	notified(logs, "herald_log", false, "enqueue after a claim, no log reader waiting")
	mustExec(t, lazy, enqueue)
	notified(queue, "herald_queue", false, "second enqueue after a claim")
	// A log read does the same for log consumers.
	mustExec(t, lazy, `SELECT herald.create_consumer_group('g')`)
	mustExec(t, lazy, `SELECT * FROM herald.log_read('g', 0)`)
	marker("herald_log")
	for next(t, logs) != "herald_log:marker" { // log_read's own sequencing run notifies; drain it
	}
	mustExec(t, lazy, enqueue)
	notified(logs, "herald_log", true, "enqueue after a log read")
	notified(queue, "herald_queue", false, "enqueue after a log read, no runner waiting")
}
