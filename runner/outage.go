package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/herald/herald/runner/sender"
)

// outage counts, per channel, its provider's failures in a row that say it is not
// answering (sender.Failure.Unavailable: no connection, a timeout, an HTTP 5xx, SMTP
// 421), and errors that are no Failure at all. Anything else — a delivery, a refusal of the message, a rate limit, an
// SMTP 4yz about one recipient — shows the provider answering and ends the streak. A
// webhook receiver's failures are the receiver's (sender.Failure.Receiver) and count
// for nothing here, nor do messages released untried. Each send is counted as it
// ends, so the failure that finds the provider down holds the channel at once.
type outage struct {
	mu     sync.Mutex
	streak map[string]int
}

// observe counts err (nil: a delivery) for channel and reports whether the provider
// is down: n failures in a row or more (n below 1: never), and whether this one made
// it so.
func (o *outage) observe(channel string, err error, n int) (down, began bool) {
	if n < 1 {
		return false, false
	}
	var f *sender.Failure
	failing := err != nil && (!errors.As(err, &f) || f.Class == sender.ClassTransient && !f.Receiver && f.Unavailable)
	o.mu.Lock()
	defer o.mu.Unlock()
	if !failing {
		delete(o.streak, channel)
		return false, false
	}
	o.streak[channel]++
	return o.streak[channel] >= n, o.streak[channel] == n
}

// downFailure is err, a failure while channel's provider is down, given back as
// rate_limited until `until` (code provider_down): the outage is not the message's.
func downFailure(err error, n int, until time.Time) error {
	return sender.Held(fmt.Errorf("the provider failed %d times in a row or more: %w", n, err), until, "provider_down")
}

// pauseForOutage pauses channel in SQL for Config.OutageWait (by runner, until then:
// every runner stops claiming it, and the probe tries it afterwards), with err, the
// failure that found the provider down, as the reason.
func (r *Runner) pauseForOutage(channel string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reason := fmt.Sprintf("the provider failed every send, %d in a row: %v", r.cfg.OutageFailures, err)
	if qerr := r.pause(ctx, channel, reason, r.cfg.OutageWait); qerr != nil {
		r.log.Error("pausing the channel of a failing provider failed", "channel", channel, "err", qerr)
		return
	}
	r.log.Error("channel paused: its provider failed every send; the messages wait with their attempt given back, and the probe tries it again",
		"channel", channel, "until", time.Now().Add(r.cfg.OutageWait), "err", err)
}
