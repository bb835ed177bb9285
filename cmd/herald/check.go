package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/herald/herald/runner"
	"github.com/herald/herald/runner/sender"
)

// runCheck is `herald check`: the provider checks `herald run` makes at start, alone
// (no database): one line per channel, exit 0 when every check passed, 1 otherwise.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("herald check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ev := &environ{}
	specs := sendersFromEnv(ev)
	fs.Var(specs, "sender", "CHANNEL=SPEC, repeatable (env HERALD_SENDER_<CHANNEL>), as for herald run")
	timeout := fs.Duration("check-timeout", ev.duration("HERALD_CHECK_TIMEOUT", runner.DefaultCheckTimeout), "time one provider check may take (env HERALD_CHECK_TIMEOUT)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: herald check [flags]")
		fmt.Fprintln(stderr, "\nChecks each configured provider as herald run does at start (SMTP: connect, STARTTLS, AUTH;")
		fmt.Fprintln(stderr, "SendGrid: the key and its mail.send scope; Twilio: the account), sending nothing; with an OTLP")
		fmt.Fprintln(stderr, "endpoint (OTEL_EXPORTER_OTLP_ENDPOINT), exports one span to it.")
		fmt.Fprintln(stderr, "Exit codes: 0 all passed, 1 a check failed, 2 bad configuration. Flags:")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if err := ev.err(); err != nil {
		fmt.Fprintf(stderr, "herald check: %v\n", err)
		return exitUsage
	}
	if len(specs) == 0 {
		fmt.Fprintln(stderr, "herald check: no channel has a sender: set HERALD_SENDER_<CHANNEL> (or --sender)")
		return exitUsage
	}
	senders, closeSenders, err := buildSenders(ev, specs, nil, slog.New(slog.DiscardHandler)) // checks send nothing: no ids to make
	if err != nil {
		fmt.Fprintf(stderr, "herald check: %v\n", err)
		return exitUsage
	}
	defer closeSenders()
	failed := runner.CheckSenders(ctx, senders, *timeout)
	channels := make([]string, 0, len(senders))
	for ch := range senders {
		channels = append(channels, ch)
	}
	sort.Strings(channels)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for _, ch := range channels {
		kind, _, _ := strings.Cut(specs[ch], ":")
		switch err := failed[ch]; {
		case err != nil:
			f := sender.Classify(err)
			fmt.Fprintf(tw, "%s\t%s\tFAIL\t%s\n", ch, kind, f.Error())
		case isChecker(senders[ch]):
			fmt.Fprintf(tw, "%s\t%s\tok\t\n", ch, kind)
		default:
			fmt.Fprintf(tw, "%s\t%s\tok\tnothing to check\n", ch, kind)
		}
	}
	tr, err := tracingFromEnv(ctx, ev, slog.New(slog.DiscardHandler))
	if err != nil {
		tw.Flush()
		fmt.Fprintf(stderr, "herald check: %v\n", err)
		return exitUsage
	}
	if tr.Tracer != nil {
		cctx, cancel := context.WithTimeout(ctx, *timeout)
		err := tr.check(cctx)
		cancel()
		if err != nil {
			fmt.Fprintf(tw, "tracing\totlp\tFAIL\t%s: %v\n", tr.endpoint, err)
			failed["tracing"] = err
		} else {
			fmt.Fprintf(tw, "tracing\totlp\tok\ta span exported to %s\n", tr.endpoint)
		}
		tr.shutdown()
	}
	tw.Flush()
	if len(failed) > 0 {
		return exitFailure
	}
	return exitOK
}

func isChecker(s sender.Sender) bool {
	_, ok := s.(sender.Checker)
	return ok
}
