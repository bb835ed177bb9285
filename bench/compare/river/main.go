// Command river drains preloaded no-op jobs with River (github.com/riverqueue/river),
// for the drain comparison of bench/compare/run.sh.
//
// Usage:
//
//	river prepare -db URL -jobs N     migrate River into URL's database, insert N jobs
//	river work -db URL -workers W [-ready FILE]   work jobs with a no-op worker until
//	                                              killed; create FILE once started
//	river watch -db URL -jobs N [-ready FILE]     wait until N jobs are completed, print jobs/s
//
// watch measures from the moment FILE exists (a worker process has started; from
// its own start without -ready) to the moment the last job is completed (checked
// every 50 ms), like the herald bench's drain, whose clock starts when its runners
// listen.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// noopArgs is the job: nothing to do, like herald's noop sender.
type noopArgs struct{}

// Kind names the job kind.
func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: river prepare|work|watch -db URL [-jobs N] [-workers W]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	db := fs.String("db", "", "database URL")
	jobs := fs.Int("jobs", 200000, "jobs to insert or wait for")
	workers := fs.Int("workers", 1000, "River MaxWorkers of the default queue")
	ready := fs.String("ready", "", "work: create this file once the client has started; watch: start the clock when it exists")
	_ = fs.Parse(os.Args[2:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	pool, err := pgxpool.New(ctx, *db)
	if err != nil {
		fail(err)
	}
	defer pool.Close()
	switch os.Args[1] {
	case "prepare":
		err = prepare(ctx, pool, *jobs)
	case "work":
		err = work(ctx, pool, *workers, *ready)
	case "watch":
		err = watch(ctx, pool, *jobs, *ready)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "river:", err)
	os.Exit(1)
}

func prepare(ctx context.Context, pool *pgxpool.Pool, n int) error {
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return err
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		return err
	}
	for done := 0; done < n; done += 5000 {
		params := make([]river.InsertManyParams, min(5000, n-done))
		for i := range params {
			params[i] = river.InsertManyParams{Args: noopArgs{}}
		}
		if _, err := client.InsertManyFast(ctx, params); err != nil {
			return err
		}
	}
	_, err = pool.Exec(ctx, `VACUUM ANALYZE river_job`)
	return err
}

func work(ctx context.Context, pool *pgxpool.Pool, maxWorkers int, ready string) error {
	workers := river.NewWorkers()
	river.AddWorker(workers, noopWorker{})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		Workers: workers,
	})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	if ready != "" {
		if err := os.WriteFile(ready, nil, 0o644); err != nil {
			return err
		}
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return client.Stop(stopCtx)
}

func watch(ctx context.Context, pool *pgxpool.Pool, n int, ready string) error {
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
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM river_job
			WHERE state IN ('available', 'running', 'retryable', 'scheduled', 'pending'))`).Scan(&more); err != nil {
			return err
		}
		if !more {
			elapsed := time.Since(start)
			fmt.Fprintf(os.Stderr, "\r\033[Kriver: %d jobs in %.2fs\n", n, elapsed.Seconds())
			fmt.Printf("%.0f\n", float64(n)/elapsed.Seconds())
			return nil
		}
		if time.Since(lastCount) >= time.Second {
			var left int64
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job
				WHERE state IN ('available', 'running', 'retryable', 'scheduled', 'pending')`).Scan(&left); err != nil {
				return err
			}
			lastCount = time.Now()
			fmt.Fprintf(os.Stderr, "\r\033[Kriver: %d of %d left, %.1fs", left, n, time.Since(start).Seconds())
		}
		if time.Since(start) > 10*time.Minute {
			return fmt.Errorf("jobs left after 10 minutes")
		}
	}
}
