// Package drain is what the comparison's per-system commands (bench/compare/river,
// bench/compare/pgmq) share: their command line — prepare, work and watch against
// one database — and the watch, which times a drain as the herald bench's does.
package drain

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// System is one queue under comparison.
type System struct {
	// Name labels the progress line and errors ("river", "pgmq").
	Name string
	// Flags adds the system's own flags to the command line's.
	Flags func(fs *flag.FlagSet)
	// Prepare installs the system in the database and loads jobs jobs.
	Prepare func(ctx context.Context, pool *pgxpool.Pool, jobs int) error
	// Work works jobs until ctx ends; it calls started once it is ready to work
	// (what -ready marks, and what starts watch's clock).
	Work func(ctx context.Context, pool *pgxpool.Pool, started func() error) error
	// Pending is a SELECT of the jobs not yet done, without its select list: watch
	// asks EXISTS of it every 50 ms and counts it once a second.
	Pending string
}

// Main runs the command named by os.Args[1] — prepare (-db, -jobs), work (-db,
// -ready: a file created once the worker has started) or watch (-db, -jobs,
// -ready) — and exits non-zero on an error.
func Main(s System) {
	if len(os.Args) < 2 {
		fmt.Fprintf(os.Stderr, "usage: %s prepare|work|watch -db URL [-jobs N] [-ready FILE]\n", s.Name)
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	db := fs.String("db", "", "database URL")
	jobs := fs.Int("jobs", 200000, "jobs to load or wait for")
	ready := fs.String("ready", "", "work: create this file once started; watch: start the clock when it exists")
	if s.Flags != nil {
		s.Flags(fs)
	}
	_ = fs.Parse(os.Args[2:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	pool, err := pgxpool.New(ctx, *db)
	if err == nil {
		defer pool.Close()
		switch os.Args[1] {
		case "prepare":
			err = s.Prepare(ctx, pool, *jobs)
		case "work":
			err = work(ctx, pool, s, *ready)
		case "watch":
			err = watch(ctx, pool, s, *jobs, *ready)
		default:
			err = fmt.Errorf("unknown command %q", os.Args[1])
		}
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", s.Name, err)
		os.Exit(1)
	}
}

// work runs the system's worker, which creates ready (when named) once started.
func work(ctx context.Context, pool *pgxpool.Pool, s System, ready string) error {
	return s.Work(ctx, pool, func() error {
		if ready == "" {
			return nil
		}
		return os.WriteFile(ready, nil, 0o644)
	})
}

// watch waits for ready, then polls until no job is pending and prints the rate
// (jobs/s) on stdout, with a progress line on stderr.
func watch(ctx context.Context, pool *pgxpool.Pool, s System, n int, ready string) error {
	// The clock starts when the first worker process has started (as herald's starts
	// when its runners listen): process start-up is not part of the drain.
	for ready != "" {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	lastCount := start
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		// EXISTS every 50 ms (cheap), a count every second for the progress line only,
		// as the herald bench's drain does.
		var more bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT `+s.Pending+`)`).Scan(&more); err != nil {
			return err
		}
		if !more {
			elapsed := time.Since(start)
			fmt.Fprintf(os.Stderr, "\r\033[K%s: %d jobs in %.2fs\n", s.Name, n, elapsed.Seconds())
			fmt.Printf("%.0f\n", float64(n)/elapsed.Seconds())
			return nil
		}
		if time.Since(lastCount) >= time.Second {
			var left int64
			if err := pool.QueryRow(ctx, `SELECT count(*) `+s.Pending).Scan(&left); err != nil {
				return err
			}
			lastCount = time.Now()
			fmt.Fprintf(os.Stderr, "\r\033[K%s: %d of %d left, %.1fs", s.Name, left, n, time.Since(start).Seconds())
		}
		if time.Since(start) > 10*time.Minute {
			return fmt.Errorf("jobs left after 10 minutes")
		}
	}
}
