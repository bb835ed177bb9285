package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// commits records when each enqueue committed (the Exec returned), by message id.
type commits struct {
	mu sync.Mutex
	at map[int64]time.Time
}

func (c *commits) add(id int64, t time.Time) {
	c.mu.Lock()
	c.at[id] = t
	c.mu.Unlock()
}

// enqueueSQL is the latency and soak producers' statement: one herald.enqueue in
// autocommit, returning the message's id.
const enqueueSQL = `SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}')`

// bareEnqueueSQL is the latency baseline's producer statement: the same message
// inserted into public.bare and a NOTIFY, in one autocommit statement.
const bareEnqueueSQL = `WITH m AS (INSERT INTO public.bare (producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at)
	VALUES ('bench', 'email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}', now(), 5, now(), now() + interval '5 days') RETURNING id)
	SELECT m.id FROM m, pg_notify('bench_bare', '')`

// bareClaimSQL is the latency baseline's claim: up to 1,000 ready rows of
// public.bare in (priority, run_at, id) order, the order of its partial index on
// queued rows (as the drain's baseline reads them), locked with SKIP LOCKED and
// marked processing.
const bareClaimSQL = `UPDATE public.bare b SET status = 'processing', lease_token = 1,
	lease_expires_at = now() + interval '30 seconds'
	FROM (SELECT id FROM public.bare WHERE status = 'queued' AND run_at <= now()
	      ORDER BY priority, run_at, id LIMIT 1000 FOR UPDATE SKIP LOCKED) c
	WHERE b.id = c.id RETURNING b.id`

// bareAnalyzeDueSQL tells whether public.bare has outgrown its statistics, by the
// rule of herald.refresh_statistics (relpages under 1,024 and the table past twice
// that and 16 pages).
const bareAnalyzeDueSQL = `SELECT c.relpages < 1024
	AND pg_relation_size(c.oid) / current_setting('block_size')::bigint > greatest(2 * c.relpages, 16)
	FROM pg_class c WHERE c.oid = 'public.bare'::regclass`

// bareDoneSQL is the latency baseline's completion: the claimed rows ($1, their
// ids) marked sent, as herald's runner completes what it sent.
const bareDoneSQL = `UPDATE public.bare SET status = 'sent', finished_at = now(), lease_token = NULL,
	lease_expires_at = NULL WHERE id = ANY ($1)`

// produce runs stmt (which returns the new message's id) at `rate` statements per
// second from conns connections, in autocommit, until ctx ends; each commit time is
// recorded.
func produce(ctx context.Context, db *database, stmt string, rate, conns int, rec *commits) error {
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	per := time.Duration(float64(time.Second) * float64(conns) / float64(rate))
	for c := 0; c < conns; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := db.pool.Acquire(context.Background())
			if err != nil {
				errs <- err
				return
			}
			defer conn.Release()
			next := time.Now().Add(time.Duration(c) * per / time.Duration(conns))
			for {
				if d := time.Until(next); d > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(d):
					}
				} else if ctx.Err() != nil {
					return
				}
				next = next.Add(per)
				var id int64
				if err := conn.QueryRow(context.Background(), stmt).Scan(&id); err != nil {
					errs <- err
					return
				}
				rec.add(id, time.Now())
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// sinkTimes reads a sink file: message id → when the runner started sending it.
func sinkTimes(path string) (map[int64]time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[int64]time.Time{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l struct {
			ID     int64     `json:"id"`
			SentAt time.Time `json:"sent_at"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			if _, seen := out[l.ID]; !seen {
				out[l.ID] = l.SentAt
			}
		}
	}
	return out, sc.Err()
}

// latencies pairs commits with sends, in milliseconds, optionally only for commits
// within [from, to).
func latencies(rec *commits, sent map[int64]time.Time, from, to time.Time) []float64 {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []float64
	for id, c := range rec.at {
		if (!from.IsZero() && c.Before(from)) || (!to.IsZero() && !c.Before(to)) {
			continue
		}
		if s, ok := sent[id]; ok {
			out = append(out, float64(s.Sub(c).Microseconds())/1000)
		}
	}
	sort.Float64s(out)
	return out
}

// firstCommit is the earliest recorded commit (zero when there is none).
func firstCommit(rec *commits) time.Time {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var first time.Time
	for _, c := range rec.at {
		if first.IsZero() || c.Before(first) {
			first = c
		}
	}
	return first
}

func pct(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// latency: steady producers at each rate, one runner idle-waiting on LISTEN (poll
// interval 1s); latency = enqueue commit → the sender starts the send.
func latency(ctx context.Context, db *database, o options) ([]row, error) {
	bin, err := buildHerald(ctx)
	if err != nil {
		return nil, err
	}
	var rows []row
	hist := map[string][]float64{}
	for _, rate := range o.latencyRates {
		if err := db.reset(ctx); err != nil {
			return nil, err
		}
		sinkFile := filepath.Join(os.TempDir(), fmt.Sprintf("herald-bench-latency-%d.jsonl", rate))
		os.Remove(sinkFile)
		p, err := startRunner(bin, db.url, "HERALD_SENDER_EMAIL=sink:"+sinkFile, "HERALD_POLL_INTERVAL=1s", "HERALD_CONCURRENCY=256")
		if err != nil {
			return nil, err
		}
		time.Sleep(500 * time.Millisecond) // let it connect and LISTEN before the first message
		rec, err := produceFor(ctx, db, o, "latency", enqueueSQL, rate)
		if err != nil {
			p.stop()
			return nil, err
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			left, err := remaining(ctx, db, "herald.messages")
			if err != nil || left == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		p.stop()
		sent, err := sinkTimes(sinkFile)
		if err != nil {
			return nil, err
		}
		lat := latencies(rec, sent, time.Time{}, time.Time{})
		if first := firstCommit(rec); !first.IsZero() {
			for w := time.Duration(0); w < o.latencyDuration; w += 5 * time.Second {
				l := latencies(rec, sent, first.Add(w), first.Add(w+5*time.Second))
				fmt.Fprintf(os.Stderr, "latency %d msgs/s, %s–%s: %d messages, p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
					rate, w, w+5*time.Second, len(l), pct(l, .5), pct(l, .99), pct(l, 1))
			}
		}
		os.Remove(sinkFile)
		label := fmt.Sprintf("%d msgs/s", rate)
		hist[label] = lat
		achieved := float64(len(rec.at)) / o.latencyDuration.Seconds()
		fmt.Fprintf(os.Stderr, "latency %s: %d messages (%.0f/s achieved), p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
			label, len(lat), achieved, pct(lat, .5), pct(lat, .99), pct(lat, 1))
		var p50Limit, p99Limit float64
		if rate == 1000 {
			p50Limit, p99Limit = 3, 20
		}
		rows = append(rows,
			absRow(fmt.Sprintf("latency p50 at %d msgs/s (%.0f/s achieved), commit → send start", rate, achieved), "ms", pct(lat, .5), p50Limit),
			absRow(fmt.Sprintf("latency p99 at %d msgs/s", rate), "ms", pct(lat, .99), p99Limit))
		if o.latencyBaseline {
			bare, err := bareLatency(ctx, db, o, rate)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(os.Stderr, "latency baseline %s: %d messages, p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
				label, len(bare), pct(bare, .5), pct(bare, .99), pct(bare, 1))
			for _, q := range []struct {
				name string
				p    float64
			}{{"p50", .5}, {"p99", .99}} {
				rows = append(rows, latencyRow(fmt.Sprintf("latency %s at %d msgs/s vs a bare LISTEN/NOTIFY + SKIP LOCKED loop (ratio: herald's latency over the loop's)", q.name, rate),
					pct(lat, q.p), pct(bare, q.p)))
			}
		}
	}
	return rows, writeHistogram(o.outDir+"/latency-histogram.svg", "enqueue commit → send start", hist)
}

// produceFor runs the latency producers (stmt at rate) for o.latencyDuration and
// returns their commits.
func produceFor(ctx context.Context, db *database, o options, label, stmt string, rate int) (*commits, error) {
	rec := &commits{at: map[int64]time.Time{}}
	pctx, cancel := context.WithTimeout(ctx, o.latencyDuration)
	defer cancel()
	fmt.Fprintf(os.Stderr, "%s: %d msgs/s for %s\n", label, rate, o.latencyDuration)
	// One connection manages about 500 autocommit enqueues a second here: use enough.
	return rec, produce(pctx, db, stmt, rate, max(o.producers, rate/500), rec)
}

// latencyRow reports a latency beside the baseline's; the ratio is herald's over
// the baseline's (lower is better, unlike the throughput rows), with no target.
func latencyRow(figure string, herald, baseline float64) row {
	r := row{Figure: figure, Unit: "ms", Herald: herald, Baseline: baseline}
	if baseline > 0 {
		r.Ratio = herald / baseline
	}
	return r
}

// bareLatency is the latency scenario's baseline at one rate, run right after
// herald's: the same producers insert the message into public.bare and NOTIFY in one
// autocommit statement (bareEnqueueSQL), and one connection of the bench LISTENs
// and claims (consumeBare). Latency = commit → the claim's rows in the bench's
// hands. It is what a plain LISTEN/NOTIFY queue gets from this machine at that
// moment: no runner process, no lease tokens, no log, no notify throttling.
// Returns the latencies in milliseconds, sorted.
func bareLatency(ctx context.Context, db *database, o options, rate int) ([]float64, error) {
	if err := db.reset(ctx); err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, db.url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `LISTEN bench_bare`); err != nil {
		return nil, err
	}
	claimed := map[int64]time.Time{} // written by the consumer only, read after it ended
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	consumed := make(chan error, 1)
	go func() { consumed <- consumeBare(cctx, conn, claimed) }()
	refreshed := make(chan struct{})
	go func() { defer close(refreshed); refreshBare(cctx, db) }()
	rec, err := produceFor(ctx, db, o, "latency baseline", bareEnqueueSQL, rate)
	if err != nil {
		return nil, err
	}
	// The last claim's rows may still be processing: wait for the queued only.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var left bool
		if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM public.bare WHERE status = 'queued')`).Scan(&left); err != nil || !left {
			break
		}
	}
	stop()
	<-refreshed
	if err := <-consumed; err != nil {
		return nil, fmt.Errorf("latency baseline consumer: %w", err)
	}
	return latencies(rec, claimed, time.Time{}, time.Time{}), nil
}

// refreshBare gives the latency baseline the statistics upkeep herald's runner has
// (herald.refresh_statistics every poll interval): once a second, until ctx ends, it
// ANALYZEs public.bare when the table has outgrown its statistics. Without it the
// loop's statements keep the plans made on the new, empty table, which read more of
// it the more it grows.
func refreshBare(ctx context.Context, db *database) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var due bool
		if db.pool.QueryRow(ctx, bareAnalyzeDueSQL).Scan(&due) == nil && due {
			_, _ = db.pool.Exec(ctx, `ANALYZE public.bare`)
		}
	}
}

// consumeBare is the latency baseline's consumer on conn (which LISTENs): at each
// notification, and at least once a second, it claims with bareClaimSQL until a
// claim comes back short, records when each claimed id was in hand, and marks the
// claimed rows sent (bareDoneSQL). It returns nil once ctx ends.
func consumeBare(ctx context.Context, conn *pgx.Conn, claimed map[int64]time.Time) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := conn.WaitForNotification(wctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		for n := 1000; n == 1000; {
			rows, _ := conn.Query(ctx, bareClaimSQL)
			ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err == nil && len(ids) > 0 {
				at := time.Now()
				for _, id := range ids {
					claimed[id] = at
				}
				_, err = conn.Exec(ctx, bareDoneSQL, ids)
			}
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return err
			}
			n = len(ids)
		}
	}
}
