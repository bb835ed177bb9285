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

// A message past its deadline (expires_at, on the runner's clock) is not sent: it is
// reported as not tried, code expired, and herald.fail ends it expired.
func TestNoSendPastTheDeadline(t *testing.T) {
	s := &countingSender{}
	r, err := New(nil, Config{Worker: "w", Senders: map[string]sender.Sender{"sms": s}, Lease: 30 * time.Second,
		Concurrency: 2, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	late := flight{msg: sender.Message{ID: 1, Channel: "sms", LeaseToken: 7, Deadline: time.Now().Add(-time.Millisecond)},
		leaseUntil: time.Now().Add(30 * time.Second)}
	timely := flight{msg: sender.Message{ID: 2, Channel: "sms", LeaseToken: 7, Deadline: time.Now().Add(time.Hour)},
		leaseUntil: time.Now().Add(30 * time.Second)}
	r.flights[1], r.flights[2] = &late, &timely
	r.busy.Add(2)
	r.sends.Add(2)
	r.work <- late.msg
	r.work <- timely.msg
	close(r.work)
	r.worker(context.Background())
	if n := s.calls.Load(); n != 1 {
		t.Fatalf("%d sends, want 1 (the timely message only)", n)
	}
	for _, o := range r.outbox {
		var f *sender.Failure
		if o.msg.ID == 1 && (!errors.As(o.err, &f) || f.Class != sender.ClassRateLimited || f.Code != "expired") {
			t.Fatalf("late message: %v", o.err)
		}
		if o.msg.ID == 2 && o.err != nil {
			t.Fatalf("timely message: %v", o.err)
		}
	}
}
