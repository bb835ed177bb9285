package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// drain: preload messages, then drain them. herald = `herald run` processes with the
// noop sender (claim → send → complete, leases, fencing and the log's receipts on);
// baseline = 2 connections looping a CTE claim of 1,000 with FOR UPDATE SKIP LOCKED
// (returning what a sender needs: id, channel, recipient, payload) and an UPDATE to
// done, on public.bare_queue (the primary key and the claim index) or, with
// -drain-baseline herald, on public.bare (herald's indexes). Also samples the
// runners' RSS (memory).
func drain(ctx context.Context, db *database, o options) ([]row, error) {
	bin, err := buildHerald(ctx)
	if err != nil {
		return nil, err
	}
	herald, baseline := result{name: "herald"}, result{name: "baseline"}
	var serverCPU, clientCPU [2]result // per message, µs: herald's and the baseline's
	cpuKnown := true
	var maxRSS int64
	var curves []series
	for r := 0; r < o.drainRounds; r++ {
		h, err := drainHerald(ctx, db, o, bin, r)
		if err != nil {
			return nil, err
		}
		b, err := drainBaseline(ctx, db, o, r)
		if err != nil {
			return nil, err
		}
		for i, d := range []drainRun{h, b} {
			serverCPU[i].rates = append(serverCPU[i].rates, perMessage(d.serverCPU, o.drainMessages))
			clientCPU[i].rates = append(clientCPU[i].rates, perMessage(d.clientCPU, o.drainMessages))
			cpuKnown = cpuKnown && d.cpuKnown
			curves = append(curves, d.curve)
		}
		herald.rates = append(herald.rates, h.rate)
		baseline.rates = append(baseline.rates, b.rate)
		maxRSS = max(maxRSS, h.rss)
	}
	if err := writeLineChart(o.outDir+"/drain-throughput.svg", fmt.Sprintf("drain of %d messages: messages done per second", o.drainMessages),
		"seconds", "messages/s", curves); err != nil {
		return nil, err
	}
	rows := []row{
		ratioRow(fmt.Sprintf("drain: %d messages, %d runners vs raw SQL loop (2 clients, %s)", o.drainMessages, o.runners, drainBaselines[o.drainBaseline].label), "messages/s", herald, baseline, 0.90),
		absRow("memory: max runner RSS during drain", "MiB", float64(maxRSS)/(1<<20), 64),
	}
	// Where the CPU went (lower is better; the ratio is herald's over the loop's).
	if cpuKnown {
		rows = append(rows, ratioRow("drain: database server CPU per message (ratio: herald's / the loop's)", "µs", serverCPU[0], serverCPU[1], 0))
	}
	rows = append(rows, ratioRow("drain: client CPU per message, herald's runners vs the loop's client (ratio: herald's / the loop's)", "µs", clientCPU[0], clientCPU[1], 0))
	return rows, nil
}

// drainRun is what one drain (herald's or the baseline's) measured.
type drainRun struct {
	rate      float64 // messages per second over the whole drain
	curve     series
	rss       int64         // the runners' largest RSS (herald only)
	serverCPU time.Duration // the database server's processes, from the start of the clock to the end
	clientCPU time.Duration // the runners (herald) or the loop (baseline), plus the bench's watcher
	cpuKnown  bool          // the server's processes were found on this machine

	conns, handshakes, limited int64 // deliver: the fake provider's new connections, TLS handshakes, 429s
}

func perMessage(d time.Duration, n int) float64 {
	return float64(d.Microseconds()) / float64(n)
}

// drainBaselines are the tables the drain's baseline loop may run on, by the value
// of -drain-baseline.
var drainBaselines = map[string]struct{ table, label string }{
	"queue":  {"public.bare_queue", "primary key and claim index"},
	"herald": {"public.bare", "herald's indexes"},
}

// preload empties the tables and fills herald.messages with n messages, or, when
// bareTable is not empty, that baseline table.
func preload(ctx context.Context, db *database, n int, bareTable string) error {
	if err := db.reset(ctx); err != nil {
		return err
	}
	if bareTable != "" {
		if _, err := db.pool.Exec(ctx, `INSERT INTO `+bareTable+` (producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at)
			SELECT 'bench', 'email', 'u' || g || '@example.com', '{"subject":"Hi","text":"Hello"}', now(), 5, now(), now() + interval '5 days' FROM generate_series(1, $1) g`, n); err != nil {
			return err
		}
		return settle(ctx, db, bareTable)
	}
	for done := 0; done < n; done += 1000 {
		k := min(1000, n-done)
		if _, err := db.pool.Exec(ctx, `SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'email',
			'recipient', 'u' || g || '@example.com', 'payload', '{"subject":"Hi","text":"Hello"}'::jsonb)) FROM generate_series(1, $1) g))`, k); err != nil {
			return err
		}
	}
	// Give the accepted events their offsets now, so the drain measures the drain.
	for {
		var moved int
		if err := db.pool.QueryRow(ctx, `SELECT herald.log_sequence(100000)`).Scan(&moved); err != nil {
			return err
		}
		if moved == 0 {
			break
		}
	}
	return settle(ctx, db, "herald.messages")
}

// settle vacuums and analyses a preloaded table, then checkpoints, so that both
// sides of the drain start from a table in the state autovacuum leaves a queue in
// (not from whatever autovacuum happens to do mid-drain) and with no dirty buffers
// left from the preload for a checkpoint to write while the drain runs.
func settle(ctx context.Context, db *database, table string) error {
	if _, err := db.pool.Exec(ctx, `VACUUM ANALYZE `+table); err != nil {
		return err
	}
	_, err := db.pool.Exec(ctx, `CHECKPOINT`)
	return err
}

// remaining counts messages not yet done (served by the partial claim and lease
// indexes, but tens of milliseconds for 200,000 rows not yet vacuumed: watch calls
// it only for the curve).
func remaining(ctx context.Context, db *database, table string) (int64, error) {
	var n int64
	err := db.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+table+` WHERE status = 'queued') +
		(SELECT count(*) FROM `+table+` WHERE status = 'processing')`).Scan(&n)
	return n, err
}

// anyLeft tells whether some message is not yet done: it stops at the first live
// index entry, so polling it every 50 ms costs the drain next to nothing (polling
// the count did: in pg_stat_statements, nearly one of the two cores during a drain).
func anyLeft(ctx context.Context, db *database, table string) (bool, error) {
	var left bool
	err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM `+table+` WHERE status = 'queued')
		OR EXISTS (SELECT FROM `+table+` WHERE status = 'processing')`).Scan(&left)
	return left, err
}

// watch polls every 50ms until nothing remains (the end is known to 50ms, about 2% of
// a 200,000-message drain) and counts what remains every second for the curve; it
// returns the rate over the whole drain and the curve.
func watch(ctx context.Context, db *database, table, label string, n int, sample func()) (float64, series, error) {
	start := time.Now()
	curve := series{Name: label}
	last, lastT := int64(n), start
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0, curve, ctx.Err()
		case <-tick.C:
		}
		more, err := anyLeft(ctx, db, table)
		if err != nil {
			return 0, curve, err
		}
		if sample != nil {
			sample()
		}
		now := time.Now()
		if !more {
			elapsed := now.Sub(start)
			curve.X = append(curve.X, elapsed.Seconds())
			curve.Y = append(curve.Y, float64(last)/now.Sub(lastT).Seconds())
			fmt.Fprintf(os.Stderr, "\r\033[K%s: %d messages in %.2fs\n", label, n, elapsed.Seconds())
			return float64(n) / elapsed.Seconds(), curve, nil
		}
		if now.Sub(lastT) >= time.Second {
			left, err := remaining(ctx, db, table)
			if err != nil {
				return 0, curve, err
			}
			curve.X = append(curve.X, now.Sub(start).Seconds())
			curve.Y = append(curve.Y, float64(last-left)/now.Sub(lastT).Seconds())
			last, lastT = left, now
			fmt.Fprintf(os.Stderr, "\r\033[K%s: %d of %d left, %.1fs", label, left, n, now.Sub(start).Seconds())
		}
		if time.Since(start) > 10*time.Minute {
			return 0, curve, fmt.Errorf("%s: still not done after 10 minutes", label)
		}
	}
}

func drainHerald(ctx context.Context, db *database, o options, bin string, round int) (drainRun, error) {
	if err := preload(ctx, db, o.drainMessages, ""); err != nil {
		return drainRun{}, err
	}
	// The runners start with the channel paused and the clock starts when all of them
	// listen: the figure is the drain, not process start-up (the baseline's clients
	// are connected before its clock starts too).
	if _, err := db.pool.Exec(ctx, `UPDATE herald.channels SET paused = true WHERE name = 'email'`); err != nil {
		return drainRun{}, err
	}
	defer db.pool.Exec(context.WithoutCancel(ctx), `UPDATE herald.channels SET paused = false WHERE name = 'email'`)
	if o.drainBound > 0 {
		if _, err := db.pool.Exec(ctx, `UPDATE herald.channels SET producer_concurrency = $1 WHERE name = 'email'`, o.drainBound); err != nil {
			return drainRun{}, err
		}
		defer db.pool.Exec(context.WithoutCancel(ctx), `UPDATE herald.channels SET producer_concurrency = NULL WHERE name = 'email'`)
	}
	var procs []*runnerProc
	for i := 0; i < o.runners; i++ {
		p, err := startRunner(bin, db.url, "HERALD_SENDER_EMAIL=noop", fmt.Sprintf("HERALD_WORKER=bench-%d", i),
			fmt.Sprintf("HERALD_BATCH_SIZE=%d", o.runnerBatch), fmt.Sprintf("HERALD_CONCURRENCY=%d", 2*o.runnerBatch),
			"HERALD_POLL_INTERVAL=100ms", "HERALD_STATS_INTERVAL=1h")
		if err != nil {
			return drainRun{}, err
		}
		procs = append(procs, p)
	}
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	if err := waitListening(ctx, db, o.runners); err != nil {
		return drainRun{}, err
	}
	clients := []int{os.Getpid()}
	for _, p := range procs {
		clients = append(clients, p.cmd.Process.Pid)
	}
	cpu := startCPU(postmaster(ctx, db), clients)
	if _, err := db.pool.Exec(ctx, `UPDATE herald.channels SET paused = false WHERE name = 'email'; NOTIFY herald_queue`); err != nil {
		return drainRun{}, err
	}
	d := drainRun{}
	var err error
	d.rate, d.curve, err = watch(ctx, db, "herald.messages", fmt.Sprintf("herald round %d", round+1), o.drainMessages, func() {
		for _, p := range procs {
			d.rss = max(d.rss, p.rssBytes())
		}
	})
	d.serverCPU, d.clientCPU, d.cpuKnown = cpu.stop()
	return d, err
}

// waitListening waits until n sessions of this database listen on herald_queue (the
// runners are up), for at most 30 seconds.
func waitListening(ctx context.Context, db *database, n int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var k int
		if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND query = 'LISTEN herald_queue'`).Scan(&k); err != nil {
			return err
		}
		if k >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after 30s only %d of %d runners listen on herald_queue", k, n)
		}
		sleep := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			sleep.Stop()
			return ctx.Err()
		case <-sleep.C:
		}
	}
}

// drainBaseline is one round of the raw SQL loop on the -drain-baseline table.
func drainBaseline(ctx context.Context, db *database, o options, round int) (drainRun, error) {
	table := drainBaselines[o.drainBaseline].table
	if err := preload(ctx, db, o.drainMessages, table); err != nil {
		return drainRun{}, err
	}
	// Both connections are open before the clock starts (as herald's runners are).
	var conns []*pgxpool.Conn
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for c := 0; c < 2; c++ {
		conn, err := db.pool.Acquire(ctx)
		if err != nil {
			return drainRun{}, err
		}
		conns = append(conns, conn)
	}
	cpu := startCPU(postmaster(ctx, db), []int{os.Getpid()})
	errs := make(chan error, len(conns))
	for _, conn := range conns {
		go func() {
			errs <- func() error {
				for {
					rows, err := conn.Query(ctx, `WITH c AS (
						SELECT id FROM `+table+` WHERE status = 'queued' AND run_at <= now()
						ORDER BY priority, run_at, id LIMIT 1000 FOR UPDATE SKIP LOCKED)
					  UPDATE `+table+` b SET status = 'processing', attempts = b.attempts + 1, lease_token = 1,
					         leased_by = 'baseline', lease_expires_at = now() + interval '30 seconds'
					  FROM c WHERE b.id = c.id RETURNING b.id, b.channel, b.recipient, b.payload`)
					if err != nil {
						return err
					}
					var ids []int64
					for rows.Next() {
						// What a sender needs, as herald's runner gets from claim_batch.
						var id int64
						var channel, recipient string
						var payload []byte
						if err := rows.Scan(&id, &channel, &recipient, &payload); err != nil {
							return err
						}
						ids = append(ids, id)
					}
					if err := rows.Err(); err != nil {
						return err
					}
					if len(ids) == 0 {
						return nil
					}
					if _, err := conn.Exec(ctx, `UPDATE `+table+` SET status = 'sent', finished_at = now(), lease_token = NULL,
						lease_expires_at = NULL WHERE id = ANY($1) AND status = 'processing'`, ids); err != nil {
						return err
					}
				}
			}()
		}()
	}
	d := drainRun{}
	var err error
	d.rate, d.curve, err = watch(ctx, db, table, fmt.Sprintf("baseline round %d", round+1), o.drainMessages, nil)
	d.serverCPU, d.clientCPU, d.cpuKnown = cpu.stop()
	for range conns {
		if e := <-errs; e != nil && err == nil {
			err = e
		}
	}
	return d, err
}
