// Package runner is herald's delivery worker: it waits for work (LISTEN herald_queue,
// and a poll), claims messages with herald.claim_batch, sends each through the
// Sender of its channel, and reports the results in batches with herald.complete and
// herald.fail. It holds no queue rules: retries, backoff and state changes are SQL's.
//
// # Safety
//
// A claim commits before anything is sent: no transaction is open during a send. A
// send that outlives half its lease gets the lease extended. Reports carry the lease
// token, so a runner whose lease was lost changes nothing (the report is counted as a
// possible duplicate). One runner at a time (a Postgres advisory lock) calls
// herald.reap_stale, which hands the messages of a crashed runner to the others.
//
// # Shutdown
//
// When Run's context ends the runner stops claiming, lets in-flight sends finish for
// Config.ShutdownGrace, reports them, releases what is still unsent (herald.fail,
// transient, retry now) and returns.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald/herald/runner/sender"
)

// Runner is one delivery worker. Create it with New and start it with Run.
type Runner struct {
	cfg      Config
	pool     *pgxpool.Pool
	log      *slog.Logger
	m        *instruments
	channels []string

	wake  chan struct{} // a notification (or reconnect) asks for a claim
	freed chan struct{} // a send slot was freed

	mu      sync.Mutex
	flights map[int64]*flight // claimed, not yet reported

	work    chan sender.Message // claimed messages waiting for a send worker (capacity Concurrency)
	workers int                 // send workers started (guarded by mu)
	growing bool                // a grow goroutine is running (guarded by mu)

	busy       atomic.Int64 // claimed messages not yet sent (queued or sending)
	sends      sync.WaitGroup
	outMu      sync.Mutex
	outbox     []outcome     // results waiting for the reporter (guarded by outMu)
	outKick    chan struct{} // capacity 1: the outbox got its first result, or a full batch
	pastGrace  atomic.Bool
	listenerUp atomic.Bool
}

// flight is a claimed message until its result is reported.
type flight struct {
	msg        sender.Message
	leaseUntil time.Time // guarded by Runner.mu
}

// outcome is the result of one send, waiting to be reported.
type outcome struct {
	msg sender.Message
	res sender.Result
	err error
}

// New returns a Runner on pool. The pool should allow at least 4 connections: the
// listener takes one out of it, and claims, reports and maintenance use the rest.
func New(pool *pgxpool.Pool, cfg Config) (*Runner, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	return &Runner{
		cfg:      cfg,
		pool:     pool,
		log:      cfg.Logger.With("worker", cfg.Worker),
		m:        newInstruments(),
		channels: cfg.channels(),
		wake:     make(chan struct{}, 1),
		freed:    make(chan struct{}, 1),
		flights:  map[int64]*flight{},
		work:     make(chan sender.Message, cfg.Concurrency),
		outKick:  make(chan struct{}, 1),
	}, nil
}

// Run delivers until ctx ends, then shuts down gracefully (see the package doc).
// It returns nil after a clean shutdown.
func (r *Runner) Run(ctx context.Context) error {
	r.log.Info("runner starting", "channels", r.channels, "batch_size", r.cfg.BatchSize,
		"concurrency", r.cfg.Concurrency, "lease", r.cfg.Lease.String(), "poll_interval", r.cfg.PollInterval.String())
	sendCtx, cancelSends := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSends()

	var bg sync.WaitGroup
	for _, loop := range []func(context.Context){r.listen, r.maintain, r.keepLeases} {
		bg.Add(1)
		go func() { defer bg.Done(); loop(ctx) }()
	}
	reporterDone := make(chan struct{})
	stopReporter := make(chan struct{})
	go func() { defer close(reporterDone); r.report(stopReporter) }()

	r.claimLoop(ctx, sendCtx)

	// Shutdown: no more claims. Let sends finish within the grace period.
	r.log.Info("runner stopping: finishing in-flight sends", "inflight", r.busy.Load(), "grace", r.cfg.ShutdownGrace.String())
	if !waitTimeout(&r.sends, r.cfg.ShutdownGrace) {
		r.pastGrace.Store(true)
		cancelSends()
		if !waitTimeout(&r.sends, 2*time.Second) {
			r.log.Warn("senders ignored cancellation; releasing their messages")
		}
	}
	close(r.work) // idle workers exit (every claimed message has been sent or released)
	close(stopReporter)
	<-reporterDone
	r.releaseUnreported()
	bg.Wait()
	r.log.Info("runner stopped")
	return nil
}

// claimLoop claims whenever there is work and a free send slot, until ctx ends.
func (r *Runner) claimLoop(ctx, sendCtx context.Context) {
	poll := time.NewTicker(r.cfg.PollInterval)
	defer poll.Stop()
	trailing := time.NewTimer(time.Hour)
	trailing.Stop()
	backoff := newBackoff(100*time.Millisecond, r.cfg.PollInterval)
	for {
		full, err := r.claim(ctx, sendCtx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			r.log.Warn("claim failed", "err", err)
			sleep(ctx, backoff.next())
			continue
		}
		backoff.reset()
		if full && r.free() > 0 {
			continue // a full batch: there is probably more
		}
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
			trailing.Reset(r.cfg.NotifyWindow)
		case <-trailing.C:
		case <-poll.C:
		case <-r.freed:
			if !full {
				// A slot freed up, but the last claim found the queue empty.
				continue
			}
		}
	}
}

func (r *Runner) free() int { return r.cfg.Concurrency - int(r.busy.Load()) }

// claim takes up to min(batch size, free slots) messages and starts their sends. It
// reports whether it got as many as it asked for.
func (r *Runner) claim(ctx, sendCtx context.Context) (full bool, err error) {
	n := min(r.cfg.BatchSize, r.free())
	if n <= 0 || ctx.Err() != nil {
		return true, nil
	}
	start := time.Now()
	// A claim in flight when the runner is stopped (ctx) is not cut short:
	// claim_batch commits on the server, so a claim whose result the runner stopped
	// reading would leave its messages leased to no one until reap_stale. It
	// finishes, and its messages go to the senders like any other; the shutdown then
	// waits for them. It may run on for at most the shutdown grace after the stop,
	// and one lease in all (past that its messages could be claimed again anyway).
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.Lease)
	defer cancel()
	defer context.AfterFunc(ctx, func() { time.AfterFunc(r.cfg.ShutdownGrace, cancel) })()
	rows, err := r.pool.Query(qctx, `SELECT id, channel, recipient, payload, metadata, attempt, lease_token, lease_expires_at
		FROM herald.claim_batch($1, $2, $3 * interval '1 microsecond', $4)`, r.cfg.Worker, n, r.cfg.Lease.Microseconds(), r.channels)
	if err != nil {
		return false, err
	}
	// Scanned straight into the batch's flights (no second copy of the batch), with
	// the channel's name shared, the JSON copied into a few large blocks and one
	// Scan argument list for all rows: a claim allocates one string per message (the
	// recipient) and a handful of blocks. Garbage collection was a large part of the
	// runner's CPU in a drain; a runner draining 200,000 messages went from 6.1 to 3.1
	// allocations and from 860 to 520-580 bytes per message (the rest is mostly pgx
	// encoding complete's arrays).
	fl := make([]flight, 0, n)
	var channel, payload, metadata pgtype.DriverBytes // valid until the next row
	var blocks jsonBlocks
	dest := make([]any, 8)
	for rows.Next() {
		fl = append(fl, flight{})
		m := &fl[len(fl)-1].msg
		dest[0], dest[1], dest[2], dest[3], dest[4], dest[5], dest[6], dest[7] =
			&m.ID, &channel, &m.Recipient, &payload, &metadata, &m.Attempt, &m.LeaseToken, &m.LeaseUntil
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return false, err
		}
		m.Channel = r.channelName(channel)
		// Payload and metadata as bytes: PostgreSQL has already checked the JSON.
		m.Payload, m.Metadata = blocks.keep(payload), blocks.keep(metadata)
		fl[len(fl)-1].leaseUntil = m.LeaseUntil
	}
	if err := rows.Err(); err != nil {
		// The claim may have committed before the error: those messages come back
		// through reap_stale when their lease expires.
		return false, err
	}
	r.m.claimSeconds.Observe(time.Since(start).Seconds())
	for ch, k := range countByChannel(fl) {
		r.m.claimed.Add(float64(k), ch)
	}
	r.start(sendCtx, fl)
	return len(fl) == n, nil
}

// channelName returns the runner's own copy of a claimed message's channel name (the
// runner claims only channels it has senders for), so that messages share it.
func (r *Runner) channelName(b []byte) string {
	for _, ch := range r.channels {
		if string(b) == ch {
			return ch
		}
	}
	return string(b)
}

// jsonBlockSize is the size of the blocks a claim copies JSON values into.
const jsonBlockSize = 64 << 10

// jsonBlocks copies the JSON values of a claimed batch out of the driver's buffer
// into shared blocks of jsonBlockSize (a value too big for one gets its own): one
// allocation per block instead of one per value. A block lives as long as any
// message whose value is in it.
type jsonBlocks struct{ cur []byte }

// keep returns a copy of b (nil for nil: SQL NULL), capped so that an append to it
// cannot write over the next value.
func (j *jsonBlocks) keep(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	if cap(j.cur)-len(j.cur) < len(b) {
		j.cur = make([]byte, 0, max(jsonBlockSize, len(b)))
	}
	at := len(j.cur)
	j.cur = append(j.cur, b...)
	return json.RawMessage(j.cur[at:len(j.cur):len(j.cur)])
}

// growInterval is how long claimed messages may wait in the work queue before the
// runner doubles its send workers (up to Config.Concurrency).
const growInterval = time.Millisecond

// start records the flights of a claimed batch and queues them for the send
// workers. Workers are added as the queue needs them: the first at once, then, for
// as long as messages keep waiting, as many again every growInterval, up to
// Config.Concurrency. A fast sender thus sends batch after batch on a few
// goroutines (cheap to wake, cheap for the garbage collector to scan), and a slow
// one gets Concurrency sends at once within about ten intervals. Workers stay for
// the runner's life.
func (r *Runner) start(ctx context.Context, fl []flight) {
	r.busy.Add(int64(len(fl)))
	r.sends.Add(len(fl))
	r.mu.Lock()
	for i := range fl {
		r.flights[fl[i].msg.ID] = &fl[i]
	}
	r.m.inflight.Set(float64(len(r.flights)))
	r.mu.Unlock()
	for i := range fl {
		r.work <- fl[i].msg // never blocks: claims never exceed the free slots, the queue's capacity
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.workers == 0 {
		r.workers++
		go r.worker(ctx)
	}
	if !r.growing && len(r.work) > 0 && r.workers < r.cfg.Concurrency {
		r.growing = true
		go r.grow(ctx)
	}
}

// grow adds send workers while messages wait in the queue: as many again as there
// are every growInterval, up to Config.Concurrency.
func (r *Runner) grow(ctx context.Context) {
	t := time.NewTimer(growInterval)
	defer t.Stop()
	for range t.C {
		r.mu.Lock()
		add := min(r.workers, r.cfg.Concurrency-r.workers, len(r.work))
		if add <= 0 {
			r.growing = false
			r.mu.Unlock()
			return
		}
		r.workers += add
		r.mu.Unlock()
		for range add {
			go r.worker(ctx)
		}
		t.Reset(growInterval)
	}
}

// worker sends queued messages until the work queue is closed (at the end of Run).
// Once the shutdown grace is over it sends nothing more: what is still queued is
// released.
func (r *Runner) worker(ctx context.Context) {
	debug := r.log.Enabled(ctx, slog.LevelDebug)
	for m := range r.work {
		o := outcome{msg: m}
		if r.pastGrace.Load() {
			// Shutdown's grace is over: a message still queued is not sent now; it is
			// released (transient, retry now) like a send cut short.
			o.err = sender.Transient(errors.New("released unsent at shutdown"))
		} else {
			start := time.Now()
			o.res, o.err = r.send(ctx, m)
			took := time.Since(start)
			r.m.sendSeconds.Observe(took.Seconds(), m.Channel)
			if o.err == nil && debug {
				r.log.Debug("delivered", "id", m.ID, "channel", m.Channel, "attempt", m.Attempt,
					"provider_message_id", o.res.ProviderMessageID, "seconds", took.Seconds())
			}
		}
		r.post(o)
		r.busy.Add(-1)
		r.sends.Done()
		select {
		case r.freed <- struct{}{}:
		default:
		}
	}
}

// send calls the channel's sender, turning a panic into a transient failure.
func (r *Runner) send(ctx context.Context, m sender.Message) (res sender.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = sender.Transient(fmt.Errorf("sender panicked: %v", p))
		}
	}()
	s := r.cfg.Senders[m.Channel]
	if s == nil {
		return res, sender.Transient(errors.New("no sender for channel " + m.Channel))
	}
	return s.Send(ctx, m)
}

// countByChannel counts a claimed batch's messages per channel (metrics are updated
// once per batch).
func countByChannel(fl []flight) map[string]int {
	n := map[string]int{}
	for i := range fl {
		n[fl[i].msg.Channel]++
	}
	return n
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// backoff doubles a delay from min up to max.
type backoff struct{ min, max, cur time.Duration }

func newBackoff(min, max time.Duration) *backoff {
	if max < min {
		max = min
	}
	return &backoff{min: min, max: max}
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else if b.cur *= 2; b.cur > b.max {
		b.cur = b.max
	}
	return b.cur
}

func (b *backoff) reset() { b.cur = 0 }
