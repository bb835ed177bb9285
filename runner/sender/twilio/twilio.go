// Package twilio delivers SMS through the Twilio Messages API
// (POST /2010-04-01/Accounts/{AccountSid}/Messages.json, form-encoded To, From or
// MessagingServiceSid, Body; HTTP Basic auth with the Account SID and auth token).
// The provider id is the message SID. Failures are classified by sender.FromHTTP:
// 429 rate_limited (Retry-After), 5xx transient, 401/403 transient, other 4xx —
// such as error 21211, an invalid To number — permanent.
package twilio

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/herald/herald/runner/sender"
)

// Config is how to reach Twilio.
type Config struct {
	AccountSID string
	AuthToken  string
	// From is the sending number (E.164); MessagingServiceSID may be used instead.
	From                string
	MessagingServiceSID string
	BaseURL             string        // default https://api.twilio.com
	Timeout             time.Duration // per request, default 10s
	// RootCAs, when not nil, are the only CAs trusted for the API's TLS (HERALD_*_CA_FILE).
	RootCAs *x509.CertPool
}

// Sender sends SMS through Twilio. It is safe for concurrent use.
type Sender struct {
	cfg    Config
	client *http.Client
}

// New checks cfg and returns a Sender.
func New(cfg Config) (*Sender, error) {
	switch {
	case cfg.AccountSID == "" || cfg.AuthToken == "":
		return nil, errors.New("twilio: account SID and auth token are required")
	case cfg.From == "" && cfg.MessagingServiceSID == "":
		return nil, errors.New("twilio: a From number or a messaging service SID is required")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://api.twilio.com"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &Sender{cfg: cfg, client: sender.ProviderClient(cfg.Timeout, cfg.RootCAs)}, nil
}

// Send delivers one SMS: the payload's text (or body).
func (s *Sender) Send(ctx context.Context, m sender.Message) (sender.Result, error) {
	var p struct {
		Text string `json:"text"`
		Body string `json:"body"`
	}
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		return sender.Result{}, sender.Permanent(fmt.Errorf("payload: %w", err))
	}
	text := p.Text
	if text == "" {
		text = p.Body
	}
	if text == "" {
		return sender.Result{}, sender.Permanent(errors.New("payload: no text or body"))
	}
	form := url.Values{"To": {m.Recipient}, "Body": {text}}
	if s.cfg.MessagingServiceSID != "" {
		form.Set("MessagingServiceSid", s.cfg.MessagingServiceSID)
	} else {
		form.Set("From", s.cfg.From)
	}
	endpoint := fmt.Sprintf("%s/2010-04-01/Accounts/%s/Messages.json", strings.TrimRight(s.cfg.BaseURL, "/"), url.PathEscape(s.cfg.AccountSID))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return sender.Result{}, sender.Permanent(err)
	}
	req.SetBasicAuth(s.cfg.AccountSID, s.cfg.AuthToken)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return sender.Result{}, sender.Transient(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var r struct {
		SID     string `json:"sid"`
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(b, &r)
	if resp.StatusCode/100 != 2 {
		detail := string(b)
		if r.Message != "" {
			detail = fmt.Sprintf("%d %s", r.Code, r.Message)
		}
		err := sender.FromHTTP(resp.StatusCode, resp.Header, detail, time.Now())
		if r.Code == 21611 { // the From number's queue is full: wait, as for a 429
			err = sender.RateLimited(err, time.Now().Add(time.Minute))
		}
		if r.Code != 0 {
			err = sender.WithCode(err, strconv.Itoa(r.Code)) // Twilio's error code says more than the status
		}
		return sender.Result{}, err
	}
	if r.SID == "" {
		return sender.Result{}, sender.Transient(fmt.Errorf("twilio answered %d without a message sid", resp.StatusCode))
	}
	return sender.Result{ProviderMessageID: r.SID}, nil
}

// Close drops the idle connections kept for reuse.
func (s *Sender) Close() error {
	s.client.CloseIdleConnections()
	return nil
}
