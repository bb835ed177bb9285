package runner

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// claimLoop claims whenever there is work and a free send slot, until ctx ends.
func (r *Runner) claimLoop(ctx, sendCtx context.Context) {
	poll := time.NewTicker(r.cfg.PollInterval)
	defer poll.Stop()
	trailing := time.NewTimer(time.Hour)
	trailing.Stop()
	deafPoll := time.NewTicker(r.cfg.DeafPollInterval)
	defer deafPoll.Stop()
	backoff := newBackoff(100*time.Millisecond, r.cfg.PollInterval)
	for {
		r.turned.Store(time.Now().UnixNano())
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
		if full && r.free() {
			continue // a full batch: there is probably more
		}
		if !r.waitForWork(ctx, poll, deafPoll, trailing) {
			return
		}
	}
}

// waitForWork waits until a claim is due: a notification (and NotifyWindow after it,
// for a commit that raced the first claim), the poll, a freed send slot, a report, or
// — while LISTEN is deaf — the DeafPollInterval tick. It returns false when ctx ends.
func (r *Runner) waitForWork(ctx context.Context, poll, deafPoll *time.Ticker, trailing *time.Timer) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-r.wake:
			trailing.Reset(r.cfg.NotifyWindow)
			return true
		case <-trailing.C:
			return true
		case <-poll.C:
			return true
		case <-r.freed:
			return true
		case <-deafPoll.C:
			if r.deaf.Load() {
				return true
			}
		}
	}
}

// Stalled is how long the claim loop has not come round, when that is more than
// twice the longest a turn takes (a claim, bounded by the lease, and the wait for
// work, bounded by the poll interval; a failed claim's back-off too): it has stopped
// turning, and whatever supervises the runner should restart it (/healthz answers
// 503, systemd's watchdog is no longer fed). Zero while it turns, and before its
// first turn (the start check).
func (r *Runner) Stalled() time.Duration {
	n := r.turned.Load()
	if n == 0 {
		return 0
	}
	if since := time.Since(time.Unix(0, n)); since > 2*(r.cfg.Lease+r.cfg.PollInterval) {
		return since
	}
	return 0
}

// room is how many more sends each lane may start: to providers within the adaptive
// limit, to receivers (sender.ToReceivers) within theirs (ramp, up to
// Config.Concurrency).
func (r *Runner) room() (providers, receivers int) {
	limited := int(r.limited.Load())
	return r.conc.current() - limited, r.ramp.current() - (int(r.busy.Load()) - limited)
}

// free is whether a lane the runner serves has room for a send.
func (r *Runner) free() bool {
	providers, receivers := r.room()
	return (providers > 0 && len(r.receivers) < len(r.channels)) || (receivers > 0 && len(r.receivers) > 0)
}

// part is one claim of a turn: its channels, how many messages, and what to tell
// the lane whose room held it back (nil: neither's).
type part struct {
	channels []string
	n        int
	held     func()
}

// parts plans a turn's claims over channels: one of all of them when both lanes have
// room for a batch, else one per lane, of its channels and as many as it has room
// for; so a lane nearly full neither holds the other's claims to its room nor is
// passed over.
func (r *Runner) parts(channels []string) []part {
	providers, receivers := r.room()
	p := part{n: min(r.cfg.BatchSize, providers), held: r.conc.saturate}
	q := part{n: min(r.cfg.BatchSize, receivers), held: func() {
		if limit := r.ramp.held(time.Now()); limit > 0 {
			r.m.receiverConc.Set(float64(limit))
		}
	}}
	for _, ch := range channels {
		if r.receivers[ch] {
			q.channels = append(q.channels, ch)
		} else {
			p.channels = append(p.channels, ch)
		}
	}
	switch {
	case len(q.channels) == 0:
		return []part{p}
	case len(p.channels) == 0:
		return []part{q}
	case p.n >= r.cfg.BatchSize && q.n >= r.cfg.BatchSize:
		return []part{{channels: channels, n: r.cfg.BatchSize}}
	}
	return []part{p, q}
}

// claim takes up to a batch of messages for each lane with free send slots (parts)
// and starts their sends. It reports whether a claim got as many as it asked for.
func (r *Runner) claim(ctx, sendCtx context.Context) (full bool, err error) {
	channels := r.holds.open(r.channels)
	if len(channels) == 0 {
		return false, nil // every channel held: wait for a report to lift one
	}
	for _, pt := range r.parts(channels) {
		if pt.n <= 0 || ctx.Err() != nil {
			if pt.n <= 0 && pt.held != nil {
				pt.held() // every slot of the lane busy: its limit is what holds it back
			}
			full = true
			continue
		}
		got, err := r.claimFrom(ctx, sendCtx, pt.channels, pt.n)
		if err != nil {
			return false, err
		}
		if got == pt.n {
			full = true
			if pt.n < r.cfg.BatchSize && pt.held != nil {
				pt.held() // there was more to take than free slots
			}
		}
	}
	return full, nil
}

// claimFrom claims up to n messages of channels and starts their sends; it returns
// how many it got.
func (r *Runner) claimFrom(ctx, sendCtx context.Context, channels []string, n int) (int, error) {
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
	rows, err := r.pool.Query(qctx, `SELECT id, channel, recipient, payload, metadata, attempt, lease_token, lease_expires_at, expires_at
		FROM herald.claim_batch($1, $2, $3 * interval '1 microsecond', $4)`, r.cfg.Worker, n, r.cfg.Lease.Microseconds(), channels)
	if err != nil {
		return 0, err
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
	var expiresAt time.Time
	dest := make([]any, 9)
	for rows.Next() {
		fl = append(fl, flight{})
		m := &fl[len(fl)-1].msg
		dest[0], dest[1], dest[2], dest[3], dest[4], dest[5], dest[6], dest[7], dest[8] =
			&m.ID, &channel, &m.Recipient, &payload, &metadata, &m.Attempt, &m.LeaseToken, &m.LeaseUntil, &expiresAt
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return 0, err
		}
		m.Channel = r.channelName(channel)
		// Payload and metadata as bytes: PostgreSQL has already checked the JSON.
		m.Payload, m.Metadata = blocks.keep(payload), blocks.keep(metadata)
		// The runner's own clock: the lease began after start, whatever the
		// database's clock says, so start + lease is never later than its end.
		fl[len(fl)-1].claimed, fl[len(fl)-1].leaseUntil = start, start.Add(r.cfg.Lease)
		// The deadline on the same clock: the database's claim time is
		// lease_expires_at - lease, and it came after start.
		m.Deadline = start.Add(r.cfg.Lease + expiresAt.Sub(m.LeaseUntil))
	}
	if err := rows.Err(); err != nil {
		// The claim may have committed before the error: those messages come back
		// through reap_stale when their lease expires.
		return 0, err
	}
	r.m.claimSeconds.Observe(time.Since(start).Seconds())
	for ch, k := range countByChannel(fl) {
		r.m.claimed.WithLabelValues(ch).Add(float64(k))
	}
	r.start(sendCtx, fl)
	return len(fl), nil
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
