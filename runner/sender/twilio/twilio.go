// Package twilio delivers SMS, and WhatsApp messages (Config.WhatsApp), through the
// Twilio Messages API (POST /2010-04-01/Accounts/{AccountSid}/Messages.json,
// form-encoded To, From or MessagingServiceSid, Body, MediaUrl (MMS: the payload's
// media_urls) or ContentSid and ContentVariables (a Content template), StatusCallback
// and SmartEncoded when configured, ValidityPeriod when the message's deadline is under 10 hours away
// (Twilio drops it then, error 30036, rather than deliver it late); HTTP Basic auth
// with the Account SID and auth token, or with an API key SID and secret). The
// provider id is the message SID. Failures are
// classified by sender.FromHTTP: 429 rate_limited (Retry-After), 5xx transient,
// 401/403 configuration, other 4xx — such as error 21211, an invalid To number —
// permanent; error 21611 (the From number's queue is full) rate_limited; errors that
// say the runner's own From, Messaging Service or StatusCallback is wrong (21212,
// 21601, 21603, 21609, 21660, 21661, 21701, 21705, 63007) configuration; an untrusted
// certificate or unknown host configuration (sender.FromNetwork).
package twilio

import (
	"cmp"
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

// maxValidity is the longest ValidityPeriod Twilio takes, and how long it queues a
// message without one.
const maxValidity = 36000 * time.Second

// Config is how to reach Twilio.
type Config struct {
	AccountSID string
	AuthToken  string
	// APIKeySID and APIKeySecret, when set, authenticate instead of the auth token
	// (Twilio's recommended credentials for production).
	APIKeySID    string
	APIKeySecret string
	// StatusCallback, when set, is sent with every message, with the herald id
	// added as the herald_id parameter: Twilio posts the message's delivery status
	// there (herald's /v1/events/twilio, runner/events).
	StatusCallback string
	// SmartEncoded asks Twilio to replace Unicode characters that have a GSM-7 look-alike
	// (curly quotes, dashes, …) before counting segments: a text of 160 characters with
	// one curly quote is then one segment, not three. Off by default: it changes the
	// text as written.
	SmartEncoded bool
	// WhatsApp sends through the account's WhatsApp sender: To is "whatsapp:" and the
	// recipient (still E.164 in herald), and so is From unless it says it already or
	// a MessagingServiceSID (with a WhatsApp sender) sends instead. Business-initiated
	// messages outside WhatsApp's 24-hour window need an approved template
	// (the payload's content_sid).
	WhatsApp bool
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
	case cfg.AccountSID == "":
		return nil, errors.New("twilio: the account SID is required")
	case (cfg.APIKeySID == "") != (cfg.APIKeySecret == ""):
		return nil, errors.New("twilio: an API key needs both its SID and its secret")
	case cfg.AuthToken == "" && cfg.APIKeySID == "":
		return nil, errors.New("twilio: an auth token or an API key (SID and secret) is required")
	case cfg.From == "" && cfg.MessagingServiceSID == "":
		return nil, errors.New("twilio: a From number or a messaging service SID is required")
	}
	if cfg.StatusCallback != "" {
		if why := callbackProblem(cfg.StatusCallback); why != "" {
			return nil, errors.New("twilio: the status callback URL " + why) // not printed: it may hold credentials
		}
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://api.twilio.com"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &Sender{cfg: cfg, client: sender.ProviderClient(cfg.Timeout, cfg.RootCAs)}, nil
}

// Send delivers one text: the payload's text (or body) and media_urls, or a Content
// template (content_sid, content_variables).
func (s *Sender) Send(ctx context.Context, m sender.Message) (sender.Result, error) {
	var p struct {
		Text             string            `json:"text"`
		Body             string            `json:"body"`
		MediaURLs        []string          `json:"media_urls"`
		ContentSID       string            `json:"content_sid"`
		ContentVariables map[string]string `json:"content_variables"`
	}
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		return sender.Result{}, sender.Permanent(fmt.Errorf("payload: %w", err))
	}
	text := cmp.Or(p.Text, p.Body)
	if text == "" && len(p.MediaURLs) == 0 && p.ContentSID == "" {
		return sender.Result{}, sender.Permanent(errors.New("payload: no text, body, media_urls or content_sid"))
	}
	to := m.Recipient
	if s.cfg.WhatsApp {
		to = "whatsapp:" + to
	}
	form := url.Values{"To": {to}}
	if !m.Deadline.IsZero() {
		// Twilio queues a message for up to 10 hours before it goes out; its
		// ValidityPeriod (whole seconds, 1..36000) makes Twilio drop it at the
		// deadline instead (status failed, error 30036), so it is never delivered late.
		left := time.Until(m.Deadline)
		if left < time.Second {
			return sender.Result{}, sender.WithCode(sender.RateLimited(
				errors.New("under a second to the message's deadline: not handed to Twilio, which counts whole seconds"), m.Deadline), "expired")
		}
		if left < maxValidity {
			form.Set("ValidityPeriod", strconv.Itoa(int(left/time.Second)))
		}
	}
	if text != "" {
		form.Set("Body", text)
	}
	for _, u := range p.MediaURLs {
		form.Add("MediaUrl", u)
	}
	if p.ContentSID != "" {
		form.Set("ContentSid", p.ContentSID)
		if len(p.ContentVariables) > 0 {
			vars, _ := json.Marshal(p.ContentVariables)
			form.Set("ContentVariables", string(vars))
		}
	}
	switch {
	case s.cfg.MessagingServiceSID != "":
		form.Set("MessagingServiceSid", s.cfg.MessagingServiceSID)
	case s.cfg.WhatsApp && !strings.HasPrefix(s.cfg.From, "whatsapp:"):
		form.Set("From", "whatsapp:"+s.cfg.From)
	default:
		form.Set("From", s.cfg.From)
	}
	if s.cfg.StatusCallback != "" {
		form.Set("StatusCallback", callbackURL(s.cfg.StatusCallback, m.ID))
	}
	if s.cfg.SmartEncoded {
		form.Set("SmartEncoded", "true")
	}
	req, err := s.request(ctx, http.MethodPost, "/Messages.json", strings.NewReader(form.Encode()))
	if err != nil {
		return sender.Result{}, sender.Permanent(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := sender.Do(s.client, req)
	if err != nil {
		return sender.Result{}, sender.FromNetwork(err)
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
		switch r.Code {
		case 21611: // the From number's queue is full: wait, as for a 429
			err = sender.RateLimited(err, time.Now().Add(time.Minute))
		case 21212, 21601, 21603, 21609, 21660, 21661, 21701, 21705, 63007:
			// The runner's sender identity or status callback is wrong (a From that is
			// not the account's SMS number, no From, a Messaging Service that does not
			// exist, a StatusCallback Twilio refuses, no WhatsApp sender for the From):
			// the channel's setup, like a revoked key, not the message.
			err = sender.Configuration(err, "")
		}
		if r.Code != 0 {
			err = sender.WithCode(err, strconv.Itoa(r.Code)) // Twilio's error code says more than the status
		}
		return sender.Result{}, err
	}
	// A 2xx is Twilio's word that the message is created and will go out, with or
	// without the sid in a body cut off on the way (its status callbacks still carry
	// herald_id): sent, never tried again.
	return sender.Result{ProviderMessageID: r.SID}, nil
}

// callbackURL is the status callback for message id: the configured URL with the
// herald id as its herald_id parameter, which herald's Twilio endpoint matches on.
func callbackURL(base string, id int64) string {
	u, _ := url.Parse(base) // New checked it
	q := u.Query()
	q.Set("herald_id", strconv.FormatInt(id, 10))
	u.RawQuery = q.Encode()
	return u.String()
}

// callbackProblem says why Twilio would refuse base as a StatusCallback (error 21609,
// for every message), or "": not an absolute http(s) URL with a host, a host with an
// underscore, a fragment, or longer than Twilio's 4,000 characters with herald_id.
func callbackProblem(base string) string {
	u, err := url.Parse(base)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return "is not an absolute http(s) URL"
	case strings.Contains(u.Hostname(), "_"):
		return "has an underscore in its host name, which Twilio refuses"
	case u.Fragment != "":
		return "has a fragment (#…)"
	case len(base) > 3950:
		return "is longer than Twilio's 4,000 characters"
	}
	return ""
}

// request is a request to a path under the account's API root, authenticated.
func (s *Sender) request(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	endpoint := fmt.Sprintf("%s/2010-04-01/Accounts/%s%s", strings.TrimRight(s.cfg.BaseURL, "/"), url.PathEscape(s.cfg.AccountSID), path)
	req, err := http.NewRequestWithContext(ctx, method, endpoint, body)
	if err != nil {
		return nil, err
	}
	if s.cfg.APIKeySID != "" {
		req.SetBasicAuth(s.cfg.APIKeySID, s.cfg.APIKeySecret)
	} else {
		req.SetBasicAuth(s.cfg.AccountSID, s.cfg.AuthToken)
	}
	req.Header.Set("Accept", "application/json")
	return req, nil
}

// Check reads the account (GET /2010-04-01/Accounts/{AccountSid}.json) and wants it
// active, and, when From is a phone number, wants it among the account's numbers
// (GET …/IncomingPhoneNumbers.json?PhoneNumber=From; code 21601 otherwise), so that a
// channel paused for a wrong From is not resumed by a probe before it is fixed
// (sender.Checker). Wrong credentials answer 401 (error 20003). A Messaging Service,
// short code, alphanumeric or WhatsApp sender (which need not be the account's
// number) is not looked up.
func (s *Sender) Check(ctx context.Context) error {
	if err := s.checkAccount(ctx); err != nil {
		return err
	}
	if s.cfg.WhatsApp || !strings.HasPrefix(s.cfg.From, "+") {
		return nil
	}
	var r struct {
		Numbers []struct {
			PhoneNumber string `json:"phone_number"`
		} `json:"incoming_phone_numbers"`
	}
	if err := s.get(ctx, "/IncomingPhoneNumbers.json?PhoneNumber="+url.QueryEscape(s.cfg.From), &r); err != nil {
		return err
	}
	for _, n := range r.Numbers {
		if n.PhoneNumber == s.cfg.From {
			return nil
		}
	}
	return sender.Configuration(fmt.Errorf("HERALD_TWILIO_FROM %s is not a phone number of this Twilio account", s.cfg.From), "21601")
}

// checkAccount wants the account active.
func (s *Sender) checkAccount(ctx context.Context) error {
	var r struct {
		Status string `json:"status"`
	}
	if err := s.get(ctx, ".json", &r); err != nil {
		return err
	}
	if r.Status != "active" {
		return sender.Configuration(fmt.Errorf("the Twilio account is %q, not active", r.Status), "account_"+r.Status)
	}
	return nil
}

// get reads the answer to a GET of path under the account into out; an answer other
// than 2xx is classified by sender.FromHTTP (401: configuration).
func (s *Sender) get(ctx context.Context, path string, out any) error {
	req, err := s.request(ctx, http.MethodGet, path, nil)
	if err != nil {
		return sender.Configuration(err, "")
	}
	resp, err := sender.Do(s.client, req)
	if err != nil {
		return sender.FromNetwork(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		var e struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(b, &e)
		return sender.FromHTTP(resp.StatusCode, resp.Header, fmt.Sprintf("%d %s", e.Code, e.Message), time.Now())
	}
	if err := json.Unmarshal(b, out); err != nil {
		return sender.Transient(fmt.Errorf("twilio answered %s with something that is not JSON: %w", path, err))
	}
	return nil
}

// Close drops the idle connections kept for reuse.
func (s *Sender) Close() error {
	s.client.CloseIdleConnections()
	return nil
}
