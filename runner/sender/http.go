package sender

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/herald/herald/runner/sender/egress"
)

// FromHTTP classifies a provider's non-2xx HTTP answer:
//
//	429                      rate_limited, retry at Retry-After (seconds or a date), else
//	                         at a reset header (X-RateLimit-Reset, epoch seconds), else in
//	                         1 minute; never more than a year ahead (maxRetryAfter)
//	5xx, 408                 transient (Retry-After honoured when given)
//	401, 403                 configuration: the runner's key or sender identity is
//	                         wrong, not the message (the channel is paused, no attempt
//	                         is used)
//	other 4xx                permanent
//
// The Code is the status. detail is the provider's error text (kept short in the error).
func FromHTTP(status int, h http.Header, detail string, now time.Time) error {
	if len(detail) > 500 {
		detail = detail[:500] + "…"
	}
	err := fmt.Errorf("HTTP %d: %s", status, strings.TrimSpace(detail))
	retry := retryAfter(h, now)
	f := &Failure{Class: ClassPermanent, Code: strconv.Itoa(status), Err: err}
	switch {
	case status == http.StatusTooManyRequests:
		if retry.IsZero() {
			retry = now.Add(time.Minute)
		}
		f.Class, f.RetryAt = ClassRateLimited, retry
	case status >= 500 || status == http.StatusRequestTimeout:
		f.Class, f.RetryAt, f.Unavailable = ClassTransient, retry, true
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		f.Class = ClassConfiguration
	}
	return f
}

// maxRetryAfter bounds a delay a provider or receiver asks for: past it a message has
// expired anyway (a channel's ttl is at most a year), and a larger count of seconds
// would overflow a time.Duration into an arbitrary time, possibly past (a retry at once).
const maxRetryAfter = 366 * 24 * time.Hour

// retryAfter reads Retry-After (delay in seconds, or an HTTP date) or, failing that,
// X-RateLimit-Reset (epoch seconds), at most maxRetryAfter from now. Zero when neither
// is usable.
func retryAfter(h http.Header, now time.Time) time.Time {
	var at time.Time
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if secs, err := strconv.ParseUint(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
			at = now.Add(time.Duration(min(secs, uint64(maxRetryAfter/time.Second))) * time.Second)
		} else if t, err := http.ParseTime(v); err == nil {
			at = t
		}
	}
	if v := strings.TrimSpace(h.Get("X-RateLimit-Reset")); at.IsZero() && v != "" {
		if epoch, err := strconv.ParseInt(v, 10, 64); err == nil && epoch > now.Unix() {
			at = time.Unix(epoch, 0)
		}
	}
	if limit := now.Add(maxRetryAfter); at.After(limit) {
		return limit
	}
	return at
}

// ProviderClient is the HTTP client of a provider's API: connections kept alive and
// reused (up to MaxIdlePerHost idle ones per host, so that concurrent sends do not
// open a connection — and a TLS handshake — per message, as the default client's 2
// do), HTTP/2 when offered, TLS sessions resumed on new connections (a cache of
// MaxIdlePerHost sessions), dial and TLS handshake bounded (10 s each) within the
// request's timeout, at most MaxResponseHeader bytes of a response's headers read,
// when roots is not nil, only those CAs trusted, and the proxy the environment names
// (HTTPS_PROXY, NO_PROXY) used, its answers other than a connection read as
// egress.ProxyError.
func ProviderClient(timeout time.Duration, roots *x509.CertPool) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxResponseHeaderBytes = MaxResponseHeader
	t.MaxIdleConns = 4 * MaxIdlePerHost
	t.MaxIdleConnsPerHost = MaxIdlePerHost
	t.IdleConnTimeout = 90 * time.Second
	t.ForceAttemptHTTP2 = true
	t.TLSHandshakeTimeout = 10 * time.Second
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12,
		ClientSessionCache: tls.NewLRUClientSessionCache(MaxIdlePerHost)}
	t.OnProxyConnectResponse = egress.ConnectAnswer
	return &http.Client{Timeout: timeout, Transport: t}
}

// Do sends req with client; an error that comes after the whole request was
// written (no answer, a timeout, a connection reset while the provider may be acting
// on it) is wrapped as Sent, so that FromNetwork marks the failure in doubt.
func Do(client *http.Client, req *http.Request) (*http.Response, error) {
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			wrote.Store(true)
		}
	}}
	resp, err := client.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	if err != nil && wrote.Load() {
		return nil, &Sent{Err: err}
	}
	return resp, err
}

// MaxResponseHeader bounds the headers of a provider's or receiver's answer: a few
// kilobytes in practice, where Go's default (10 MiB) let a hostile webhook receiver
// make every send in flight hold ten megabytes (a send with more fails, transient).
const MaxResponseHeader = 64 << 10

// MaxIdlePerHost is how many idle connections ProviderClient keeps per host: as many
// as the sends a runner may have in flight by default (HERALD_CONCURRENCY, 512), so
// a runner at its limit finds a connection for every send.
const MaxIdlePerHost = 512

// LoadCAFile reads a PEM file of CA certificates to trust (a provider's TLS behind a
// proxy, or a test double); "" gives nil, the system's roots.
func LoadCAFile(path string) (*x509.CertPool, error) {
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no PEM certificate in %s", path)
	}
	return pool, nil
}
