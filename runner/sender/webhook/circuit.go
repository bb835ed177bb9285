package webhook

import (
	"sync"
	"time"
)

// circuit stops sending to a receiver that keeps failing, by key (the Sender keys a
// host's unanswered sends by host, its 429s by endpoint): after `failures` failures
// in a row the key's circuit is open for `cooldown`; then one request is let through
// as a trial, and each trial that fails doubles the wait, up to 32 times cooldown. A
// success closes it. Only failing keys are kept, so the map is as large as the set of
// receivers down.
type circuit struct {
	failures int
	cooldown time.Duration
	mu       sync.Mutex
	keys     map[string]*keyState
}

// keyState is one failing key: failures in a row, the current wait, when the
// circuit lets a trial through, and whether one is out.
type keyState struct {
	failures int
	wait     time.Duration
	until    time.Time
	trial    bool
}

func newCircuit(failures int, cooldown time.Duration) *circuit {
	return &circuit{failures: failures, cooldown: cooldown, keys: map[string]*keyState{}}
}

// hold reports the key (a host, an endpoint) among keys whose circuit is open at now,
// with until when a message held back should wait and the key's failures; when none
// is open it lets the send through, as the trial of each key whose circuit lets one
// through, and answers "" (the caller sends, then records every key).
func (c *circuit) hold(now time.Time, keys ...string) (string, time.Time, int) {
	if c.failures <= 0 {
		return "", time.Time{}, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var trials []*keyState
	for _, k := range keys {
		st := c.keys[k]
		switch {
		case st == nil || st.failures < c.failures:
			continue
		case now.Before(st.until):
			return k, st.until, st.failures
		case st.trial: // a trial is out: the others wait one more round
			return k, now.Add(st.wait), st.failures
		}
		trials = append(trials, st)
	}
	for _, st := range trials {
		st.trial = true
	}
	return "", time.Time{}, 0
}

// record counts one send to key: a success closes its circuit, a failure counts
// towards opening it (or, for a trial, opens it again for twice as long).
func (c *circuit) record(key string, failed bool, now time.Time) {
	if c.failures <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !failed {
		delete(c.keys, key)
		return
	}
	st := c.keys[key]
	if st == nil {
		st = &keyState{}
		c.keys[key] = st
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
