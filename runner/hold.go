package runner

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herald/herald/runner/sender"
)

// holds are the runner's own stops of channels whose provider refused a send for the
// whole channel (sender.ClassQuota, sender.ClassConfiguration) or was found down (the
// outage streak): from that reply until its report has landed, when herald.fail or
// pauseForOutage has paused the channel in SQL for every runner. Meanwhile the runner
// claims none of the channel's messages and sends none it claimed before the pause
// landed: each would meet the same refusal or outage, a call wasted against the
// provider. Those are released untried (channelHeld). Other channels go on.
type holds struct {
	any    atomic.Bool // a channel was ever held: blocks and open are a load until then
	mu     sync.Mutex
	byName map[string]hold
}

// hold is one channel's stop: lifted is zero while it stands, then the time its
// report landed.
type hold struct{ lifted time.Time }

// stopsChannel reports whether err, a send's failure, stops its whole channel.
func stopsChannel(err error) bool {
	var f *sender.Failure
	return errors.As(err, &f) && !f.Receiver && (f.Class == sender.ClassQuota || f.Class == sender.ClassConfiguration)
}

// stop holds channel until lift.
func (h *holds) stop(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byName == nil {
		h.byName = map[string]hold{}
	}
	h.byName[channel] = hold{}
	h.any.Store(true)
}

// lift ends channel's hold at now: its report has landed.
func (h *holds) lift(channel string, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.byName[channel]; ok && c.lifted.IsZero() {
		h.byName[channel] = hold{lifted: now}
	}
}

// blocks reports whether a message of channel, claimed at claimed(), must not be sent:
// the channel is held, or it was claimed before the last hold's report landed (a
// claim that may have run before the pause).
func (h *holds) blocks(channel string, claimed func() time.Time) bool {
	if !h.any.Load() {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.byName[channel]
	return ok && (c.lifted.IsZero() || claimed().Before(c.lifted))
}

// open returns the channels of all that are not held (all itself when none is).
func (h *holds) open(all []string) []string {
	if !h.any.Load() {
		return all
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	held := func(ch string) bool { c, ok := h.byName[ch]; return ok && c.lifted.IsZero() }
	if !slices.ContainsFunc(all, held) {
		return all
	}
	return slices.DeleteFunc(slices.Clone(all), held)
}

// channelHeld is the failure of a message released untried because its channel is
// held (rate_limited, retry now: the SQL pause decides when it goes).
func channelHeld() error {
	return sender.Held(errors.New("not sent: another send of this channel was refused for the whole channel (quota or configuration) or found its provider down; it waits for the channel's pause"),
		time.Now(), "channel_held")
}
