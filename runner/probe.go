package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herald/herald/runner/sender"
)

// Start-check policies (Config.StartCheck): what the runner does when a channel's
// sender reports a configuration failure before anything is claimed.
const (
	StartCheckPause  = "pause"  // pause the channel in SQL (by runner) and serve the others
	StartCheckRefuse = "refuse" // do not start
	StartCheckOff    = "off"    // do not check
)

// ErrConfiguration is returned by Run when Config.StartCheck is refuse and a sender's
// check failed with a configuration failure.
var ErrConfiguration = errors.New("a provider's configuration is wrong")

// CheckSenders runs the check of every sender that has one (sender.Checker), each
// bounded by timeout, and returns the failures by channel (nil: all passed or had
// nothing to check). herald check and the runner's start share it.
func CheckSenders(ctx context.Context, senders map[string]sender.Sender, timeout time.Duration) map[string]error {
	out := map[string]error{}
	for ch, s := range senders {
		if err := check(ctx, s, timeout); err != nil {
			out[ch] = err
		}
	}
	return out
}

// check runs s's check (sender.Checker) bounded by timeout; nil when s has none.
func check(ctx context.Context, s sender.Sender, timeout time.Duration) error {
	c, ok := s.(sender.Checker)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return c.Check(ctx)
}

// startCheck checks the senders before the first claim (Config.StartCheck).
func (r *Runner) startCheck(ctx context.Context) error {
	if r.cfg.StartCheck == StartCheckOff {
		return nil
	}
	for ch, err := range CheckSenders(ctx, r.cfg.Senders, r.cfg.CheckTimeout) {
		f := sender.Classify(err)
		if f.Class != sender.ClassConfiguration {
			r.log.Warn("provider check failed; serving the channel anyway", "channel", ch, "err", err)
			continue
		}
		if r.cfg.StartCheck == StartCheckRefuse {
			return fmt.Errorf("%w: channel %s: %v", ErrConfiguration, ch, err)
		}
		if perr := r.pause(ctx, ch, err.Error(), 0); perr != nil {
			r.log.Error("pausing the channel failed", "channel", ch, "err", perr)
			continue
		}
		r.log.Error("channel paused: the provider says this runner's configuration is wrong; fix it, then a probe or herald.resume_channel resumes it",
			"channel", ch, "err", err)
	}
	return nil
}

// pause pauses channel ch in SQL as the runner (herald.pause_channel by runner) with
// reason: for wait when it is not zero (on the database's clock), else until a probe
// passes.
func (r *Runner) pause(ctx context.Context, ch, reason string, wait time.Duration) error {
	var until any // NULL: no end
	if wait > 0 {
		until = wait
	}
	_, err := r.pool.Exec(ctx, `SELECT herald.pause_channel($1, $2, by => 'runner', until => now() + $3::interval)`, ch, reason, until)
	return err
}

// probe looks at the runner's channels: the paused gauge for each, and for a channel
// a runner paused, from its paused_until on (a spent quota), its sender's check
// (sender.Checker); when that passes — or the sender has no check, so the next
// message is the probe — the channel is resumed. An operator's pause is left alone.
func (r *Runner) probe(ctx context.Context) {
	rows, err := r.pool.Query(ctx, `SELECT name, paused, coalesce(paused_by, ''), coalesce(paused_until > now(), false)
		FROM herald.channels WHERE name = ANY ($1)`, r.channels)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("reading channel pauses failed", "err", err)
		}
		return
	}
	type state struct {
		name, by        string
		paused, waiting bool
	}
	var states []state
	for rows.Next() {
		var s state
		if rows.Scan(&s.name, &s.paused, &s.by, &s.waiting) == nil {
			states = append(states, s)
		}
	}
	rows.Close()
	for _, s := range states {
		v := 0.0
		if s.paused {
			v = 1
		}
		r.m.paused.WithLabelValues(s.name).Set(v)
		if !s.paused || s.by != "runner" || s.waiting {
			continue
		}
		if err := check(ctx, r.cfg.Senders[s.name], r.cfg.CheckTimeout); err != nil {
			r.log.Info("probe failed; the channel stays paused", "channel", s.name, "err", err)
			continue
		}
		var resumed bool
		if err := r.pool.QueryRow(ctx, `SELECT herald.resume_channel($1, by => 'runner')`, s.name).Scan(&resumed); err != nil {
			r.log.Warn("resuming the channel failed", "channel", s.name, "err", err)
			continue
		}
		if resumed {
			r.m.paused.WithLabelValues(s.name).Set(0)
			r.log.Info("channel resumed: the probe of its provider succeeded", "channel", s.name)
		}
	}
}
