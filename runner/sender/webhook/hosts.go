package webhook

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/publicsuffix"
)

// hosts bounds the sends in flight to one receiver site (siteOf), so that one slow
// receiver (a customer's endpoint that answers after 25 seconds, with a backlog of
// thousands) cannot take every send slot of the runner while the other receivers'
// webhooks wait behind it, nor can one that spreads its URLs over many names of its
// domain. A send past the bound waits in the runner for the site's next free slot,
// as many such sends as the bound, each at most two of the site's send times (their
// moving average; none while no send has finished). The sends past that are not
// tried: their messages are given turns one after another at the pace the site's
// slots free up (the first after one send's time, each next one a send's time
// divided by the bound later, at most a minute ahead; while none of its sends has
// finished, as long as the first has been out, 1 second to 1 minute) and claimed
// again then. So a site with a backlog has all of its slots used (the bound in
// flight, not the bound a second), each held message comes back about once, and a
// slow site holds at most twice the bound of the runner's sends. A site is kept, its
// pace with it, until it has had nothing in flight for a minute.
type hosts struct {
	limit int // below 1: no bound
	mu    sync.Mutex
	load  map[string]*hostLoad
	swept time.Time        // when idle entries were last dropped
	clock func() time.Time // time.Now; a test's own
}

// hostLoad is one site's sends in flight and waiting, since when it has had some,
// how long its sends took (an exponential moving average; 0 while none has
// finished), the turn the next held message gets, and the channel closed when a slot
// frees (made again each time).
type hostLoad struct {
	inFlight int
	waiting  int
	since    time.Time
	took     time.Duration
	next     time.Time
	freed    chan struct{}
	idle     time.Time // when it last had nothing in flight or waiting
}

func newHosts(limit int) *hosts {
	return &hosts{limit: limit, load: map[string]*hostLoad{}, clock: time.Now}
}

// acquire takes one of host's send slots, waiting for one as the type says, or
// reports how long a message for it should wait before it is claimed again. ctx ends
// the wait.
func (h *hosts) acquire(ctx context.Context, host string, now time.Time) (wait time.Duration, ok bool) {
	if h.limit < 1 {
		return 0, true
	}
	h.mu.Lock()
	l := h.load[host]
	if l == nil {
		l = &hostLoad{since: now, freed: make(chan struct{})}
		h.load[host] = l
	}
	if l.inFlight < h.limit {
		if l.inFlight == 0 && l.waiting == 0 {
			l.since = now
		}
		l.inFlight++
		h.mu.Unlock()
		return 0, true
	}
	if l.took == 0 || l.waiting >= h.limit || ctx.Err() != nil { // no pace known, enough waiting, or no time to
		wait = h.turn(l, now)
		h.mu.Unlock()
		return wait, false
	}
	l.waiting++
	deadline := time.NewTimer(2 * l.took)
	defer deadline.Stop()
	for over := false; ; {
		freed := l.freed
		h.mu.Unlock()
		select {
		case <-freed:
		case <-deadline.C:
			over = true
		case <-ctx.Done():
			over = true
		}
		h.mu.Lock()
		if l.inFlight < h.limit {
			l.waiting--
			l.inFlight++
			h.mu.Unlock()
			return 0, true
		}
		if !over {
			continue // another waiter took the slot first
		}
		l.waiting--
		wait = h.turn(l, time.Now())
		h.forget(l)
		h.mu.Unlock()
		return wait, false
	}
}

// turn is how long a message held for l's site at now waits: the next turn at the
// site's pace (the type's rule). h.mu is held.
func (h *hosts) turn(l *hostLoad, now time.Time) time.Duration {
	if l.took == 0 {
		return min(max(now.Sub(l.since), time.Second), time.Minute)
	}
	turn := now.Add(l.took)
	if l.next.After(turn) {
		turn = l.next
	}
	if limit := now.Add(time.Minute); turn.After(limit) {
		turn = limit
	}
	l.next = turn.Add(l.took / time.Duration(h.limit))
	return turn.Sub(now)
}

// release gives back a slot of host taken by acquire, for a send that took so long
// (0: not sent), and wakes the sends waiting for one.
func (h *hosts) release(host string, took time.Duration) {
	if h.limit < 1 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.load[host]
	if l == nil {
		return
	}
	switch {
	case took == 0:
	case l.took == 0:
		l.took = took
	default:
		l.took = (3*l.took + took) / 4
	}
	l.inFlight--
	close(l.freed)
	l.freed = make(chan struct{})
	h.forget(l)
}

// forget notes when host's entry has nothing in flight or waiting; entries idle for a
// minute are dropped (their pace and turns with them), at most once a minute. h.mu
// is held.
func (h *hosts) forget(l *hostLoad) {
	now := h.clock()
	if l.inFlight <= 0 && l.waiting <= 0 {
		l.idle = now
	}
	if now.Sub(h.swept) < time.Minute {
		return
	}
	h.swept = now
	for k, v := range h.load {
		if v.inFlight <= 0 && v.waiting <= 0 && now.Sub(v.idle) >= time.Minute {
			delete(h.load, k)
		}
	}
}

// siteOf is the key of a receiver's bound: the registrable domain of host (its public
// suffix and one label more, by the Public Suffix List with its private section:
// a.hooks.example.com and b.example.com are example.com, shop.herokuapp.com is
// itself), lower case and without a trailing dot, whatever the port; an IP address
// is its own site, whatever the port. A name with no registrable domain (localhost,
// an internal name the operator allows) is one site per port: such receivers are
// the operator's own, told apart by their ports. SQL's herald._site, which
// channels.range_limit counts by, reads the same list (herald.public_suffixes).
func siteOf(host, port string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if _, err := netip.ParseAddr(host); err == nil {
		return host
	}
	if site, err := publicsuffix.EffectiveTLDPlusOne(host); err == nil {
		return site
	}
	if port != "" {
		return host + ":" + port
	}
	return host
}
