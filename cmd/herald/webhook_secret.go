package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/herald/herald/runner/sender/webhook"
)

// runWebhookSecret is `herald webhook-secret --channel NAME URL`: what the receiver at
// URL verifies with, one line per channel secret (HERALD_<CHANNEL>_WEBHOOK_SECRETS),
// the current first (during a rotation a receiver is given both): for a whsec_ secret
// the whsec_ secret of that URL when the channel signs per endpoint
// (HERALD_<CHANNEL>_WEBHOOK_PER_ENDPOINT=true); for a whsk_ signing key its whpk_
// public key, the same for every receiver. A whsec_ line is a secret, printed on
// purpose: run it where the receiver's owner is handed the value.
func runWebhookSecret(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("herald webhook-secret", flag.ContinueOnError)
	fs.SetOutput(stderr)
	channel := fs.String("channel", "", "the webhook channel (its HERALD_<CHANNEL>_WEBHOOK_SECRETS sign)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: herald webhook-secret --channel NAME URL")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if *channel == "" || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "herald webhook-secret: --channel NAME and one receiver URL (after the flags) are required")
		return exitUsage
	}
	url := fs.Arg(0)
	name := "HERALD_" + strings.ToUpper(*channel) + "_WEBHOOK_SECRETS"
	ev := &environ{}
	secrets := strings.Fields(ev.secret(name))
	if len(secrets) == 0 {
		fmt.Fprintf(stderr, "herald webhook-secret: %s is not set\n", name)
		return exitUsage
	}
	for i, s := range secrets {
		e, err := webhook.EndpointSecret(s, url)
		if strings.HasPrefix(s, webhook.SigningKeyPrefix) {
			e, err = webhook.PublicKey(s)
		}
		if err != nil {
			fmt.Fprintf(stderr, "herald webhook-secret: %s: secret %d %v\n", name, i+1, err)
			return exitUsage
		}
		fmt.Fprintln(stdout, e)
	}
	return exitOK
}
