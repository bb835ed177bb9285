package webhook

import (
	"sync"
	"time"
)

// circuit stops sending to a receiver host that keeps failing: after `failures`
// failures in a row (no connection, a timeout, 5xx, 429), the host's circuit is
// open for `cooldown`; then one request is let through as a trial, and each trial
// that fails doubles the wait, up to 32 times cooldown. A success closes it. Only
// failing hosts are kept, so the map is as large as the set of receivers down.
type circuit struct {
	failures int
	cooldown time.Duration
	mu       sync.Mutex
	hosts    map[string]*hostState
}

// hostState is one failing host: failures in a row, the current wait, when the
// circuit lets a trial through, and whether one is out.
type hostState struct {
	failures int
	wait     time.Duration
	until    time.Time
	trial    bool
}

func newCircuit(failures int, cooldown time.Duration) *circuit {
	return &circuit{failures: failures, cooldown: cooldown, hosts: map[string]*hostState{}}
}

// hold reports whether host's circuit is open at now, and until when a message held
// back should wait; when it lets a trial through it answers false (the caller sends).
func (c *circuit) hold(host string, now time.Time) (time.Time, int, bool) {
	if c.failures <= 0 {
		return time.Time{}, 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.hosts[host]
	switch {
	case st == nil || st.failures < c.failures:
		return time.Time{}, 0, false
	case now.Before(st.until):
		return st.until, st.failures, true
	case st.trial: // a trial is out: the others wait one more round
		return now.Add(st.wait), st.failures, true
	}
	st.trial = true
	return time.Time{}, 0, false
}

// record counts one send to host: a success closes its circuit, a failure counts
// towards opening it (or, for a trial, opens it again for twice as long).
func (c *circuit) record(host string, failed bool, now time.Time) {
	if c.failures <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !failed {
		delete(c.hosts, host)
		return
	}
	st := c.hosts[host]
	if st == nil {
		st = &hostState{}
		c.hosts[host] = st
	}
	st.failures++
	if st.failures < c.failures {
		return
	}
	switch {
	case st.wait == 0:
		st.wait = c.cooldown
	case st.trial:
		st.wait = min(2*st.wait, 32*c.cooldown)
	}
	st.trial = false
	st.until = now.Add(st.wait)
}
