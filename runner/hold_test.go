package runner

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/herald/herald/runner/sender"
)

// A held channel is left out of claims and its claimed messages are not sent; after
// the report lands, a message claimed before that (its claim may have run before the
// pause) is still not sent, one claimed after is. Other channels are never held.
func TestHoldsStopAChannelUntilItsReport(t *testing.T) {
	var h holds
	all := []string{"email", "sms"}
	at := func(s int) func() time.Time { return func() time.Time { return time.Unix(int64(s), 0) } }
	if h.blocks("email", at(0)) || !slices.Equal(h.open(all), all) {
		t.Fatal("a channel held before any refusal")
	}
	h.stop("email")
	if !h.blocks("email", at(0)) || h.blocks("sms", at(0)) {
		t.Fatal("a stop held the wrong channels")
	}
	if got := h.open(all); !slices.Equal(got, []string{"sms"}) || !slices.Equal(all, []string{"email", "sms"}) {
		t.Fatalf("claims go to %v (all now %v), want sms alone and all unchanged", got, all)
	}
	h.lift("email", time.Unix(10, 0))
	if !h.blocks("email", at(9)) || h.blocks("email", at(11)) || !slices.Equal(h.open(all), all) {
		t.Fatal("after the report: want a message claimed before it held, one after it sent, every channel claimed")
	}
	for _, c := range []struct {
		err  error
		stop bool
	}{
		{sender.Quota(errors.New("454 Throttling failure: Daily message quota exceeded")), true},
		{sender.Configuration(errors.New("535 authentication failed"), "535"), true},
		{sender.Transient(errors.New("451 try later")), false},
		{sender.RateLimited(errors.New("429"), time.Time{}), false},
		{&sender.Failure{Class: sender.ClassConfiguration, Receiver: true, Err: errors.New("a receiver's")}, false},
		{errors.New("no Failure"), false},
		{nil, false},
	} {
		if got := stopsChannel(c.err); got != c.stop {
			t.Errorf("stopsChannel(%v) = %v, want %v", c.err, got, c.stop)
		}
	}
}
