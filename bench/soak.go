package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// soak: producers at a steady rate and runners together for o.soakDuration, with a
// transaction held open (REPEATABLE READ, so vacuum cannot clean behind it) for
// o.soakHold in the middle. Reports the last window's throughput against the first,
// the p99 latency while the transaction was held, dead tuples and sizes over time.
func soak(ctx context.Context, db *database, o options) ([]row, error) {
	bin, err := buildHerald(ctx)
	if err != nil {
		return nil, err
	}
	if err := db.reset(ctx); err != nil {
		return nil, err
	}
	sinkFile := filepath.Join(os.TempDir(), "herald-bench-soak.jsonl")
	os.Remove(sinkFile)
	defer os.Remove(sinkFile)
	var procs []*runnerProc
	for i := 0; i < o.runners; i++ {
		p, err := startRunner(bin, db.url, "HERALD_SENDER_EMAIL=sink:"+sinkFile, fmt.Sprintf("HERALD_WORKER=soak-%d", i),
			"HERALD_CONCURRENCY=256", "HERALD_STATS_INTERVAL=1h")
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
	}
	stopAll := func() {
		for _, p := range procs {
			p.stop()
		}
	}
	time.Sleep(500 * time.Millisecond)

	start := time.Now()
	holdFrom := start.Add(o.soakDuration/2 - o.soakHold/2)
	holdTo := holdFrom.Add(o.soakHold)
	rec := &commits{at: map[int64]time.Time{}}
	pctx, cancel := context.WithTimeout(ctx, o.soakDuration)
	defer cancel()
	prodErr := make(chan error, 1)
	go func() { prodErr <- produce(pctx, db, enqueueSQL, o.soakRate, max(o.producers, o.soakRate/500), rec) }()
	holdErr := make(chan error, 1)
	go func() { holdErr <- holdTransaction(pctx, db, holdFrom, o.soakHold) }()

	throughput := series{Name: "messages sent per second"}
	dead := series{Name: "dead tuples in herald.messages (thousands)"}
	tableMB := series{Name: "table + indexes (MiB)"}
	var lastSent int64
	lastT := start
	tick := time.NewTicker(o.soakSample)
	defer tick.Stop()
	var samples []float64
loop:
	for {
		select {
		case <-pctx.Done():
			break loop
		case <-tick.C:
		}
		var sent, deadTuples, size int64
		if err := db.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM herald.messages WHERE status = 'sent'),
			coalesce((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'herald.messages'::regclass), 0),
			pg_total_relation_size('herald.messages')`).Scan(&sent, &deadTuples, &size); err != nil {
			cancel()
			stopAll()
			return nil, err
		}
		now := time.Now()
		x := now.Sub(start).Seconds()
		rate := float64(sent-lastSent) / now.Sub(lastT).Seconds()
		samples = append(samples, rate)
		throughput.X, throughput.Y = append(throughput.X, x), append(throughput.Y, rate)
		dead.X, dead.Y = append(dead.X, x), append(dead.Y, float64(deadTuples)/1000)
		tableMB.X, tableMB.Y = append(tableMB.X, x), append(tableMB.Y, float64(size)/(1<<20))
		lastSent, lastT = sent, now
		held := ""
		if now.After(holdFrom) && now.Before(holdTo) {
			held = " (transaction held open)"
		}
		fmt.Fprintf(os.Stderr, "\r\033[Ksoak %.0fs/%.0fs: %.0f sent/s, %d dead tuples, %.1f MiB%s", x, o.soakDuration.Seconds(), rate, deadTuples, float64(size)/(1<<20), held)
	}
	fmt.Fprintln(os.Stderr)
	if err := <-prodErr; err != nil {
		stopAll()
		return nil, err
	}
	if err := <-holdErr; err != nil {
		stopAll()
		return nil, err
	}
	time.Sleep(2 * time.Second) // let the runners finish what is queued
	stopAll()
	sentAt, err := sinkTimes(sinkFile)
	if err != nil {
		return nil, err
	}
	all := latencies(rec, sentAt, time.Time{}, time.Time{})
	during := latencies(rec, sentAt, holdFrom, holdTo)
	window := max(1, int(o.soakWindow/o.soakSample))
	first, last := avg(samples, 1, 1+window), avg(samples, len(samples)-window, len(samples))
	maxDead := 0.0
	for _, d := range dead.Y {
		maxDead = max(maxDead, d)
	}
	if err := writeLineChart(o.outDir+"/soak-throughput.svg", fmt.Sprintf("soak at %d msgs/s, transaction held %s in the middle", o.soakRate, o.soakHold),
		"seconds", "", []series{throughput, dead, tableMB}); err != nil {
		return nil, err
	}
	if err := writeHistogram(o.outDir+"/soak-latency-histogram.svg", "soak latency", map[string][]float64{"all": all, "while held": during}); err != nil {
		return nil, err
	}
	return []row{
		ratioRowValues(fmt.Sprintf("soak: throughput of the last %s vs the first (producers at %d/s)", o.soakWindow, o.soakRate), "sent/s", last, first, 0.90),
		absRow("soak: p99 latency over the whole run", "ms", pct(all, .99), 0),
		absRow(fmt.Sprintf("soak: p99 latency while a transaction was held %s", o.soakHold), "ms", pct(during, .99), 0),
		absRow("soak: most dead tuples in herald.messages", "thousand", maxDead, 0),
		absRow("soak: herald.messages with indexes at the end", "MiB", tableMB.Y[len(tableMB.Y)-1], 0),
	}, nil
}

// holdTransaction opens a REPEATABLE READ transaction at `at` and keeps it (and its
// snapshot) open for d.
func holdTransaction(ctx context.Context, db *database, at time.Time, d time.Duration) error {
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(time.Until(at)):
	}
	conn, err := db.pool.Acquire(context.Background())
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(context.Background(), `BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM herald.channels`); err != nil {
		return err
	}
	time.Sleep(d)
	_, err = conn.Exec(context.Background(), `COMMIT`)
	return err
}

func avg(v []float64, from, to int) float64 {
	from, to = max(0, from), min(len(v), to)
	if to <= from {
		return 0
	}
	s := 0.0
	for _, x := range v[from:to] {
		s += x
	}
	return s / float64(to-from)
}
