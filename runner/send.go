package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/herald/herald/runner/sender"
)

// growInterval is how long claimed messages may wait in the work queue before the
// runner doubles its send workers (up to the work queue's capacity).
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
	for i := range fl {
		if !r.receivers[fl[i].msg.Channel] {
			r.limited.Add(1)
		}
	}
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
	if !r.growing && len(r.work) > 0 && r.workers < cap(r.work) {
		r.growing = true
		go r.grow(ctx)
	}
}

// grow adds send workers while messages wait in the queue: as many again as there
// are every growInterval, up to the work queue's capacity (both lanes' sends).
func (r *Runner) grow(ctx context.Context) {
	t := time.NewTimer(growInterval)
	defer t.Stop()
	for range t.C {
		r.mu.Lock()
		add := min(r.workers, cap(r.work)-r.workers, len(r.work))
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
			// released as not tried (rate_limited, retry now: the attempt is given back).
			o.err = sender.WithCode(sender.RateLimited(errors.New("released unsent at shutdown"), time.Now()), "released")
		} else if !m.Deadline.IsZero() && !time.Now().Before(m.Deadline) {
			// Past its deadline while it waited: never sent late. Reported as not tried;
			// herald.fail ends it expired.
			o.err = sender.WithCode(sender.RateLimited(errors.New("expired before the send started; not sent"), time.Now()), "expired")
			r.m.expiredUnsent.Inc()
		} else if r.holds.blocks(m.Channel, func() time.Time { return r.claimedAt(m.ID) }) {
			// A send of its channel was refused for the whole channel (a spent quota,
			// credentials) or found its provider down since it was claimed: not tried
			// against the same refusal.
			o.err = channelHeld()
		} else if r.leaseLapsing(m.ID) {
			// The lease expired, or will before a lease keeper tick can extend it, while
			// the message waited: another runner may own it now. Not sent; reported as
			// not tried (the attempt is given back) under the old token, which changes
			// nothing if the lease is gone.
			o.err = sender.WithCode(sender.RateLimited(errors.New("lease lapsed before the send started; not sent"), time.Now()), "lease_lapsed")
			r.m.leaseLapsed.Inc()
		} else {
			start := time.Now()
			sctx, span := r.traceSend(ctx, m)
			o.res, o.err = r.send(sctx, m)
			o.trace = endSend(span, o.res, o.err)
			took := time.Since(start) - o.res.Queued // the provider's time, not a wait of the sender's own
			// A receiver's time is its own: the adaptive limit follows providers.
			if !r.receivers[m.Channel] {
				if limit := r.conc.observe(took, o.err, time.Now()); limit > 0 {
					r.m.concurrency.Set(float64(limit))
				}
			}
			r.m.sendSeconds.WithLabelValues(m.Channel).Observe(took.Seconds())
			o.down, o.began = r.outage.observe(m.Channel, o.err, r.cfg.OutageFailures)
			if o.stops = o.began || stopsChannel(o.err); o.stops {
				r.holds.stop(m.Channel) // before the slot is freed: the next claim leaves the channel out
			}
			if o.err == nil && debug {
				r.log.Debug("delivered", o.about("provider_message_id", o.res.ProviderMessageID, "seconds", took.Seconds())...)
			}
		}
		r.post(o)
		r.busy.Add(-1)
		if !r.receivers[m.Channel] {
			r.limited.Add(-1)
		}
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
