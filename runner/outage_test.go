package runner

import (
	"errors"
	"testing"
	"time"

	"github.com/herald/herald/runner/sender"
)

// Only failures in which the provider did not answer count towards an outage, per
// channel; an answer of any kind ends the streak; a webhook receiver's failures and
// a refusal of one recipient (SMTP 4yz) never count.
func TestOutageCountsOnlyAProviderNotAnswering(t *testing.T) {
	o := outage{streak: map[string]int{}}
	unavailable := sender.FromHTTP(503, nil, "down", time.Now())
	receiver := sender.FromHTTP(503, nil, "down", time.Now()).(*sender.Failure)
	receiver.Receiver = true
	mailbox := sender.Transient(errors.New("450 4.2.0 mailbox unavailable"))
	steps := []struct {
		channel string
		err     error
		down    bool
		began   bool
	}{
		{"email", unavailable, false, false},
		{"email", unavailable, false, false},
		{"sms", unavailable, false, false}, // another channel's streak
		{"email", mailbox, false, false},   // an answer: the streak ends
		{"email", unavailable, false, false},
		{"email", receiver, false, false}, // a receiver's: ends it too (the provider path answered)
		{"email", unavailable, false, false},
		{"email", unavailable, false, false},
		{"email", unavailable, true, true},
		{"email", unavailable, true, false},
		{"email", nil, false, false}, // a delivery
		{"email", unavailable, false, false},
	}
	for i, s := range steps {
		down, began := o.observe(s.channel, s.err, 3)
		if down != s.down || began != s.began {
			t.Fatalf("step %d (%s): down %v began %v, want %v %v", i, s.channel, down, began, s.down, s.began)
		}
	}
	if down, _ := o.observe("email", unavailable, -1); down {
		t.Fatal("an outage found with the check off")
	}
}
