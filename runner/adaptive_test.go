package runner

import (
	"errors"
	"testing"
	"time"

	"github.com/herald/herald/runner/sender"
)

// The adaptive limit: it doubles per window while it is what holds the runner back
// and latency is as low as ever, grows by a quarter while latency stays within twice
// the lowest; not when the runner has slots to spare; it shrinks
// to 70 % on the provider's push-back (429, timeouts) but not on the runner's own
// not-tried reports; to 90 % when latency triples; never past its bounds.
func TestAdaptiveConcurrency(t *testing.T) {
	c := newConcurrency(Config{Concurrency: 100, ConcurrencyStart: 16})
	now := time.Unix(0, 0)
	window := func(took time.Duration, err error, saturated bool) int {
		if saturated {
			c.saturate()
		}
		c.observe(took, err, now)
		now = now.Add(adaptWindow)
		c.observe(took, err, now)
		return c.current()
	}
	window(100*time.Millisecond, nil, false) // the first window only sets the baseline
	if got := window(100*time.Millisecond, nil, true); got != 32 {
		t.Fatalf("saturated, latency holding: %d, want 32", got)
	}
	if got := window(180*time.Millisecond, nil, true); got != 40 {
		t.Fatalf("saturated, latency up 80 %%: %d, want 40", got)
	}
	if got := window(100*time.Millisecond, nil, false); got != 40 {
		t.Fatalf("slots to spare: %d, want 40", got)
	}
	for range 20 {
		window(100*time.Millisecond, nil, true)
	}
	if got := c.current(); got != 100 {
		t.Fatalf("growing: %d, want the maximum 100", got)
	}
	if got := window(100*time.Millisecond, &sender.Failure{Class: sender.ClassRateLimited, Code: "429"}, true); got != 70 {
		t.Fatalf("a 429: %d, want 70", got)
	}
	if got := window(100*time.Millisecond, &sender.Failure{Class: sender.ClassRateLimited, Code: "lease_lapsed"}, false); got != 70 {
		t.Fatalf("the runner's own not-tried report: %d, want 70", got)
	}
	if got := window(400*time.Millisecond, nil, true); got != 63 {
		t.Fatalf("latency quadrupled: %d, want 63", got)
	}
	if got := window(100*time.Millisecond, nil, true); got != 100 {
		t.Fatalf("latency back: %d, want 100 (doubled, capped)", got)
	}
	if got := window(time.Second, errors.New("x"), false); got != 100 {
		t.Fatalf("a plain error is no push-back: %d", got)
	}
	fixed := newConcurrency(Config{Concurrency: 50, ConcurrencyStart: 16, FixedConcurrency: true})
	fixed.saturate()
	fixed.observe(time.Second, &sender.Failure{Class: sender.ClassRateLimited, Code: "429"}, now.Add(time.Hour))
	if got := fixed.current(); got != 50 {
		t.Fatalf("fixed: %d, want 50", got)
	}
}

// The receivers' limit starts low and doubles once a window has passed in which it
// held a claim back, never past the maximum and never shrinking; fixed, it is the
// maximum from the start.
func TestReceiversRamp(t *testing.T) {
	r := newRamp(Config{Concurrency: 100, ConcurrencyStart: 16})
	now := time.Unix(0, 0)
	if got := r.held(now); got != 0 || r.current() != 16 {
		t.Fatalf("the first hold: %d, limit %d; want no change from 16", got, r.current())
	}
	if got := r.held(now.Add(adaptWindow / 2)); got != 0 {
		t.Fatalf("within the window: %d, want no change", got)
	}
	for _, want := range []int{32, 64, 100, 100} {
		now = now.Add(adaptWindow)
		r.held(now)
		if got := r.current(); got != want {
			t.Fatalf("a window later: %d, want %d", got, want)
		}
	}
	if fixed := newRamp(Config{Concurrency: 50, ConcurrencyStart: 16, FixedConcurrency: true}); fixed.current() != 50 {
		t.Fatalf("fixed: %d, want 50", fixed.current())
	}
}
