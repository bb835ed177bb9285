package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"net/netip"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald/herald/runner/idtag"
	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/egress"
	"github.com/herald/herald/runner/sender/email"
	"github.com/herald/herald/runner/sender/ratelimit"
	"github.com/herald/herald/runner/sender/sendgrid"
	"github.com/herald/herald/runner/sender/ses"
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

func sendersFromEnv(ev *environ) senderSpecs {
	s := senderSpecs{}
	for ch, v := range ev.withPrefix("HERALD_SENDER_") {
		s[strings.ToLower(ch)] = v
	}
	return s
}

// closer is implemented by senders that hold a file or connection.
type closer interface{ Close() error }

// buildSenders builds every channel's sender, the e-mail and webhook senders making
// Message-IDs and webhook-ids with idKey; the returned function closes those that
// hold resources. A sender whose secrets came from files is wrapped to be built again
// when they change (reloading; checkedReloading for one with a check).
func buildSenders(ev *environ, specs senderSpecs, idKey idtag.KeySource, log *slog.Logger) (map[string]sender.Sender, func(), error) {
	senders := map[string]sender.Sender{}
	closeAll := func() {
		for _, s := range senders {
			if c, ok := s.(closer); ok {
				c.Close()
			}
		}
	}
	for ch, spec := range specs {
		read := len(ev.files)
		s, err := buildSender(ev, ch, spec, idKey)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("channel %s: %w", ch, err)
		}
		senders[ch] = s
		if len(ev.files) > read {
			build := func() (sender.Sender, []string, error) {
				again := &environ{}
				s, err := buildSender(again, ch, spec, idKey)
				return s, again.files, err
			}
			r, err := newReloading(ch, s, ev.files[read:], build, log)
			if err != nil {
				closeAll()
				return nil, nil, fmt.Errorf("channel %s: %w", ch, err)
			}
			senders[ch] = r
			if _, checks := s.(sender.Checker); checks {
				senders[ch] = checkedReloading{r}
			}
		}
	}
	return senders, closeAll, nil
}

// buildSender turns a channel's spec into a Sender:
//
//	sink:-          one JSON line per delivery on standard output
//	sink:PATH       the same, appended to the file PATH
//	noop            accept and drop (benchmarks)
//	noop:DURATION   accept and drop after DURATION (a slow provider, for tests)
//	smtp, sendgrid, ses, twilio, webhook   the providers, configured by HERALD_<PROVIDER>_*
//	                (docs/operations.md, "Providers"); with HERALD_<PROVIDER>_RATE, behind
//	                this runner's adaptive limiter (the limit shared by all runners is
//	                the channel's rate, in SQL)
func buildSender(ev *environ, channel, spec string, idKey idtag.KeySource) (sender.Sender, error) {
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
	case "smtp", "sendgrid", "ses", "twilio", "webhook":
		if arg != "" {
			return nil, fmt.Errorf("sender %q: %s takes no argument; configure it with HERALD_%s_*", spec, kind, strings.ToUpper(kind))
		}
		setting := providerSetting(ev, channel, kind)
		s, err := buildProvider(ev, kind, channel, setting, idKey)
		if err == nil {
			err = ev.err()
		}
		if err != nil {
			return nil, fmt.Errorf("sender %s: %w", kind, err)
		}
		if perSecond := ev.number(setting("RATE"), 0); ev.err() != nil {
			return nil, ev.err()
		} else if perSecond > 0 {
			return ratelimit.New(s, perSecond, max(1, int(perSecond))), nil
		}
		return s, nil
	default:
		return nil, fmt.Errorf("sender %q: unknown kind %q (known: sink, noop, smtp, sendgrid, ses, twilio, webhook)", spec, kind)
	}
}

// providerSetting returns the variable that holds a provider setting for a
// channel's sender. An smtp, sendgrid or twilio channel with any
// HERALD_<CHANNEL>_<PROVIDER>_* variable set reads all of that provider's settings
// there (another account, relay or number of the same provider; nothing is taken
// from the shared settings, so two accounts' credentials never mix); the others read
// HERALD_<PROVIDER>_*. Webhook settings are shared; a webhook channel's own are its
// secrets (HERALD_<CHANNEL>_WEBHOOK_SECRETS, _PER_ENDPOINT).
func providerSetting(ev *environ, channel, kind string) func(key string) string {
	prefix := "HERALD_" + strings.ToUpper(kind) + "_"
	own := "HERALD_" + strings.ToUpper(channel) + "_" + strings.ToUpper(kind) + "_"
	if kind != "webhook" && len(ev.withPrefix(own)) > 0 {
		prefix = own
	}
	return func(key string) string { return prefix + key }
}

// buildProvider builds a provider's sender for a channel, each setting read from the
// variable setting names (providerSetting); e-mail and webhook senders make their
// ids with idKey.
func buildProvider(ev *environ, kind, channel string, setting func(key string) string, idKey idtag.KeySource) (sender.Sender, error) {
	ch := "HERALD_" + strings.ToUpper(channel)
	defaults := email.Defaults{From: ev.str(ch+"_FROM", ""), ReplyTo: ev.str(ch+"_REPLY_TO", ""),
		MessageIDDomain: ev.str("HERALD_MESSAGE_ID_DOMAIN", ""), ReturnPath: ev.str(ch+"_RETURN_PATH", ""), MessageIDKey: idKey}
	if rp := defaults.ReturnPath; rp != "" {
		if a, err := mail.ParseAddress(rp); err != nil || a.Name != "" || a.Address != rp {
			return nil, fmt.Errorf("%s_RETURN_PATH: %q is not a bare address (bounces@example.com)", ch, rp)
		}
	}
	if u := ev.str(ch+"_UNSUBSCRIBE_URL", ""); u != "" {
		keys, err := signingKeys(ev, "HERALD_UNSUBSCRIBE_SECRETS")
		switch {
		case err != nil:
			return nil, err
		case len(keys) == 0:
			return nil, fmt.Errorf("%s_UNSUBSCRIBE_URL needs HERALD_UNSUBSCRIBE_SECRETS: the links are signed", ch)
		}
		if p, err := url.Parse(u); err != nil || p.Host == "" || (p.Scheme != "https" && !(p.Scheme == "http" && loopbackHost(p.Hostname()))) {
			return nil, fmt.Errorf("%s_UNSUBSCRIBE_URL: %q is not an https URL (RFC 8058; http only for a loopback host)", ch, u)
		}
		defaults.UnsubscribeURL, defaults.UnsubscribeKey = u, keys[0]
	}
	str := func(key string) string { return ev.str(setting(key), "") }
	duration := func(key string, def time.Duration) time.Duration { return ev.duration(setting(key), def) }
	secret := func(key string) string { return ev.secret(setting(key)) }
	switch kind {
	case "smtp":
		cfg := smtpsender.Config{Host: str("HOST"), TLS: str("TLS"), Username: str("USERNAME"),
			Password: secret("PASSWORD"), Auth: str("AUTH"), Port: ev.int(setting("PORT"), 0),
			Timeout: duration("TIMEOUT", 10*time.Second), Pool: ev.int(setting("POOL"), 16),
			ThrottleWait: duration("THROTTLE_WAIT", time.Minute), DSN: str("DSN"), HELO: str("HELO"), Defaults: defaults}
		if ca := str("CA_FILE"); ca != "" {
			pem, err := os.ReadFile(ca)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", setting("CA_FILE"), err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("%s: no PEM certificate in %s", setting("CA_FILE"), ca)
			}
			cfg.TLSConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
		return smtpsender.New(cfg)
	case "ses":
		roots, err := sender.LoadCAFile(str("CA_FILE"))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", setting("CA_FILE"), err)
		}
		return ses.New(context.Background(), ses.Config{Region: str("REGION"), ConfigurationSet: str("CONFIGURATION_SET"),
			Endpoint: str("URL"), Timeout: duration("TIMEOUT", 10*time.Second), Defaults: defaults, RootCAs: roots})
	case "sendgrid", "twilio":
		roots, err := sender.LoadCAFile(str("CA_FILE"))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", setting("CA_FILE"), err)
		}
		if kind == "sendgrid" {
			return sendgrid.New(sendgrid.Config{APIKey: secret("API_KEY"), BaseURL: str("URL"),
				Timeout: duration("TIMEOUT", 10*time.Second), Defaults: defaults, RootCAs: roots})
		}
		return twilio.New(twilio.Config{AccountSID: str("ACCOUNT_SID"), AuthToken: secret("AUTH_TOKEN"),
			APIKeySID: str("API_KEY_SID"), APIKeySecret: secret("API_KEY_SECRET"),
			From: str("FROM"), MessagingServiceSID: str("MESSAGING_SERVICE_SID"), BaseURL: str("URL"),
			StatusCallback: str("STATUS_CALLBACK"), SmartEncoded: ev.boolean(setting("SMART_ENCODED"), false),
			WhatsApp: ev.boolean(setting("WHATSAPP"), false),
			Timeout:  duration("TIMEOUT", 10*time.Second), RootCAs: roots})
	default: // webhook: the channel's own secrets (two while rotating), never shared
		roots, err := sender.LoadCAFile(str("CA_FILE"))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", setting("CA_FILE"), err)
		}
		if ua := str("USER_AGENT"); ua != "" {
			if err := webhook.CheckUserAgent(ua); err != nil {
				return nil, fmt.Errorf("%s: %w", setting("USER_AGENT"), err)
			}
		}
		body := ev.str(ch+"_WEBHOOK_BODY", "envelope")
		if body != "envelope" && body != "payload" {
			return nil, fmt.Errorf("%s_WEBHOOK_BODY=%q: want envelope (herald's, the default) or payload (the payload alone: chat services' incoming webhooks)", ch, body)
		}
		proxy := secret("PROXY")
		proxyTLS, err := proxyTLSConfig(ev, setting, proxy)
		if err != nil {
			return nil, err
		}
		policy, err := egressPolicy(str("ALLOW"), proxy, proxyTLS)
		if name := setting("ALLOW"); err != nil {
			if proxy != "" {
				name = setting("PROXY")
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return webhook.New(webhook.Config{Secrets: strings.Fields(ev.secret(ch + "_WEBHOOK_SECRETS")),
			Timeout: duration("TIMEOUT", 30*time.Second), Egress: policy, RootCAs: roots,
			PerEndpoint: ev.boolean(ch+"_WEBHOOK_PER_ENDPOINT", false), PayloadBody: body == "payload", CircuitFailures: ev.int(setting("CIRCUIT_FAILURES"), 5),
			CircuitCooldown: duration("CIRCUIT_COOLDOWN", 30*time.Second), HostConcurrency: ev.int(setting("HOST_CONCURRENCY"), 32),
			IDKey: idKey, UserAgent: str("USER_AGENT")})
	}
}

// egressPolicy is where webhooks may go: everywhere but the refused networks, except
// the allow-list; or through proxy (a URL, its password a secret: never in an error),
// an https one with proxyTLS (proxyTLSConfig).
func egressPolicy(allow, proxy string, proxyTLS *tls.Config) (egress.Policy, error) {
	p := egress.Policy{Allow: list(allow), ProxyTLS: proxyTLS}
	if proxy != "" {
		u, err := url.Parse(proxy)
		if err != nil {
			return p, errors.New("not a URL (http(s)://[user:password@]host:port)")
		}
		p.Proxy = u
	}
	return p, p.Check()
}

// proxyTLSConfig reads the TLS of an https egress proxy: the CAs its certificate
// chains to (PROXY_CA_FILE; default the system's) and the client certificate herald
// shows it alone (PROXY_CERT_FILE and PROXY_KEY_FILE, PEM: Smokescreen's mTLS names a
// client by it). nil when none is set; only with an https proxy. The files are read
// again when they change (the key is never printed).
func proxyTLSConfig(ev *environ, setting func(key string) string, proxy string) (*tls.Config, error) {
	ca, cert, key := ev.str(setting("PROXY_CA_FILE"), ""), ev.str(setting("PROXY_CERT_FILE"), ""), ev.str(setting("PROXY_KEY_FILE"), "")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	if !strings.HasPrefix(proxy, "https://") {
		return nil, fmt.Errorf("%s, %s and %s are for an https:// %s", setting("PROXY_CA_FILE"), setting("PROXY_CERT_FILE"),
			setting("PROXY_KEY_FILE"), setting("PROXY"))
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		roots, err := sender.LoadCAFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", setting("PROXY_CA_FILE"), err)
		}
		cfg.RootCAs = roots
		ev.files = append(ev.files, ca)
	}
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("%s and %s go together: the proxy's client certificate and its key", setting("PROXY_CERT_FILE"), setting("PROXY_KEY_FILE"))
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", setting("PROXY_CERT_FILE"), setting("PROXY_KEY_FILE"), err)
		}
		cfg.Certificates = []tls.Certificate{pair}
		ev.files = append(ev.files, cert, key)
	}
	return cfg, nil
}

// list splits a comma- or space-separated setting into its entries.
func list(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
}

// loopbackHost reports whether host is localhost or a loopback address.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// installationKey is the key of the senders' Message-IDs and webhook-ids
// (idtag.KeySource): the newest of herald.message_id_keys, read on the first send and
// kept for the process, so a rotation takes effect as the runners restart. pool is
// set once it is open, before any send.
type installationKey struct {
	pool *pgxpool.Pool
	mu   sync.Mutex
	key  []byte
}

// get returns the key, reading it the first time (idtag.LoadKeys).
func (k *installationKey) get(ctx context.Context) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.key == nil {
		if k.pool == nil {
			return nil, sender.Configuration(errors.New("no database to read herald.message_id_keys from"), "")
		}
		keys, err := idtag.LoadKeys(ctx, k.pool)
		if err != nil {
			return nil, err
		}
		k.key = keys[0]
	}
	return k.key, nil
}
