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
	"time"

	"github.com/herald/herald/bench/compare/drain"
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

// maxWorkers is River's MaxWorkers of the default queue (-workers).
var maxWorkers int

func main() {
	drain.Main(drain.System{
		Name: "river",
		Flags: func(fs *flag.FlagSet) {
			fs.IntVar(&maxWorkers, "workers", 1000, "River MaxWorkers of the default queue")
		},
		Prepare: prepare,
		Work:    work,
		Pending: `FROM river_job WHERE state IN ('available', 'running', 'retryable', 'scheduled', 'pending')`,
	})
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

func work(ctx context.Context, pool *pgxpool.Pool, started func() error) error {
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
	if err := started(); err != nil {
		return err
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return client.Stop(stopCtx)
}
