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
// Config.ShutdownGrace, reports them, releases what was never started (herald.fail,
// rate_limited, retry now: the attempt is given back) and what did not return (as
// transient: it may have been delivered), and returns.
package runner

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

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
	freed chan struct{} // a send slot was freed, or sends were reported

	mu      sync.Mutex
	flights map[int64]*flight // claimed, not yet reported

	work    chan sender.Message // claimed messages waiting for a send worker (capacity: both lanes, 2 × Concurrency)
	workers int                 // send workers started (guarded by mu)
	growing bool                // a grow goroutine is running (guarded by mu)

	busy       atomic.Int64    // claimed messages not yet sent (queued or sending)
	limited    atomic.Int64    // those of them to providers (not receivers): at most conc's limit; the others at most ramp's
	conc       *concurrency    // the limit on limited (adaptive unless Config.FixedConcurrency)
	ramp       *ramp           // the limit on sends to receivers (up to Config.Concurrency)
	receivers  map[string]bool // channels whose sender sends to receivers (sender.ToReceivers)
	sends      sync.WaitGroup
	outMu      sync.Mutex
	outbox     []outcome     // results waiting for the reporter (guarded by outMu)
	outKick    chan struct{} // capacity 1: the outbox got its first result, or a full batch
	outNow     bool          // the outbox holds a failure that stops a channel (guarded by outMu)
	holds      holds         // channels this runner stopped until their pause is reported
	pastGrace  atomic.Bool
	listenerUp atomic.Bool
	deaf       atomic.Bool       // LISTEN connected, but its check notification never came
	turned     atomic.Int64      // when the claim loop last came round (Unix nanoseconds; Stalled)
	outage     outage            // per channel, its provider's transient failures in a row
	zoneless   map[string]string // channels held for a quiet_zone the server does not know, with it (maintain's)
	otherCode  bool              // herald.installed_code was another build's when last sampled (maintain's)
}

// flight is a claimed message until its result is reported.
type flight struct {
	msg        sender.Message
	claimed    time.Time // when its claim began
	leaseUntil time.Time // guarded by Runner.mu
}

// outcome is the result of one send, waiting to be reported.
type outcome struct {
	msg   sender.Message
	res   sender.Result
	err   error
	down  bool   // err came while the channel's provider is down (outage)
	began bool   // err is the failure that found it down (its report pauses the channel)
	stops bool   // err stops the whole channel (stopsChannel, or began): held until this report lands
	trace string // the send's trace id when it was traced (Config.Tracer), for the logs
}

// about is what the logs say of the outcome's message: its id, channel and attempt,
// and the send's trace_id when it was traced; then more.
func (o outcome) about(more ...any) []any {
	args := []any{"id", o.msg.ID, "channel", o.msg.Channel, "attempt", o.msg.Attempt}
	if o.trace != "" {
		args = append(args, "trace_id", o.trace)
	}
	return append(args, more...)
}

// New returns a Runner on pool. The pool should allow at least 4 connections: the
// listener takes one out of it, and claims, reports and maintenance use the rest.
func New(pool *pgxpool.Pool, cfg Config) (*Runner, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	return &Runner{
		cfg:       cfg,
		pool:      pool,
		log:       cfg.Logger.With("worker", cfg.Worker),
		m:         newInstruments(),
		channels:  cfg.channels(),
		wake:      make(chan struct{}, 1),
		freed:     make(chan struct{}, 1),
		flights:   map[int64]*flight{},
		outage:    outage{streak: map[string]int{}},
		work:      make(chan sender.Message, 2*cfg.Concurrency),
		conc:      newConcurrency(cfg),
		ramp:      newRamp(cfg),
		receivers: receiverChannels(cfg.Senders),
		outKick:   make(chan struct{}, 1),
	}, nil
}

// receiverChannels are the channels whose sender sends to receivers
// (sender.ToReceivers).
func receiverChannels(senders map[string]sender.Sender) map[string]bool {
	out := map[string]bool{}
	for ch, s := range senders {
		if t, ok := s.(sender.ToReceivers); ok && t.ToReceivers() {
			out[ch] = true
		}
	}
	return out
}

// Run delivers until ctx ends, then shuts down gracefully (see the package doc).
// It returns nil after a clean shutdown.
func (r *Runner) Run(ctx context.Context) error {
	r.log.Info("runner starting", "channels", r.channels, "batch_size", r.cfg.BatchSize,
		"concurrency_max", r.cfg.Concurrency, "concurrency", r.conc.current(), "adaptive", !r.cfg.FixedConcurrency,
		"lease", r.cfg.Lease.String(), "poll_interval", r.cfg.PollInterval.String())
	r.m.concurrency.Set(float64(r.conc.current()))
	r.m.receiverConc.Set(float64(r.ramp.current()))
	if err := r.startCheck(ctx); err != nil {
		return err
	}
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

	if r.cfg.Ready != nil {
		r.cfg.Ready()
	}
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
