// Command bench measures herald against the baseline a skeptic would pick — the same
// work done with bare SQL on the same database — alternating the two in one run and
// printing a table of figure, herald, baseline and ratio, plus a JSON file.
//
// Usage:
//
//	go run ./bench [flags] [scenario ...]      (make bench: every scenario, quick)
//
// Scenarios: enqueue-single, enqueue-batch (see scenarios.go). The database is
// DATABASE_URL, or the project-local cluster started by tests/devdb.sh; the bench
// creates (and drops first) a database named herald_bench on that server.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// options are the command-line settings shared by every scenario.
type options struct {
	duration time.Duration
	conns    int
	rounds   int
	batch    int
	jsonPath string
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "how long each measured phase runs")
	flag.IntVar(&o.conns, "conns", 8, "concurrent producer connections")
	flag.IntVar(&o.rounds, "rounds", 3, "how many times each variant runs, alternating (the median counts)")
	flag.IntVar(&o.batch, "batch", 100, "messages per batch in enqueue-batch")
	flag.StringVar(&o.jsonPath, "json", "bench/out/results.json", "where to write the results as JSON")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: go run ./bench [flags] [scenario ...]\n\nscenarios: %s (default: all)\n\n", strings.Join(scenarioNames(), ", "))
		flag.PrintDefaults()
	}
	flag.Parse()
	names := flag.Args()
	if len(names) == 0 {
		names = scenarioNames()
	}
	for _, n := range names {
		if _, ok := scenarios[n]; !ok {
			fmt.Fprintf(os.Stderr, "bench: unknown scenario %q\n", n)
			flag.Usage()
			os.Exit(2)
		}
	}
	if o.conns < 1 || o.rounds < 1 || o.batch < 1 || o.duration <= 0 {
		fmt.Fprintln(os.Stderr, "bench: -conns, -rounds, -batch and -duration must be positive")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, names); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, names []string) error {
	server, err := serverURL()
	if err != nil {
		return err
	}
	db, err := prepareDatabase(ctx, server)
	if err != nil {
		return err
	}
	defer db.close()

	report := report{Machine: machine(ctx, db), Options: o.describe(), Started: time.Now().UTC()}
	for _, n := range names {
		rows, err := scenarios[n](ctx, db, o)
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		report.Rows = append(report.Rows, rows...)
	}
	report.print(os.Stdout)
	if o.jsonPath != "" {
		if err := os.MkdirAll(filepath.Dir(o.jsonPath), 0o755); err != nil {
			return err
		}
		b, _ := json.MarshalIndent(report, "", "  ")
		if err := os.WriteFile(o.jsonPath, append(b, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Printf("\nJSON: %s\n", o.jsonPath)
	}
	return nil
}

func (o options) describe() string {
	return fmt.Sprintf("-duration %s -conns %d -rounds %d -batch %d", o.duration, o.conns, o.rounds, o.batch)
}

// serverURL is DATABASE_URL, or the project-local cluster.
func serverURL() (string, error) {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u, nil
	}
	out, err := exec.Command("tests/devdb.sh", "up").Output()
	if err != nil {
		return "", fmt.Errorf("DATABASE_URL is unset and tests/devdb.sh up failed (run from the project root): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// machine describes where the numbers came from.
func machine(ctx context.Context, db *database) string {
	var version string
	_ = db.pool.QueryRow(ctx, `SHOW server_version`).Scan(&version)
	var fsync, syncCommit string
	_ = db.pool.QueryRow(ctx, `SELECT current_setting('fsync'), current_setting('synchronous_commit')`).Scan(&fsync, &syncCommit)
	return fmt.Sprintf("%d CPUs, %s/%s, %s, PostgreSQL %s on the same machine (fsync=%s, synchronous_commit=%s)",
		runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), version, fsync, syncCommit)
}
