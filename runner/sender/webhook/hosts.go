package webhook

import (
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
// domain. A send past the bound is not tried: its message waits about as long as
// the site's sends take (their moving average, or while none has finished the time
// since the first began; 1 second to 1 minute) and is claimed again. Only sites with
// sends in flight are kept.
type hosts struct {
	limit int // below 1: no bound
	mu    sync.Mutex
	load  map[string]*hostLoad
}

// hostLoad is one host's sends in flight, since when it has had some, and how long
// its sends took (an exponential moving average; 0 while none has finished).
type hostLoad struct {
	inFlight int
	since    time.Time
	took     time.Duration
}

func newHosts(limit int) *hosts { return &hosts{limit: limit, load: map[string]*hostLoad{}} }

// acquire takes one of host's send slots at now, or reports how long a message for
// it should wait.
func (h *hosts) acquire(host string, now time.Time) (wait time.Duration, ok bool) {
	if h.limit < 1 {
		return 0, true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.load[host]
	if l == nil {
		l = &hostLoad{since: now}
		h.load[host] = l
	}
	if l.inFlight >= h.limit {
		wait = l.took
		if wait == 0 {
			wait = now.Sub(l.since)
		}
		return min(max(wait, time.Second), time.Minute), false
	}
	l.inFlight++
	return 0, true
}

// release gives back a slot of host taken by acquire, for a send that took so long
// (0: not sent).
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
	if l.inFlight--; l.inFlight <= 0 {
		delete(h.load, host)
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
