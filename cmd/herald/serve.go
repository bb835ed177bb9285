package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/herald/herald/runner"
	"github.com/herald/herald/runner/console"
	"github.com/herald/herald/runner/events"
	"github.com/herald/herald/runner/intake"
)

// intakeFlags are the intake and HTTP server settings shared by `herald run` and
// `herald serve`.
type intakeFlags struct {
	enabled  *string
	tokens   *string
	open     *string
	maxBatch *int
	maxBody  *int64
	rate     *float64
	inFlight *int
	// dbPool is the connections of the HTTP services' own pool (intake, console,
	// delivery events): apart from a runner's, so producers cannot starve its claims
	// and reports.
	dbPool *int
	// timeout bounds a request from its headers to its answer (reading the body,
	// waiting its turn, the database): past it the handler's context ends and the
	// answer is 503 timeout. idle bounds a kept-alive connection between requests.
	timeout, idle *time.Duration
	// quotaRetry is the Retry-After of a refusal for max_pending: the runners' count
	// interval (herald run's --quota-interval; HERALD_QUOTA_INTERVAL for herald serve).
	quotaRetry *time.Duration
	// counted receives every answer of the intake (the process's /metrics).
	counted func(token string, status int, code string)
	// tracer makes the intake's enqueue spans (nil: not tracing).
	tracer trace.Tracer
}

func addIntakeFlags(fs *flag.FlagSet, ev *environ) intakeFlags {
	return intakeFlags{
		enabled: fs.String("intake", ev.str("HERALD_INTAKE", "on"), "serve the HTTP intake (POST /v1/messages…) on the HTTP address: on or off (env HERALD_INTAKE)"),
		// The tokens' default is not read from the environment here, so that usage
		// text never shows them.
		tokens:   fs.String("intake-tokens", "", "comma-separated name:token pairs, one per producer (env HERALD_INTAKE_TOKENS, or a file named by HERALD_INTAKE_TOKENS_FILE; never printed)"),
		open:     fs.String("intake-open", ev.str("HERALD_INTAKE_OPEN", "false"), "serve the intake with no token, to anyone who reaches it: true only for development (env HERALD_INTAKE_OPEN)"),
		maxBatch: fs.Int("intake-max-batch", ev.int("HERALD_INTAKE_MAX_BATCH", intake.DefaultMaxBatch), "most messages per batch request (env HERALD_INTAKE_MAX_BATCH)"),
		maxBody:  fs.Int64("intake-max-body", int64(ev.int("HERALD_INTAKE_MAX_BODY", intake.DefaultMaxBodyBytes)), "largest request body in bytes (env HERALD_INTAKE_MAX_BODY)"),
		rate: fs.Float64("intake-rate", ev.number("HERALD_INTAKE_RATE", intake.DefaultRate),
			"most messages a second each token may enqueue through this process, more gets 429; 0: no limit (env HERALD_INTAKE_RATE)"),
		inFlight: fs.Int("intake-max-in-flight", ev.int("HERALD_INTAKE_MAX_IN_FLIGHT", intake.DefaultMaxInFlight),
			"most requests each token may have in progress at once in this process, more gets 429 unread; 0: no bound (env HERALD_INTAKE_MAX_IN_FLIGHT)"),
		dbPool: fs.Int("http-db-pool", ev.int("HERALD_HTTP_DB_POOL", defaultHTTPPool),
			"database connections of the HTTP services (intake, console, delivery events), a pool of their own (env HERALD_HTTP_DB_POOL)"),
		timeout: fs.Duration("http-timeout", ev.duration("HERALD_HTTP_TIMEOUT", defaultHTTPTimeout),
			"the most a request may take, from its headers to its answer; past it the answer is 503 timeout and nothing is stored (env HERALD_HTTP_TIMEOUT)"),
		idle: fs.Duration("http-idle-timeout", ev.duration("HERALD_HTTP_IDLE_TIMEOUT", defaultHTTPIdle),
			"how long a kept-alive connection may wait for its next request: longer than a load balancer's in front (env HERALD_HTTP_IDLE_TIMEOUT)"),
	}
}

// checkHTTP refuses HTTP server settings no server can run with.
func (f intakeFlags) checkHTTP() error {
	switch {
	case *f.dbPool < 1:
		return fmt.Errorf("HERALD_HTTP_DB_POOL=%d: want at least 1 connection", *f.dbPool)
	case *f.timeout < time.Second:
		return fmt.Errorf("HERALD_HTTP_TIMEOUT=%s: want at least 1s", *f.timeout)
	case *f.idle < time.Second:
		return fmt.Errorf("HERALD_HTTP_IDLE_TIMEOUT=%s: want at least 1s", *f.idle)
	}
	return nil
}

// Pool sizes: the runner's (claims, reports, leases, maintenance; LISTEN holds one
// more) and the HTTP services'.
const (
	defaultRunnerPool = 8
	minRunnerPool     = 4
	defaultHTTPPool   = 4
	cliPool           = 2 // the one-shot commands (enqueue, status, cancel…)
)

// intakeSettings is what the flags resolve to.
type intakeSettings struct {
	on     bool
	tokens []intake.Token
}

// resolve reads the flags after parsing: whether the intake is served and with which
// tokens. An intake without tokens is refused unless --intake-open says so.
func (f intakeFlags) resolve(ev *environ) (intakeSettings, error) {
	var s intakeSettings
	switch *f.enabled {
	case "on", "true", "1":
		s.on = true
	case "off", "false", "0":
		return s, nil
	default:
		return s, fmt.Errorf("HERALD_INTAKE=%q: want on or off", *f.enabled)
	}
	list := *f.tokens
	if list == "" {
		list = ev.secret("HERALD_INTAKE_TOKENS")
	}
	if err := ev.err(); err != nil {
		return s, err
	}
	var err error
	if s.tokens, err = parseTokens(list); err != nil {
		return s, err
	}
	open := *f.open == "true" || *f.open == "1"
	if !open && *f.open != "false" && *f.open != "0" {
		return s, fmt.Errorf("HERALD_INTAKE_OPEN=%q: want true or false", *f.open)
	}
	if *f.rate < 0 {
		return s, fmt.Errorf("HERALD_INTAKE_RATE=%g: want messages a second, or 0 for no limit", *f.rate)
	}
	if *f.inFlight < 0 {
		return s, fmt.Errorf("HERALD_INTAKE_MAX_IN_FLIGHT=%d: want requests at once, or 0 for no bound", *f.inFlight)
	}
	if len(s.tokens) == 0 && !open {
		return s, errors.New("the HTTP intake has no token: set HERALD_INTAKE_TOKENS (or HERALD_INTAKE_TOKENS_FILE), " +
			"turn it off with HERALD_INTAKE=off, or serve it open to anyone with HERALD_INTAKE_OPEN=true (development only)")
	}
	return s, nil
}

// parseTokens reads a HERALD_INTAKE_TOKENS list: name:token pairs, comma-separated.
func parseTokens(list string) ([]intake.Token, error) {
	var tokens []intake.Token
	seen := map[string]bool{}
	for i, t := range strings.Split(list, ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		name, secret, ok := strings.Cut(t, ":")
		if !ok || name == "" || secret == "" {
			return nil, fmt.Errorf("HERALD_INTAKE_TOKENS: entry %d is not name:token (the producer's name, a colon, the token)", i+1)
		}
		if seen[name] {
			return nil, fmt.Errorf("HERALD_INTAKE_TOKENS: the name %q is given twice", name)
		}
		seen[name] = true
		tokens = append(tokens, intake.Token{Name: name, Secret: secret})
	}
	return tokens, nil
}

// reloadTokens reads HERALD_INTAKE_TOKENS (or its _FILE) again and, once the database
// has checked the producers' names, gives them to the intake (SIGHUP): a revoked
// token is refused from then on. Nothing changes when they do not parse or check, when
// they came from the --intake-tokens flag, or when they would open the intake.
func reloadTokens(ctx context.Context, pool *pgxpool.Pool, in *intake.Intake, f intakeFlags, logger *slog.Logger) {
	if in == nil {
		return
	}
	if *f.tokens != "" {
		logger.Warn("intake tokens given with --intake-tokens: nothing to read again")
		return
	}
	ev := &environ{}
	list := ev.secret("HERALD_INTAKE_TOKENS")
	tokens, err := parseTokens(list)
	if err == nil {
		err = ev.err()
	}
	if err == nil {
		err = intake.CheckTokens(ctx, pool, tokens)
	}
	if err == nil {
		err = in.SetTokens(tokens)
	}
	if err != nil {
		logger.Error("intake tokens not read again; the intake keeps the ones it has", "err", err)
		return
	}
	names := make([]string, len(tokens))
	for i, t := range tokens {
		names[i] = t.Name
	}
	logger.Info("intake tokens read again", "producers", strings.Join(names, " "))
}

// register adds the intake routes to mux, warning when no token protects them. It
// first has the database check the tokens' producer names (intake.CheckTokens): a
// refusal (the role is not herald_intake, a bad name) is an error; a database that
// cannot be reached yet is only logged, as every request will say (503).
func (s intakeSettings) register(ctx context.Context, mux *http.ServeMux, pool *pgxpool.Pool, f intakeFlags, logger *slog.Logger) (*intake.Intake, error) {
	if len(s.tokens) == 0 {
		logger.Warn("the HTTP intake is open: anyone who reaches it can enqueue (HERALD_INTAKE_OPEN=true)")
	}
	if err := intake.CheckTokens(ctx, pool, s.tokens); err != nil {
		if intake.Unavailable(err) {
			logger.Warn("intake: the tokens' producers could not be checked", "err", err)
		} else {
			return nil, err
		}
	}
	inFlight := *f.inFlight
	if inFlight == 0 {
		inFlight = -1 // no bound
	}
	return intake.Register(mux, pool, intake.Config{Tokens: s.tokens, MaxBatch: *f.maxBatch, MaxBodyBytes: *f.maxBody, Rate: *f.rate,
		MaxInFlight: inFlight, QuotaRetry: *f.quotaRetry, Logger: logger, Counted: f.counted, Tracer: f.tracer}), nil
}

// services are the HTTP services whose secrets SIGHUP reads again: the intake (nil
// when off) and the console (nil without a token).
type services struct {
	intake  *intake.Intake
	console *console.Console
	in      intakeFlags
}

// registerServices adds what herald run and herald serve both serve: the intake (when
// on), the operator console (with a token) and the delivery-event endpoints (those
// configured).
func registerServices(ctx context.Context, mux *http.ServeMux, pool *pgxpool.Pool, settings intakeSettings, in intakeFlags,
	consoleToken string, evCfg events.Config, logger *slog.Logger) (*services, error) {
	s := &services{in: in}
	var err error
	if settings.on {
		if s.intake, err = settings.register(ctx, mux, pool, in, logger); err != nil {
			return nil, err
		}
	}
	if s.console, err = registerConsole(mux, pool, consoleToken, logger); err != nil {
		return nil, err
	}
	registerEvents(mux, pool, evCfg, logger)
	return s, nil
}

// reload reads the intake's tokens and the console's token again (SIGHUP); nothing
// when s is nil (no HTTP services).
func (s *services) reload(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) {
	if s == nil {
		return
	}
	reloadTokens(ctx, pool, s.intake, s.in, logger)
	if s.console == nil {
		return
	}
	ev := &environ{}
	token := ev.secret("HERALD_CONSOLE_TOKEN")
	err := ev.err()
	if err == nil {
		err = s.console.SetToken(token)
	}
	if err != nil {
		logger.Error("the console token was not read again; the console keeps the one it has", "err", err)
		return
	}
	logger.Info("console token read again: operators signed in with another sign in again")
}

// onHangUp calls reload on each SIGHUP until the returned function is called.
func onHangUp(logger *slog.Logger, reload func()) (stop func()) {
	hup, done := make(chan os.Signal, 1), make(chan struct{})
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-hup:
				logger.Info("SIGHUP: reading the secret files again")
				reload()
			}
		}
	}()
	return func() { signal.Stop(hup); close(done) }
}

// registerConsole adds the operator console (runner/console) to mux when a token is
// set (HERALD_CONSOLE_TOKEN or its _FILE); without one there is no console.
func registerConsole(mux *http.ServeMux, pool *pgxpool.Pool, token string, logger *slog.Logger) (*console.Console, error) {
	if token == "" {
		return nil, nil
	}
	c, err := console.Register(mux, pool, console.Config{Token: token, Logger: logger})
	if err != nil {
		return nil, err
	}
	logger.Info("serving the operator console", "path", console.Prefix)
	return c, nil
}

// maxHeaderBytes bounds a request's headers, read before any token is checked: what
// herald's endpoints read of them (a bearer token, traceparent, an idempotency key,
// providers' signatures) fits many times over, and a client that is nobody holds
// that much per connection, not net/http's default of 1 MiB.
const maxHeaderBytes = 64 << 10

// HTTP server times: a request's (HERALD_HTTP_TIMEOUT) and a kept-alive connection's
// between requests (HERALD_HTTP_IDLE_TIMEOUT: above the 60 s idle timeout of common
// load balancers, which must close an idle connection before herald does, or a
// request they send on it as herald closes it fails). Headers must come within
// headerTime (or the request's time, if shorter); answerTime is what the answer has
// to be written after the request's time is up.
const (
	defaultHTTPTimeout = 15 * time.Second
	defaultHTTPIdle    = 2 * time.Minute
	headerTime         = 5 * time.Second
	answerTime         = 5 * time.Second
)

// serveHTTP serves handler on addr until ctx ends, then shuts down gracefully. Each
// request's context ends after timeout, so its handler answers (503 timeout) while
// the connection can still carry the answer, and abandons its database work rather
// than finishing it unanswered. It returns once the listener is up (or failed); the
// returned stop waits for shutdown.
func serveHTTP(ctx context.Context, addr string, handler http.Handler, timeout, idle time.Duration, logger *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	bounded := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		handler.ServeHTTP(w, r.WithContext(rctx))
	})
	srv := &http.Server{Handler: bounded, ReadHeaderTimeout: min(headerTime, timeout), ReadTimeout: timeout,
		WriteTimeout: timeout + answerTime, IdleTimeout: idle, MaxHeaderBytes: maxHeaderBytes}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("http server", "err", err)
		}
	}()
	logger.Info("serving HTTP", "addr", ln.Addr().String())
	return func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(shutdownCtx)
		<-done
	}, nil
}

// runServe is `herald serve`: the HTTP intake alone, with /healthz.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("herald serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ev := &environ{}
	httpAddr := fs.String("http-addr", ev.str("HERALD_HTTP_ADDR", "127.0.0.1:8080"), "where the intake listens (env HERALD_HTTP_ADDR)")
	in := addIntakeFlags(fs, ev)
	quota := ev.duration("HERALD_QUOTA_INTERVAL", runner.DefaultQuotaInterval)
	in.quotaRetry = &quota
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: herald serve [flags]\n\nThe HTTP intake alone (no delivery). Database: DATABASE_URL or PG*. Flags:")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	consoleToken := ev.secret("HERALD_CONSOLE_TOKEN")
	settings, err := in.resolve(ev)
	evCfg, evErr := eventsConfig(ev)
	if err == nil {
		err = evErr
	}
	if err == nil && !settings.on && consoleToken == "" && !evCfg.Any() {
		err = errors.New("HERALD_INTAKE=off, no HERALD_CONSOLE_TOKEN and no delivery-event endpoint: herald serve would serve nothing")
	}
	if err == nil {
		err = in.checkHTTP()
	}
	if err != nil {
		fmt.Fprintf(stderr, "herald serve: %v\n", err)
		return exitUsage
	}
	logger := slog.New(slog.NewJSONHandler(stderr, nil))
	tr, err := tracingFromEnv(ctx, ev, logger)
	if err != nil {
		fmt.Fprintf(stderr, "herald serve: %v\n", err)
		return exitUsage
	}
	defer tr.shutdown()
	in.tracer = tr.Tracer
	sd, err := newSystemd()
	if err != nil {
		fmt.Fprintf(stderr, "herald serve: %v\n", err)
		return exitUsage
	}
	defer sd.close()
	pool, code := openPool(ctx, stderr, "herald serve", *in.dbPool)
	if pool == nil {
		return code
	}
	defer pool.Close()
	mux := http.NewServeMux()
	metrics := runner.NewServeMetrics()
	evCfg.Counted, in.counted = metrics.CountDeliveryEvents, metrics.CountIntakeRequest
	mux.Handle("GET /metrics", metrics.Handler())
	served, err := registerServices(ctx, mux, pool, settings, in, consoleToken, evCfg, logger)
	if err != nil {
		fmt.Fprintf(stderr, "herald serve: %v\n", err)
		return exitUsage
	}
	defer onHangUp(logger, func() { served.reload(ctx, pool, logger) })()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		pctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := pool.Ping(pctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"database":"unreachable"}`+"\n")
			return
		}
		io.WriteString(w, `{"database":"ok"}`+"\n")
	})
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) { // no loop of its own: alive while it answers
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"http":"serving"}`+"\n")
	})
	stop, err := serveHTTP(ctx, *httpAddr, mux, *in.timeout, *in.idle, logger)
	if err != nil {
		fmt.Fprintf(stderr, "herald serve: %v\n", err)
		return exitUsage
	}
	_ = sd.notify("READY=1", "STATUS=serving on "+*httpAddr)
	stopWatch := make(chan struct{})
	defer close(stopWatch)
	go sd.watch(ctx, stopWatch, func() bool { return true }) // its server has no loop of its own to watch
	<-ctx.Done()
	_ = sd.notify("STOPPING=1", "STATUS=stopping")
	stop()
	return exitOK
}

// openPool opens a pool of size connections on DATABASE_URL (or PG*), named who in
// pg_stat_activity (application_name). A nil pool comes with the exit code.
func openPool(ctx context.Context, stderr io.Writer, who string, size int) (*pgxpool.Pool, int) {
	conf, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		fmt.Fprintf(stderr, "%s: bad database settings: %v\n", who, err)
		return nil, exitUsage
	}
	conf.MaxConns = int32(size)
	conf.ConnConfig.RuntimeParams["application_name"] = who
	pool, err := pgxpool.NewWithConfig(ctx, conf)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", who, err)
		return nil, exitDatabase
	}
	return pool, exitOK
}
