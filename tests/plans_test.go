// The DBA's record of which index serves which query: every test here reads a plan
// (EXPLAIN, or auto_explain's output) of one of herald's statements and fails when it
// stops using the index docs/tuning.md names, or when a helper stops being inlined.
package tests

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The claim query is served by messages_claim_idx, not a sequential scan, on a table
// of 100,000 finished and 1,000 queued rows, under its generic plan. The plan of the statement inside the
// function is read with auto_explain, sent to the client as NOTICEs.
func TestClaimUsesPartialIndex(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, status, max_attempts, created_at, finished_at, ordering_key, expires_at)
		SELECT 'test', 'email', 'a@example.com', '{"subject":"s","text":"t"}', $1, 'sent', 5, $1, $1, CASE WHEN g % 3 = 0 THEN 'k' || g END, 'infinity'
		FROM generate_series(1, 100000) g`, t0)
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, status, max_attempts, created_at, ordering_key, expires_at)
		SELECT 'test', 'email', 'a@example.com', '{"subject":"s","text":"t"}', $1, 'queued', 5, $1, CASE WHEN g % 3 = 0 THEN 'k' || g END, 'infinity'
		FROM generate_series(1, 1000) g`, t0)
	mustExec(t, pool, `ANALYZE herald.messages`)

	conn, notices := explainConn(t, pool)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM herald.claim_batch('w', 100, '30 seconds', NULL, $1)`, t0).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 100 {
		t.Fatalf("claimed %d, want 100", n)
	}
	plan := planOf(t, *notices, "FOR NO KEY UPDATE SKIP LOCKED")
	if !strings.Contains(plan, "messages_claim_idx") || strings.Contains(plan, "Seq Scan on messages") {
		t.Fatalf("claim plan does not use messages_claim_idx only:\n%s", plan)
	}
	// The generic plan, made once (a custom plan shows the clock as a constant): at the
	// default batch of 100, planning at every claim cost 8 % of a claim and complete.
	// One priority, channel and producer per scan: the clock bounds the range scan.
	if !regexp.MustCompile(`Index Cond: \(\(priority = \$\d+\) AND \(hashtext\(channel\) = hashtext\(\(\$\d+\)\[\$\d+\]\)\) AND \(hashtext\(producer\) = .+ AND \(run_at <= \$\d+\)\)`).MatchString(plan) {
		t.Fatalf("claim_batch did not use its generic plan, or does not scan one priority, channel and producer at a time:\n%s", plan)
	}
	t.Logf("claim plan:\n%s", plan)
}

// On a channel with producer_concurrency a claim counts each producer's messages
// being sent once, from messages_in_flight_idx (the in-flight messages of every
// channel, their channel and producer tested on the entries), under its generic plan:
// never the table of 100,000 finished messages.
func TestBoundedClaimCountsFromInFlightIndex(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `UPDATE herald.channels SET producer_concurrency = 50 WHERE name = 'email'`)
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, status, max_attempts, created_at, finished_at, expires_at)
		SELECT 'test', 'email', 'a@example.com', '{"subject":"s","text":"t"}', $1, 'sent', 5, $1, $1, 'infinity'
		FROM generate_series(1, 100000) g`, t0)
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, status, max_attempts, created_at, lease_token, lease_expires_at, expires_at)
		SELECT CASE WHEN g % 2 = 0 THEN 'test' ELSE 'other' END, CASE WHEN g % 3 = 0 THEN 'sms' ELSE 'email' END, 'a@example.com', '{}',
		       $1, 'processing', 5, $1, 7, $1::timestamptz + interval '1 hour', 'infinity'
		FROM generate_series(1, 90) g`, t0)
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, status, max_attempts, created_at, expires_at)
		SELECT 'test', 'email', 'a@example.com', '{"subject":"s","text":"t"}', $1, 'queued', 5, $1, 'infinity'
		FROM generate_series(1, 1000) g`, t0)
	mustExec(t, pool, `ANALYZE herald.messages`)
	conn, notices := explainConn(t, pool)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM herald.claim_batch('w', 100, now => $1)`, t0).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 20 { // 'test' has 30 of the 60 e-mails being sent
		t.Fatalf("claimed %d, want the 20 that 'test' has room for", n)
	}
	plan := planOf(t, *notices, "m.status = 'processing' AND m.channel")
	if !strings.Contains(plan, "messages_in_flight_idx") || strings.Contains(plan, "Seq Scan on messages") {
		t.Fatalf("the count of messages being sent does not read messages_in_flight_idx alone:\n%s", plan)
	}
}

// reap_stale finds expired leases in messages_in_flight_idx (the messages being sent,
// read whole: lease_expires_at is its last column), under its generic plan: never the
// table of 100,000 finished messages.
func TestReapReadsInFlightIndex(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, status, max_attempts, created_at, finished_at, expires_at)
		SELECT 'test', 'email', 'a@example.com', '{"subject":"s","text":"t"}', $1, 'sent', 5, $1, $1, 'infinity'
		FROM generate_series(1, 100000) g`, t0)
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, status, max_attempts, created_at, lease_token, lease_expires_at, expires_at)
		SELECT 'test', 'email', 'a@example.com', '{}', $1, 'processing', 5, $1, 7,
		       $1::timestamptz + CASE WHEN g <= 10 THEN interval '1 second' ELSE interval '1 hour' END, 'infinity'
		FROM generate_series(1, 2000) g`, t0)
	mustExec(t, pool, `ANALYZE herald.messages`)
	conn, notices := explainConn(t, pool)
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT herald.reap_stale($1)`, t0.Add(time.Minute)).Scan(&n); err != nil || n != 10 {
		t.Fatalf("reap_stale changed %d (%v), want the 10 expired leases", n, err)
	}
	plan := planOf(t, *notices, "e.lease_expires_at < reap_stale.now")
	if !strings.Contains(plan, "messages_in_flight_idx") || strings.Contains(plan, "Seq Scan on messages") {
		t.Fatalf("reap_stale does not find expired leases in messages_in_flight_idx:\n%s", plan)
	}
}

// A claim reads what it can take, not the backlog it cannot: a queue that keeps up
// has scheduled messages and few ready ones, and a claim that does not fill its batch
// reads only the index entries up to each priority's first scheduled message; a due
// backlog of a channel the claim does not take (paused, out of tokens, or without a
// sender in this runner) is not read at all (one scan in (priority, run_at, id) order
// read all of both at every claim). Read through auto_explain's buffer counts.
func TestClaimReadsOnlyWhatItTakes(t *testing.T) {
	ctx, pool := setup(t)
	conn, notices := explainConn(t, pool)
	for _, s := range []string{`SET auto_explain.log_analyze = on`, `SET auto_explain.log_buffers = on`} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	schedule := func(priorities int) {
		mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, priority, max_attempts, created_at, expires_at)
			SELECT 'test', 'email', 'a@example.com', '{"subject":"s","text":"t"}', $1::timestamptz + interval '1 day' + g * interval '1 ms',
			       g % $2, 5, $1, 'infinity'
			FROM generate_series(1, 50000) g`, t0, priorities)
	}
	ready := func(recipient string, priority int) {
		mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, priority, max_attempts, created_at, expires_at)
			VALUES ('test', 'email', $2, '{"subject":"s","text":"t"}', $1, $3, 5, $1, 'infinity')`, t0, recipient, priority)
	}
	claim := func(want string, channels []string) {
		t.Helper()
		mustExec(t, pool, `ANALYZE herald.messages`)
		*notices = (*notices)[:0]
		var got string
		if err := conn.QueryRow(ctx, `SELECT string_agg(recipient, ',') FROM herald.claim_batch('w', 100, '30 seconds', $2, $1)`, t0, channels).Scan(&got); err != nil || got != want {
			t.Fatalf("claimed %q (%v), want %q (priority order)", got, err, want)
		}
		for _, m := range *notices {
			if !strings.Contains(m, "messages_claim_idx") {
				continue
			}
			for _, b := range regexp.MustCompile(`shared hit=(\d+)`).FindAllStringSubmatch(m, -1) {
				if n, _ := strconv.Atoi(b[1]); n > 50 { // a few index descents; the backlogs are hundreds of pages
					t.Fatalf("a claim read %d buffers of a backlog it could not take:\n%s", n, m)
				}
			}
		}
	}
	// One priority queued.
	schedule(1)
	ready("a@example.com", 0)
	claim("a@example.com", nil)
	// Three: priority by priority.
	schedule(3)
	ready("b@example.com", 2)
	ready("c@example.com", 1)
	claim("c@example.com,b@example.com", nil)
	// 50,000 due e-mails ahead of one SMS, and a claim of SMS only.
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at)
		SELECT 'test', 'email', 'a@example.com', '{"subject":"s","text":"t"}', $1::timestamptz - interval '1 hour', 5, $1, 'infinity'
		FROM generate_series(1, 50000) g`, t0)
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at)
		VALUES ('test', 'sms', '+14155550100', '{"text":"t"}', $1, 5, $1, 'infinity')`, t0)
	claim("+14155550100", []string{"sms"})
}

// Producers can queue a scheduled message at each of the 201 priorities: a claim
// walks past the priorities without a due message in one statement (a probe of the
// claim index per priority and channel) instead of scanning each priority and
// channel in a statement of its own (404 statements per claim with two channels,
// each claim of a runner that keeps up).
func TestClaimWalksPastScheduledPriorities(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, priority, max_attempts, created_at, expires_at)
		SELECT 'test', 'email', 'a@example.com', '{"subject":"s","text":"t"}', $1::timestamptz + interval '1 day', g, 5, $1, 'infinity'
		FROM generate_series(-100, 100) g`, t0)
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, priority, max_attempts, created_at, expires_at)
		VALUES ('test', 'sms', '+14155550100', '{"text":"t"}', $1, 100, 5, $1, 'infinity')`, t0)
	conn, notices := explainConn(t, pool)
	var got string
	if err := conn.QueryRow(ctx, `SELECT string_agg(recipient, ',') FROM herald.claim_batch('w', 100, '30 seconds', NULL, $1)`, t0).Scan(&got); err != nil || got != "+14155550100" {
		t.Fatalf("claimed %q (%v), want the one due message", got, err)
	}
	n := 0
	for _, m := range *notices {
		if strings.Contains(m, "messages_claim_idx") {
			n++
		}
		// The walk probes the claim index per channel, whatever the statistics (none
		// here): not another partial index read whole, not a hash of the priority.
		if strings.Contains(m, "WITH RECURSIVE walk") && (strings.Contains(m, "messages_expiry_idx") || strings.Contains(m, "Hash")) {
			t.Fatalf("the walk does not probe the claim index per channel:\n%s", m)
		}
	}
	if n > 5 {
		t.Fatalf("a claim ran %d statements on the claim index past 201 scheduled priorities", n)
	}
	t.Logf("%d statements on the claim index", n)
}

// complete's statement probes the primary key per id even when the statistics
// believe there is hardly a message processing (as after a burst): a plan that scans
// every processing row per id once made a 1,000-row complete take a second. The
// generic plan (what a long-lived connection ends up using) is forced and read
// through auto_explain.
func TestCompletePlanProbesPrimaryKey(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, status, max_attempts, created_at, lease_token, lease_expires_at, expires_at)
		SELECT 'test', 'email', 'a@example.com', '{}', $1::timestamptz, 'processing', 5, $1::timestamptz, 7, $1::timestamptz + interval '1 hour', 'infinity' FROM generate_series(1, 5000)`, t0)
	conn, notices := explainConn(t, pool)
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT herald.complete((SELECT array_agg(id) FROM (SELECT id FROM herald.messages ORDER BY id LIMIT 1000) s),
		array_fill(7::bigint, ARRAY[1000]))`).Scan(&n); err != nil || n != 1000 {
		t.Fatalf("complete changed %d (%v)", n, err)
	}
	plan := planOf(t, *notices, "Update on messages")
	if !strings.Contains(plan, "messages_pkey") || strings.Contains(plan, "messages_in_flight_idx") {
		t.Fatalf("complete's plan does not probe the primary key:\n%s", plan)
	}
}

// claim_batch's UPDATE finds the rows it locked by primary key, also under the
// generic plan: there LIMIT batch_size is a parameter, which the planner takes for a
// tenth of the table, and a join to the locked rows was planned as a hash of the
// whole table, built again for every claim (the drain slowed down as the table
// grew).
func TestClaimPlanProbesPrimaryKey(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at)
		SELECT 'test', 'email', 'a@example.com', '{}', $1::timestamptz, 5, $1::timestamptz, 'infinity' FROM generate_series(1, 20000)`, t0)
	mustExec(t, pool, `ANALYZE herald.messages`)
	conn, notices := explainConn(t, pool)
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM herald.claim_batch('w', 1000, now => $1)`, t0.Add(time.Minute)).Scan(&n); err != nil || n != 1000 {
		t.Fatalf("claim_batch returned %d (%v)", n, err)
	}
	plan := planOf(t, *notices, "Update on messages")
	if !strings.Contains(plan, "Index Scan using messages_pkey") || strings.Contains(plan, "Seq Scan on messages") {
		t.Fatalf("claim_batch's UPDATE does not probe the primary key:\n%s", plan)
	}
}

// explainConn opens a connection on which auto_explain sends the plan of every
// statement, nested ones included, as a NOTICE; the notices collect in the slice.
func explainConn(t *testing.T, pool *pgxpool.Pool) (*pgx.Conn, *[]string) {
	t.Helper()
	ctx := context.Background()
	conf := pool.Config().ConnConfig.Copy()
	notices := &[]string{}
	conf.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { *notices = append(*notices, n.Message) }
	conn, err := pgx.ConnectConfig(ctx, conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, s := range []string{`LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`,
		`SET auto_explain.log_nested_statements = on`, `SET auto_explain.log_level = notice`} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return conn, notices
}

// A delivered message is in no index but the primary key, so complete writes one
// index entry per message; a dead one is also in
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
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, status, max_attempts, created_at, finished_at, expires_at)
		SELECT 'test', 'email', 'a@example.com', '{}', now(), CASE WHEN g % 1000 = 0 THEN 'dead' ELSE 'sent' END, 5,
		       now() - interval '30 days', now() - g * interval '1 minute', 'infinity'
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
		WHERE finished_at IS NOT NULL`)
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

// log_truncate finds the row that holds its bound with one backward probe of
// log_statements_offset_idx, under a custom plan and a generic one alike: no scan of
// the whole log to cut one row (a join of every row below the bound would).
func TestLogTruncatePlanProbesOffsetIndex(t *testing.T) {
	ctx, pool := setup(t)
	threeEventStatements(t, pool, 20000)
	mustExec(t, pool, `ANALYZE herald.log_statements`)
	conn, notices := explainConn(t, pool)
	for _, c := range []struct {
		mode  string
		bound int64
		want  int64 // events removed
		kept  string
	}{
		// Statements 1..10,000 go and 10,001 (30,001..30,003) loses its first event.
		{"auto", 30002, 30001, "30002+2"},
		// Statements 10,001 (now 30,002..30,003) .. 15,000 go, 15,001 loses one.
		{"force_generic_plan", 45002, 15000, "45002+2"},
	} {
		*notices = (*notices)[:0]
		if _, err := conn.Exec(ctx, `SET plan_cache_mode = `+c.mode); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := conn.QueryRow(ctx, `SELECT herald.log_truncate($1)`, c.bound).Scan(&n); err != nil || n != c.want {
			t.Fatalf("%s: log_truncate(%d) removed %d events (%v), want %d", c.mode, c.bound, n, err, c.want)
		}
		if got := scalar[string](t, pool, `SELECT min(first_offset) || '+' || (SELECT cardinality(message_ids) FROM herald.log_statements
			ORDER BY first_offset LIMIT 1) FROM herald.log_statements`); got != c.kept {
			t.Fatalf("%s: the log starts with %s, want %s", c.mode, got, c.kept)
		}
		if cut := planOf(t, *notices, "Update on log_statements"); strings.Contains(cut, "Seq Scan") || strings.Contains(cut, "Hash") {
			t.Fatalf("%s: the cut scans the log:\n%s", c.mode, cut)
		}
		probe := planOf(t, *notices, "ORDER BY h.first_offset DESC")
		if !strings.Contains(probe, "Index Scan Backward using log_statements_offset_idx") || strings.Contains(probe, "Seq Scan") {
			t.Fatalf("%s: the probe for the row holding the bound is not one backward index probe:\n%s", c.mode, probe)
		}
	}
}

// Reading the middle of a long log probes log_statements_offset_idx and stops at the
// LIMIT: no scan of the whole log, no sort of all of it.
func TestLogReadPlanUsesOffsetIndex(t *testing.T) {
	_, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.log_statements (kind, at, message_ids, channels, key_hashes, first_offset)
		SELECT 'accepted', now(), ARRAY[g], ARRAY['email'], ARRAY[g::integer], g FROM generate_series(1, 20000) g`)
	mustExec(t, pool, `ANALYZE herald.log_statements`)
	plan := explain(t, pool, `SELECT * FROM herald._log_after(10000, 1, 0, 100)`)
	if !strings.Contains(plan, "Index Scan using log_statements_offset_idx") || strings.Contains(plan, "Seq Scan") ||
		regexp.MustCompile(`(?m)^\s*(->\s+)?Sort$`).MatchString(plan) {
		t.Fatalf("log read plan scans or sorts the whole log:\n%s", plan)
	}
	if got := scalar[string](t, pool, `SELECT string_agg("offset"::text, ',') FROM herald._log_after(10000, 1, 0, 3)`); got != "10001,10002,10003" {
		t.Fatalf("read %s", got)
	}
}

// herald.channels is analysed (thresholds 0), so the enqueue functions' join of a
// batch to its channels hashes the few channels and streams the batch. Never
// analysed, the table looked like 540 rows to the planner, which hashed the batch
// instead, copying every message into the hash table. The join here is the one of
// herald._enqueue, on a 100-element array; a channel added later is analysed
// too (autovacuum, thresholds 0).
func TestChannelsJoinHashesTheChannels(t *testing.T) {
	ctx, pool := setup(t)
	rows, err := pool.Query(ctx, `EXPLAIN (COSTS OFF)
		SELECT c.kind FROM unnest(array_fill('email'::text, ARRAY[100])) AS u(channel)
		JOIN herald.channels c ON c.name = u.channel`)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, strings.TrimSpace(line))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	hashed := ""
	for i, line := range plan {
		if strings.HasPrefix(line, "->  Hash") && !strings.HasPrefix(line, "->  Hash Join") && i+1 < len(plan) {
			hashed = plan[i+1]
		}
	}
	if !strings.Contains(hashed, "on channels") {
		t.Fatalf("the join should hash herald.channels; plan:\n%s", strings.Join(plan, "\n"))
	}
	if opts := scalar[[]string](t, pool, `SELECT reloptions FROM pg_class WHERE oid = 'herald.channels'::regclass`); !slices.Contains(opts, "autovacuum_analyze_threshold=0") {
		t.Fatalf("herald.channels options %v: want autovacuum_analyze_threshold=0", opts)
	}
}

// The SQL helpers that hot statements call are written to be inlined by the planner
// (one SQL expression, declared no less volatile than their body; a helper holding a
// sub-select is a set-returning function, the form the planner inlines with one):
// called from a statement they must leave no call of themselves in its plan. A helper that stops
// inlining costs a separate SQL-function execution per row (an _event_detail declared
// IMMUTABLE around a STABLE jsonb_build_object ran 200,000 times in a 200,000-message
// drain). The arguments depend on the row, so nothing is
// folded to a constant before inlining is decided.
func TestHelpersAreInlined(t *testing.T) {
	ctx, pool := setup(t)
	for _, call := range []string{
		`herald._event_detail(CASE WHEN g > 0 THEN 'sent' END, g::text, NULL, NULL, g)`,
		`herald._key_hash(g::text, g::text)`,
		`herald._email_address(g::text)`,
		`herald._email_address(g::text, g > 1)`,
		`herald._recipient_pattern(g::text)`,
		`herald._recipient_list_kind(g::text, g)`,
		`herald._nonempty_string(jsonb_build_object('k', g), g::text)`,
		`herald._valid('email', 100, NULL, g, g::text, to_jsonb(g), NULL, g, jsonb_populate_record(NULL::herald.producers, jsonb_build_object('producer', g::text, 'min_priority', -g, 'senders', ARRAY[g::text])), ARRAY[g::text], ARRAY[g::text], NULL, NULL, NULL, NULL, NULL, NULL, now())`,
		`herald._valid('email', 100, NULL, g, g::text, to_jsonb(g), NULL, g, jsonb_populate_record(NULL::herald.producers, jsonb_build_object('producer', g::text, 'min_priority', -g, 'senders', ARRAY[g::text])), ARRAY[g::text], ARRAY[g::text], NULL, NULL, NULL, NULL, NULL, g::text, now(), g::text)`,
		`herald._valid('sms', 100, g, g, g::text, jsonb_build_object('text', g::text), NULL, g, jsonb_populate_record(NULL::herald.producers, jsonb_build_object('producer', g::text)), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, now())`,
		`herald._sms_within(g::text, g)`,
		`herald._email_addresses(to_jsonb(g))`,
		`herald._shallow(to_jsonb(g))`,
		`herald._notify_due(g::text)`,
		`herald._notify_clock_due(g)`,
		`EXISTS (SELECT FROM herald._suppression('email', g::text, now()))`,
		`herald._backoff(g, interval '1 second', interval '1 hour')`,
		`herald._quiet(time '21:00' + g * interval '1 minute', time '08:00', ARRAY[g]::smallint[], 'UTC', now())`,
		`herald._channel_quiet(time '21:00' + g * interval '1 minute', time '08:00', ARRAY[g]::smallint[], 'UTC', g > 1, now())`,
		`herald._url_host(g::text)`,
		`herald._budget_clock(now() + g * interval '1 second')`,
		`(SELECT herald._range_key(c, g::text) FROM herald.channels c WHERE c.range_digits < g)`, // a row, as its callers pass
	} {
		rows, err := pool.Query(ctx, `EXPLAIN (VERBOSE, COSTS OFF) SELECT `+call+` FROM generate_series(1, 2) g`)
		if err != nil {
			t.Fatalf("%s: %v", call, err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		name := call[strings.Index(call, "herald.")+len("herald."):]
		name = name[:strings.Index(name, "(")]
		if p := strings.Join(plan, "\n"); strings.Contains(p, name+"(") || strings.Contains(p, "Function Scan on "+name) {
			t.Errorf("%s is not inlined:\n%s", name, p)
		}
	}
}

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

// The idempotency lookup of an enqueue call (herald._repeats) runs under the generic
// plan and probes messages_idempotency_key_idx: its custom plan looks cheaper for a
// call of one message (the array's length is known), so PostgreSQL planned the
// statement anew at every keyed enqueue, three times the cost of the enqueue itself.
// A custom plan would show the producer as a constant.
func TestRepeatsLookupIsPlannedOnce(t *testing.T) {
	ctx, pool := setup(t)
	conn, notices := explainConn(t, pool)
	for i := range 7 {
		if _, err := conn.Exec(ctx, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}', idempotency_key => $1)`,
			fmt.Sprintf("key-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	plan := planOf(t, *notices, "messages_idempotency_key_idx")
	if !regexp.MustCompile(`Index Cond: \(\(producer = \(?\$\d`).MatchString(plan) {
		t.Fatalf("the repeats lookup is not under the generic plan, or does not probe the key index:\n%s", plan)
	}
}

// log_read and log_dead_letter run under the generic plan from their first call: the
// read's statement (herald._log_after inlined) was planned anew at every read, which
// cost more than the read of 100 events itself.
func TestLogReadUsesGenericPlan(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `SELECT herald.create_consumer_group('g', 1, 'earliest')`)
	enqueueBatch(t, pool, "email", 5, t0)
	conn, notices := explainConn(t, pool)
	var n int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM herald.log_read('g', 0, 3)`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("log_read: %d events, %v", n, err)
	}
	plan := planOf(t, *notices, "FROM herald._log_after(cp.committed_offset")
	if !strings.Contains(plan, "Index Cond: (first_offset <= ($") {
		t.Fatalf("log_read's statement is not under the generic plan:\n%s", plan)
	}
	*notices = (*notices)[:0]
	if _, err := conn.Exec(ctx, `BEGIN`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT herald.log_dead_letter('g', 0, 1, 'poison')`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	plan = planOf(t, *notices, "FROM herald._log_after(cp.committed_offset")
	if !strings.Contains(plan, "Index Cond: (first_offset <= ($") {
		t.Fatalf("log_dead_letter's statement is not under the generic plan:\n%s", plan)
	}
}

// An enqueue behind a pending message of its ordering key probes the ordering index
// once per key: a producer with a long backlog does not make each of its enqueues read
// that backlog (an EXISTS form was planned as a hash join over every pending message
// of the producer).
func TestHeldCheckProbesPerKey(t *testing.T) {
	ctx, pool := setup(t)
	if err := pool.QueryRow(ctx, `SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'email',
		'recipient', 'u' || g || '@example.com', 'payload', '{"subject":"s","text":"t"}'::jsonb, 'ordering_key', 'k' || g % 50))
		FROM generate_series(1, 2000) g), now => $1)`, t0).Scan(new([]int64)); err != nil {
		t.Fatal(err)
	}
	conn, notices := explainConn(t, pool)
	if _, err := conn.Exec(ctx, `SELECT herald.enqueue('email', 'a@example.com', '{"subject":"s","text":"t"}', ordering_key => 'k7', now => $1)`, t0); err != nil {
		t.Fatal(err)
	}
	plan := planOf(t, *notices, "FROM unnest(v_keys) AS d (k)\n      WHERE (SELECT")
	if strings.Contains(plan, "Hash") || !regexp.MustCompile(`Index Cond: \(\(producer = \$\d+\) AND \(ordering_key = d\.k\)\)`).MatchString(plan) {
		t.Fatalf("the held check does not probe messages_ordering_key_idx per key:\n%s", plan)
	}
}

// herald.count_producers reads herald.messages once for all limited producers, not once
// each; with the index tuning.md gives for large tables it reads that index instead
// (its SQL unchanged).
func TestCountProducersPlans(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, status, max_attempts, created_at, finished_at, expires_at)
		SELECT 'p' || (g % 50), 'email', 'a@example.com', '{}', now(), CASE WHEN g % 10 = 0 THEN 'queued' ELSE 'sent' END, 5,
		       now(), CASE WHEN g % 10 = 0 THEN NULL ELSE now() END, 'infinity'
		FROM generate_series(1, 20000) g`)
	mustExec(t, pool, `INSERT INTO herald.producers (producer, max_pending) SELECT 'p' || g, 1000 FROM generate_series(0, 9) g`)
	mustExec(t, pool, `ANALYZE herald.messages`)
	count := func() string {
		t.Helper()
		conn, notices := explainConn(t, pool)
		var over int32
		if err := conn.QueryRow(ctx, `SELECT at_max_pending FROM herald.count_producers()`).Scan(&over); err != nil || over != 0 {
			t.Fatalf("count_producers: %d %v", over, err)
		}
		if p := scalar[int64](t, pool, `SELECT sum(pending) FROM herald.producers`); p != 400 {
			t.Fatalf("counted %d pending, want 400 (40 for each of 10 producers)", p)
		}
		return planOf(t, *notices, "Update on producers")
	}
	if plan := count(); strings.Count(plan, "on messages") != 1 {
		t.Fatalf("count_producers should read herald.messages once:\n%s", plan)
	}
	mustExec(t, pool, `CREATE INDEX CONCURRENTLY messages_pending_producer_idx ON herald.messages (producer)
		WHERE finished_at IS NULL`)
	mustExec(t, pool, `ANALYZE herald.messages`)
	if plan := count(); !strings.Contains(plan, "messages_pending_producer_idx") {
		t.Fatalf("count_producers should read messages_pending_producer_idx once it exists:\n%s", plan)
	}
}

// herald.history reads a message's reports by delivery_events_message_idx, not by a
// scan of every report received.
func TestHistoryPlanProbesReportsIndex(t *testing.T) {
	ctx, pool := setup(t)
	id := enqueueEmail(t, pool, "ana@example.com")
	mustExec(t, pool, `INSERT INTO herald.delivery_events (source, event_id, message_id, event, at, received_at)
		SELECT 'generic', 'e' || g, g, 'delivered', now(), now() FROM generate_series(1, 20000) g`)
	mustExec(t, pool, `ANALYZE herald.delivery_events`)
	conn, notices := explainConn(t, pool)
	if _, err := conn.Exec(ctx, `SELECT * FROM herald.history($1)`, id); err != nil {
		t.Fatal(err)
	}
	plan := planOf(t, *notices, "delivery_events")
	if !strings.Contains(plan, "delivery_events_message_idx") {
		t.Fatalf("history's plan does not use delivery_events_message_idx:\n%s", plan)
	}
}

// A webhook site is found with a probe of public_suffixes_pkey per label of the host,
// not by reading the list's 10,000 rules (a hash join did, 1 ms a host).
func TestSiteProbesTheSuffixIndex(t *testing.T) {
	ctx, pool := setup(t)
	conn, notices := explainConn(t, pool)
	var site string
	if err := conn.QueryRow(ctx, `SELECT herald._site('a.b.shop.example.co.uk')`).Scan(&site); err != nil || site != "example.co.uk" {
		t.Fatalf("site %q, %v", site, err)
	}
	plan := planOf(t, *notices, "public_suffixes")
	if !strings.Contains(plan, "Index Cond: (suffix = ANY") || strings.Contains(plan, "Seq Scan on public_suffixes") {
		t.Fatalf("herald._site does not probe public_suffixes_pkey:\n%s", plan)
	}
}

// herald.purge reads the ids inserted before its bound, not the rows kept: 20,000 sent
// messages over two weeks, stored in random physical order (as freed space reused
// makes a kept table), 1 % of the oldest still queued for later; a purge of the
// oldest thousand reads messages_pkey up to them (herald._id_before), and its filter
// turns away only the queued ones and the bisection's few rows past the bound, where
// a scan bounded by time alone would read the table. Without messages_finished_idx.
func TestPurgeReadsTheIdsBeforeItsBound(t *testing.T) {
	ctx, pool := setup(t)
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	mustExec(t, pool, `INSERT INTO herald.messages (id, producer, channel, recipient, payload, run_at, status, max_attempts, created_at, finished_at, expires_at)
		SELECT g, 'test', 'email', 'a@example.com', '{}', c, 'sent', 5, c, c + interval '1 second', 'infinity'
		FROM (SELECT g, $1::timestamptz + g * interval '1 minute' AS c FROM generate_series(1, 20000) g ORDER BY random()) s`, base)
	mustExec(t, pool, `UPDATE herald.messages SET status = 'queued', finished_at = NULL, run_at = 'infinity' WHERE id % 100 = 0 AND id < 2000`)
	mustExec(t, pool, `SELECT setval(pg_get_serial_sequence('herald.messages', 'id'), 20000)`)
	mustExec(t, pool, `ANALYZE herald.messages`)
	conn, notices := explainConn(t, pool)
	if _, err := conn.Exec(ctx, `SET auto_explain.log_analyze = on`); err != nil {
		t.Fatal(err)
	}
	var n int64
	// The bound: 1,000 minutes after base, so ids 1..999 are old enough, less the 9 queued.
	if err := conn.QueryRow(ctx, `SELECT herald.purge('19000 minutes', now => $1)`, base.Add(20000*time.Minute)).Scan(&n); err != nil || n != 990 {
		t.Fatalf("purge deleted %d (%v), want the 990 sent before the bound", n, err)
	}
	plan := planOf(t, *notices, "Delete on messages")
	removed := regexp.MustCompile(`Rows Removed by Filter: (\d+)`).FindStringSubmatch(plan)
	if !regexp.MustCompile(`(Bitmap Index Scan on messages_pkey|Index Scan using messages_pkey on messages f)[^\n]*\n\s+Index Cond: \(id <= `).MatchString(plan) || strings.Contains(plan, "Seq Scan on messages") ||
		removed == nil || len(removed[1]) > 2 {
		t.Fatalf("purge should read messages_pkey up to its bound, turning away fewer than 100 rows:\n%s", plan)
	}
	if left := countWhere(t, pool, `id < 1000`); left != 9 {
		t.Fatalf("%d messages below the bound left, want the 9 queued", left)
	}
}
