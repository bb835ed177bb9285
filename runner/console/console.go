// Package console is herald's operator console: a few server-rendered pages on the
// HTTP address (no JavaScript) that show queue depth and the oldest message's age
// per channel and state, throughput over the last hour as a chart, paused channels,
// consumer-group lag and the dead letters with their error history, with redrive
// and cancel actions, and one message by id with its events. It reads and acts only
// through herald's SQL (views and functions), so its database role must be
// herald_admin.
//
// Access needs the console's own token: a form exchanges it for an HttpOnly,
// SameSite=Strict cookie scoped to the console's path; every page and action
// without it is refused (401) and changes nothing. A form posted from another origin
// (by the browser's Sec-Fetch-Site, or Origin against Host) is refused (403), the
// cookie notwithstanding.
package console

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed templates/*.html
var files embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"ago": func(d *time.Duration) string {
		if d == nil {
			return "—"
		}
		return d.Round(time.Second).String()
	},
}).ParseFS(files, "templates/*.html"))

// Prefix is where the console is served.
const Prefix = "/console/"

const cookieName = "herald_console"

// Config is the console's access and logging.
type Config struct {
	// Token grants access; it must be at least 16 characters.
	Token string
	// Logger receives errors that are not the operator's (default slog.Default()).
	Logger *slog.Logger
}

type console struct {
	pool  *pgxpool.Pool
	cfg   Config                 // its Token is the first; token holds the current one
	token atomic.Pointer[string] // the current token
}

// Console is a registered console, whose token can be replaced while it serves.
type Console struct{ c *console }

// SetToken replaces the token: from the next request on, only the new one signs in,
// and cookies of the old one are refused (the operators sign in again). A token
// under 16 characters is an error, and the console keeps the one it has.
func (c *Console) SetToken(token string) error {
	if len(token) < 16 {
		return errors.New("console: the token must be at least 16 characters; keeping the one it has")
	}
	c.c.token.Store(&token)
	return nil
}

// Register adds the console's routes under Prefix to mux.
func Register(mux *http.ServeMux, pool *pgxpool.Pool, cfg Config) (*Console, error) {
	if len(cfg.Token) < 16 {
		return nil, errors.New("console: the token must be at least 16 characters")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &console{pool: pool, cfg: cfg}
	c.token.Store(&cfg.Token)
	mux.HandleFunc("GET "+Prefix+"{$}", c.auth(c.overview))
	mux.HandleFunc("GET "+Prefix+"messages/{id}", c.auth(c.message))
	// A form posted from another origin carries the cookie when that origin is of
	// the same site (another app on the company's domain, another port of the host):
	// SameSite does not stop it, the browser's Sec-Fetch-Site or Origin does.
	sameOrigin := http.NewCrossOriginProtection()
	sameOrigin.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.cfg.Logger.Warn("console: refused a form from another origin", "path", r.URL.Path, "origin", r.Header.Get("Origin"))
		http.Error(w, "refused: this form was posted from another origin; use the console's own pages", http.StatusForbidden)
	}))
	for path, action := range map[string]http.HandlerFunc{"redrive": c.redrive, "cancel": c.cancel, "pause": c.pause,
		"resume": c.resume, "end-suspension": c.endSuspension, "redispatch": c.redispatch} {
		mux.Handle("POST "+Prefix+path, sameOrigin.Handler(c.auth(action)))
	}
	mux.Handle("POST "+Prefix+"login", sameOrigin.Handler(http.HandlerFunc(c.login)))
	return &Console{c: c}, nil
}

func (c *console) valid(r *http.Request) bool {
	ck, err := r.Cookie(cookieName)
	return err == nil && subtle.ConstantTimeCompare([]byte(ck.Value), []byte(*c.token.Load())) == 1
}

// auth runs next for a request with the console's cookie; others get the login form
// with 401.
func (c *console) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
		w.Header().Set("X-Frame-Options", "DENY")
		if !c.valid(r) {
			w.WriteHeader(http.StatusUnauthorized)
			c.render(w, "login", map[string]any{"Prefix": Prefix, "Next": r.URL.Path})
			return
		}
		next(w, r)
	}
}

func (c *console) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	token := *c.token.Load()
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue("token")), []byte(token)) != 1 {
		w.WriteHeader(http.StatusUnauthorized)
		c.render(w, "login", map[string]any{"Prefix": Prefix, "Failed": true})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: token, Path: Prefix, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

func (c *console) render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pages.ExecuteTemplate(w, name+".html", data); err != nil {
		c.cfg.Logger.Error("console: rendering", "page", name, "err", err)
	}
}

func (c *console) fail(w http.ResponseWriter, err error) {
	c.cfg.Logger.Error("console", "err", err)
	http.Error(w, "the database could not answer; see the server's log", http.StatusServiceUnavailable)
}

// Depth is one row of herald.queue_stats.
type Depth struct {
	Channel, Status string
	Count, Ready    int64
	Oldest          *time.Duration
}

// Minute is the throughput of one minute (all channels).
type Minute struct {
	At               time.Time
	Sent, Dead, Bars int64
}

// Dead is one row of herald.dead_letters.
type Dead struct {
	ID                              int64
	Channel, Recipient, Class, Code string
	Attempts                        int32
	Error, Errors                   string
	DiedAt                          time.Time
}

// Paused is a paused channel, why, since when and, for a spent quota, until when
// (Until nil: until it is resumed), and the fallback channel that sends its messages
// meanwhile (empty: none, or an operator's pause, which is not failed over).
type Paused struct {
	Channel, Reason, Fallback string
	Since, Until              *time.Time
}

// Quiet is a channel in its quiet hours or days (herald.quiet_channels) and when
// they end (nil: never, as the database server does not know its quiet_zone).
type Quiet struct {
	Channel string
	Until   *time.Time
}

// Producer is one row of herald.producer_backlog with the bound on its sends in
// flight there (Concurrency, empty when none), the producer's priority floor, backlog
// bound (MaxPending, empty when none), send limit ("N / window", empty when none) and
// suspension (until when and why, empty when none).
type Producer struct {
	Producer, Channel        string
	Queued, Held, Processing int64
	Concurrency              string
	MinPriority              int16
	MaxPending, SendLimit    string
	Suspended                string
}

// Suspension is a producer suspended for its bounce or complaint rate: until when and why.
type Suspension struct {
	Producer, Reason string
	Until            time.Time
}

// Lag is one row of herald.consumer_lag.
type Lag struct {
	Group        string
	Partition    int32
	Lag, Pending int64
}

// SetAside is one row of herald.consumer_dead_letters: an event a consumer group (the
// status callbacks' among them) set aside, and why.
type SetAside struct {
	Group, Kind, Error string
	Offset, MessageID  int64
	At                 time.Time
}

func (c *console) overview(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	data := map[string]any{"Prefix": Prefix, "Done": r.URL.Query().Get("done")}
	var err error
	if data["Depth"], err = collect(ctx, c.pool, `SELECT channel, status, count, ready, oldest_age FROM herald.queue_stats ORDER BY 1, 2`,
		func(row pgx.CollectableRow) (d Depth, err error) {
			err = row.Scan(&d.Channel, &d.Status, &d.Count, &d.Ready, &d.Oldest)
			return
		}); err != nil {
		c.fail(w, err)
		return
	}
	minutes, err := collect(ctx, c.pool, `SELECT g, coalesce(sum(t.sent), 0), coalesce(sum(t.dead), 0)
		FROM generate_series(date_trunc('minute', now()) - interval '59 minutes', date_trunc('minute', now()), interval '1 minute') g
		LEFT JOIN herald.throughput t ON t.minute = g GROUP BY g ORDER BY g`,
		func(row pgx.CollectableRow) (m Minute, err error) {
			err = row.Scan(&m.At, &m.Sent, &m.Dead)
			return
		})
	if err != nil {
		c.fail(w, err)
		return
	}
	var top int64 = 1
	for _, m := range minutes {
		top = max(top, m.Sent+m.Dead)
	}
	for i := range minutes {
		minutes[i].Bars = (minutes[i].Sent + minutes[i].Dead) * 100 / top
	}
	data["Minutes"], data["Top"] = minutes, top
	if data["Paused"], err = collect(ctx, c.pool, `SELECT name, coalesce(paused_reason, ''), paused_at, paused_until,
		CASE WHEN paused_by = 'runner' THEN coalesce(fallback, '') ELSE '' END
		FROM herald.channels WHERE paused ORDER BY 1`, func(row pgx.CollectableRow) (p Paused, err error) {
		err = row.Scan(&p.Channel, &p.Reason, &p.Since, &p.Until, &p.Fallback)
		return
	}); err != nil {
		c.fail(w, err)
		return
	}
	if data["Quiet"], err = collect(ctx, c.pool, `SELECT channel, quiet_until FROM herald.quiet_channels()`,
		func(row pgx.CollectableRow) (q Quiet, err error) {
			err = row.Scan(&q.Channel, &q.Until)
			return
		}); err != nil {
		c.fail(w, err)
		return
	}
	if data["Producers"], err = collect(ctx, c.pool, `SELECT b.producer, b.channel, b.queued, b.held, b.processing,
		coalesce(b.concurrency::text, ''), coalesce(p.min_priority, 0), coalesce(p.max_pending::text, ''), coalesce(p.send_limit || ' / ' || p.send_window, ''),
		CASE WHEN p.suspended_until > now() THEN to_char(p.suspended_until, 'YYYY-MM-DD HH24:MI:SS') || ': ' || p.suspended_reason ELSE '' END
		FROM herald.producer_backlog b
		LEFT JOIN herald.producers p ON p.producer = b.producer
		ORDER BY b.queued + b.held + b.processing DESC, 1, 2 LIMIT 20`, func(row pgx.CollectableRow) (p Producer, err error) {
		err = row.Scan(&p.Producer, &p.Channel, &p.Queued, &p.Held, &p.Processing, &p.Concurrency, &p.MinPriority, &p.MaxPending,
			&p.SendLimit, &p.Suspended)
		return
	}); err != nil {
		c.fail(w, err)
		return
	}
	if data["Suspended"], err = collect(ctx, c.pool, `SELECT producer, suspended_until, coalesce(suspended_reason, '')
		FROM herald.producers WHERE suspended_until > now() ORDER BY 1`, func(row pgx.CollectableRow) (p Suspension, err error) {
		err = row.Scan(&p.Producer, &p.Until, &p.Reason)
		return
	}); err != nil {
		c.fail(w, err)
		return
	}
	if data["Lag"], err = collect(ctx, c.pool, `SELECT group_name, partition, lag, pending FROM herald.consumer_lag ORDER BY 1, 2`,
		func(row pgx.CollectableRow) (l Lag, err error) {
			err = row.Scan(&l.Group, &l.Partition, &l.Lag, &l.Pending)
			return
		}); err != nil {
		c.fail(w, err)
		return
	}
	setAside, err := collect(ctx, c.pool, `SELECT group_name, kind, error, "offset", message_id, dead_at
		FROM herald.consumer_dead_letters ORDER BY dead_at DESC, "offset" DESC LIMIT 50`,
		func(row pgx.CollectableRow) (d SetAside, err error) {
			err = row.Scan(&d.Group, &d.Kind, &d.Error, &d.Offset, &d.MessageID, &d.At)
			return
		})
	if err != nil {
		c.fail(w, err)
		return
	}
	data["SetAside"], data["Callbacks"] = setAside, slices.ContainsFunc(setAside, func(d SetAside) bool { return d.Group == "herald.callbacks" })
	if data["Dead"], err = collect(ctx, c.pool, `SELECT id, channel, recipient, coalesce(last_error_class, ''),
		coalesce(last_error_code, ''), attempts, coalesce(last_error, ''), jsonb_pretty(errors), died_at
		FROM herald.dead_letters LIMIT 50`, scanDead); err != nil {
		c.fail(w, err)
		return
	}
	c.render(w, "overview", data)
}

func scanDead(row pgx.CollectableRow) (d Dead, err error) {
	err = row.Scan(&d.ID, &d.Channel, &d.Recipient, &d.Class, &d.Code, &d.Attempts, &d.Error, &d.Errors, &d.DiedAt)
	return
}

func collect[T any](ctx context.Context, pool *pgxpool.Pool, sql string, fn pgx.RowToFunc[T], args ...any) ([]T, error) {
	rows, err := pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, fn)
}

// Event is one row of herald.log for a message.
type Event struct {
	Offset int64
	Kind   string
	At     time.Time
	Detail string
}

// Report is one of a message's delivery events as the provider reported it
// (herald.delivery_events): Recipient is the address it named (a copy's, or the
// message's own), empty when it named none.
type Report struct {
	Source, Event, Recipient, Type, Code, Reason string
	At                                           time.Time
}

func (c *console) message(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.Error(w, "id: must be an integer", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	var m struct {
		ID                                           int64
		Producer, Channel, Recipient, Status         string
		Attempts, MaxAttempts                        int32
		RunAt, CreatedAt                             time.Time
		FinishedAt                                   *time.Time
		Class, Code, Error, Receipt, Payload, Errors string
	}
	err = c.pool.QueryRow(ctx, `SELECT id, producer, channel, recipient, status, attempts, max_attempts, run_at, created_at,
		finished_at, coalesce(last_error_class, ''), coalesce(last_error_code, ''), coalesce(last_error, ''),
		coalesce(provider_message_id, ''), jsonb_pretty(payload), jsonb_pretty(errors)
		FROM herald.messages WHERE id = $1`, id).Scan(&m.ID, &m.Producer, &m.Channel, &m.Recipient, &m.Status, &m.Attempts,
		&m.MaxAttempts, &m.RunAt, &m.CreatedAt, &m.FinishedAt, &m.Class, &m.Code, &m.Error, &m.Receipt, &m.Payload, &m.Errors)
	if errors.Is(err, pgx.ErrNoRows) {
		http.Error(w, fmt.Sprintf("no message %d", id), http.StatusNotFound)
		return
	}
	if err != nil {
		c.fail(w, err)
		return
	}
	events, err := collect(ctx, c.pool, `SELECT "offset", kind, at, coalesce(detail::text, '') FROM herald.log
		WHERE message_id = $1 ORDER BY "offset"`, func(row pgx.CollectableRow) (e Event, err error) {
		err = row.Scan(&e.Offset, &e.Kind, &e.At, &e.Detail)
		return
	}, id)
	if err != nil {
		c.fail(w, err)
		return
	}
	reports, err := collect(ctx, c.pool, `SELECT source, event, coalesce(recipient, ''), coalesce(type, ''), coalesce(code, ''),
		coalesce(reason, ''), at FROM herald.delivery_events WHERE message_id = $1 ORDER BY at, id`,
		func(row pgx.CollectableRow) (e Report, err error) {
			err = row.Scan(&e.Source, &e.Event, &e.Recipient, &e.Type, &e.Code, &e.Reason, &e.At)
			return
		}, id)
	if err != nil {
		c.fail(w, err)
		return
	}
	c.render(w, "message", map[string]any{"Prefix": Prefix, "M": m, "Events": events, "Reports": reports})
}

// act runs a herald admin function with the form's fields as its arguments ($1, $2,
// … in the order given; "id" must be an integer) and returns to the overview, which
// shows "<what> <first field>: <result>", or "<what>: <result>" without fields (sql
// gives the result as text). What herald's SQL refuses (class 22: an unknown channel,
// a missing reason; 42501 and 53400: a callback its channel still refuses) is a 400
// with its message, and changes nothing.
func (c *console) act(w http.ResponseWriter, r *http.Request, what, sql string, fields ...string) {
	args := make([]any, len(fields))
	for i, f := range fields {
		v := r.PostFormValue(f)
		if f == "id" {
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				http.Error(w, "id: must be an integer", http.StatusBadRequest)
				return
			}
			args[i] = id
			continue
		}
		args[i] = v
	}
	var result string
	if err := c.pool.QueryRow(r.Context(), sql, args...).Scan(&result); err != nil {
		var pg *pgconn.PgError
		if errors.As(err, &pg) && (strings.HasPrefix(pg.Code, "22") || pg.Code == "42501" || pg.Code == "53400") {
			http.Error(w, pg.Message, http.StatusBadRequest)
			return
		}
		c.fail(w, err)
		return
	}
	c.cfg.Logger.Info("console: "+what, "fields", fields, "args", args, "result", result)
	label := what
	if len(args) > 0 {
		label = fmt.Sprintf("%s %v", what, args[0])
	}
	http.Redirect(w, r, Prefix+"?"+url.Values{"done": {label + ": " + result}}.Encode(), http.StatusSeeOther)
}

func (c *console) redrive(w http.ResponseWriter, r *http.Request) {
	c.act(w, r, "redrive", `SELECT herald.redrive(ARRAY[$1::bigint]) || ' requeued'`, "id")
}

func (c *console) cancel(w http.ResponseWriter, r *http.Request) {
	c.act(w, r, "cancel", `SELECT coalesce(herald.cancel($1::bigint), 'no such message')`, "id")
}

// pause is an operator's pause of a channel, for every runner, with the form's reason.
func (c *console) pause(w http.ResponseWriter, r *http.Request) {
	c.act(w, r, "pause", `SELECT CASE WHEN herald.pause_channel($1, nullif($2, ''), 'operator') THEN 'paused'
		ELSE 'paused already (now by an operator)' END`, "channel", "reason")
}

// resume ends any pause of a channel, an operator's or a runner's.
func (c *console) resume(w http.ResponseWriter, r *http.Request) {
	c.act(w, r, "resume", `SELECT CASE WHEN herald.resume_channel($1, 'operator') THEN 'resumed' ELSE 'was not paused' END`, "channel")
}

// redispatch sends the status callbacks their channel refused, once it takes them.
func (c *console) redispatch(w http.ResponseWriter, r *http.Request) {
	c.act(w, r, "send callbacks again", `SELECT herald.redispatch_callbacks() || ' queued'`)
}

// endSuspension lets a producer suspended for its bounce or complaint rate in again.
func (c *console) endSuspension(w http.ResponseWriter, r *http.Request) {
	c.act(w, r, "end suspension", `SELECT CASE WHEN herald.end_suspension($1) THEN 'ended' ELSE 'was not suspended' END`, "producer")
}
