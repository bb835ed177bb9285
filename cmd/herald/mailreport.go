package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/herald/herald/runner/events"
	"github.com/herald/herald/runner/idtag"
)

// Exit codes of herald mail-report, which a mail server's pipe runs: the sysexits(3)
// codes such servers read.
const (
	exitDataErr  = 65 // EX_DATAERR: the input is not a readable mail or report
	exitTempFail = 75 // EX_TEMPFAIL: try again later (the database is unavailable or refused)
)

// maxReport is how much of a report herald mail-report reads (the report comes
// first; a returned message past it is not needed).
const maxReport = 10 << 20

// runMailReport is `herald mail-report`: one report on standard input, as a mail
// server's pipe hands it over — a bounce (RFC 3464 delivery status notification,
// source dsn) or a feedback loop's complaint (RFC 5965 feedback report, source arf) —
// recorded with herald.record_delivery_events as the role of DATABASE_URL (a member
// of herald_events), when it returns a Message-ID signed with a key of
// herald.message_id_keys. Exit codes: 0 recorded, or nothing to record (not a
// report, not about a message herald signed); 65 not a readable mail or report; 75
// the database is unavailable or refused the keys or the call (the mail server keeps
// the report and tries again).
func runMailReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		fmt.Fprintln(stderr, "usage: herald mail-report < report.eml\n\nRecords one bounce (a delivery status notification) or complaint (a feedback report) read from standard input.\n"+
			"Exit codes: 0 recorded or nothing to record, 65 not a readable report, 75 database unavailable (try again).")
		return exitUsage
	}
	conn, err := pgx.Connect(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		fmt.Fprintf(stderr, "herald mail-report: database unavailable: %v\n", err)
		return exitTempFail
	}
	defer conn.Close(context.Background())
	keys, err := idtag.LoadKeys(ctx, conn)
	if err != nil { // unavailable, or this role may not read them (herald_events): keep the report
		fmt.Fprintf(stderr, "herald mail-report: %v\n", err)
		return exitTempFail
	}
	source, evs, ignored, err := events.ReadReport(io.LimitReader(os.Stdin, maxReport), keys)
	switch {
	case errors.Is(err, events.ErrNotReport):
		fmt.Fprintf(stdout, "herald mail-report: %v: nothing recorded\n", err)
		return exitOK
	case err != nil:
		fmt.Fprintf(stderr, "herald mail-report: %v\n", err)
		return exitDataErr
	case evs == nil:
		fmt.Fprintf(stdout, "herald mail-report: no event about a message herald signed (%d ignored)\n", ignored)
		return exitOK
	}
	res, err := events.Record(ctx, conn, source, evs)
	if err != nil { // unavailable, or this role may not record (herald_events): keep the report
		fmt.Fprintf(stderr, "herald mail-report: recording failed, try again: %v\n", err)
		return exitTempFail
	}
	fmt.Fprintf(stdout, "herald mail-report: %s: recorded %d, duplicates %d, unknown %d, ignored %d\n", source,
		res.Recorded, res.Duplicates, res.Unknown, ignored)
	return exitOK
}
