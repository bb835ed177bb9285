// Package webhook delivers messages as signed JSON POSTs to the message's recipient
// URL, and verifies such requests on the receiving side.
//
// # Wire format
//
// The body is {"id", "channel", "recipient", "payload", "metadata", "attempt"}.
// Headers: Content-Type application/json; X-Herald-Message-Id; X-Herald-Timestamp
// (Unix seconds); X-Herald-Signature "v1=" + hex HMAC-SHA256(secret, timestamp + "." +
// body). A receiver recomputes the HMAC over the raw body and rejects a mismatch, or
// a timestamp too far from its clock (a replay). Verify does both.
//
// # Failure classes
//
// 2xx delivered (the provider id is the X-Request-Id answer header, if any); 410 Gone
// permanent; the rest as sender.FromHTTP (429 rate_limited, 5xx transient, other 4xx
// permanent); connection errors and timeouts transient.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/herald/herald/runner/sender"
)

// Header names of the wire format.
const (
	HeaderSignature = "X-Herald-Signature"
	HeaderTimestamp = "X-Herald-Timestamp"
	HeaderMessageID = "X-Herald-Message-Id"
)

// Config is how to sign and send.
type Config struct {
	Secret  []byte
	Timeout time.Duration // per request, default 10s
}

// Sender posts messages to their recipient URL. It is safe for concurrent use.
type Sender struct {
	cfg    Config
	client *http.Client
}

// New checks cfg and returns a Sender.
func New(cfg Config) (*Sender, error) {
	if len(cfg.Secret) < 16 {
		return nil, errors.New("webhook: the signing secret must be at least 16 bytes")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &Sender{cfg: cfg, client: &http.Client{Timeout: cfg.Timeout}}, nil
}

// Sign returns the X-Herald-Signature value for body sent at timestamp ts.
func Sign(secret []byte, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	fmt.Fprintf(mac, "%d.", ts)
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify checks a received webhook: the signature over the raw body and the
// timestamp within tolerance of now.
func Verify(secret []byte, h http.Header, body []byte, tolerance time.Duration, now time.Time) error {
	ts, err := strconv.ParseInt(h.Get(HeaderTimestamp), 10, 64)
	if err != nil {
		return errors.New("webhook: missing or bad timestamp")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return errors.New("webhook: timestamp outside the tolerance (a replay?)")
	}
	want := Sign(secret, ts, body)
	if !hmac.Equal([]byte(want), []byte(h.Get(HeaderSignature))) {
		return errors.New("webhook: signature mismatch")
	}
	return nil
}

// Send posts the message to its recipient URL.
func (s *Sender) Send(ctx context.Context, m sender.Message) (sender.Result, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return sender.Result{}, sender.Permanent(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.Recipient, bytes.NewReader(body))
	if err != nil {
		return sender.Result{}, sender.Permanent(fmt.Errorf("recipient URL: %w", err))
	}
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(s.cfg.Secret, ts, body))
	req.Header.Set(HeaderMessageID, strconv.FormatInt(m.ID, 10))
	resp, err := s.client.Do(req)
	if err != nil {
		return sender.Result{}, sender.Transient(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	switch {
	case resp.StatusCode/100 == 2:
		return sender.Result{ProviderMessageID: resp.Header.Get("X-Request-Id")}, nil
	case resp.StatusCode == http.StatusGone:
		return sender.Result{}, sender.Permanent(fmt.Errorf("HTTP 410: %s", strings.TrimSpace(string(b))))
	default:
		return sender.Result{}, sender.FromHTTP(resp.StatusCode, resp.Header, string(b), time.Now())
	}
}
