// Package sender defines what the runner hands a message to: a Sender per channel,
// the Message it sends, and the Failure it returns so that SQL (herald.fail) can
// decide between retry, wait and dead-letter.
//
// # Failure classes
//
// A Sender returns nil on delivery, a *Failure to say how a delivery failed, or any
// other error, which counts as transient (the network, a timeout, a bug: try again).
// The class is all the runner decides on: it holds no retry rules itself. A Failure
// also carries a short Code (SMTP reply, HTTP status, provider error code), the one
// part of a failure a producer may see (herald.status); the error text goes to the
// error history for workers and admins.
//
//	ClassTransient      try again after the channel's backoff (or at RetryAt)
//	ClassRateLimited    the provider refused for now: try again at RetryAt
//	ClassQuota          the account's sending quota is spent (a daily limit, credits):
//	                    the message goes back unharmed and SQL pauses the channel for
//	                    its quota_wait (or until RetryAt), for every runner
//	ClassConfiguration  the runner's setup is wrong (credentials, sender identity,
//	                    TLS trust, the provider's host name): the message goes back
//	                    unharmed and SQL pauses the channel until a probe (Checker)
//	                    succeeds or an operator resumes it
//	ClassPermanent      never going to work (unknown mailbox, invalid number): dead
package sender

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/herald/herald/runner/sender/egress"
)

// Class is a failure class, as herald.fail knows them.
type Class string

// The failure classes of herald.fail.
const (
	ClassTransient     Class = "transient"
	ClassRateLimited   Class = "rate_limited"
	ClassQuota         Class = "quota"
	ClassConfiguration Class = "configuration"
	ClassPermanent     Class = "permanent"
)

// Message is one claimed message, as herald.claim_batch returns it.
type Message struct {
	ID         int64           `json:"id"`
	Channel    string          `json:"channel"`
	Recipient  string          `json:"recipient"`
	Payload    json.RawMessage `json:"payload"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	Attempt    int             `json:"attempt"`
	LeaseToken int64           `json:"-"`
	LeaseUntil time.Time       `json:"-"`
	// Deadline is when the message expires, on the runner's clock: it must not be
	// sent at or after it (herald.messages.expires_at).
	Deadline time.Time `json:"-"`
}

// Result is what a successful delivery reports back.
type Result struct {
	// ProviderMessageID is the provider's own id for the delivery (stored by
	// herald.complete as the receipt); empty when the provider has none.
	ProviderMessageID string
	// Warning, when set, says what of the message was not delivered although it
	// counts as sent (an SMTP relay refused a copy for good); the runner logs it.
	Warning string
	// RefusedCopies are the copies (cc, bcc) the provider refused for good while the
	// message went to the others; the runner records each
	// (herald.record_copy_refusal), which suppresses an address that does not exist.
	RefusedCopies []Refusal
	// Queued is the part of the send spent waiting in the sender for a slot of its
	// own (a webhook site at its bound), not in the provider: the runner leaves it out
	// of the send's latency.
	Queued time.Duration
}

// Refusal is one address a provider refused for good, with its code ("550 5.1.1").
type Refusal struct {
	Address, Code string
}

// Sender delivers messages of one channel. Send is called from many goroutines at
// once; it must honour ctx (the runner cancels it at shutdown).
type Sender interface {
	Send(ctx context.Context, m Message) (Result, error)
}

// ToReceivers is implemented by a sender whose sends go to endpoints of the messages'
// own (webhook receivers, many and each bounded by the sender) rather than to one
// provider: the runner bounds its sends by Config.Concurrency alone, not by its
// adaptive limit, which follows a provider's capacity; so a slow receiver neither
// takes the provider channels' turn nor holds their limit down.
type ToReceivers interface {
	ToReceivers() bool
}

// Checker is implemented by senders that can check their configuration against the
// provider without sending anything (connect, authenticate, read the account). Check
// returns nil, a *Failure of ClassConfiguration for a setup an operator must fix, or
// another error when the provider could not be asked (the network). The runner calls
// it at start (herald run, herald check) and as the probe of a channel it paused.
type Checker interface {
	Check(ctx context.Context) error
}

// Failure is a classified delivery failure.
type Failure struct {
	Class Class
	// RetryAt, when not zero, is when to try again (a provider's Retry-After).
	RetryAt time.Time
	// Code is a short code producers may see: an SMTP reply code, an HTTP status, a
	// provider's error code, or one of herald's words (egress_refused, redirect);
	// empty when there is none. At most 64 characters.
	Code string
	// Receiver marks a failure of the recipient's own endpoint (a webhook receiver),
	// not of the provider every message goes through: the runner does not take it as
	// the provider pushing back (its sends in flight, a channel's rate).
	Receiver bool
	// Unavailable marks a transient failure in which the provider did not answer the
	// send: no connection, a timeout, an HTTP 5xx, SMTP 421. Many in a row mean it is
	// down (the runner pauses the channel rather than spend the messages' attempts).
	Unavailable bool
	// Held marks a send the runner held back without trying it (a receiver host's
	// circuit open, its sends at their bound, the provider down): rate_limited, the
	// attempt given back, counted by Code in herald_held_total.
	Held bool
	Err  error
}

// Error says the class and the cause.
func (f *Failure) Error() string {
	if f.Err == nil {
		return string(f.Class)
	}
	return fmt.Sprintf("%s: %v", f.Class, f.Err)
}

// Unwrap returns the cause.
func (f *Failure) Unwrap() error { return f.Err }

// Transient wraps err as a transient failure.
func Transient(err error) error { return &Failure{Class: ClassTransient, Err: err} }

// Permanent wraps err as a permanent failure.
func Permanent(err error) error { return &Failure{Class: ClassPermanent, Err: err} }

// Quota wraps err as a spent sending quota: the whole channel waits (SQL's
// herald.channels.quota_wait), not only this message.
func Quota(err error) error { return &Failure{Class: ClassQuota, Err: err} }

// Configuration wraps err as a configuration failure with the given code.
func Configuration(err error, code string) error {
	return &Failure{Class: ClassConfiguration, Code: code, Err: err}
}

// FromNetwork classifies an error from reaching a provider's own host (not a
// recipient's): a certificate the runner does not trust (code tls), a host name
// that does not resolve (code dns) or a proxy that refuses the host or wants
// credentials (code proxy, egress.ProxyError) is configuration; anything else is the
// provider not answering (Unanswered).
func FromNetwork(err error) error {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var dns *net.DNSError
	var proxy *egress.ProxyError
	switch {
	case errors.As(err, &proxy) && (proxy.Refused || proxy.Credentials):
		return Configuration(err, "proxy")
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &verify):
		return Configuration(err, "tls")
	case errors.As(err, &dns) && dns.IsNotFound:
		return Configuration(err, "dns")
	}
	return Unanswered(err)
}

// Sent is an error that came after the whole request was sent: an HTTP request
// written (Do), SMTP's final dot (InDoubt).
type Sent struct{ Err error }

// Error is the error's own text.
func (e *Sent) Error() string { return e.Err.Error() }

// Unwrap returns the error.
func (e *Sent) Unwrap() error { return e.Err }

// InDoubt reports whether err came after the whole request was sent (Sent): the
// provider may have taken the message, so trying again may deliver it twice
// (counted in herald_in_doubt_total).
func InDoubt(err error) bool { return errors.As(err, new(*Sent)) }

// Unanswered is a transient failure in which the provider did not answer
// (Failure.Unavailable); one in doubt (InDoubt) has the code in_doubt.
func Unanswered(err error) error {
	f := &Failure{Class: ClassTransient, Unavailable: true, Err: err}
	if InDoubt(err) {
		f.Code = "in_doubt"
	}
	return f
}

// RateLimited wraps err as a rate-limited failure to retry at retryAt.
func RateLimited(err error, retryAt time.Time) error {
	return &Failure{Class: ClassRateLimited, RetryAt: retryAt, Err: err}
}

// Held is a send held back untried until retryAt, for the reason code (Failure.Held).
func Held(err error, retryAt time.Time, code string) error {
	return &Failure{Class: ClassRateLimited, RetryAt: retryAt, Code: code, Held: true, Err: err}
}

// WithCode sets the Code of the Failure behind err (a transient one for any other
// error) and returns it.
func WithCode(err error, code string) error {
	f := Classify(err)
	f.Code = code
	return f
}

// Classify returns the Failure behind err: the *Failure it wraps, or a transient
// failure for any other error.
func Classify(err error) *Failure {
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	return &Failure{Class: ClassTransient, Err: err}
}
