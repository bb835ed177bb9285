package runner

import (
	"context"
	"time"
)

// keepLeases extends the leases of sends that run long: every sixth of a lease,
// every flight with less than half its lease left gets herald.extend_lease (one call
// for all of them), so a lease never gets closer than a third of itself to expiring. A refused extension means the lease was already lost (the message
// may be sent by another runner too): counted, and left to the fencing of complete.
func (r *Runner) keepLeases(ctx context.Context) {
	t := time.NewTicker(max(r.cfg.Lease/6, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.extendLeases(ctx)
	}
}

// leaseLapsing reports whether the lease of message id has less than one keeper
// tick (a sixth of the lease) left: too little to start a send on.
func (r *Runner) leaseLapsing(id int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.flights[id]
	return f == nil || time.Until(f.leaseUntil) < r.cfg.Lease/6
}

// claimedAt returns when the claim of message id began (zero if it is not in flight).
func (r *Runner) claimedAt(id int64) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f := r.flights[id]; f != nil {
		return f.claimed
	}
	return time.Time{}
}

func (r *Runner) extendLeases(ctx context.Context) {
	now := time.Now()
	var ids, tokens []int64
	r.mu.Lock()
	for id, f := range r.flights {
		if f.leaseUntil.Sub(now) < r.cfg.Lease/2 {
			ids = append(ids, id)
			tokens = append(tokens, f.msg.LeaseToken)
		}
	}
	r.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	var n int
	if err := r.pool.QueryRow(ctx, `SELECT herald.extend_lease($1::bigint[], $2::bigint[], $3 * interval '1 microsecond')`, ids, tokens, r.cfg.Lease.Microseconds()).Scan(&n); err != nil {
		if ctx.Err() == nil {
			r.log.Warn("extending leases failed", "err", err, "messages", len(ids))
		}
		return
	}
	r.m.leaseExtended.Add(float64(n))
	if n == len(ids) { // some lost: which is unknown, so none is counted as extended here
		until := now.Add(r.cfg.Lease)
		r.mu.Lock()
		for _, id := range ids {
			if f := r.flights[id]; f != nil {
				f.leaseUntil = until
			}
		}
		r.mu.Unlock()
	}
	if lost := len(ids) - n; lost > 0 {
		r.m.leaseLost.Add(float64(lost))
		r.log.Warn("leases already lost while sending: possible duplicate delivery", "lost", lost, "ids", ids)
	}
}
