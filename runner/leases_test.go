package runner

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald/herald/runner/sender"
)

type countingSender struct{ calls atomic.Int32 }

func (s *countingSender) Send(context.Context, sender.Message) (sender.Result, error) {
	s.calls.Add(1)
	return sender.Result{}, nil
}

// A message whose lease lapsed while it waited for a send slot is not sent (its new
// owner may be sending it): it is reported as not tried, code lease_lapsed, under
// its old token. One with its lease intact is sent.
func TestNoSendOnALapsedLease(t *testing.T) {
	s := &countingSender{}
	r, err := New(nil, Config{Worker: "w", Senders: map[string]sender.Sender{"hooks": s}, Lease: 30 * time.Second,
		Concurrency: 2, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	lapsed := flight{msg: sender.Message{ID: 1, Channel: "hooks", LeaseToken: 7}, leaseUntil: time.Now().Add(2 * time.Second)}
	fresh := flight{msg: sender.Message{ID: 2, Channel: "hooks", LeaseToken: 7}, leaseUntil: time.Now().Add(30 * time.Second)}
	r.flights[1], r.flights[2] = &lapsed, &fresh
	r.busy.Add(2)
	r.sends.Add(2)
	r.work <- lapsed.msg
	r.work <- fresh.msg
	close(r.work)
	r.worker(context.Background())

	if n := s.calls.Load(); n != 1 {
		t.Fatalf("%d sends, want 1 (the fresh lease only)", n)
	}
	if len(r.outbox) != 2 {
		t.Fatalf("%d outcomes", len(r.outbox))
	}
	for _, o := range r.outbox {
		switch o.msg.ID {
		case 1:
			var f *sender.Failure
			if !errors.As(o.err, &f) || f.Class != sender.ClassRateLimited || f.Code != "lease_lapsed" {
				t.Fatalf("lapsed lease: %v", o.err)
			}
		case 2:
			if o.err != nil {
				t.Fatalf("fresh lease: %v", o.err)
			}
		}
	}
}
