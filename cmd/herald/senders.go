package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/email"
	"github.com/herald/herald/runner/sender/ratelimit"
	"github.com/herald/herald/runner/sender/sendgrid"
	"github.com/herald/herald/runner/sender/sink"
	smtpsender "github.com/herald/herald/runner/sender/smtp"
	"github.com/herald/herald/runner/sender/twilio"
	"github.com/herald/herald/runner/sender/webhook"
)

// senderSpecs collects channel=spec pairs from HERALD_SENDER_<CHANNEL> variables
// and --sender flags (a flag wins over the variable for the same channel).
type senderSpecs map[string]string

// String lists the pairs as CHANNEL=SPEC, sorted (flag.Value).
func (s senderSpecs) String() string {
	var parts []string
	for ch, spec := range s {
		parts = append(parts, ch+"="+spec)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// Set parses one --sender CHANNEL=SPEC.
func (s senderSpecs) Set(v string) error {
	ch, spec, ok := strings.Cut(v, "=")
	if !ok || ch == "" || spec == "" {
		return fmt.Errorf("want CHANNEL=SPEC, e.g. email=sink:-, got %q", v)
	}
	s[strings.ToLower(ch)] = spec
	return nil
}

func sendersFromEnv() senderSpecs {
	s := senderSpecs{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if ch, ok := strings.CutPrefix(k, "HERALD_SENDER_"); ok && ch != "" && v != "" {
			s[strings.ToLower(ch)] = v
		}
	}
	return s
}

// closer is implemented by senders that hold a file or connection.
type closer interface{ Close() error }

// secret reads a secret from the variable NAME, or from the file named by NAME_FILE
// (one trailing newline dropped). Secrets are never logged.
func secret(name string) (string, error) {
	v, file := os.Getenv(name), os.Getenv(name+"_FILE")
	switch {
	case v != "" && file != "":
		return "", fmt.Errorf("set %s or %s_FILE, not both", name, name)
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s_FILE: %w", name, err)
		}
		return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
	}
	return v, nil
}

// providerEnv reads the numeric settings of a provider, refusing values that do not
// parse.
type providerEnv struct {
	prefix string // HERALD_SMTP and so on
	err    error
}

func (p *providerEnv) str(key string) string { return os.Getenv(p.prefix + "_" + key) }

func (p *providerEnv) duration(key string, def time.Duration) time.Duration {
	v := p.str(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		p.err = fmt.Errorf("%s_%s=%q is not a duration such as 10s", p.prefix, key, v)
	}
	return d
}

func (p *providerEnv) number(key string, def float64) float64 {
	v := p.str(key)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		p.err = fmt.Errorf("%s_%s=%q is not a non-negative number", p.prefix, key, v)
	}
	return f
}

// Default client-side rates, in sends per second (HERALD_<PROVIDER>_RATE; 0 = none).
var defaultRates = map[string]float64{"smtp": 50, "sendgrid": 100, "twilio": 10, "webhook": 50}

// buildSender turns a channel's spec into a Sender:
//
//	sink:-          one JSON line per delivery on standard output
//	sink:PATH       the same, appended to the file PATH
//	noop            accept and drop (benchmarks)
//	noop:DURATION   accept and drop after DURATION (a slow provider, for tests)
//	smtp, sendgrid, twilio, webhook   the providers, configured by HERALD_<PROVIDER>_*
//	                (docs/operations.md, "Providers"), wrapped in an adaptive rate limiter
func buildSender(channel, spec string) (sender.Sender, error) {
	kind, arg, _ := strings.Cut(spec, ":")
	switch kind {
	case "sink":
		if arg == "" {
			return nil, fmt.Errorf("sender %q: sink needs a path or - (sink:-)", spec)
		}
		return sink.Open(arg)
	case "noop":
		var d time.Duration
		if arg != "" {
			var err error
			if d, err = time.ParseDuration(arg); err != nil || d < 0 {
				return nil, fmt.Errorf("sender %q: noop takes a duration such as noop:250ms", spec)
			}
		}
		return sink.Noop{Delay: d}, nil
	case "smtp", "sendgrid", "twilio", "webhook":
		if arg != "" {
			return nil, fmt.Errorf("sender %q: %s takes no argument; configure it with HERALD_%s_*", spec, kind, strings.ToUpper(kind))
		}
		p := &providerEnv{prefix: "HERALD_" + strings.ToUpper(kind)}
		s, err := buildProvider(kind, channel, p)
		if err == nil {
			err = p.err
		}
		if err != nil {
			return nil, fmt.Errorf("sender %s: %w", kind, err)
		}
		if perSecond := p.number("RATE", defaultRates[kind]); p.err != nil {
			return nil, p.err
		} else if perSecond > 0 {
			return ratelimit.New(s, perSecond, max(1, int(perSecond))), nil
		}
		return s, nil
	default:
		return nil, fmt.Errorf("sender %q: unknown kind %q (known: sink, noop, smtp, sendgrid, twilio, webhook)", spec, kind)
	}
}

func buildProvider(kind, channel string, p *providerEnv) (sender.Sender, error) {
	ch := "HERALD_" + strings.ToUpper(channel)
	defaults := email.Defaults{From: os.Getenv(ch + "_FROM"), ReplyTo: os.Getenv(ch + "_REPLY_TO"),
		MessageIDDomain: os.Getenv("HERALD_MESSAGE_ID_DOMAIN")}
	switch kind {
	case "smtp":
		password, err := secret("HERALD_SMTP_PASSWORD")
		if err != nil {
			return nil, err
		}
		cfg := smtpsender.Config{Host: p.str("HOST"), TLS: p.str("TLS"), Username: p.str("USERNAME"), Password: password,
			Auth: p.str("AUTH"), Timeout: p.duration("TIMEOUT", 10*time.Second), Pool: int(p.number("POOL", 4)),
			ThrottleWait: p.duration("THROTTLE_WAIT", time.Minute), Defaults: defaults}
		if v := p.str("PORT"); v != "" {
			if cfg.Port, err = strconv.Atoi(v); err != nil {
				return nil, fmt.Errorf("HERALD_SMTP_PORT=%q is not a port", v)
			}
		}
		if ca := p.str("CA_FILE"); ca != "" {
			pem, err := os.ReadFile(ca)
			if err != nil {
				return nil, fmt.Errorf("HERALD_SMTP_CA_FILE: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("HERALD_SMTP_CA_FILE: no PEM certificate in %s", ca)
			}
			cfg.TLSConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
		return smtpsender.New(cfg)
	case "sendgrid":
		key, err := secret("HERALD_SENDGRID_API_KEY")
		if err != nil {
			return nil, err
		}
		return sendgrid.New(sendgrid.Config{APIKey: key, BaseURL: p.str("URL"), Timeout: p.duration("TIMEOUT", 10*time.Second), Defaults: defaults})
	case "twilio":
		token, err := secret("HERALD_TWILIO_AUTH_TOKEN")
		if err != nil {
			return nil, err
		}
		return twilio.New(twilio.Config{AccountSID: p.str("ACCOUNT_SID"), AuthToken: token, From: p.str("FROM"),
			MessagingServiceSID: p.str("MESSAGING_SERVICE_SID"), BaseURL: p.str("URL"), Timeout: p.duration("TIMEOUT", 10*time.Second)})
	default: // webhook
		key, err := secret("HERALD_WEBHOOK_SECRET")
		if err != nil {
			return nil, err
		}
		return webhook.New(webhook.Config{Secret: []byte(key), Timeout: p.duration("TIMEOUT", 10*time.Second)})
	}
}
