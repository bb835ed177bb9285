// Package events receives providers' delivery events over HTTP and records them with
// herald.record_delivery_events: SendGrid's signed Event Webhook, Twilio's message
// status callbacks, Amazon SES's notifications through Amazon SNS, and a generic
// endpoint signed as herald signs its own webhooks (Standard Webhooks) for any other
// provider or an in-house MTA.
//
// Each endpoint exists only when its secret is configured. A request whose signature
// does not verify gets 401 and changes nothing; a body that cannot be read as the
// provider's format, 400; a database error, 503 (providers retry). Otherwise the
// events are stored and applied in one transaction before the 200, so an event that
// was acknowledged is never lost, and a replay changes nothing twice (the SQL keys
// events by source and event id). Events for messages herald does not know are
// stored unmatched, counted and acknowledged.
//
// Matching uses herald's message id, which every provider echoes back: SendGrid as the
// custom argument herald_id (the sendgrid sender sets it), Twilio in the status
// callback URL's herald_id parameter (the twilio sender adds it), SES as the
// Message-ID header herald set (<herald-ID.TAG@…>, among the notification's original
// headers), the generic endpoint as message_id (a webhook's webhook-id, or the
// <herald-ID.TAG@…> Message-ID a bounce quotes). The provider's own id must agree with
// the one herald stored.
package events

import (
	"context"
	"crypto/ecdsa"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/herald/herald/runner/sender/webhook"
)

// Prefix is where the endpoints live: Prefix + "sendgrid", "twilio", "generic".
const Prefix = "/v1/events/"

// UnsubscribePath is where the one-click unsubscribe links point: UnsubscribePath +
// token (runner/unsubscribe).
const UnsubscribePath = "/v1/unsubscribe/"

// Querier runs herald.record_delivery_events (a *pgxpool.Pool).
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Config says which endpoints exist and how they verify requests.
type Config struct {
	// SendGridKeys are the Event Webhook's verification keys, one per SendGrid account
	// or subuser that posts here (base64 of the DER public key SendGrid shows under
	// Mail Settings, ECDSA P-256); a request that verifies with any is taken. None: no
	// SendGrid endpoint.
	SendGridKeys []*ecdsa.PublicKey
	// TwilioAuthTokens sign Twilio's callbacks, one per Twilio account that posts here
	// (the account's auth token, also when messages are sent with an API key); a
	// request that verifies with any is taken. TwilioURL is the public URL of the
	// Twilio endpoint as Twilio calls it (HERALD_TWILIO_STATUS_CALLBACK), part of what
	// it signs. No token or no URL: no Twilio endpoint.
	TwilioAuthTokens []string
	TwilioURL        string
	// TwilioInboundURL is the public URL of the endpoint for messages recipients send
	// to the Twilio numbers (the number's "a message comes in" webhook): STOP and
	// START keywords keep herald.suppressions in step with Twilio's opt-outs. Empty
	// (or no TwilioAuthTokens): no such endpoint.
	TwilioInboundURL string
	// GenericSecrets are the whsec_ secrets of the generic endpoint (two while
	// rotating). None: no generic endpoint.
	GenericSecrets []string
	// UnsubscribeKeys check the one-click unsubscribe links of herald's e-mails
	// (runner/unsubscribe; the first also makes them). None: no unsubscribe endpoint.
	UnsubscribeKeys [][]byte
	// SESTopics are the ARNs of the Amazon SNS topics that carry Amazon SES's
	// notifications: SNS signs for every topic of every account, so a message of any
	// other topic is refused. None: no SES endpoint.
	SESTopics []string
	// SNSClient fetches SNS's signing certificates and confirms subscriptions (nil: a
	// client with a 10-second timeout); SNSHosts are the hosts it may reach for them
	// (nil: SNSHosts); SNSRoots the CAs a signing certificate must chain to (nil: the
	// system's). Tests point them at a stand-in.
	SNSClient *http.Client
	SNSHosts  *regexp.Regexp
	SNSRoots  *x509.CertPool
	// Tolerance is how old a signed timestamp may be (SendGrid, generic; default 5m).
	Tolerance time.Duration
	// MaxBodyBytes bounds a request body (default 5 MiB); a longer declared length
	// gets 413, its body unread.
	MaxBodyBytes int64
	// MaxInFlightBytes bounds the bytes of request bodies all endpoints hold at once
	// (default 64 MiB): a request whose declared length (without one, MaxBodyBytes)
	// would pass it gets 503 with Retry-After 1, its body unread. The endpoints are
	// public (providers post to them), so anyone can send bodies; this bounds the
	// memory their requests take from the runner.
	MaxInFlightBytes int64
	// Logger receives a line per request (nil: slog's default).
	Logger *slog.Logger
	// Counted, when set, is told each request's recorded events by event name
	// (herald run counts them in herald_delivery_events_received_total).
	Counted func(source string, counts map[string]int)
}

// Any reports whether any endpoint is configured.
func (c Config) Any() bool {
	return len(c.SendGridKeys) > 0 || (len(c.TwilioAuthTokens) > 0 && (c.TwilioURL != "" || c.TwilioInboundURL != "")) ||
		len(c.GenericSecrets) > 0 || len(c.UnsubscribeKeys) > 0 || len(c.SESTopics) > 0
}

// ParseSendGridKey reads SendGrid's verification key (base64 DER, or PEM).
func ParseSendGridKey(s string) (*ecdsa.PublicKey, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "-----BEGIN PUBLIC KEY-----")
	s = strings.TrimSuffix(s, "-----END PUBLIC KEY-----")
	der, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		return nil, errors.New("the SendGrid verification key is not base64")
	}
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("the SendGrid verification key: %w", err)
	}
	ec, ok := k.(*ecdsa.PublicKey)
	if !ok {
		return nil, errors.New("the SendGrid verification key is not an ECDSA key")
	}
	return ec, nil
}

// Register adds the configured endpoints to mux and returns their paths.
func Register(mux *http.ServeMux, q Querier, cfg Config) []string {
	if cfg.Tolerance == 0 {
		cfg.Tolerance = 5 * time.Minute
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 5 << 20
	}
	if cfg.MaxInFlightBytes == 0 {
		cfg.MaxInFlightBytes = 64 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SNSClient == nil {
		cfg.SNSClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.SNSHosts == nil {
		cfg.SNSHosts = SNSHosts
	}
	h := &handler{q: q, cfg: cfg, certs: map[string]*x509.Certificate{}}
	var paths []string
	add := func(name string, parse parser) {
		mux.Handle("POST "+Prefix+name, h.endpoint(name, parse))
		paths = append(paths, Prefix+name)
	}
	if len(cfg.SendGridKeys) > 0 {
		add("sendgrid", h.sendgrid)
	}
	if len(cfg.TwilioAuthTokens) > 0 && cfg.TwilioURL != "" {
		add("twilio", h.twilio)
	}
	if len(cfg.GenericSecrets) > 0 {
		add("generic", h.generic)
	}
	if len(cfg.SESTopics) > 0 {
		add("ses", h.ses)
	}
	if len(cfg.TwilioAuthTokens) > 0 && cfg.TwilioInboundURL != "" {
		mux.Handle("POST "+Prefix+"twilio-inbound", http.HandlerFunc(h.twilioInbound))
		paths = append(paths, Prefix+"twilio-inbound")
	}
	if len(cfg.UnsubscribeKeys) > 0 {
		mux.Handle("GET "+UnsubscribePath+"{token}", http.HandlerFunc(h.unsubscribePage))
		mux.Handle("POST "+UnsubscribePath+"{token}", http.HandlerFunc(h.unsubscribe))
		paths = append(paths, UnsubscribePath)
	}
	return paths
}

// event is one event as herald.record_delivery_events takes it.
type event struct {
	EventID           string  `json:"event_id"`
	MessageID         *int64  `json:"message_id,omitempty"`
	ProviderMessageID string  `json:"provider_message_id,omitempty"`
	Recipient         string  `json:"recipient,omitempty"`
	Event             string  `json:"event"`
	Type              string  `json:"type,omitempty"`
	Code              string  `json:"code,omitempty"`
	Reason            string  `json:"reason,omitempty"`
	At                *string `json:"at,omitempty"`
}

// parser verifies one provider's request and reads its events as the JSON array
// herald.record_delivery_events takes (nil: none to record), with how many of the
// provider's events have no outcome and were ignored.
type parser func(r *http.Request, body []byte) (json.RawMessage, int, error)

// encode is evs as record_delivery_events takes them; nil for none.
func encode(evs []event, ignored int, err error) (json.RawMessage, int, error) {
	if err != nil || len(evs) == 0 {
		return nil, ignored, err
	}
	b, err := json.Marshal(evs)
	return b, ignored, err
}

// errSignature marks a request that did not verify (401).
var errSignature = errors.New("the signature does not verify")

type handler struct {
	q   Querier
	cfg Config

	mu    sync.Mutex
	certs map[string]*x509.Certificate // SNS signing certificates by URL (snsCert)

	inFlight atomic.Int64 // bytes of bodies reserved (body)
}

// Result is the endpoints' 200 answer.
type Result struct {
	Recorded   int `json:"recorded"`
	Duplicates int `json:"duplicates"`
	Unknown    int `json:"unknown"`
	Ignored    int `json:"ignored"` // provider events herald has no outcome for (opens, clicks, queued…)
}

// body reads a request body within MaxBodyBytes, its declared length (or, without
// one, MaxBodyBytes) reserved first from MaxInFlightBytes until release is called;
// or answers 413 (too long, declared or read) or 503 (no room), the body unread.
func (h *handler) body(w http.ResponseWriter, r *http.Request) (body []byte, release func(), ok bool) {
	n := r.ContentLength
	switch {
	case n > h.cfg.MaxBodyBytes:
		w.Header().Set("Connection", "close") // or the server would read the body before answering
		answer(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "body too large"})
		return nil, nil, false
	case n < 0:
		n = h.cfg.MaxBodyBytes
	}
	if h.inFlight.Add(n) > h.cfg.MaxInFlightBytes {
		h.inFlight.Add(-n)
		h.cfg.Logger.Warn("delivery events refused: too many bytes of requests in progress", "remote", r.RemoteAddr)
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Connection", "close")
		answer(w, http.StatusServiceUnavailable, map[string]string{"error": "busy: retry later"})
		return nil, nil, false
	}
	release = func() { h.inFlight.Add(-n) }
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	if err != nil {
		release()
		answer(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "body too large or unreadable"})
		return nil, nil, false
	}
	return body, release, true
}

func (h *handler) endpoint(source string, parse parser) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, release, ok := h.body(w, r)
		if !ok {
			return
		}
		defer release()
		evs, ignored, err := parse(r, body)
		switch {
		case errors.Is(err, errSignature):
			h.cfg.Logger.Warn("delivery events refused: bad signature", "source", source, "remote", r.RemoteAddr)
			answer(w, http.StatusUnauthorized, map[string]string{"error": "signature"})
			return
		case err != nil:
			answer(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		res := Result{Ignored: ignored}
		if evs != nil {
			res, err = Record(r.Context(), h.q, source, evs)
			res.Ignored = ignored
			var pg *pgconn.PgError
			switch {
			case errors.As(err, &pg) && strings.HasPrefix(pg.Code, "22V"):
				answer(w, http.StatusBadRequest, map[string]string{"error": pg.Message, "field": pg.ColumnName})
				return
			case err != nil:
				h.cfg.Logger.Error("recording delivery events failed", "source", source, "err", err)
				answer(w, http.StatusServiceUnavailable, map[string]string{"error": "database unavailable"})
				return
			}
		}
		h.cfg.Logger.Info("delivery events", "source", source, "recorded", res.Recorded, "duplicates", res.Duplicates,
			"unknown", res.Unknown, "ignored", res.Ignored)
		if h.cfg.Counted != nil && evs != nil {
			var kinds []struct{ Event string }
			if json.Unmarshal(evs, &kinds) == nil {
				counts := map[string]int{}
				for _, k := range kinds {
					counts[k.Event]++
				}
				h.cfg.Counted(source, counts)
			}
		}
		answer(w, http.StatusOK, res)
	})
}

// Record stores events (as herald.record_delivery_events takes them) of source and
// returns its counts: the one call the endpoints and `herald mail-report` make.
func Record(ctx context.Context, q Querier, source string, evs json.RawMessage) (Result, error) {
	var res Result
	err := q.QueryRow(ctx, `SELECT recorded, duplicates, unknown FROM herald.record_delivery_events($1, $2::jsonb)`,
		source, string(evs)).Scan(&res.Recorded, &res.Duplicates, &res.Unknown)
	return res, err
}

func answer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// sendgrid verifies the Signed Event Webhook (ECDSA P-256 over SHA-256 of the
// timestamp header followed by the raw body) and maps its batch of events. SendGrid
// reports each recipient, the copies too, with the message's herald_id: the event's
// email goes along, so SQL tells the message's own events from a copy's.
func (h *handler) sendgrid(r *http.Request, body []byte) (json.RawMessage, int, error) {
	sig, err := base64.StdEncoding.DecodeString(r.Header.Get("X-Twilio-Email-Event-Webhook-Signature"))
	ts := r.Header.Get("X-Twilio-Email-Event-Webhook-Timestamp")
	if err != nil || len(sig) == 0 || !h.fresh(ts) {
		return nil, 0, errSignature
	}
	digest := sha256.Sum256(append([]byte(ts), body...))
	if !slices.ContainsFunc(h.cfg.SendGridKeys, func(k *ecdsa.PublicKey) bool { return ecdsa.VerifyASN1(k, digest[:], sig) }) {
		return nil, 0, errSignature
	}
	var raw []map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, 0, fmt.Errorf("the body must be a JSON array of SendGrid events: %v", err)
	}
	var out []event
	ignored := 0
	for i, e := range raw {
		str := func(k string) string { s, _ := e[k].(string); return s }
		kind, typ := "", ""
		switch str("event") {
		case "processed": // taken: settles a send in doubt
			kind = "processed"
		case "delivered":
			kind = "delivered"
		case "deferred":
			kind = "deferred"
		case "bounce":
			kind, typ = "bounced", "hard"
			if str("type") == "blocked" {
				typ = "soft"
			}
		case "dropped":
			// SendGrid drops a message to an address on its own suppression lists and
			// says which: that is the earlier outcome again.
			switch str("reason") {
			case "Bounced Address":
				kind, typ = "bounced", "hard"
			case "Unsubscribed Address":
				kind = "unsubscribed"
			case "Spam Reporting Address":
				kind = "complained"
			default:
				kind = "undelivered"
			}
		case "spamreport":
			kind = "complained"
		case "unsubscribe", "group_unsubscribe":
			kind = "unsubscribed"
		default: // open, click, group_resubscribe: no outcome
			ignored++
			continue
		}
		if str("sg_event_id") == "" {
			return nil, 0, fmt.Errorf("events[%d].sg_event_id: missing", i)
		}
		// sg_message_id is the send's X-Message-Id (what the sender stored), a '.' and
		// SendGrid's suffix for the recipient: the first part names the send.
		xMessageID, _, _ := strings.Cut(str("sg_message_id"), ".")
		ev := event{EventID: str("sg_event_id"), ProviderMessageID: xMessageID, Recipient: str("email"), Event: kind, Type: typ,
			Code: str("status"), Reason: firstOf(str("reason"), str("response"))}
		if id, err := strconv.ParseInt(str("herald_id"), 10, 64); err == nil {
			ev.MessageID = &id
		}
		if ts, ok := e["timestamp"].(float64); ok {
			at := time.Unix(int64(ts), 0).UTC().Format(time.RFC3339)
			ev.At = &at
		}
		out = append(out, ev)
	}
	return encode(out, ignored, nil)
}

// twilio verifies X-Twilio-Signature (base64 HMAC-SHA1 with the auth token of the
// full URL, then each POST parameter's name and value, sorted by name) and maps one
// status callback.
func (h *handler) twilio(r *http.Request, body []byte) (json.RawMessage, int, error) {
	form, ok := h.twilioForm(r, body, h.cfg.TwilioURL)
	if !ok {
		return nil, 0, errSignature
	}
	sid, status := form.Get("MessageSid"), form.Get("MessageStatus")
	if sid == "" || status == "" {
		return nil, 0, errors.New("MessageSid and MessageStatus are required")
	}
	ev := event{EventID: sid + ":" + status, ProviderMessageID: sid, Code: form.Get("ErrorCode")}
	switch status {
	case "accepted", "queued", "sending", "sent": // taken: settles a send in doubt
		ev.Event = "processed"
	case "delivered", "read":
		ev.Event = "delivered"
	case "undelivered", "failed":
		ev.Event = "undelivered"
	default: // scheduled, canceled (herald schedules nothing at Twilio), partially_delivered: not an outcome
		return nil, 1, nil
	}
	if id, err := strconv.ParseInt(r.URL.Query().Get("herald_id"), 10, 64); err == nil {
		ev.MessageID = &id
	}
	return encode([]event{ev}, 0, nil)
}

// twilioForm reads a form Twilio posted to publicURL (the endpoint's URL as Twilio
// calls it, its query string taken from the request) when X-Twilio-Signature
// verifies with one of the auth tokens; ok is false otherwise.
func (h *handler) twilioForm(r *http.Request, body []byte, publicURL string) (form url.Values, ok bool) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, false // what was signed cannot be rebuilt
	}
	if r.URL.RawQuery != "" {
		publicURL = strings.SplitN(publicURL, "?", 2)[0] + "?" + r.URL.RawQuery
	}
	got := r.Header.Get("X-Twilio-Signature")
	return form, got != "" && slices.ContainsFunc(h.cfg.TwilioAuthTokens, func(token string) bool {
		return hmac.Equal([]byte(got), []byte(TwilioSignature(token, publicURL, form)))
	})
}

// TwilioSignature is the X-Twilio-Signature of a POST to fullURL with form, signed
// with authToken (Twilio's documented algorithm).
func TwilioSignature(authToken, fullURL string, form url.Values) string {
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(fullURL)
	for _, k := range keys {
		vals := append([]string(nil), form[k]...)
		sort.Strings(vals)
		for _, v := range vals {
			b.WriteString(k)
			b.WriteString(v)
		}
	}
	mac := hmac.New(sha1.New, []byte(authToken))
	mac.Write([]byte(b.String()))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// generic verifies a Standard Webhooks signature and hands the body, herald's own
// event objects, to SQL as it is: herald.record_delivery_events checks them and
// names a bad field (400).
func (h *handler) generic(r *http.Request, body []byte) (json.RawMessage, int, error) {
	if webhook.Verify(h.cfg.GenericSecrets, r.Header, body, h.cfg.Tolerance, time.Now()) != nil {
		return nil, 0, errSignature
	}
	if !json.Valid(body) {
		return nil, 0, errors.New("the body is not JSON")
	}
	return body, 0, nil
}

// fresh reports whether a Unix-seconds timestamp is within the tolerance of now.
func (h *handler) fresh(ts string) bool {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	d := time.Since(time.Unix(sec, 0))
	return d <= h.cfg.Tolerance && d >= -h.cfg.Tolerance
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
