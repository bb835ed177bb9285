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
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald/herald/runner/intake"
)

// intakeFlags are the intake settings shared by `herald run` and `herald serve`.
type intakeFlags struct {
	enabled  *string
	tokens   *string
	maxBatch *int
	maxBody  *int64
}

func addIntakeFlags(fs *flag.FlagSet, ev *environ) intakeFlags {
	return intakeFlags{
		enabled:  fs.String("intake", ev.str("HERALD_INTAKE", "on"), "serve the HTTP intake (POST /v1/messages…) on the HTTP address: on or off (env HERALD_INTAKE)"),
		tokens:   fs.String("intake-tokens", ev.str("HERALD_INTAKE_TOKENS", ""), "comma-separated bearer tokens; none = open intake (env HERALD_INTAKE_TOKENS)"),
		maxBatch: fs.Int("intake-max-batch", ev.int("HERALD_INTAKE_MAX_BATCH", intake.DefaultMaxBatch), "most messages per batch request (env HERALD_INTAKE_MAX_BATCH)"),
		maxBody:  fs.Int64("intake-max-body", int64(ev.int("HERALD_INTAKE_MAX_BODY", intake.DefaultMaxBodyBytes)), "largest request body in bytes (env HERALD_INTAKE_MAX_BODY)"),
	}
}

func (f intakeFlags) on() (bool, error) {
	switch *f.enabled {
	case "on", "true", "1":
		return true, nil
	case "off", "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("HERALD_INTAKE=%q: want on or off", *f.enabled)
}

// register adds the intake routes to mux, warning when no token protects them.
func (f intakeFlags) register(mux *http.ServeMux, pool *pgxpool.Pool, logger *slog.Logger) {
	var tokens []string
	for _, t := range strings.Split(*f.tokens, ",") {
		if t = strings.TrimSpace(t); t != "" {
			tokens = append(tokens, t)
		}
	}
	if len(tokens) == 0 {
		logger.Warn("the HTTP intake is open: anyone who reaches it can enqueue; set HERALD_INTAKE_TOKENS")
	}
	intake.Register(mux, pool, intake.Config{Tokens: tokens, MaxBatch: *f.maxBatch, MaxBodyBytes: *f.maxBody, Logger: logger})
}

// serveHTTP serves handler on addr until ctx ends, then shuts down gracefully. It
// returns once the listener is up (or failed); the returned stop waits for shutdown.
func serveHTTP(ctx context.Context, addr string, handler http.Handler, logger *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second,
		WriteTimeout: 15 * time.Second, IdleTimeout: 60 * time.Second}
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
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: herald serve [flags]\n\nThe HTTP intake alone (no delivery). Database: DATABASE_URL or PG*. Flags:")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if err := ev.err(); err != nil {
		fmt.Fprintf(stderr, "herald serve: %v\n", err)
		return exitUsage
	}
	logger := slog.New(slog.NewJSONHandler(stderr, nil))
	pool, code := openPool(ctx, stderr, "herald serve")
	if pool == nil {
		return code
	}
	defer pool.Close()
	mux := http.NewServeMux()
	in.register(mux, pool, logger)
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
	stop, err := serveHTTP(ctx, *httpAddr, mux, logger)
	if err != nil {
		fmt.Fprintf(stderr, "herald serve: %v\n", err)
		return exitUsage
	}
	<-ctx.Done()
	stop()
	return exitOK
}

// openPool opens a pool on DATABASE_URL (or PG*). A nil pool comes with the exit code.
func openPool(ctx context.Context, stderr io.Writer, who string) (*pgxpool.Pool, int) {
	conf, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		fmt.Fprintf(stderr, "%s: bad database settings: %v\n", who, err)
		return nil, exitUsage
	}
	conf.MaxConns = 8
	conf.ConnConfig.RuntimeParams["application_name"] = who
	pool, err := pgxpool.NewWithConfig(ctx, conf)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", who, err)
		return nil, exitDatabase
	}
	return pool, exitOK
}
