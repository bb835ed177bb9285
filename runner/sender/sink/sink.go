// Package sink holds the senders that need no provider account: Sink, which writes
// each delivery as one JSON line (for `make run` and local development), and Noop,
// which accepts and drops (for benchmarks and tests).
package sink

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/herald/herald/runner/sender"
)

// Sink writes one JSON line per delivery: id, channel, recipient, attempt, payload,
// metadata and the time. It is safe for concurrent use.
type Sink struct {
	mu sync.Mutex
	w  io.Writer
	f  *os.File // the file it opened, when writing to a path
}

// New returns a Sink writing to w.
func New(w io.Writer) *Sink { return &Sink{w: w} }

// Open returns a Sink appending to the file at path ("-" is standard output).
func Open(path string) (*Sink, error) {
	if path == "-" {
		return New(os.Stdout), nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("sink: %w", err)
	}
	return &Sink{w: f, f: f}, nil
}

type line struct {
	sender.Message
	SentAt time.Time `json:"sent_at"`
}

// Send writes the message as a JSON line.
func (s *Sink) Send(_ context.Context, m sender.Message) (sender.Result, error) {
	b, err := json.Marshal(line{Message: m, SentAt: time.Now().UTC()})
	if err != nil {
		return sender.Result{}, sender.Permanent(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.w.Write(append(b, '\n')); err != nil {
		return sender.Result{}, sender.Transient(err)
	}
	return sender.Result{ProviderMessageID: fmt.Sprintf("sink-%d", m.ID)}, nil
}

// Close closes the file the Sink opened, if any.
func (s *Sink) Close() error {
	if s.f != nil {
		return s.f.Close()
	}
	return nil
}

// Noop accepts every message and drops it, after Delay (0: at once). A delay lets
// tests and benchmarks imitate a slow provider; the wait ends early when the send's
// context is cancelled (a transient failure).
type Noop struct {
	Delay time.Duration
}

// Send waits Delay and reports success.
func (n Noop) Send(ctx context.Context, _ sender.Message) (sender.Result, error) {
	if n.Delay > 0 {
		t := time.NewTimer(n.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return sender.Result{}, sender.Transient(ctx.Err())
		}
	}
	return sender.Result{}, nil
}
