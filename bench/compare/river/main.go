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
//
// With DELIVER_URL (and DELIVER_CA_FILE, the CA it trusts) in the environment, each
// job POSTs a SendGrid-shaped request to DELIVER_URL/v3/mail/send instead of doing
// nothing (bench/compare/deliver.sh): Go's HTTP client with as many idle connections
// per host as MaxWorkers, so no worker opens a connection per job.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
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

func (noopWorker) Work(ctx context.Context, job *river.Job[noopArgs]) error {
	if deliverURL == "" {
		return nil
	}
	body := fmt.Sprintf(`{"personalizations":[{"to":[{"email":"u%d@example.com"}]}],"from":{"email":"bench@example.com"},"subject":"Hi","content":[{"type":"text/plain","value":"Hello"}]}`, job.ID)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, deliverURL+"/v3/mail/send", bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer SG.bench")
	req.Header.Set("Content-Type", "application/json")
	resp, err := deliverClient.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("provider answered %d", resp.StatusCode)
	}
	return nil
}

// deliverURL and deliverClient: the provider of a deliver run (DELIVER_URL), and a
// client that trusts its CA (DELIVER_CA_FILE) and keeps a connection per worker.
var (
	deliverURL    = os.Getenv("DELIVER_URL")
	deliverClient *http.Client
)

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
	if deliverURL != "" {
		pem, err := os.ReadFile(os.Getenv("DELIVER_CA_FILE"))
		if err != nil {
			return err
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(pem)
		deliverClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots}, MaxIdleConns: maxWorkers, MaxIdleConnsPerHost: maxWorkers,
			IdleConnTimeout: 90 * time.Second, ForceAttemptHTTP2: true}}
	}
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
