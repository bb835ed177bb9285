// Package sendgrid delivers e-mail through the SendGrid v3 Mail Send API
// (POST /v3/mail/send, Bearer API key, JSON). The herald id travels as the custom
// argument herald_id and in the Message-ID header; the provider id is the answer's
// X-Message-Id header. Failures are classified by sender.FromHTTP: 429 rate_limited
// (Retry-After / X-RateLimit-Reset), 5xx transient, 401/403 configuration (a revoked
// key, a key without the scope), other 4xx (such as an invalid recipient) permanent;
// a 401 "Maximum credits exceeded" is a spent quota (the channel waits its quota_wait);
// a 403 for an unverified from is the channel's configuration when the from is its
// default, and permanent when it is the payload's own (email.SenderRefused);
// an untrusted certificate or unknown host is configuration (sender.FromNetwork).
// Attachments, template_id with dynamic_template_data, categories and custom_args
// are sent as the API's own fields.
package sendgrid

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/email"
)

// Config is how to reach SendGrid.
type Config struct {
	APIKey   string
	BaseURL  string        // default https://api.sendgrid.com
	Timeout  time.Duration // per request, default 10s
	Defaults email.Defaults
	// RootCAs, when not nil, are the only CAs trusted for the API's TLS (HERALD_*_CA_FILE).
	RootCAs *x509.CertPool
}

// Sender sends e-mail through SendGrid. It is safe for concurrent use.
type Sender struct {
	cfg    Config
	client *http.Client
}

// New checks cfg and returns a Sender.
func New(cfg Config) (*Sender, error) {
	if cfg.APIKey == "" {
		return nil, errors.New("sendgrid: no API key")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://api.sendgrid.com"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &Sender{cfg: cfg, client: sender.ProviderClient(cfg.Timeout, cfg.RootCAs)}, nil
}

type address struct {
	Email string `json:"email"`
	Name  string `json:"name,omitempty"`
}

type content struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

type request struct {
	Personalizations []personalization `json:"personalizations"`
	From             address           `json:"from"`
	ReplyTo          *address          `json:"reply_to,omitempty"`
	Subject          string            `json:"subject,omitempty"`
	Content          []content         `json:"content,omitempty"`
	Attachments      []attachment      `json:"attachments,omitempty"`
	TemplateID       string            `json:"template_id,omitempty"`
	Categories       []string          `json:"categories,omitempty"`
	Headers          map[string]string `json:"headers,omitempty"`
	CustomArgs       map[string]string `json:"custom_args,omitempty"`
}

type personalization struct {
	To                  []address       `json:"to"`
	Cc                  []address       `json:"cc,omitempty"`
	Bcc                 []address       `json:"bcc,omitempty"`
	DynamicTemplateData json.RawMessage `json:"dynamic_template_data,omitempty"`
}

type attachment struct {
	Content     string `json:"content"` // base64
	Type        string `json:"type,omitempty"`
	Filename    string `json:"filename"`
	Disposition string `json:"disposition,omitempty"`
	ContentID   string `json:"content_id,omitempty"`
}

func parse(s string) (address, error) {
	a, err := mail.ParseAddress(s)
	if err != nil {
		return address{}, sender.Permanent(fmt.Errorf("address %q: %w", s, err))
	}
	return address{Email: a.Address, Name: a.Name}, nil
}

// Send delivers one message; the provider id is SendGrid's X-Message-Id.
func (s *Sender) Send(ctx context.Context, m sender.Message) (sender.Result, error) {
	e, err := email.Build(ctx, m, s.cfg.Defaults)
	if err != nil {
		return sender.Result{}, err
	}
	req := request{Subject: e.Subject, Headers: map[string]string{"Message-ID": e.MessageID},
		CustomArgs: map[string]string{}, TemplateID: e.TemplateID, Categories: e.Categories}
	for k, v := range e.CustomArgs {
		req.CustomArgs[k] = v
	}
	req.CustomArgs["herald_id"] = strconv.FormatInt(m.ID, 10)
	for _, a := range e.Attachments {
		at := attachment{Content: base64.StdEncoding.EncodeToString(a.Content), Type: a.ContentType, Filename: a.Filename}
		if a.Inline {
			at.Disposition, at.ContentID = "inline", a.ContentID
		}
		req.Attachments = append(req.Attachments, at)
	}
	to, err := parse(e.To)
	if err != nil {
		return sender.Result{}, err
	}
	req.Personalizations = []personalization{{To: []address{to}, DynamicTemplateData: e.TemplateData}}
	for _, list := range []struct {
		from []string
		to   *[]address
	}{{e.Cc, &req.Personalizations[0].Cc}, {e.Bcc, &req.Personalizations[0].Bcc}} {
		for _, s := range list.from {
			a, err := parse(s)
			if err != nil {
				return sender.Result{}, err
			}
			*list.to = append(*list.to, a)
		}
	}
	if req.From, err = parse(e.From); err != nil {
		return sender.Result{}, err
	}
	if e.ReplyTo != "" {
		rt, err := parse(e.ReplyTo)
		if err != nil {
			return sender.Result{}, err
		}
		req.ReplyTo = &rt
	}
	if e.Text != "" {
		req.Content = append(req.Content, content{Type: "text/plain", Value: e.Text})
	}
	if e.HTML != "" {
		req.Content = append(req.Content, content{Type: "text/html", Value: e.HTML})
	}
	for k, v := range e.Headers {
		req.Headers[k] = v
	}
	body, _ := json.Marshal(req)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(s.cfg.BaseURL, "/")+"/v3/mail/send", bytes.NewReader(body))
	if err != nil {
		return sender.Result{}, sender.Permanent(err)
	}
	hr.Header.Set("Authorization", "Bearer "+s.cfg.APIKey)
	hr.Header.Set("Content-Type", "application/json")
	resp, err := sender.Do(s.client, hr)
	if err != nil {
		return sender.Result{}, sender.FromNetwork(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		err := sender.FromHTTP(resp.StatusCode, resp.Header, errorText(b), time.Now())
		switch {
		case resp.StatusCode == http.StatusForbidden && refusesSender(b):
			err = e.SenderRefused(err, false)
		case resp.StatusCode == http.StatusUnauthorized && strings.Contains(strings.ToLower(errorText(b)), "maximum credits exceeded"):
			err = sender.WithCode(sender.Quota(fmt.Errorf("HTTP 401: %s", errorText(b))), "401")
		}
		return sender.Result{}, err
	}
	return sender.Result{ProviderMessageID: resp.Header.Get("X-Message-Id")}, nil
}

// Check reads the key's scopes (GET /v3/scopes) and wants mail.send among them
// (sender.Checker): a revoked key answers 401, a key without the scope is refused.
func (s *Sender) Check(ctx context.Context) error {
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(s.cfg.BaseURL, "/")+"/v3/scopes", nil)
	if err != nil {
		return sender.Configuration(err, "")
	}
	hr.Header.Set("Authorization", "Bearer "+s.cfg.APIKey)
	resp, err := sender.Do(s.client, hr)
	if err != nil {
		return sender.FromNetwork(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 256<<10))
	if resp.StatusCode/100 != 2 {
		return sender.FromHTTP(resp.StatusCode, resp.Header, errorText(b), time.Now())
	}
	var r struct {
		Scopes []string `json:"scopes"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return sender.Transient(fmt.Errorf("sendgrid /v3/scopes: %w", err))
	}
	if !slices.Contains(r.Scopes, "mail.send") {
		return sender.Configuration(errors.New("the API key lacks the mail.send scope"), "scope")
	}
	return nil
}

// apiError is one entry of SendGrid's {"errors":[{"message","field"}]} answer.
type apiError struct {
	Message string  `json:"message"`
	Field   *string `json:"field"`
}

// apiErrors reads the errors of an answer; none when it has another shape.
func apiErrors(b []byte) []apiError {
	var r struct {
		Errors []apiError `json:"errors"`
	}
	_ = json.Unmarshal(b, &r)
	return r.Errors
}

// refusesSender reports whether a 403's errors blame the from address (SendGrid's
// "The from address does not match a verified Sender Identity", field "from") rather
// than the key.
func refusesSender(b []byte) bool {
	for _, e := range apiErrors(b) {
		if e.Field != nil && *e.Field == "from" || strings.Contains(strings.ToLower(e.Message), "sender identity") {
			return true
		}
	}
	return false
}

// errorText condenses SendGrid's errors into one line (the body itself when it has
// none).
func errorText(b []byte) string {
	errs := apiErrors(b)
	if len(errs) == 0 {
		return string(b)
	}
	var parts []string
	for _, e := range errs {
		if e.Field != nil && *e.Field != "" {
			parts = append(parts, *e.Field+": "+e.Message)
		} else {
			parts = append(parts, e.Message)
		}
	}
	return strings.Join(parts, "; ")
}

// Close drops the idle connections kept for reuse.
func (s *Sender) Close() error {
	s.client.CloseIdleConnections()
	return nil
}
