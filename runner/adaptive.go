package runner

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/herald/herald/runner/sender"
)

// adaptWindow is how often the concurrency limit is reconsidered.
const adaptWindow = 200 * time.Millisecond

// concurrency is the number of sends the runner lets run at once: unless
// Config.FixedConcurrency, a limit that grows while it is what holds the runner back
// and the provider does not push back — doubling per window while send latency stays
// within 1.5 times the lowest seen, by a quarter within twice — and shrinks to 70 % on
// push-back (a rate_limited answer, a timeout) and to 90 % when latency passes three
// times the lowest. Otherwise it is Config.Concurrency, fixed.
type concurrency struct {
	mu        sync.Mutex
	adaptive  bool
	limit     int
	max       int
	baseline  time.Duration // the lowest window median, drawn slowly towards later ones
	latencies []time.Duration
	pushback  bool
	saturated bool
	windowEnd time.Time
}

func newConcurrency(cfg Config) *concurrency {
	c := &concurrency{adaptive: !cfg.FixedConcurrency, limit: cfg.Concurrency, max: cfg.Concurrency}
	if c.adaptive {
		c.limit = min(cfg.ConcurrencyStart, cfg.Concurrency)
	}
	return c
}

// current is the limit now.
func (c *concurrency) current() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limit
}

// saturate records that the limit held back a claim that had more to take.
func (c *concurrency) saturate() {
	c.mu.Lock()
	c.saturated = true
	c.mu.Unlock()
}

// observe records one send to a provider: how long it took and how it ended; it
// returns the new limit when this send closed a window that changed it, else 0.
func (c *concurrency) observe(took time.Duration, err error, now time.Time) int {
	if !c.adaptive {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if pushback(err) {
		c.pushback = true
	} else if err == nil {
		c.latencies = append(c.latencies, took)
	}
	if c.windowEnd.IsZero() {
		c.windowEnd = now.Add(adaptWindow)
	}
	if now.Before(c.windowEnd) {
		return 0
	}
	before := c.limit
	var median time.Duration
	if len(c.latencies) > 0 {
		slices.Sort(c.latencies)
		median = c.latencies[len(c.latencies)/2]
		if c.baseline == 0 || median < c.baseline {
			c.baseline = median
		} else {
			c.baseline += (median - c.baseline) / 64 // follows a lasting change over ~13 s
		}
	}
	switch {
	case c.pushback:
		c.limit = max(1, c.limit*7/10)
	case median > 3*c.baseline:
		c.limit = max(1, c.limit*9/10)
	case c.saturated && 2*median <= 3*c.baseline: // latency as low as ever: double (slow start)
		c.limit = min(c.max, 2*c.limit)
	case c.saturated && median <= 2*c.baseline:
		c.limit = min(c.max, c.limit+max(1, c.limit/4))
	}
	c.latencies, c.pushback, c.saturated = c.latencies[:0], false, false
	c.windowEnd = now.Add(adaptWindow)
	if c.limit != before {
		return c.limit
	}
	return 0
}

// pushback reports whether a send's failure says the provider wants fewer sends: a
// rate_limited answer from the provider (not one the runner gave itself: released,
// lease_lapsed, expired) or a timeout; never a webhook receiver's (Failure.Receiver).
func pushback(err error) bool {
	if err == nil {
		return false
	}
	var f *sender.Failure
	if errors.As(err, &f) && f.Receiver {
		return false // one receiver's trouble is not the provider's
	}
	if errors.As(err, &f) && f.Class == sender.ClassRateLimited {
		return f.Code != "released" && f.Code != "lease_lapsed" && f.Code != "expired"
	}
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// ramp is the limit on sends to receivers (sender.ToReceivers): receivers are many,
// each bounded by its sender, so their answer times say nothing of a capacity to
// find; but a runner starting with a backlog should not open Config.Concurrency
// connections at once. Unless Config.FixedConcurrency, it starts at
// Config.ConcurrencyStart and doubles once a window has passed in which it held a
// claim back, up to Config.Concurrency; it never shrinks.
type ramp struct {
	mu        sync.Mutex
	limit     int
	max       int
	windowEnd time.Time
}

func newRamp(cfg Config) *ramp {
	r := &ramp{limit: cfg.Concurrency, max: cfg.Concurrency}
	if !cfg.FixedConcurrency {
		r.limit = min(cfg.ConcurrencyStart, cfg.Concurrency)
	}
	return r
}

// current is the limit now.
func (r *ramp) current() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.limit
}

// held records at now that the limit held back a claim; it returns the new limit
// when that doubled it, else 0.
func (r *ramp) held(now time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.limit >= r.max:
		return 0
	case r.windowEnd.IsZero():
		r.windowEnd = now.Add(adaptWindow)
		return 0
	case now.Before(r.windowEnd):
		return 0
	}
	r.limit = min(r.max, 2*r.limit)
	r.windowEnd = now.Add(adaptWindow)
	return r.limit
}
