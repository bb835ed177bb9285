package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/herald/herald/runner/events"
)

// Exit codes of herald dsn, which a mail server's pipe runs: the sysexits(3) codes
// such servers read.
const (
	exitDataErr  = 65 // EX_DATAERR: the input is not a readable mail or report
	exitTempFail = 75 // EX_TEMPFAIL: try again later (the database is unavailable or refused)
)

// maxDSN is how much of a bounce herald dsn reads (the report comes first; a
// returned message past it is not needed).
const maxDSN = 10 << 20

// runDSN is `herald dsn`: one bounce (an RFC 3464 delivery status notification) on
// standard input, as a mail server's pipe hands it over, recorded with
// herald.record_delivery_events (source dsn) as the role of DATABASE_URL (a member of
// herald_events), when it returns a Message-ID signed with HERALD_MESSAGE_ID_SECRETS.
// Exit codes: 0 recorded, or nothing to record (not a report, not about a message
// herald signed); 65 not a readable mail or report; 75 the secrets are
// not set, or the database is unavailable or refused the call (the mail server keeps
// the bounce and tries again).
func runDSN(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		fmt.Fprintln(stderr, "usage: herald dsn < bounce.eml\n\nRecords one bounce (a delivery status notification) read from standard input.\n"+
			"Exit codes: 0 recorded or nothing to record, 65 not a readable report, 75 database unavailable (try again).")
		return exitUsage
	}
	keys, err := signingKeys(&environ{}, "HERALD_MESSAGE_ID_SECRETS")
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "herald dsn: %v\n", err)
		return exitTempFail
	case len(keys) == 0: // keep the bounces until it is set
		fmt.Fprintln(stderr, "herald dsn: HERALD_MESSAGE_ID_SECRETS is not set: herald dsn records only bounces of "+
			"Message-IDs signed with it (anyone can mail a bounce); set it here and for the runners")
		return exitTempFail
	}
	evs, ignored, err := events.ReadDSN(io.LimitReader(os.Stdin, maxDSN), keys)
	switch {
	case errors.Is(err, events.ErrNotDSN):
		fmt.Fprintf(stdout, "herald dsn: %v: nothing recorded\n", err)
		return exitOK
	case err != nil:
		fmt.Fprintf(stderr, "herald dsn: %v\n", err)
		return exitDataErr
	case evs == nil:
		fmt.Fprintf(stdout, "herald dsn: no event for the recipient of a message herald signed (%d recipients ignored)\n", ignored)
		return exitOK
	}
	conn, err := pgx.Connect(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		fmt.Fprintf(stderr, "herald dsn: database unavailable: %v\n", err)
		return exitTempFail
	}
	defer conn.Close(context.Background())
	res, err := events.Record(ctx, conn, "dsn", evs)
	if err != nil { // unavailable, or this role may not record (herald_events): keep the bounce
		fmt.Fprintf(stderr, "herald dsn: recording failed, try again: %v\n", err)
		return exitTempFail
	}
	fmt.Fprintf(stdout, "herald dsn: recorded %d, duplicates %d, unknown %d, ignored %d\n", res.Recorded, res.Duplicates, res.Unknown, ignored)
	return exitOK
}
