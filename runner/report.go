package runner

import (
	"context"
	"time"

	"github.com/herald/herald/runner/sender"
)

// post hands one outcome to the reporter. The reporter is woken only by the first
// outcome of an empty outbox, by a full batch and by a failure that stops a channel
// (o.stops: reported at once), not by every send.
func (r *Runner) post(o outcome) {
	r.outMu.Lock()
	r.outbox = append(r.outbox, o)
	n := len(r.outbox)
	r.outNow = r.outNow || o.stops
	r.outMu.Unlock()
	if n == 1 || n >= r.cfg.BatchSize || o.stops {
		select {
		case r.outKick <- struct{}{}:
		default:
		}
	}
}

// report writes outcomes back in batches — when a batch is full or FlushInterval
// after its first outcome — until stop is closed, then reports what is left.
func (r *Runner) report(stop <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	var spare []outcome // the outbox's other buffer: flush keeps nothing of it
	flushAll := func() {
		r.outMu.Lock()
		all := r.outbox
		r.outbox, r.outNow = spare[:0], false
		r.outMu.Unlock()
		for rest := all; len(rest) > 0; {
			k := min(len(rest), r.cfg.BatchSize)
			r.flush(rest[:k])
			rest = rest[k:]
		}
		clear(all)
		spare = all
	}
	for {
		select {
		case <-r.outKick:
			r.outMu.Lock()
			n, now := len(r.outbox), r.outNow
			r.outMu.Unlock()
			switch {
			case n >= r.cfg.BatchSize || now:
				flushAll()
				if armed {
					timer.Stop()
					armed = false
				}
			case n > 0 && !armed:
				timer.Reset(r.cfg.FlushInterval)
				armed = true
			}
		case <-timer.C:
			armed = false
			flushAll()
		case <-stop:
			flushAll()
			return
		}
	}
}

// flush reports one batch: complete for deliveries, fail for failures (released
// as not tried, retry now, when shutdown came before the send). A database
// error is retried with backoff; at shutdown for at most ShutdownGrace, after which
// the lease expiry returns the messages.
func (r *Runner) flush(batch []outcome) {
	doneIDs, doneTokens := make([]int64, 0, len(batch)), make([]int64, 0, len(batch))
	providerIDs := make([]string, 0, len(batch))
	var failIDs, failTokens []int64
	var errs, classes, codes []string
	var retryAt []*time.Time
	var down []outcome // the failures that found a channel's provider down
	for i := range batch {
		if batch[i].began {
			down = append(down, batch[i])
		}
		if batch[i].down {
			batch[i].err = downFailure(batch[i].err, r.cfg.OutageFailures, time.Now().Add(r.cfg.OutageWait))
		}
	}
	for _, o := range batch {
		if o.err == nil {
			doneIDs = append(doneIDs, o.msg.ID)
			doneTokens = append(doneTokens, o.msg.LeaseToken)
			providerIDs = append(providerIDs, o.res.ProviderMessageID)
			if o.res.Warning != "" {
				r.log.Warn("sent, with a part undelivered", o.about("warning", o.res.Warning)...)
			}
			continue
		}
		f := sender.Classify(o.err)
		var at *time.Time
		if !f.RetryAt.IsZero() {
			t := f.RetryAt
			at = &t
		}
		if r.pastGrace.Load() && f.Class == sender.ClassTransient {
			now := time.Now()
			at = &now
			r.m.released.Inc()
		}
		failIDs = append(failIDs, o.msg.ID)
		failTokens = append(failTokens, o.msg.LeaseToken)
		errs = append(errs, f.Error())
		classes = append(classes, string(f.Class))
		codes = append(codes, f.Code)
		retryAt = append(retryAt, at)
		switch f.Class {
		case sender.ClassConfiguration:
			r.log.Error("channel paused: the provider says this runner's configuration is wrong; the message goes back unharmed",
				o.about("err", f.Error())...)
		case sender.ClassQuota:
			r.log.Error("channel paused for its quota_wait: the provider says the account's sending quota is spent; the message goes back unharmed",
				o.about("err", f.Error())...)
		default:
			r.log.Info("delivery failed", o.about("class", string(f.Class), "err", f.Error())...)
		}
	}
	if len(doneIDs) > 0 {
		r.retry(len(batch), func() error { return r.complete(doneIDs, doneTokens, providerIDs) })
		r.recordCopyRefusals(batch)
	}
	// The pause first: fail then sees the channel paused, and a channel with a
	// fallback has its messages due at once for it (herald.fail).
	for _, o := range down {
		r.pauseForOutage(o.msg.Channel, o.err)
	}
	if len(failIDs) > 0 {
		r.retry(len(batch), func() error { return r.fail(failIDs, failTokens, errs, classes, codes, retryAt) })
		r.liftHolds(batch)
	}
	sent := map[string]int{}
	for _, o := range batch {
		if o.err == nil {
			sent[o.msg.Channel]++
		} else {
			f := sender.Classify(o.err)
			r.m.failed.WithLabelValues(o.msg.Channel, string(f.Class)).Inc()
			if sender.InDoubt(o.err) {
				r.m.inDoubt.WithLabelValues(o.msg.Channel).Inc()
			}
			if f.Held {
				r.m.held.WithLabelValues(o.msg.Channel, f.Code).Inc()
			}
		}
	}
	for ch, k := range sent {
		r.m.sent.WithLabelValues(ch).Add(float64(k))
	}
	r.mu.Lock()
	for _, o := range batch {
		delete(r.flights, o.msg.ID)
	}
	r.m.inflight.Set(float64(len(r.flights)))
	r.mu.Unlock()
	// A channel's producer_concurrency counts a message until it is reported: the
	// claim its send's freed slot woke may have come too early to find the room.
	select {
	case r.freed <- struct{}{}:
	default:
	}
}

// liftHolds ends the holds of the channels whose stopping failures batch reported
// (SQL's pause stands in for them now, or SQL decided against one, or an outage's
// pause failed), and asks for a claim.
func (r *Runner) liftHolds(batch []outcome) {
	lifted := false
	for _, o := range batch {
		if o.stops {
			r.holds.lift(o.msg.Channel, time.Now())
			lifted = true
		}
	}
	if lifted {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// retry runs a report until it succeeds; at most ShutdownGrace + Lease, after which
// the lease expiry returns the messages anyway.
func (r *Runner) retry(messages int, report func() error) {
	deadline := time.Now().Add(r.cfg.ShutdownGrace + r.cfg.Lease)
	b := newBackoff(50*time.Millisecond, 2*time.Second)
	for {
		err := report()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			r.log.Error("giving up reporting results; their leases will expire and they will be sent again",
				"err", err, "messages", messages)
			return
		}
		r.log.Warn("reporting results failed; retrying", "err", err)
		time.Sleep(b.next())
	}
}

// complete reports deliveries (see report for lost leases).
func (r *Runner) complete(ids, tokens []int64, providerIDs []string) error {
	return r.report1("complete", ids, `SELECT herald.complete($1::bigint[], $2::bigint[], $3::text[])`,
		ids, tokens, nullable(providerIDs))
}

// recordCopyRefusals records the copies providers refused for good in the batch's
// deliveries (herald.record_copy_refusal: an address that does not exist is
// suppressed). Best effort: a failure is logged, the message stays sent.
func (r *Runner) recordCopyRefusals(batch []outcome) {
	for _, o := range batch {
		if o.err != nil {
			continue
		}
		for _, c := range o.res.RefusedCopies {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := r.pool.Exec(ctx, `SELECT herald.record_copy_refusal($1, $2, $3)`, o.msg.ID, c.Address, c.Code)
			cancel()
			if err != nil {
				r.log.Warn("recording a refused copy failed", "id", o.msg.ID, "copy", c.Address, "err", err)
			}
		}
	}
}

// nullable gives complete its provider_message_ids and fail its error_codes: an
// empty string (the provider gave none) is passed as NULL, not stored as empty; when
// no element has a value, the whole array is NULL.
func nullable(providerIDs []string) any {
	empty := 0
	for _, id := range providerIDs {
		if id == "" {
			empty++
		}
	}
	switch empty {
	case 0:
		return providerIDs
	case len(providerIDs):
		return []string(nil)
	}
	out := make([]*string, len(providerIDs))
	for i := range providerIDs {
		if providerIDs[i] != "" {
			out[i] = &providerIDs[i]
		}
	}
	return out
}

// fail reports failures; SQL decides what follows (see report for lost leases).
func (r *Runner) fail(ids, tokens []int64, errs, classes, codes []string, retryAt []*time.Time) error {
	return r.report1("fail", ids, `SELECT herald.fail(ids => $1::bigint[], lease_tokens => $2::bigint[], errors => $3::text[],
		error_classes => $4::text[], retry_at => $5::timestamptz[], error_codes => $6::text[])`,
		ids, tokens, errs, classes, retryAt, nullable(codes))
}

// report1 runs one complete or fail call for ids. Each changes only rows still held
// under the same lease token; fewer rows than ids means leases were lost: logged and
// counted as possible duplicate deliveries, not an error.
func (r *Runner) report1(what string, ids []int64, sql string, args ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n int
	if err := r.pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return err
	}
	if lost := len(ids) - n; lost > 0 {
		r.m.duplicates.Add(float64(lost))
		r.log.Warn("reported messages whose lease was lost: possible duplicate delivery", "report", what, "lost", lost, "ids", ids)
	}
	return nil
}

// releaseUnreported gives back, at the very end of a shutdown, messages whose sends
// never returned: fail as transient, retry now.
func (r *Runner) releaseUnreported() {
	r.mu.Lock()
	var ids, tokens []int64
	var errs, classes, codes []string
	for id, f := range r.flights {
		ids = append(ids, id)
		tokens = append(tokens, f.msg.LeaseToken)
		errs = append(errs, "released unsent at shutdown")
		classes = append(classes, string(sender.ClassTransient))
		codes = append(codes, "released")
	}
	r.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	now := time.Now()
	retry := make([]*time.Time, len(ids))
	for i := range retry {
		retry[i] = &now
	}
	if err := r.fail(ids, tokens, errs, classes, codes, retry); err != nil {
		r.log.Error("could not release unsent messages; their leases will expire", "err", err, "ids", ids)
		return
	}
	r.m.released.Add(float64(len(ids)))
}
