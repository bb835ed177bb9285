// Command herald is the herald toolkit's one binary: it installs the SQL
// (`herald migrate`) and, in later releases, runs the delivery worker.
//
// Configuration comes from flags and the environment; the database from DATABASE_URL
// or the standard PG* variables (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD…).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes shared by every subcommand.
const (
	exitOK       = 0
	exitFailure  = 1 // the command ran and failed (database error, migration error)
	exitUsage    = 2 // bad flags, arguments or input
	exitDatabase = 3 // the database could not be reached
)

// command is one herald subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"migrate", "install or upgrade herald's schema, functions and triggers", runMigrate},
		{"run", "the delivery worker: claim, send, report (and the HTTP intake)", runRun},
		{"check", "check each configured provider (connect, authenticate) without sending", runCheck},
		{"serve", "the HTTP intake alone", runServe},
		{"enqueue", "store a notification (flags, or JSON on stdin); prints its id", runEnqueue},
		{"status", "what happened to one message", runStatus},
		{"cancel", "withdraw a message not yet being sent (by id or idempotency key)", runCancel},
		{"mail-report", "record one bounce or complaint (a delivery status or feedback report) read from stdin", runMailReport},
		{"stats", "messages per channel and status", runStats},
		{"webhook-secret", "the signing secret of one receiver URL, for a channel that signs per endpoint", runWebhookSecret},
		{"version", "the build: module version, commit, Go, SQL code hash", runVersion},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: herald COMMAND [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	width := 0
	for _, c := range commands() {
		width = max(width, len(c.name))
	}
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The database is DATABASE_URL, or the PG* environment variables when it is unset.")
	fmt.Fprintln(w, "Run 'herald COMMAND -h' for a command's flags.")
}

// parseFlags parses a command's flags; when ok is false the command ends at once
// with code (0 after -h, 2 for bad flags or stray arguments, usage printed).
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return exitUsage, false
	}
	return exitOK, true
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "herald: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}
