package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/herald/herald/runner/intake"
	"github.com/jackc/pgx/v5/pgconn"
)

// stdin is where `herald enqueue` reads a JSON document; tests replace it.
var stdin io.Reader = os.Stdin

// runEnqueue is `herald enqueue`: one message from flags, or a JSON document on
// stdin (an object, or an array for a batch); prints the id(s).
func runEnqueue(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("herald enqueue", flag.ContinueOnError)
	fs.SetOutput(stderr)
	channel := fs.String("channel", "", "channel (email, sms, …)")
	recipient := fs.String("recipient", "", "e-mail address, E.164 number, …")
	payload := fs.String("payload", "", `payload as a JSON object, e.g. '{"subject":"Hi","text":"Hello"}'`)
	runAt := fs.String("run-at", "", "when to send (RFC 3339); default now")
	expiresAt := fs.String("expires-at", "", "not sent by then (RFC 3339): the message ends expired; default due + the channel's ttl")
	priority := fs.String("priority", "", "lower first: 0..100, or down to the producer's min_priority in herald.producers; default 0")
	idem := fs.String("idempotency-key", "", "a repeat returns the first id")
	orderingKey := fs.String("ordering-key", "", "messages with the same key go one at a time, in order")
	maxAttempts := fs.String("max-attempts", "", "1..100; default the channel's")
	metadata := fs.String("metadata", "", "a JSON object kept with the message")
	zone := fs.String("recipient-zone", "", "the recipient's IANA time zone (America/New_York): a quiet_per_recipient channel keeps its quiet hours in it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: herald enqueue --channel C --recipient R --payload JSON [flags]")
		fmt.Fprintln(stderr, "       herald enqueue < message.json      (an object, or an array of objects for a batch)")
		fmt.Fprintln(stderr, "\nPrints the id. Exit codes: 0 stored, 2 bad input (one line says why), 3 database unreachable.")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}

	var body []byte
	batch := false
	if *channel == "" && *recipient == "" && *payload == "" {
		var set []string // a message's flags beside a message on stdin would be dropped unseen
		fs.Visit(func(f *flag.Flag) { set = append(set, "--"+f.Name) })
		if len(set) > 0 {
			fmt.Fprintf(stderr, "herald enqueue: %s with a message on stdin: put the field in the JSON, or give --channel, --recipient and --payload\n",
				strings.Join(set, ", "))
			return exitUsage
		}
		b, err := io.ReadAll(stdin)
		if err != nil {
			fmt.Fprintf(stderr, "herald enqueue: reading stdin: %v\n", err)
			return exitUsage
		}
		body = b
		for _, c := range b {
			if c == ' ' || c == '\n' || c == '\t' || c == '\r' {
				continue
			}
			batch = c == '['
			break
		}
	} else {
		msg := map[string]any{"channel": *channel, "recipient": *recipient}
		raw := map[string]*string{"payload": payload, "metadata": metadata}
		for k, v := range raw {
			if *v == "" {
				continue
			}
			if !json.Valid([]byte(*v)) {
				fmt.Fprintf(stderr, "herald enqueue: --%s is not JSON\n", k)
				return exitUsage
			}
			msg[k] = json.RawMessage(*v)
		}
		for k, v := range map[string]string{"run_at": *runAt, "expires_at": *expiresAt, "priority": *priority, "idempotency_key": *idem,
			"ordering_key": *orderingKey, "max_attempts": *maxAttempts, "recipient_zone": *zone} {
			if v != "" {
				msg[k] = v
			}
		}
		body, _ = json.Marshal(msg)
	}

	pool, code := openPool(ctx, stderr, "herald enqueue", cliPool)
	if pool == nil {
		return code
	}
	defer pool.Close()
	var ids []int64
	var err error
	if batch {
		ids, err = intake.EnqueueBatch(ctx, pool, body, 10000)
	} else {
		var m intake.Message
		var id int64
		if m, err = intake.DecodeMessage(body); err == nil {
			id, err = intake.Enqueue(ctx, pool, m)
		}
		ids = []int64{id}
	}
	if code := cliError(stderr, "herald enqueue", err); code != exitOK {
		return code
	}
	for _, id := range ids {
		fmt.Fprintln(stdout, id)
	}
	return exitOK
}

// cliError prints err in one line and returns its exit code (exitOK for nil).
func cliError(stderr io.Writer, who string, err error) int {
	var ie *intake.InputError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ie) && (ie.OverQuota || ie.Busy): // try again later
		fmt.Fprintf(stderr, "%s: %s: %s\n", who, ie.Code, ie.Message)
		return exitFailure
	case errors.As(err, &ie):
		where := ""
		if ie.Index != nil {
			where = fmt.Sprintf(" (message %d)", *ie.Index)
		}
		fmt.Fprintf(stderr, "%s: %s%s: %s\n", who, ie.Code, where, ie.Message)
		return exitUsage
	case errors.Is(err, intake.ErrNotFound):
		fmt.Fprintf(stderr, "%s: %v\n", who, err)
		return exitFailure
	case intake.Unavailable(err):
		fmt.Fprintf(stderr, "%s: database unavailable: %s\n", who, strings.Join(strings.Fields(err.Error()), " "))
		return exitDatabase
	case pooledStatements(err):
		fmt.Fprintf(stderr, "%s: %v: herald reaches PostgreSQL through a transaction pooler (PgBouncer?): "+
			"add default_query_exec_mode=exec to DATABASE_URL (docs/operations.md, \"Behind PgBouncer\")\n", who, err)
		return exitFailure
	default:
		fmt.Fprintf(stderr, "%s: %v\n", who, err)
		return exitFailure
	}
}

// pooledStatements reports whether err is what a transaction pooler does to named
// prepared statements: one already exists on the server connection it handed over
// (42P05), or the one made earlier is on another (26000).
func pooledStatements(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && (pg.Code == "42P05" || pg.Code == "26000")
}

// runStatus is `herald status ID`.
func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	id, key, code, ok := messageArg("herald status", "What happened to one message. Exit codes: 0 found, 1 unknown, 2 bad input, 3 database unreachable.",
		args, stderr)
	if !ok {
		return code
	}
	pool, code := openPool(ctx, stderr, "herald status", cliPool)
	if pool == nil {
		return code
	}
	defer pool.Close()
	var s *intake.Status
	var err error
	if id != 0 {
		s, err = intake.GetStatus(ctx, pool, id)
	} else {
		s, err = intake.GetStatusByKey(ctx, pool, key)
	}
	if code := cliError(stderr, "herald status", err); code != exitOK {
		return code
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	str := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.Format(time.RFC3339Nano)
	}
	fmt.Fprintf(tw, "id\t%d\nchannel\t%s\nstatus\t%s\nattempts\t%d of %d\nrun_at\t%s\ncreated_at\t%s\nfinished_at\t%s\nexpires_at\t%s\nlast_error_class\t%s\nlast_error_code\t%s\nprovider_message_id\t%s\noutcome\t%s\noutcome_type\t%s\noutcome_code\t%s\noutcome_at\t%s\n",
		s.ID, s.Channel, s.Status, s.Attempts, s.MaxAttempts, s.RunAt.Format(time.RFC3339Nano), s.CreatedAt.Format(time.RFC3339Nano),
		at(s.FinishedAt), s.ExpiresAt.Format(time.RFC3339Nano), str(s.LastErrorClass), str(s.LastErrorCode), str(s.ProviderMessageID),
		str(s.Outcome), str(s.OutcomeType), str(s.OutcomeCode), at(s.OutcomeAt))
	tw.Flush()
	return exitOK
}

// runCancel is `herald cancel`: herald.cancel by id or by idempotency key.
func runCancel(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	id, key, code, ok := messageArg("herald cancel", "Withdraws one of your messages that is queued or held. Exit codes: 0 cancelled (printed),\n"+
		"1 unknown, or being sent or finished (the line says which), 2 bad input, 3 database unreachable.", args, stderr)
	if !ok {
		return code
	}
	pool, code := openPool(ctx, stderr, "herald cancel", cliPool)
	if pool == nil {
		return code
	}
	defer pool.Close()
	var err error
	what := fmt.Sprintf("message %d", id)
	if id != 0 {
		err = intake.Cancel(ctx, pool, id)
	} else {
		err, what = intake.CancelByKey(ctx, pool, key), fmt.Sprintf("the message of key %q", key)
	}
	if nc := (*intake.NotCancellable)(nil); errors.As(err, &nc) {
		fmt.Fprintf(stderr, "herald cancel: %s is %s\n", what, nc.Status)
		return exitFailure
	}
	if code := cliError(stderr, "herald cancel", err); code != exitOK {
		return code
	}
	fmt.Fprintln(stdout, "cancelled")
	return exitOK
}

// messageArg parses the arguments of a command that names one message: an ID, or
// --idempotency-key KEY (exactly one); about follows the usage lines. It returns the
// id, or 0 and the key; when not ok, code is the exit code (usage printed).
func messageArg(name, about string, args []string, stderr io.Writer) (id int64, key string, code int, ok bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&key, "idempotency-key", "", "the key the message was enqueued with (instead of ID)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s ID\n       %s --idempotency-key KEY\n\n%s\n", name, name, about)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, "", exitOK, false
		}
		return 0, "", exitUsage, false
	}
	switch {
	case fs.NArg() == 1 && key == "":
		n, err := strconv.ParseInt(fs.Arg(0), 10, 64)
		if err != nil || n < 1 {
			fmt.Fprintf(stderr, "%s: %q is not a message id\n", name, fs.Arg(0))
			return 0, "", exitUsage, false
		}
		return n, "", exitOK, true
	case fs.NArg() == 0 && key != "":
		return 0, key, exitOK, true
	}
	fs.Usage()
	return 0, "", exitUsage, false
}

// runStats is `herald stats`: herald.queue_stats as a table.
func runStats(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		fmt.Fprintln(stderr, "usage: herald stats\n\nMessages per channel and status (herald.queue_stats). Exit codes: 0, 3 database unreachable.")
		return exitUsage
	}
	pool, code := openPool(ctx, stderr, "herald stats", cliPool)
	if pool == nil {
		return code
	}
	defer pool.Close()
	rows, err := pool.Query(ctx, `SELECT channel, status, count, ready, coalesce(oldest_age::text, '-') FROM herald.queue_stats ORDER BY channel, status`)
	if code := cliError(stderr, "herald stats", err); code != exitOK {
		return code
	}
	defer rows.Close()
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANNEL\tSTATUS\tCOUNT\tREADY\tOLDEST AGE")
	for rows.Next() {
		var ch, st, age string
		var n, ready int64
		if err := rows.Scan(&ch, &st, &n, &ready, &age); err != nil {
			return cliError(stderr, "herald stats", err)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", ch, st, n, ready, age)
	}
	if code := cliError(stderr, "herald stats", rows.Err()); code != exitOK {
		return code
	}
	tw.Flush()
	return exitOK
}
