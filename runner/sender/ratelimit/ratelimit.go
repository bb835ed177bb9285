// Package ratelimit keeps a sender under its provider's rate: a token bucket
// (golang.org/x/time/rate) in front of every send that slows down when the provider
// answers rate_limited and recovers as sends succeed.
package ratelimit

import (
	"context"
	"errors"
	"sync"

	"golang.org/x/time/rate"

	"github.com/herald/herald/runner/sender"
)

// Sender wraps another Sender with an adaptive rate limit.
type Sender struct {
	next    sender.Sender
	limiter *rate.Limiter
	max     rate.Limit
	floor   rate.Limit
	mu      sync.Mutex
}

// New limits next to perSecond sends per second (bursts of up to burst). Each
// rate_limited answer halves the rate (down to a floor of 1/20 of perSecond); each
// success raises it by 2% back towards perSecond.
func New(next sender.Sender, perSecond float64, burst int) *Sender {
	if burst < 1 {
		burst = 1
	}
	return &Sender{next: next, limiter: rate.NewLimiter(rate.Limit(perSecond), burst),
		max: rate.Limit(perSecond), floor: rate.Limit(perSecond / 20)}
}

// Limit is the current rate, in sends per second.
func (s *Sender) Limit() float64 { return float64(s.limiter.Limit()) }

// Send waits for the limiter, then sends.
func (s *Sender) Send(ctx context.Context, m sender.Message) (sender.Result, error) {
	if err := s.limiter.Wait(ctx); err != nil {
		return sender.Result{}, sender.Transient(err)
	}
	res, err := s.next.Send(ctx, m)
	s.adapt(err)
	return res, err
}

func (s *Sender) adapt(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.limiter.Limit()
	var f *sender.Failure
	switch {
	case err == nil:
		if cur < s.max {
			s.limiter.SetLimit(min(s.max, cur*1.02))
		}
	case errors.As(err, &f) && f.Class == sender.ClassRateLimited && !f.Receiver:
		s.limiter.SetLimit(max(s.floor, cur/2))
	}
}

// Check runs the wrapped sender's check (sender.Checker); nil when it has none.
func (s *Sender) Check(ctx context.Context) error {
	if c, ok := s.next.(sender.Checker); ok {
		return c.Check(ctx)
	}
	return nil
}

// Close closes the wrapped sender when it holds resources.
func (s *Sender) Close() error {
	if c, ok := s.next.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}
