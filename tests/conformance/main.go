// Command conformance checks a herald runner, in any language, as a black box
// against the runner contract (docs/runner-contract.md):
//
//	go run ./tests/conformance -- COMMAND [ARG…]
//
// It creates a database on DATABASE_URL's server (dropped at the end), starts
// COMMAND once per check with these environment variables, and drives it through
// a webhook receiver it controls on loopback, with faults:
//
//	DATABASE_URL                       the check's database (the runner's role: superuser here)
//	HERALD_CONFORMANCE_CHANNEL         the webhook channel to deliver (hooks)
//	HERALD_CONFORMANCE_SECRET          the whsec_ secret to sign with
//	HERALD_CONFORMANCE_ALLOW           networks the runner must let its sender reach (127.0.0.0/8)
//	HERALD_CONFORMANCE_LEASE_SECONDS   the lease to claim with (3)
//	HERALD_CONFORMANCE_POLL_SECONDS    the poll interval to use (5)
//	HERALD_CONFORMANCE_CONCURRENCY     sends at once, when set (1 for the priorities check)
//	HERALD_CONFORMANCE_PER_ENDPOINT    true when each receiver URL must be signed with its own
//	                                   secret, derived from the channel's (the per-endpoint check)
//
// It prints one line per check, PASS or FAIL with the evidence, and exits 1 when a
// check failed, 2 on bad arguments.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald/herald/runner/idtag"
	heraldsql "github.com/herald/herald/sql"
)

func main() {
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	only := fs.String("only", "", "run only the checks whose name contains this text")
	usage := func() {
		fmt.Fprintln(os.Stderr, "usage: DATABASE_URL=postgres://… go run ./tests/conformance [-only TEXT] -- COMMAND [ARG…]\n\n"+
			"Checks the runner that COMMAND starts against docs/runner-contract.md.")
		os.Exit(2)
	}
	if fs.Parse(os.Args[1:]) != nil {
		usage()
	}
	args := fs.Args()
	if len(args) == 0 || os.Getenv("DATABASE_URL") == "" {
		usage()
	}
	ctx := context.Background()
	s, err := newSuite(ctx, os.Getenv("DATABASE_URL"), args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	}
	failed := s.run(ctx, *only)
	s.close(ctx)
	if failed > 0 {
		fmt.Printf("%d check(s) failed\n", failed)
		os.Exit(1)
	}
	fmt.Println("all checks passed")
}

// suite is one run: a database, a receiver, the runner's command.
type suite struct {
	server, dbName string
	db             *pgxpool.Pool
	dbURL          string
	cmd            []string
	secret         string
	recv           *receiver
}

const (
	channel      = "hooks"
	leaseSeconds = 3
	pollSeconds  = 5
)

func newSuite(ctx context.Context, server string, cmd []string) (*suite, error) {
	key := make([]byte, 32)
	rand.Read(key)
	s := &suite{server: server, cmd: cmd, secret: "whsec_" + base64.StdEncoding.EncodeToString(key),
		dbName: fmt.Sprintf("herald_conformance_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)}
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		return nil, err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+s.dbName); err != nil {
		return nil, err
	}
	u, err := url.Parse(server)
	if err != nil {
		return nil, err
	}
	u.Path = "/" + s.dbName
	s.dbURL = u.String()
	conn, err := pgx.Connect(ctx, s.dbURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	if _, err := heraldsql.Migrate(ctx, conn, false); err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `INSERT INTO herald.channels (name, kind, backoff_base, backoff_max) VALUES ($1, 'webhook', '1 second', '2 seconds')`, channel); err != nil {
		return nil, err
	}
	if s.db, err = pgxpool.New(ctx, s.dbURL); err != nil {
		return nil, err
	}
	keys, err := idtag.LoadKeys(ctx, s.db)
	if err != nil {
		return nil, err
	}
	s.recv, err = newReceiver(s.secret, keys[0])
	return s, err
}

func (s *suite) close(ctx context.Context) {
	s.recv.close()
	s.db.Close()
	if admin, err := pgx.Connect(ctx, s.server); err == nil {
		admin.Exec(ctx, "DROP DATABASE IF EXISTS "+s.dbName+" WITH (FORCE)")
		admin.Close(ctx)
	}
}

// check is one point of the contract; it returns the evidence and whether it held.
type check struct {
	name string
	run  func(ctx context.Context, s *suite) (evidence string, ok bool)
}

func (s *suite) run(ctx context.Context, only string) int {
	failed := 0
	for _, c := range checks {
		if !strings.Contains(c.name, only) {
			continue
		}
		s.reset(ctx)
		evidence, ok := c.run(ctx, s)
		verdict := "PASS"
		if !ok {
			verdict, failed = "FAIL", failed+1
		}
		fmt.Printf("%s  %-28s %s\n", verdict, c.name, evidence)
	}
	return failed
}

// reset empties the queue, the log, the suppression list (a 410 suppresses its URL)
// and the receiver's records between checks.
func (s *suite) reset(ctx context.Context) {
	s.db.Exec(ctx, `TRUNCATE herald.messages, herald.log_statements, herald.suppressions`)
	s.recv.reset()
}
