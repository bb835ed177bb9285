package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/herald/herald/runner"
	heraldsql "github.com/herald/herald/sql"
)

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("herald run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ev := &environ{}
	specs := sendersFromEnv(ev)
	fs.Var(specs, "sender", "CHANNEL=SPEC, repeatable (env HERALD_SENDER_<CHANNEL>): sink:-, sink:PATH, noop, noop:DURATION, smtp, sendgrid, ses, twilio, webhook")
	httpAddr := fs.String("http-addr", ev.str("HERALD_HTTP_ADDR", "127.0.0.1:8080"), "address of /metrics, /healthz and the intake; off to disable (env HERALD_HTTP_ADDR)")
	batch := fs.Int("batch-size", ev.int("HERALD_BATCH_SIZE", runner.DefaultBatchSize), "messages per claim and per report (env HERALD_BATCH_SIZE)")
	conc := fs.Int("concurrency", ev.int("HERALD_CONCURRENCY", runner.DefaultConcurrency), "the most sends to providers at once (the runner adapts its limit below it to the provider), and apart from those to webhook receivers (env HERALD_CONCURRENCY)")
	concStart := fs.Int("concurrency-start", ev.int("HERALD_CONCURRENCY_START", runner.DefaultConcurrencyStart), "the adaptive limit's first value (env HERALD_CONCURRENCY_START)")
	concFixed := fs.String("concurrency-fixed", ev.str("HERALD_CONCURRENCY_FIXED", "false"), "true: always --concurrency sends at once, no adapting (env HERALD_CONCURRENCY_FIXED)")
	lease := fs.Duration("lease", ev.duration("HERALD_LEASE", runner.DefaultLease), "lease per claim; slow sends get it extended (env HERALD_LEASE)")
	poll := fs.Duration("poll-interval", ev.duration("HERALD_POLL_INTERVAL", runner.DefaultPollInterval), "claim this often without a notification; also how often log_sequence and refresh_statistics run (env HERALD_POLL_INTERVAL)")
	deafPoll := fs.Duration("deaf-poll-interval", ev.duration("HERALD_DEAF_POLL_INTERVAL", runner.DefaultDeafPollInterval), "claim this often while LISTEN receives no notifications (env HERALD_DEAF_POLL_INTERVAL)")
	grace := fs.Duration("shutdown-grace", ev.duration("HERALD_SHUTDOWN_GRACE", runner.DefaultShutdownGrace), "time in-flight sends get after SIGTERM (env HERALD_SHUTDOWN_GRACE)")
	reap := fs.Duration("reap-interval", ev.duration("HERALD_REAP_INTERVAL", runner.DefaultReapInterval), "how often one runner reaps expired leases (env HERALD_REAP_INTERVAL)")
	stats := fs.Duration("stats-interval", ev.duration("HERALD_STATS_INTERVAL", runner.DefaultStatsInterval), "how often queue depth is sampled (env HERALD_STATS_INTERVAL)")
	worker := fs.String("worker", ev.str("HERALD_WORKER", ""), "name recorded in leased_by (env HERALD_WORKER; default hostname-pid)")
	logLevel := fs.String("log-level", ev.str("HERALD_LOG_LEVEL", "info"), "debug, info, warn or error (env HERALD_LOG_LEVEL)")
	startCheck := fs.String("start-check", ev.str("HERALD_START_CHECK", runner.StartCheckPause), "a provider whose check finds the configuration wrong at start: pause its channel, refuse to start, or off (env HERALD_START_CHECK)")
	checkTimeout := fs.Duration("check-timeout", ev.duration("HERALD_CHECK_TIMEOUT", runner.DefaultCheckTimeout), "time one provider check may take (env HERALD_CHECK_TIMEOUT)")
	probe := fs.Duration("probe-interval", ev.duration("HERALD_PROBE_INTERVAL", runner.DefaultProbeInterval), "how often a channel the runner paused is probed, and pauses are read for /metrics (env HERALD_PROBE_INTERVAL)")
	quota := fs.Duration("quota-interval", ev.duration("HERALD_QUOTA_INTERVAL", runner.DefaultQuotaInterval), "how often the bounded producers are counted (herald.count_producers; env HERALD_QUOTA_INTERVAL)")
	outageN := fs.Int("outage-failures", ev.int("HERALD_OUTAGE_FAILURES", runner.DefaultOutageFailures), "a provider's failures in a row (no answer, 5xx) after which its channel pauses instead of spending attempts; -1: never (env HERALD_OUTAGE_FAILURES)")
	outageWait := fs.Duration("outage-wait", ev.duration("HERALD_OUTAGE_WAIT", runner.DefaultOutageWait), "how long such a channel pauses before the probe tries it (env HERALD_OUTAGE_WAIT)")
	dbPool := fs.Int("db-pool", ev.int("HERALD_DB_POOL", defaultRunnerPool), fmt.Sprintf("database connections of the runner: claims, reports, leases, maintenance; at least %d (env HERALD_DB_POOL)", minRunnerPool))
	in := addIntakeFlags(fs, ev)
	in.quotaRetry = quota // the intake's Retry-After is this runner's count interval
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: herald run [flags]")
		fmt.Fprintln(stderr, "\nThe delivery worker: claims messages of the channels that have a sender, sends them, reports results.")
		fmt.Fprintln(stderr, "Database: DATABASE_URL or PG*. SIGTERM/SIGINT: stop claiming, finish or release in-flight sends, exit 0;")
		fmt.Fprintln(stderr, "a second signal exits at once. Flags (each with its environment variable):")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	listenURL := ev.secret("HERALD_LISTEN_URL") // a direct connection for LISTEN, behind a transaction pooler
	consoleToken := ev.secret("HERALD_CONSOLE_TOKEN")
	if err := ev.err(); err != nil {
		fmt.Fprintf(stderr, "herald run: %v\n", err)
		return exitUsage
	}
	settings, err := intakeSettings{}, error(nil)
	evCfg, err := eventsConfig(ev)
	if err == nil && *httpAddr != "" && *httpAddr != "off" {
		settings, err = in.resolve(ev)
	}
	if err != nil {
		fmt.Fprintf(stderr, "herald run: %v\n", err)
		return exitUsage
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fs.Usage()
		return exitUsage
	}
	if *dbPool < minRunnerPool {
		fmt.Fprintf(stderr, "herald run: HERALD_DB_POOL=%d: want at least %d connections\n", *dbPool, minRunnerPool)
		return exitUsage
	}
	if err := in.checkHTTP(); err != nil {
		fmt.Fprintf(stderr, "herald run: %v\n", err)
		return exitUsage
	}
	if *concFixed != "true" && *concFixed != "false" {
		fmt.Fprintf(stderr, "herald run: HERALD_CONCURRENCY_FIXED=%q: want true or false\n", *concFixed)
		return exitUsage
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	if len(specs) == 0 {
		fmt.Fprintln(stderr, "herald run: no channel has a sender: set HERALD_SENDER_EMAIL=sink:- (or --sender email=sink:-)")
		return exitUsage
	}
	idKey := &installationKey{}
	senders, closeSenders, err := buildSenders(ev, specs, idKey.get, logger)
	if err != nil {
		fmt.Fprintf(stderr, "herald run: %v\n", err)
		return exitUsage
	}
	defer closeSenders()
	tr, err := tracingFromEnv(ctx, ev, logger)
	if err != nil {
		fmt.Fprintf(stderr, "herald run: %v\n", err)
		return exitUsage
	}
	defer tr.shutdown()
	if names := ev.unread(); len(names) > 0 { // every setting has been read by now
		logger.Warn("environment variables this herald run does not read: a misspelt name, or a setting of a channel without a sender or of a service it does not serve",
			"names", strings.Join(names, " "))
	}

	sd, err := newSystemd()
	if err != nil {
		fmt.Fprintf(stderr, "herald run: %v\n", err)
		return exitUsage
	}
	defer sd.close()

	// First signal: graceful stop. Second: exit at once.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		<-sigs
		logger.Info("signal received: shutting down (a second signal exits at once)")
		_ = sd.notify("STOPPING=1", "STATUS=stopping: finishing in-flight sends")
		cancel()
		<-sigs
		logger.Warn("second signal: exiting at once")
		os.Exit(exitFailure)
	}()
	pool, code := openPool(ctx, stderr, "herald run", *dbPool)
	if pool == nil {
		return code
	}
	defer pool.Close()
	idKey.pool = pool

	stopWatch := make(chan struct{})
	defer close(stopWatch)
	var r *runner.Runner
	r, err = runner.New(pool, runner.Config{
		Worker: *worker, Senders: senders, BatchSize: *batch, Concurrency: *conc, Lease: *lease,
		ConcurrencyStart: min(*concStart, *conc), FixedConcurrency: *concFixed == "true",
		PollInterval: *poll, DeafPollInterval: *deafPoll, ListenURL: listenURL, ShutdownGrace: *grace, ReapInterval: *reap, StatsInterval: *stats, Logger: logger,
		StartCheck: *startCheck, CheckTimeout: *checkTimeout, ProbeInterval: *probe, QuotaInterval: *quota,
		OutageFailures: *outageN, OutageWait: *outageWait, CodeHash: heraldsql.CodeHash(), Tracer: tr.Tracer,
		Ready: func() { // then the watchdog is fed while the claim loop turns
			_ = sd.notify("READY=1", "STATUS=claiming for "+strings.Join(slices.Sorted(maps.Keys(senders)), ", "))
			go sd.watch(ctx, stopWatch, func() bool { return r.Stalled() == 0 })
		},
	})
	if err != nil {
		fmt.Fprintf(stderr, "herald run: %v\n", err)
		return exitUsage
	}

	stopHTTP := func() {}
	var served *services // the HTTP services, when this runner serves them
	if *httpAddr != "" && *httpAddr != "off" {
		mux := http.NewServeMux()
		own := r.Handler()
		for _, route := range []string{"GET /metrics", "GET /healthz", "GET /livez"} {
			mux.Handle(route, own)
		}
		evCfg.Counted, in.counted, in.tracer = r.CountDeliveryEvents, r.CountIntakeRequest, tr.Tracer
		// The HTTP services' own pool: a flood of requests waits for its connections,
		// never for the runner's.
		httpPool, code := openPool(ctx, stderr, "herald run http", *in.dbPool)
		if httpPool == nil {
			return code
		}
		defer httpPool.Close()
		if served, err = registerServices(ctx, mux, httpPool, settings, in, consoleToken, evCfg, logger); err != nil {
			fmt.Fprintf(stderr, "herald run: %v\n", err)
			return exitUsage
		}
		if stopHTTP, err = serveHTTP(ctx, *httpAddr, mux, *in.timeout, *in.idle, logger); err != nil {
			fmt.Fprintf(stderr, "herald run: listening on %s: %v\n", *httpAddr, err)
			return exitUsage
		}
	}
	// SIGHUP: build again the senders whose secret files changed (reloading), and
	// read the intake's and the console's tokens again.
	defer onHangUp(logger, func() { reloadAll(senders, logger); served.reload(ctx, pool, logger) })()
	err = r.Run(ctx)
	stopHTTP()
	if errors.Is(err, runner.ErrConfiguration) {
		fmt.Fprintf(stderr, "herald run: %v (HERALD_START_CHECK=refuse; herald check repeats the checks)\n", err)
		return exitFailure
	}
	if err != nil {
		fmt.Fprintf(stderr, "herald run: %v\n", err)
		return exitFailure
	}
	return exitOK
}
