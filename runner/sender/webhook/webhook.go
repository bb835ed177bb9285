// Package webhook delivers messages as signed JSON POSTs to the message's recipient
// URL, and verifies such requests on the receiving side.
//
// # Wire format
//
// The body is {"id", "channel", "recipient", "payload", "metadata", "attempt"}, or
// for a channel that posts payloads (Config.PayloadBody: chat services' incoming
// webhooks) the payload alone.
// Signatures follow the Standard Webhooks specification (standardwebhooks.com), so a
// receiver verifies them with its reference libraries: headers webhook-id (ID:
// "msg_", herald's message id, "_" and a tag of it under the installation's key, the
// same on every attempt and no other installation's: receivers deduplicate on it),
// webhook-timestamp (Unix seconds) and webhook-signature, a space-separated list of
// signatures over "<webhook-id>.<webhook-timestamp>.<body>", one per secret: "v1," +
// base64 HMAC-SHA256 for a "whsec_" secret (base64 of at least 24 random bytes), "v1a,"
// + base64 Ed25519 for a "whsk_" signing key (base64 of a 32-byte seed), which
// receivers verify with its "whpk_" public key (PublicKey) and cannot sign with. A
// channel has its own, and two at once while one is rotated out. A channel that signs
// per endpoint gives each receiver URL its own whsec_ secret, derived from the
// channel's (EndpointSecret), so that receivers sharing a channel cannot sign for each
// other; a whsk_ key needs no such thing. Verify checks a request. The User-Agent is
// DefaultUserAgent or the operator's (Config.UserAgent), for receivers' firewalls. A W3C trace context in the message's metadata
// (traceparent, tracestate) goes along as those headers, so the receiver's tracing
// continues the producer's trace.
//
// # Where it connects, and failure classes
//
// Connections obey an egress.Policy (private, loopback, link-local… refused unless
// allowed) checked on the address dialled, or go through the operator's egress proxy
// (egress.Policy.Proxy), which judges them; URLs with user info are refused; proxies
// from the environment are not used; redirects are never followed. 2xx delivered
// (the provider id is the X-Request-Id answer header, if any); 3xx permanent (code
// "redirect"); refused by the policy permanent (code "egress_refused"); 410 Gone
// permanent; 401 and 403 transient (the receiver refused this request: its own
// configuration, not the channel's, so the channel is not paused); the rest as
// sender.FromHTTP; connection errors and timeouts transient; the proxy's own answers
// as proxyFailure.
package webhook

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/herald/herald/runner/idtag"
	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/egress"
	"github.com/herald/herald/runner/tracecontext"
)

// Header names of the wire format (Standard Webhooks).
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Prefixes of the Standard Webhooks keys: a symmetric secret, an Ed25519 signing key
// (herald's side) and its public key (the receiver's).
const (
	SecretPrefix     = "whsec_"
	SigningKeyPrefix = "whsk_"
	PublicKeyPrefix  = "whpk_"
)

// Config is how to sign and where a Sender may connect.
type Config struct {
	// Secrets sign each request ("whsec_…" or "whsk_…"); all of them, so a receiver that
	// knows either verifies during a rotation. At least one.
	Secrets []string
	// Timeout bounds one request (default 30s: receivers that do work before they
	// answer take 15 to 30 seconds).
	Timeout time.Duration
	// Egress is where connections may go (default: the refused networks refused).
	Egress egress.Policy
	// RootCAs, when not nil, are the only CAs trusted for receivers' TLS
	// (HERALD_WEBHOOK_CA_FILE: receivers inside a network with its own CA).
	RootCAs *x509.CertPool
	// PerEndpoint signs each request with the recipient URL's own secret
	// (EndpointSecret of each whsec_ secret) instead of the channel's; whsk_ keys sign
	// as they are (a receiver holds only the public key).
	PerEndpoint bool
	// PayloadBody posts the message's payload itself as the body instead of herald's
	// envelope ({"id", "channel", …}): what chat services' incoming webhooks take
	// (Slack's {"text": …}, Discord's {"content": …}), which refuse anything else.
	// The Standard Webhooks headers go along, signing that body.
	PayloadBody bool
	// CircuitFailures is how many failures in a row (no connection, a timeout, 5xx,
	// 429) open a receiver host's circuit: its messages then wait (rate_limited, the
	// attempt given back) instead of each holding a send until its timeout (default
	// 5; below 0: never).
	CircuitFailures int
	// CircuitCooldown is how long an open circuit waits before one trial request
	// (default 30s); each failed trial doubles it, up to 32 times.
	CircuitCooldown time.Duration
	// HostConcurrency is the most sends in flight to one receiver site, the registrable
	// domain of the URL's host (default 32; below 0: no bound): a message past it waits
	// (rate_limited, code host_busy, the attempt given back), so one slow receiver,
	// under however many names of its domain, holds no more of the runner's sends.
	HostConcurrency int
	// IDKey gives the installation's key (idtag.LoadKeys), which makes webhook-ids
	// (ID). Required: without it, or when it fails, Send fails as configuration.
	IDKey idtag.KeySource
	// UserAgent is the User-Agent of every request (default DefaultUserAgent): what
	// a receiver's firewall allows (AWS WAF's Bot Control blocks HTTP libraries'
	// own, Go-http-client among them). Printable ASCII, at most 256 characters.
	UserAgent string
}

// DefaultUserAgent is the User-Agent of webhooks when Config.UserAgent is empty; the
// 1 is the wire format's version (its body and the Standard Webhooks headers).
const DefaultUserAgent = "herald-webhooks/1"

// Sender posts messages to their recipient URL. It is safe for concurrent use.
type Sender struct {
	signers     []signer
	perEndpoint bool
	payloadBody bool
	client      *http.Client
	circuit     *circuit
	hosts       *hosts
	idKey       idtag.KeySource
	userAgent   string
	proxied     bool // connections go through an egress proxy (egress.Policy.Proxy)
}

// signer is one of a channel's secrets: an HMAC key, or an Ed25519 signing key.
type signer struct {
	hmac []byte
	ed   ed25519.PrivateKey
}

// New checks cfg and returns a Sender. Its errors never contain a secret.
func New(cfg Config) (*Sender, error) {
	if len(cfg.Secrets) == 0 {
		return nil, errors.New("webhook: no signing secret (whsec_… or whsk_…)")
	}
	signers := make([]signer, len(cfg.Secrets))
	for i, s := range cfg.Secrets {
		var err error
		if strings.HasPrefix(s, SigningKeyPrefix) {
			signers[i].ed, err = DecodeSigningKey(s)
		} else {
			signers[i].hmac, err = DecodeSecret(s)
		}
		if err != nil {
			return nil, fmt.Errorf("webhook: secret %d: %w", i+1, err)
		}
	}
	if err := cfg.Egress.Check(); err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	if err := CheckUserAgent(cfg.UserAgent); err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	client := sender.ProviderClient(cfg.Timeout, cfg.RootCAs)
	transport := client.Transport.(*http.Transport)
	cfg.Egress.Transport(transport, cfg.Timeout)
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if cfg.CircuitFailures == 0 {
		cfg.CircuitFailures = 5
	}
	if cfg.CircuitCooldown <= 0 {
		cfg.CircuitCooldown = 30 * time.Second
	}
	if cfg.HostConcurrency == 0 {
		cfg.HostConcurrency = 32
	}
	return &Sender{signers: signers, perEndpoint: cfg.PerEndpoint, proxied: cfg.Egress.Proxy != nil, payloadBody: cfg.PayloadBody, client: client, idKey: cfg.IDKey, userAgent: cfg.UserAgent,
		circuit: newCircuit(cfg.CircuitFailures, cfg.CircuitCooldown), hosts: newHosts(cfg.HostConcurrency)}, nil
}

// CheckUserAgent says why ua cannot be a User-Agent (Config.UserAgent): it must be
// printable ASCII, one header line, of 1 to 256 characters.
func CheckUserAgent(ua string) error {
	if ua == "" || len(ua) > 256 || strings.IndexFunc(ua, func(r rune) bool { return r < ' ' || r > '~' }) >= 0 {
		return errors.New("the User-Agent must be printable ASCII of 1 to 256 characters")
	}
	return nil
}

// idUse is what a webhook-id's tag is for (idtag).
const idUse = "herald-webhook-id"

// ID is the webhook-id of herald message id: "msg_<id>_<tag>", tag idtag.Text of the
// id for "herald-webhook-id" under key. The same on every attempt, so receivers
// deduplicate on it; another installation (another region's herald, sending to the
// same receiver with the same secret) never makes it, so no receiver drops one
// installation's message as a repeat of another's.
func ID(id int64, key []byte) string {
	return "msg_" + strconv.FormatInt(id, 10) + "_" + idtag.Text(key, idUse, id)
}

// EndpointSecret is the secret of one receiver URL on a channel that signs per
// endpoint: "whsec_" + base64 of HMAC-SHA256 under the channel secret's key of
// "herald-endpoint:" + url, url exactly as the messages are enqueued with it. Give
// each receiver its own; one receiver's secret verifies nothing sent to another.
func EndpointSecret(channelSecret, url string) (string, error) {
	key, err := DecodeSecret(channelSecret)
	if err != nil {
		return "", err
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(endpointKey(key, url)), nil
}

func endpointKey(channelKey []byte, url string) []byte {
	mac := hmac.New(sha256.New, channelKey)
	mac.Write([]byte("herald-endpoint:" + url))
	return mac.Sum(nil)
}

// DecodeSecret reads a "whsec_" secret into its key (at least 24 bytes).
func DecodeSecret(s string) ([]byte, error) {
	b64, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return nil, errors.New("must start with " + SecretPrefix)
	}
	k, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, errors.New("is not " + SecretPrefix + " followed by base64")
	}
	if len(k) < 24 {
		return nil, fmt.Errorf("holds %d bytes; at least 24 are needed", len(k))
	}
	return k, nil
}

// DecodeSigningKey reads a "whsk_" signing key: base64 of a 32-byte Ed25519 seed (as
// the Standard Webhooks libraries serialize it).
func DecodeSigningKey(s string) (ed25519.PrivateKey, error) {
	b64, ok := strings.CutPrefix(s, SigningKeyPrefix)
	if !ok {
		return nil, errors.New("must start with " + SigningKeyPrefix)
	}
	seed, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("is not %s followed by the base64 of a %d-byte Ed25519 seed", SigningKeyPrefix, ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// PublicKey is the "whpk_" public key of a "whsk_" signing key: what a receiver
// verifies "v1a" signatures with.
func PublicKey(signingKey string) (string, error) {
	k, err := DecodeSigningKey(signingKey)
	if err != nil {
		return "", err
	}
	return PublicKeyPrefix + base64.StdEncoding.EncodeToString(k.Public().(ed25519.PublicKey)), nil
}

// SignAsymmetric returns one "v1a,<base64>" Ed25519 signature of body sent as id at
// timestamp ts.
func SignAsymmetric(key ed25519.PrivateKey, id string, ts int64, body []byte) string {
	return "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(key, signedContent(id, ts, body)))
}

// signedContent is what every signature covers: "<webhook-id>.<webhook-timestamp>.<body>".
func signedContent(id string, ts int64, body []byte) []byte {
	return append([]byte(id+"."+strconv.FormatInt(ts, 10)+"."), body...)
}

// Sign returns one "v1,<base64>" signature of body sent as id at timestamp ts.
func Sign(key []byte, id string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write(signedContent(id, ts, body))
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Verify checks a received webhook against any of keys ("whsec_" secrets, or "whpk_"
// public keys for "v1a" signatures): one signature of the webhook-signature list must
// match, and the timestamp must be within tolerance of now (an older request is a
// replay).
func Verify(keys []string, h http.Header, body []byte, tolerance time.Duration, now time.Time) error {
	id := h.Get(HeaderID)
	ts, err := strconv.ParseInt(h.Get(HeaderTimestamp), 10, 64)
	if id == "" || err != nil {
		return errors.New("webhook: missing webhook-id or bad webhook-timestamp")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return errors.New("webhook: timestamp outside the tolerance (a replay?)")
	}
	signed := signedContent(id, ts, body)
	for _, s := range keys {
		if b64, ok := strings.CutPrefix(s, PublicKeyPrefix); ok {
			pub, err := base64.StdEncoding.DecodeString(b64)
			if err != nil || len(pub) != ed25519.PublicKeySize {
				return fmt.Errorf("webhook: a public key is not %s followed by the base64 of %d bytes", PublicKeyPrefix, ed25519.PublicKeySize)
			}
			for _, got := range strings.Fields(h.Get(HeaderSignature)) {
				sig, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(got, "v1a,"))
				if strings.HasPrefix(got, "v1a,") && err == nil && ed25519.Verify(pub, signed, sig) {
					return nil
				}
			}
			continue
		}
		key, err := DecodeSecret(s)
		if err != nil {
			return fmt.Errorf("webhook: a secret %w", err)
		}
		want := Sign(key, id, ts, body)
		for _, got := range strings.Fields(h.Get(HeaderSignature)) {
			if hmac.Equal([]byte(want), []byte(got)) {
				return nil
			}
		}
	}
	return errors.New("webhook: no signature matches")
}

// ToReceivers says webhooks go to receivers (sender.ToReceivers): the runner leaves
// them out of its adaptive limit; the sender bounds each receiver site itself.
func (s *Sender) ToReceivers() bool { return true }

// Send posts the message to its recipient URL, unless the host's circuit is open.
// Every failure is the receiver's (sender.Failure.Receiver): one customer's endpoint
// does not slow the runner's sends to the others.
func (s *Sender) Send(ctx context.Context, m sender.Message) (sender.Result, error) {
	if s.idKey == nil {
		return sender.Result{}, sender.Configuration(errors.New("webhook: no webhook-id key"), "")
	}
	key, err := s.idKey(ctx)
	if err != nil { // the channel's, not the receiver's
		return sender.Result{}, err
	}
	u, err := url.Parse(m.Recipient)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		err = sender.Permanent(fmt.Errorf("recipient is not an http(s) URL"))
	case u.User != nil:
		err = sender.WithCode(sender.Permanent(errors.New("recipient URL carries user info; refused")), "egress_refused")
	}
	var res sender.Result
	if err == nil {
		host, site := strings.ToLower(u.Host), siteOf(u.Hostname(), u.Port())
		// A host that does not answer is down for all its URLs; a 429 is one endpoint's
		// (Slack and Discord limit each webhook URL on one shared host), so one
		// producer's flooded endpoint does not hold the host's other tenants.
		endpoint := host + u.EscapedPath()
		// The site's slot first (waiting for one, perhaps): a trial the circuit lets
		// through is then always sent.
		began := time.Now()
		wait, ok := s.hosts.acquire(ctx, site, began)
		now := time.Now()
		if !ok {
			err = sender.Held(fmt.Errorf("%s has %d sends in flight: not tried", site, s.hosts.limit), now.Add(wait), "host_busy")
		} else if open, until, n := s.circuit.hold(now, host, endpoint); open != "" {
			s.hosts.release(site, 0)
			what := host // an endpoint's path is not named: it often holds the receiver's token
			if open != host {
				what = "this URL of " + host
			}
			err = sender.Held(fmt.Errorf("%s failed %d times in a row: not tried (circuit open)", what, n), until, "circuit_open")
		} else {
			res, err = s.post(ctx, m, u, ID(m.ID, key))
			s.hosts.release(site, time.Since(now))
			res.Queued = now.Sub(began)
			// A send cut short by the runner's shutdown, or failed by the egress proxy
			// itself, says nothing of the host.
			if ctx.Err() == nil && !proxyFault(err) {
				unanswered, limited := failures(err)
				s.circuit.record(host, unanswered, time.Now())
				s.circuit.record(endpoint, limited, time.Now())
			}
		}
	}
	if err != nil {
		f := sender.Classify(err)
		f.Receiver = !proxyFault(err)
		return sender.Result{}, f
	}
	return res, nil
}

// proxyFault reports whether err is the egress proxy's own trouble (not reachable,
// wanting credentials, overloaded, failing), which is every webhook's, not one
// receiver's: the channel's, as a provider's would be.
func proxyFault(err error) bool {
	var pe *egress.ProxyError
	if errors.As(err, &pe) {
		return !pe.Refused && !pe.Unreachable
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "proxyconnect"
}

// proxyFailure classifies an egress proxy's answer (egress.ProxyError): a refusal of
// the receiver permanent (code egress_refused), the receiver unreachable transient
// (as a connection refused), credentials wanted configuration (code proxy_auth: the
// channel pauses), anything else transient or (429) rate_limited, with code proxy_
// and the proxy's status.
func proxyFailure(pe *egress.ProxyError, now time.Time) error {
	switch {
	case pe.Refused:
		return sender.WithCode(sender.Permanent(pe), "egress_refused")
	case pe.Credentials:
		return sender.Configuration(pe, "proxy_auth")
	case pe.Status == http.StatusTooManyRequests: // its Retry-After honoured
		f := sender.Classify(sender.FromHTTP(pe.Status, pe.Header, "", now))
		f.Code, f.Err = "proxy_429", pe
		return f
	}
	return &sender.Failure{Class: sender.ClassTransient, Unavailable: true, Code: "proxy_" + strconv.Itoa(pe.Status), Err: pe}
}

// failures says which circuits a send's failure counts towards: the host's when the
// receiver did not answer (sender.Failure.Unavailable: no connection, a timeout, 5xx,
// 408), the endpoint's when it asked to be left alone (429); neither for what
// concerns the message itself.
func failures(err error) (unanswered, limited bool) {
	if err == nil {
		return false, false
	}
	f := sender.Classify(err)
	return f.Unavailable, f.Class == sender.ClassRateLimited
}

// traceContext is the W3C trace context for the receiver's headers: the send's span
// when the runner traces (in ctx, a child of the message's), else the one the
// message's metadata carries (traceparent, tracestate: the producer's, or the HTTP
// intake request's); what is not valid is not passed on.
func traceContext(ctx context.Context, metadata json.RawMessage) map[string]string {
	if trace.SpanContextFromContext(ctx).IsValid() {
		out := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, out)
		return out
	}
	return tracecontext.FromMetadata(metadata)
}

// post signs and posts the message to u as webhook-id id.
func (s *Sender) post(ctx context.Context, m sender.Message, u *url.URL, id string) (sender.Result, error) {
	body, err := []byte(m.Payload), error(nil)
	if !s.payloadBody {
		body, err = json.Marshal(m)
	}
	if err != nil {
		return sender.Result{}, sender.Permanent(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return sender.Result{}, sender.Permanent(fmt.Errorf("recipient URL: %w", err))
	}
	ts := time.Now().Unix()
	sigs := make([]string, len(s.signers))
	for i, sg := range s.signers {
		switch {
		case sg.ed != nil:
			sigs[i] = SignAsymmetric(sg.ed, id, ts, body)
		case s.perEndpoint:
			sigs[i] = Sign(endpointKey(sg.hmac, m.Recipient), id, ts, body)
		default:
			sigs[i] = Sign(sg.hmac, id, ts, body)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.userAgent)
	req.Header.Set(HeaderID, id)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, strings.Join(sigs, " "))
	for k, v := range traceContext(ctx, m.Metadata) {
		req.Header.Set(k, v)
	}
	resp, err := sender.Do(s.client, req)
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		// Go's error names the whole URL, whose path or query is often the receiver's
		// credential (Slack's, Discord's, Teams' webhook URLs): name its host only.
		sent := errors.As(err, new(*sender.Sent))
		err = fmt.Errorf("POST to %s: %w", u.Host, ue.Err)
		if sent {
			err = &sender.Sent{Err: err}
		}
	}
	if pe := (*egress.ProxyError)(nil); errors.As(err, &pe) {
		return sender.Result{}, proxyFailure(pe, time.Now())
	}
	if errors.Is(err, egress.ErrRefused) {
		return sender.Result{}, sender.WithCode(sender.Permanent(err), "egress_refused")
	}
	if err != nil {
		// Unanswered, not sender.FromNetwork: a receiver's certificate or name is its
		// own affair, never the channel's configuration.
		return sender.Result{}, sender.Unanswered(err)
	}
	defer resp.Body.Close()
	if s.proxied && u.Scheme == "http" {
		if pe := egress.ProxyAnswer(u.Host, resp); pe != nil {
			return sender.Result{}, proxyFailure(pe, time.Now())
		}
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	switch {
	case resp.StatusCode/100 == 2:
		return sender.Result{ProviderMessageID: resp.Header.Get("X-Request-Id")}, nil
	case resp.StatusCode/100 == 3:
		return sender.Result{}, sender.WithCode(sender.Permanent(fmt.Errorf("HTTP %d to %q: redirects are not followed; enqueue the final URL",
			resp.StatusCode, resp.Header.Get("Location"))), "redirect")
	case resp.StatusCode == http.StatusGone:
		return sender.Result{}, sender.WithCode(sender.Permanent(fmt.Errorf("HTTP 410: %s", strings.TrimSpace(string(b)))), "410")
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return sender.Result{}, sender.WithCode(sender.Transient(fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))),
			strconv.Itoa(resp.StatusCode))
	default:
		return sender.Result{}, sender.FromHTTP(resp.StatusCode, resp.Header, string(b), time.Now())
	}
}
