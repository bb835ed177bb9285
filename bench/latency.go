package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
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

// produce enqueues at `rate` messages per second from conns connections, in
// autocommit, until ctx ends; each commit time is recorded.
func produce(ctx context.Context, db *database, rate, conns int, rec *commits) error {
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
				if err := conn.QueryRow(context.Background(), `SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"Hi","text":"Hello"}')`).Scan(&id); err != nil {
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
		rec := &commits{at: map[int64]time.Time{}}
		pctx, cancel := context.WithTimeout(ctx, o.latencyDuration)
		fmt.Fprintf(os.Stderr, "latency: %d msgs/s for %s\n", rate, o.latencyDuration)
		// One connection manages about 500 autocommit enqueues a second here: use enough.
		err = produce(pctx, db, rate, max(o.producers, rate/500), rec)
		cancel()
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
	}
	return rows, writeHistogram(o.outDir+"/latency-histogram.svg", "enqueue commit → send start", hist)
}
