// Package intake accepts notifications from services that cannot hold a Postgres
// connection: an HTTP API (POST /v1/messages, POST /v1/messages/batch,
// GET and DELETE /v1/messages/{id} and /v1/messages?idempotency_key=,
// GET /v1/messages/{id}/history, described by
// the OpenAPI document at GET /v1/openapi.json) and the functions the command line
// shares with it. It
// validates no value itself: a message goes through herald.enqueue (a batch through
// herald.enqueue_batch), and the SQLSTATE and field that SQL raises become a 400
// with a code and a field. Only the JSON shape of a request is checked here.
package intake

import (
	"compress/gzip"
	"context"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/herald/herald/runner/tracecontext"
)

// Config is how the intake answers.
type Config struct {
	// Tokens are the accepted bearer tokens, each naming its producer; none means
	// the intake is open and messages belong to the database role.
	Tokens []Token
	// MaxBodyBytes bounds a request body (default 1 MiB); larger gets 413.
	MaxBodyBytes int64
	// MaxBatch bounds the messages of one batch request (default 1000).
	MaxBatch int
	// Rate bounds the messages each token may enqueue per second through this
	// process (one bucket for an open intake), a status read or a cancel counting as
	// one message; more gets 429 with Retry-After. Its
	// burst is the larger of Rate and MaxBatch, so a full batch always fits. 0: no
	// limit.
	Rate float64
	// MaxInFlight bounds the requests each token may have in progress at once in this
	// process (one count for an open intake), default 16: more get 429
	// too_many_in_flight with Retry-After 1, before their body is read. It bounds the
	// memory one producer's requests hold (MaxInFlight × MaxBodyBytes). Below 0: no
	// bound.
	MaxInFlight int
	// TokenConns bounds the requests of each token that use the database at once
	// (default the pool's MaxConns less one, at least 1): the others wait their turn,
	// so one producer's burst leaves a connection to the rest.
	TokenConns int
	// QuotaRetry is the Retry-After of a call refused for the producer's max_pending:
	// how often runners count producers' backlogs (HERALD_QUOTA_INTERVAL; default 10s).
	QuotaRetry time.Duration
	// Logger receives errors that are not the client's fault (default slog.Default()).
	Logger *slog.Logger
	// Counted, when set, is told of every answered request: the token's name ("" when
	// open or without a valid token), the HTTP status, and the error's code ("" for a
	// success) — for /metrics (herald_intake_requests_total).
	Counted func(token string, status int, code string)
	// Tracer, when set, makes a span of every POST of messages that reaches its
	// handler ("enqueue <channel>", kind producer; a child of the request's
	// traceparent), and the messages carry its context, so their deliver spans are its
	// children.
	Tracer trace.Tracer
}

// Defaults of Config (Rate's is the command line's: a Config's zero Rate is no limit).
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultMaxBatch     = 1000
	DefaultRate         = 1000
	DefaultMaxInFlight  = 16
)

type handler struct {
	pool   *pgxpool.Pool
	cfg    Config // its Tokens are the first; tokens holds the current ones
	tokens atomic.Pointer[[]Token]

	mu       sync.Mutex
	limiters map[string]*rate.Limiter // by token name ("" when open); nil: no limit
	bounds   map[string]*bounds       // by token name ("" when open)
}

// Intake is a registered intake, whose tokens can be replaced while it serves.
type Intake struct{ h *handler }

// SetTokens replaces the accepted tokens (a revoked token is refused from the next
// request on; requests in progress finish). An intake started open stays open, and
// one started with tokens never becomes open: either is an error, and nothing changes.
func (i *Intake) SetTokens(tokens []Token) error {
	switch open := len(*i.h.tokens.Load()) == 0; {
	case open && len(tokens) > 0:
		return errors.New("intake: it was started open (no token); restart it to require tokens")
	case !open && len(tokens) == 0:
		return errors.New("intake: no token would open it to anyone; keeping the tokens it has")
	}
	list := slices.Clone(tokens)
	i.h.tokens.Store(&list)
	return nil
}

// bounds are one token's requests in progress and its database slots (admit).
type bounds struct {
	inFlight atomic.Int64
	conns    chan struct{} // a slot per request using the database (capacity TokenConns)
}

// Register adds the intake's routes to mux.
func Register(mux *http.ServeMux, pool *pgxpool.Pool, cfg Config) *Intake {
	h := newHandler(pool, cfg)
	for pattern, f := range h.routes() {
		mux.HandleFunc(pattern, f)
	}
	return &Intake{h: h}
}

// newHandler is the intake on pool with cfg's defaults filled in.
func newHandler(pool *pgxpool.Pool, cfg Config) *handler {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.QuotaRetry <= 0 {
		cfg.QuotaRetry = 10 * time.Second
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.TokenConns <= 0 {
		cfg.TokenConns = max(1, int(pool.Config().MaxConns)-1)
	}
	h := &handler{pool: pool, cfg: cfg, bounds: map[string]*bounds{}}
	if cfg.Rate > 0 {
		h.limiters = map[string]*rate.Limiter{}
	}
	tokens := slices.Clone(cfg.Tokens)
	h.tokens.Store(&tokens)
	return h
}

// bounded returns the in-progress bounds and the rate limiter (nil: none) of token
// ("" when open), made at its first request.
func (h *handler) bounded(token string) (*bounds, *rate.Limiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.bounds[token]
	if b == nil {
		b = &bounds{conns: make(chan struct{}, h.cfg.TokenConns)}
		h.bounds[token] = b
	}
	if h.limiters == nil {
		return b, nil
	}
	l := h.limiters[token]
	if l == nil {
		l = rate.NewLimiter(rate.Limit(h.cfg.Rate), max(int(h.cfg.Rate), h.cfg.MaxBatch))
		h.limiters[token] = l
	}
	return b, l
}

// routes are the intake's handlers by ServeMux pattern.
func (h *handler) routes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"POST /v1/messages":             h.auth(h.post),
		"POST /v1/messages/batch":       h.auth(h.postBatch),
		"GET /v1/messages/{id}":         h.auth(h.get),
		"GET /v1/messages/{id}/history": h.auth(h.history),
		"GET /v1/messages":              h.auth(h.getByKey),
		"DELETE /v1/messages/{id}":      h.auth(h.cancel),
		"DELETE /v1/messages":           h.auth(h.cancelByKey),
		"GET /v1/openapi.json": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(openAPI)
		},
	}
}

// openAPI is the OpenAPI 3 document of the routes (openapi.json).
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3 document describing the intake's routes, which it
// also serves at GET /v1/openapi.json without a token.
func OpenAPI() []byte { return slices.Clone(openAPI) }

// Patterns lists the routes Register adds, as ServeMux patterns ("POST
// /v1/messages", …), sorted: each is an operation of OpenAPI's document.
func Patterns() []string {
	return slices.Sorted(maps.Keys((&handler{}).routes()))
}

// Handler returns a mux with only the intake's routes.
func Handler(pool *pgxpool.Pool, cfg Config) http.Handler {
	mux := http.NewServeMux()
	Register(mux, pool, cfg)
	return mux
}

// caller is who a request acts for: the token's name ("" when the intake is open)
// and a Querier acting for its producer.
type caller struct {
	token   string
	q       Querier
	body    []byte        // a POST's body, read within MaxBodyBytes before the database slot
	limiter *rate.Limiter // the token's (allow); nil: no rate
}

// counted is a ResponseWriter that keeps the status and the error code answered, for
// Config.Counted.
type counted struct {
	http.ResponseWriter
	status int
	code   string
}

func (c *counted) WriteHeader(status int) {
	c.status = status
	c.ResponseWriter.WriteHeader(status)
}

// Unwrap gives http.ResponseController the server's writer.
func (c *counted) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// auth finds the request's token and runs next for its caller (the pool itself when
// the intake is open), or answers 401; Config.Counted is told of the answer.
func (h *handler) auth(next func(http.ResponseWriter, *http.Request, caller)) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		w := &counted{ResponseWriter: rw, status: http.StatusOK}
		token := ""
		if h.cfg.Counted != nil {
			defer func() { h.cfg.Counted(token, w.status, w.code) }()
		}
		tokens := *h.tokens.Load()
		if len(tokens) == 0 {
			if !localHost(r.Host) {
				writeError(w, http.StatusForbidden, &InputError{Code: "host_not_allowed",
					Message: fmt.Sprintf("Host %q: the open intake answers only requests to localhost or an IP address (a DNS name can be rebound to this host by any web page); serve other names with tokens (HERALD_INTAKE_TOKENS)", r.Host)})
				return
			}
			h.admit(w, r, caller{q: h.pool}, next)
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		var match *Token
		for i := range tokens { // every token compared: the time does not tell which matched
			if ok && subtle.ConstantTimeCompare([]byte(got), []byte(tokens[i].Secret)) == 1 {
				match = &tokens[i]
			}
		}
		if match == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="herald"`)
			writeError(w, http.StatusUnauthorized, &InputError{Code: "unauthorized", Message: "a valid bearer token is required"})
			return
		}
		token = match.Name
		h.admit(w, r, caller{token: match.Name, q: AsProducer(h.pool, match.Name)}, next)
	}
}

// localHost reports whether a request's Host names this machine in a way no DNS
// answer can change: an IP address, localhost, or a name under .localhost (which
// browsers resolve to loopback themselves). An open intake answers only those: a web
// page on a DNS name that its owner rebinds to 127.0.0.1 is same-origin with a
// developer's intake and could otherwise enqueue to it and read the answers.
func localHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// admit runs next for c's request within the token's bounds: counted in progress, or
// answered 429 too_many_in_flight (Retry-After 1, the body unread) when the token
// already has MaxInFlight; a POST's body read (h.body: 415, 413, 400); then, once one
// of the token's TokenConns slots is free, next. A client that leaves while waiting is
// answered nothing (counted as status 499). A slow body holds no slot.
func (h *handler) admit(w http.ResponseWriter, r *http.Request, c caller, next func(http.ResponseWriter, *http.Request, caller)) {
	var b *bounds
	b, c.limiter = h.bounded(c.token)
	if b.inFlight.Add(1) > int64(h.cfg.MaxInFlight) && h.cfg.MaxInFlight >= 0 {
		b.inFlight.Add(-1)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, &InputError{Code: "too_many_in_flight",
			Message: fmt.Sprintf("this token has %d requests in progress, the most it may; retry when one is answered", h.cfg.MaxInFlight)})
		return
	}
	defer b.inFlight.Add(-1)
	if r.Method == http.MethodPost {
		var ok bool
		if c.body, ok = h.body(w, r); !ok {
			return
		}
	}
	select {
	case b.conns <- struct{}{}:
		defer func() { <-b.conns }()
		next(w, r, c)
	case <-r.Context().Done():
		if errors.Is(r.Context().Err(), context.DeadlineExceeded) { // the request's time is up: 503 timeout
			h.fail(w, r.Context().Err())
		} else if cw, ok := w.(*counted); ok { // nothing is answered: counted as the client's leaving
			cw.status, cw.code = 499, "client_closed"
		}
	}
}

// allow takes n messages from the caller's bucket, or answers 429 with the seconds
// to wait in Retry-After and takes nothing.
func (h *handler) allow(w http.ResponseWriter, c caller, n int) bool {
	l := c.limiter
	if l == nil {
		return true
	}
	now := time.Now()
	res := l.ReserveN(now, n)
	wait := res.DelayFrom(now)
	if res.OK() && wait == 0 {
		return true
	}
	res.CancelAt(now)
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	writeError(w, http.StatusTooManyRequests, &InputError{Code: "rate_limited",
		Message: fmt.Sprintf("over %g messages a second for this token; retry later", h.cfg.Rate)})
	return false
}

// body reads a JSON request body, as sent or gzip-compressed (Content-Encoding),
// within the size limit both as sent and as decompressed (a small body that expands
// without end is refused as it grows past it), or answers 415/413/400.
func (h *handler) body(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, &InputError{Code: "unsupported_media_type",
			Message: "the body must be application/json"})
		return nil, false
	}
	encoding := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	if encoding != "" && encoding != "identity" && encoding != "gzip" {
		writeError(w, http.StatusUnsupportedMediaType, &InputError{Code: "unsupported_media_type",
			Message: fmt.Sprintf("Content-Encoding %q: the body must be sent as it is or gzip-compressed", encoding)})
		return nil, false
	}
	inner := w // the server's own writer, so that an oversized body also closes the connection
	if c, ok := w.(*counted); ok {
		inner = c.ResponseWriter
	}
	var src io.Reader = http.MaxBytesReader(inner, r.Body, h.cfg.MaxBodyBytes)
	if encoding == "gzip" {
		zr, err := gzip.NewReader(src)
		if err != nil {
			writeError(w, http.StatusBadRequest, &InputError{Code: "unreadable_body", Message: "the body is not gzip data: " + err.Error()})
			return nil, false
		}
		src = io.LimitReader(zr, h.cfg.MaxBodyBytes+1) // the limit holds for what it expands to, too
	}
	b, err := io.ReadAll(src)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig) || int64(len(b)) > h.cfg.MaxBodyBytes:
		writeError(w, http.StatusRequestEntityTooLarge, &InputError{Code: "body_too_large",
			Message: fmt.Sprintf("the body is over %d bytes (sent, or once decompressed)", h.cfg.MaxBodyBytes)})
		return nil, false
	case err != nil:
		writeError(w, http.StatusBadRequest, &InputError{Code: "unreadable_body", Message: "the body could not be read"})
		return nil, false
	}
	return b, true
}

func (h *handler) post(w http.ResponseWriter, r *http.Request, c caller) {
	hdr, span := h.traceEnqueue(w, r)
	m, err := DecodeMessage(c.body)
	if err == nil {
		err = idempotencyHeader(&m, r.Header.Get("Idempotency-Key"))
		m.Metadata = tracedMetadata(m.Metadata, hdr)
	}
	var id int64
	defer func() { span.end(m.Channel, []int64{id}) }()
	if err == nil && !h.allow(w, c, 1) {
		return
	}
	if err == nil {
		id, err = Enqueue(r.Context(), c.q, m)
	}
	if err != nil {
		h.fail(w, withWait(r.Context(), c.q, err, func(*int) (string, string) { return m.Channel, m.Recipient }))
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"id": id, "status_url": fmt.Sprintf("/v1/messages/%d", id)})
}

// idempotencyHeader sets the message's idempotency key from the Idempotency-Key
// header; a different key in the body is an error.
func idempotencyHeader(m *Message, header string) error {
	if header == "" {
		return nil
	}
	if m.IdempotencyKey != nil && *m.IdempotencyKey != header {
		return &InputError{Code: "invalid_idempotency_key", Field: "idempotency_key",
			Message: "idempotency_key: the Idempotency-Key header and the body disagree"}
	}
	m.IdempotencyKey = &header
	return nil
}

// stampedBatch is a batch body (a JSON array of message objects, as batchLen
// accepted it) with what the request's headers say of every message, decoded and
// encoded once: the W3C trace context in each message's metadata (tracedMetadata),
// and from an Idempotency-Key header the idempotency key `<header>:<index>`, so that
// a batch sent again (after a timeout, say) stores nothing twice and answers the same
// ids; a message that names its own key as well is an error (which key would count?).
// Neither header: body as is.
func stampedBatch(body []byte, h http.Header) ([]byte, error) {
	key, traced := h.Get("Idempotency-Key"), tracecontext.ValidParent(h.Get(tracecontext.Parent))
	if key == "" && !traced {
		return body, nil
	}
	var msgs []map[string]json.RawMessage
	if json.Unmarshal(body, &msgs) != nil {
		return body, nil // not objects: herald names the bad one
	}
	if last := key + ":" + strconv.Itoa(len(msgs)-1); key != "" && len(last) > 255 {
		return nil, &InputError{Code: "invalid_idempotency_key", Field: "idempotency_key",
			Message: fmt.Sprintf("idempotency_key: the Idempotency-Key header makes keys of up to %d characters for this batch (%q); at most 255", len(last), last)}
	}
	for i, m := range msgs {
		if m == nil {
			continue
		}
		if traced {
			m["metadata"] = tracedMetadata(m["metadata"], h)
		}
		if key == "" {
			continue
		}
		if k, ok := m["idempotency_key"]; ok && string(k) != "null" {
			return nil, &InputError{Code: "invalid_idempotency_key", Field: "idempotency_key", Index: &i,
				Message: fmt.Sprintf("messages[%d].idempotency_key: the batch's Idempotency-Key header keys every message (%s:%d); give keys in the header or in the messages, not both", i, key, i)}
		}
		m["idempotency_key"], _ = json.Marshal(key + ":" + strconv.Itoa(i))
	}
	return json.Marshal(msgs)
}

func (h *handler) postBatch(w http.ResponseWriter, r *http.Request, c caller) {
	hdr, span := h.traceEnqueue(w, r)
	var ids []int64
	defer func() { span.end("", ids) }()
	b := c.body
	n, err := batchLen(b, h.cfg.MaxBatch)
	if err != nil {
		h.fail(w, err)
		return
	}
	if b, err = stampedBatch(b, hdr); err != nil {
		h.fail(w, err)
		return
	}
	if !h.allow(w, c, n) {
		return
	}
	ids, err = storeBatch(r.Context(), c.q, b)
	if err != nil {
		h.fail(w, withWait(r.Context(), c.q, err, func(i *int) (string, string) {
			var msgs []struct{ Channel, Recipient string }
			if json.Unmarshal(b, &msgs) != nil || i == nil || *i >= len(msgs) {
				return "", ""
			}
			return msgs[*i].Channel, msgs[*i].Recipient
		}))
		return
	}
	urls := make([]string, len(ids))
	for i, id := range ids {
		urls[i] = fmt.Sprintf("/v1/messages/%d", id)
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"ids": ids, "status_urls": urls})
}

// get answers the status of a message by id; a read counts as one message against
// the token's rate, so status polling cannot load the database without bound.
func (h *handler) get(w http.ResponseWriter, r *http.Request, c caller) {
	id, ok := pathID(w, r)
	if !ok || !h.allow(w, c, 1) {
		return
	}
	s, err := GetStatus(r.Context(), c.q, id)
	h.status(w, s, err, "id")
}

// history answers what happened to a message by id, event by event (herald.history),
// counted as get is: 200 {"events": […]}, 404 when it is unknown or not the token's.
func (h *handler) history(w http.ResponseWriter, r *http.Request, c caller) {
	id, ok := pathID(w, r)
	if !ok || !h.allow(w, c, 1) {
		return
	}
	evs, err := GetHistory(r.Context(), c.q, id)
	switch {
	case errors.Is(err, ErrNotFound):
		notFound(w, "id")
	case err != nil:
		h.fail(w, err)
	default:
		writeJSON(w, http.StatusOK, map[string]any{"events": evs})
	}
}

// getByKey answers the status of the message enqueued with ?idempotency_key=,
// counted as get is.
func (h *handler) getByKey(w http.ResponseWriter, r *http.Request, c caller) {
	if key, ok := keyParam(w, r); ok && h.allow(w, c, 1) {
		s, err := GetStatusByKey(r.Context(), c.q, key)
		h.status(w, s, err, "idempotency_key")
	}
}

// status answers a status read: 200 with it, 404 naming field when there is none.
func (h *handler) status(w http.ResponseWriter, s *Status, err error, field string) {
	switch {
	case errors.Is(err, ErrNotFound):
		notFound(w, field)
	case err != nil:
		h.fail(w, err)
	default:
		writeJSON(w, http.StatusOK, s)
	}
}

// cancel withdraws a message by id: 200 cancelled, 409 being sent or finished, 404
// unknown or another producer's.
func (h *handler) cancel(w http.ResponseWriter, r *http.Request, c caller) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	if h.allow(w, c, 1) {
		h.cancelled(w, Cancel(r.Context(), c.q, id), map[string]any{"id": id}, "id", fmt.Sprintf("message %d", id))
	}
}

// cancelByKey withdraws the message enqueued with ?idempotency_key=, answering as cancel.
func (h *handler) cancelByKey(w http.ResponseWriter, r *http.Request, c caller) {
	key, ok := keyParam(w, r)
	if ok && h.allow(w, c, 1) {
		h.cancelled(w, CancelByKey(r.Context(), c.q, key), map[string]any{"idempotency_key": key},
			"idempotency_key", "the message of that key")
	}
}

// pathID reads the {id} of a request's path, or answers 400.
func pathID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		writeError(w, http.StatusBadRequest, &InputError{Code: "invalid_id", Field: "id", Message: "id: must be a positive integer"})
		return 0, false
	}
	return id, true
}

// keyParam reads the one ?idempotency_key= of a request by key, or answers 400.
func keyParam(w http.ResponseWriter, r *http.Request) (string, bool) {
	keys, ok := r.URL.Query()["idempotency_key"]
	if !ok || len(keys) != 1 {
		writeError(w, http.StatusBadRequest, &InputError{Code: "invalid_idempotency_key", Field: "idempotency_key",
			Message: "idempotency_key: give the message's key once, as ?idempotency_key="})
		return "", false
	}
	return keys[0], true
}

// notFound answers 404 for a message, named by field, that the caller does not have.
func notFound(w http.ResponseWriter, field string) {
	writeError(w, http.StatusNotFound, &InputError{Code: "not_found", Field: field, Message: "no such message"})
}

// cancelled answers a cancel's err: 200 with found and the status when nil.
func (h *handler) cancelled(w http.ResponseWriter, err error, found map[string]any, field, what string) {
	var nc *NotCancellable
	switch {
	case err == nil:
		found["status"] = "cancelled"
		writeJSON(w, http.StatusOK, found)
	case errors.Is(err, ErrNotFound):
		notFound(w, field)
	case errors.As(err, &nc):
		writeError(w, http.StatusConflict, &InputError{Code: "not_cancellable", Field: field,
			Message: fmt.Sprintf("%s is %s", what, nc.Status), Status: nc.Status})
	default:
		h.fail(w, err)
	}
}

// withWait gives an over-quota refusal its RetryAfter: how long a suspended
// producer waits (herald.producer_wait, on q: for the same producer), or a recipient
// at its channel's recipient_limit (herald.recipient_wait of the refused message,
// whose channel and recipient refused gives from the error's batch index). Other
// errors, and a max_pending refusal, pass as they are.
func withWait(ctx context.Context, q Querier, err error, refused func(index *int) (channel, recipient string)) error {
	var ie *InputError
	if !errors.As(err, &ie) || !ie.OverQuota {
		return err
	}
	var seconds *int32
	var werr error
	if ie.Field == "recipient" {
		channel, recipient := refused(ie.Index)
		werr = q.QueryRow(ctx, `SELECT herald.recipient_wait($1, $2)`, channel, recipient).Scan(&seconds)
	} else {
		werr = q.QueryRow(ctx, `SELECT herald.producer_wait()`).Scan(&seconds)
	}
	if werr == nil && seconds != nil && *seconds > 0 {
		ie.RetryAfter = time.Duration(*seconds) * time.Second
	}
	return err
}

// fail answers an error: 400 for bad input, 403 for input the producer is not
// granted, 422 for an idempotency key reused for another message, 429 while it is at
// its max_pending or suspended or the recipient at its limit, 503 when the request's
// time ran out (timeout), a recipient's budget is held by another transaction
// (recipient_busy) or the database is unavailable, 500 (logged, with no detail) for
// anything else.
func (h *handler) fail(w http.ResponseWriter, err error) {
	var ie *InputError
	switch {
	case errors.As(err, &ie) && ie.Forbidden:
		writeError(w, http.StatusForbidden, ie)
	case errors.As(err, &ie) && ie.KeyReused:
		writeError(w, http.StatusUnprocessableEntity, ie)
	case errors.As(err, &ie) && ie.OverQuota:
		wait := h.cfg.QuotaRetry
		if ie.RetryAfter > 0 {
			wait = ie.RetryAfter
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		writeError(w, http.StatusTooManyRequests, ie)
	case errors.As(err, &ie) && ie.Busy:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, ie)
	case errors.As(err, &ie):
		writeError(w, http.StatusBadRequest, ie)
	case timedOut(err):
		h.cfg.Logger.Warn("intake: a request ran out of time", "err", err)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, &InputError{Code: "timeout",
			Message: "the request ran out of time before the database answered; most likely nothing was stored: retry, with the same idempotency_key to be sure of storing it once"})
	case Unavailable(err):
		h.cfg.Logger.Warn("intake: database unavailable", "err", err)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, &InputError{Code: "database_unavailable",
			Message: "the database is unavailable; retry later"})
	default:
		h.cfg.Logger.Error("intake: unexpected error", "err", err)
		writeError(w, http.StatusInternalServerError, &InputError{Code: "internal", Message: "internal error"})
	}
}

func writeError(w http.ResponseWriter, status int, e *InputError) {
	if c, ok := w.(*counted); ok {
		c.code = e.Code
	}
	writeJSON(w, status, map[string]*InputError{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
