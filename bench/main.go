// Command bench measures herald against the baseline a skeptic would pick — the same
// work done with bare SQL on the same database — alternating the two in one run and
// printing a table of figure, herald, baseline and ratio, plus a JSON file.
//
// Usage:
//
//	go run ./bench [flags] [scenario ...]      (make bench: every scenario, quick)
//	go run ./bench cpu [PID ...]               (the CPU used so far, for bench/compare)
//	go run ./bench provider [-latency D] [-rate N]   (the deliver scenario's fake provider, alone)
//
// Scenarios: enqueue-single, enqueue-batch (scenarios.go), deliver (deliver.go: real
// providers' senders against a slow HTTPS fake; run it by name), callbacks
// (callbacks.go: dispatch_callbacks against a plain log consumer; by name), forget
// (forget.go: erasing one person against a bare DELETE; by name), purge (purge.go:
// retention once caught up, against a read bounded by time alone; by name), fair (fair.go:
// one producer's message behind another's backlog on one channel; by name), sign (sign.go: a
// webhook's Ed25519 signature against its HMAC one; by name), smtp (smtp.go: sends
// through the SMTP sender to a relay a round trip away; by name), intake (intake.go:
// the HTTP intake's per-token bounds against none; by name), drain (with the
// runners' memory), latency and soak; the defaults are the quick version `make bench` runs
// (under 3 minutes on 2 cores), flags choose the full sizes. The database is
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
	"strconv"
	"strings"
	"time"
)

// options are the command-line settings shared by every scenario.
type options struct {
	duration         time.Duration
	warmup           time.Duration
	conns            int
	rounds           int
	batch            int
	jsonPath         string
	outDir           string
	runners          int
	runnerBatch      int
	drainMessages    int
	drainBaseline    string
	drainRounds      int
	drainBound       int
	producers        int
	latencyRates     []int
	latencyDuration  time.Duration
	latencyBaseline  bool
	soakDuration     time.Duration
	soakHold         time.Duration
	soakRate         int
	soakSample       time.Duration
	soakWindow       time.Duration
	deliverMessages  int
	deliverLatency   time.Duration
	deliverRate      int
	deliverConfigs   string
	deliverEmail     string
	deliverProvider  string
	smtpMessages     int
	smtpRTT          time.Duration
	smtpPool         int
	callbackMessages int
	forgetMessages   int
	purgeMessages    int
	fairBacklog      int
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "cpu" {
		os.Exit(cpuCommand(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "provider" {
		os.Exit(providerCommand(os.Args[2:]))
	}
	var o options
	flag.DurationVar(&o.duration, "duration", 1500*time.Millisecond, "enqueue scenarios: how long each measured phase runs")
	flag.DurationVar(&o.warmup, "warmup", 300*time.Millisecond, "enqueue scenarios: how long each variant runs, unmeasured, before the first round (0: none)")
	flag.IntVar(&o.conns, "conns", 8, "enqueue scenarios: concurrent producer connections")
	flag.IntVar(&o.rounds, "rounds", 3, "enqueue scenarios: how many times each variant runs, alternating (ratio: the median of the rounds' herald/baseline quotients)")
	flag.IntVar(&o.batch, "batch", 100, "enqueue-batch: messages per batch")
	flag.IntVar(&o.runners, "runners", 2, "drain, soak: herald run processes")
	flag.IntVar(&o.runnerBatch, "runner-batch", 1000, "drain: HERALD_BATCH_SIZE of the runners (concurrency is twice that)")
	flag.IntVar(&o.drainMessages, "drain-messages", 200000, "drain: messages preloaded")
	flag.IntVar(&o.drainRounds, "drain-rounds", 3, "drain: rounds, each herald then the baseline (ratio: the median of the rounds' quotients)")
	flag.IntVar(&o.drainBound, "drain-producer-concurrency", 0, "drain: the e-mail channel's producer_concurrency during herald's drain (0: none)")
	flag.StringVar(&o.drainBaseline, "drain-baseline", "queue", "drain: the baseline loop's table: queue (herald.messages' columns and constraints, with the primary key and the claim index only) or herald (herald's indexes too)")
	flag.IntVar(&o.producers, "producers", 4, "latency, soak: producer connections")
	rates := flag.String("latency-rates", "1000,5000", "latency: producer rates, messages per second")
	flag.DurationVar(&o.latencyDuration, "latency-duration", 6*time.Second, "latency: how long each rate runs")
	flag.BoolVar(&o.latencyBaseline, "latency-baseline", true, "latency: after herald, run each rate again through a bare LISTEN/NOTIFY + SKIP LOCKED loop, for reference")
	flag.DurationVar(&o.soakDuration, "soak", 40*time.Second, "soak: duration (the issue's figure: 10m)")
	flag.DurationVar(&o.soakHold, "soak-hold", 10*time.Second, "soak: how long the transaction is held open in the middle (the issue's: 60s)")
	flag.IntVar(&o.soakRate, "soak-rate", 700, "soak: producer rate, messages per second (the issue's: half the drain rate; here about half of what producers, runners and PostgreSQL sharing 2 cores deliver end to end)")
	flag.DurationVar(&o.soakSample, "soak-sample", 2*time.Second, "soak: sampling interval")
	flag.IntVar(&o.deliverMessages, "deliver-messages", 10000, "deliver: messages per run (a third each: e-mail through SendGrid, SMS through Twilio, webhooks)")
	flag.DurationVar(&o.deliverLatency, "deliver-latency", 100*time.Millisecond, "deliver: the fake provider's answer time (jittered ±20 %)")
	flag.IntVar(&o.deliverRate, "deliver-rate", 0, "deliver: the fake provider's rate, requests per second, 429 + Retry-After beyond it (0: none)")
	flag.StringVar(&o.deliverConfigs, "deliver-configs", "fixed16,1,2,4,site", "deliver: the runs, in order: fixed16 (one runner, 16 sends at once), site (one runner, the webhooks' one receiver site bounded at 32 in flight, the default bound), traced (one runner exporting a span per send over OTLP/HTTP) or a number of runners with the defaults")
	flag.StringVar(&o.deliverEmail, "deliver-email", "sendgrid", "deliver: the e-mail channel's sender, sendgrid or ses (the Amazon SES v2 API through the AWS SDK)")
	flag.StringVar(&o.deliverProvider, "deliver-provider", "", `deliver: "URL CAFILE" of a provider another process serves (bench provider), instead of one of its own`)
	flag.IntVar(&o.smtpMessages, "smtp-messages", 3000, "smtp: messages sent")
	flag.DurationVar(&o.smtpRTT, "smtp-rtt", 20*time.Millisecond, "smtp: the relay's round trip (each of its writes leaves this late)")
	flag.IntVar(&o.smtpPool, "smtp-pool", 16, "smtp: HERALD_SMTP_POOL of the runner")
	flag.DurationVar(&o.soakWindow, "soak-window", 8*time.Second, "soak: the first and last windows compared (the issue's: 1m)")
	flag.IntVar(&o.forgetMessages, "forget-messages", 200000, "forget: messages stored and sent beside the person's 10")
	flag.IntVar(&o.purgeMessages, "purge-messages", 1000000, "purge: finished messages stored over 40 days (a quarter old enough)")
	flag.IntVar(&o.fairBacklog, "fair-backlog", 20000, "fair: the e-mails one producer enqueues ahead of another's")
	flag.IntVar(&o.callbackMessages, "callback-messages", 20000, "callbacks: messages sent per round, each called back once (an accepted and a sent event each)")
	flag.StringVar(&o.jsonPath, "json", "bench/out/results.json", "where to write the results as JSON")
	flag.StringVar(&o.outDir, "out", "bench/out", "where to write the SVG charts")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: go run ./bench [flags] [scenario ...]\n\nscenarios: %s (default: all)\n\n", strings.Join(scenarioNames(), ", "))
		flag.PrintDefaults()
	}
	flag.Parse()
	for _, r := range strings.Split(*rates, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(r))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bench: -latency-rates: %q is not a rate\n", r)
			os.Exit(2)
		}
		o.latencyRates = append(o.latencyRates, n)
	}
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
	if o.conns < 1 || o.rounds < 1 || o.batch < 1 || o.duration <= 0 || o.warmup < 0 || o.runners < 1 || o.runnerBatch < 1 ||
		o.drainMessages < 1 || o.drainRounds < 1 || o.producers < 1 || o.soakRate < 1 || o.soakDuration <= o.soakHold || o.soakSample <= 0 || o.purgeMessages < 1 || o.fairBacklog < 1 {
		fmt.Fprintln(os.Stderr, "bench: counts and durations must be positive (-warmup may be 0), and -soak longer than -soak-hold")
		os.Exit(2)
	}
	if _, ok := drainBaselines[o.drainBaseline]; !ok {
		fmt.Fprintf(os.Stderr, "bench: -drain-baseline %q: want queue or herald\n", o.drainBaseline)
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

	if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return err
	}
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
		fmt.Printf("\nJSON: %s; charts: %s/*.svg\n", o.jsonPath, o.outDir)
	}
	return nil
}

func (o options) describe() string {
	return fmt.Sprintf("-duration %s -warmup %s -conns %d -rounds %d -batch %d -runners %d -runner-batch %d -drain-messages %d -drain-rounds %d -drain-producer-concurrency %d -drain-baseline %s -producers %d -latency-rates %v -latency-duration %s -soak %s -soak-hold %s -soak-rate %d",
		o.duration, o.warmup, o.conns, o.rounds, o.batch, o.runners, o.runnerBatch, o.drainMessages, o.drainRounds, o.drainBound, o.drainBaseline, o.producers, o.latencyRates,
		o.latencyDuration, o.soakDuration, o.soakHold, o.soakRate)
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
