package runner

import (
	"slices"
	"testing"
)

// A turn's claims by lane: one of every channel while both lanes have room for a
// batch; else one per lane, its own channels and as many as it has room for (a
// full lane claims nothing and is told it held a claim back), so a receivers' lane
// nearly full does not cut the providers' claims to its few free slots.
func TestClaimPartsByLane(t *testing.T) {
	cfg := Config{Concurrency: 512, ConcurrencyStart: 16, BatchSize: 100}
	r := &Runner{cfg: cfg, conc: newConcurrency(cfg), ramp: newRamp(cfg), receivers: map[string]bool{"hooks": true},
		channels: []string{"email", "hooks", "sms"}}
	r.conc.limit, r.ramp.limit = 512, 512
	check := func(busy, limited int64, want ...part) {
		t.Helper()
		r.busy.Store(busy)
		r.limited.Store(limited)
		got := r.parts(r.channels)
		if len(got) != len(want) {
			t.Fatalf("busy %d, to providers %d: %d claims, want %d", busy, limited, len(got), len(want))
		}
		for i := range want {
			if !slices.Equal(got[i].channels, want[i].channels) || got[i].n != want[i].n || (got[i].held == nil) != (want[i].held == nil) {
				t.Fatalf("busy %d, to providers %d: claim %d is %v × %d, want %v × %d", busy, limited, i, got[i].channels, got[i].n, want[i].channels, want[i].n)
			}
		}
	}
	held := func() {}
	check(0, 0, part{[]string{"email", "hooks", "sms"}, 100, nil})
	check(500, 0, part{[]string{"email", "sms"}, 100, held}, part{[]string{"hooks"}, 12, held})
	check(512, 0, part{[]string{"email", "sms"}, 100, held}, part{[]string{"hooks"}, 0, held})
	check(512, 512, part{[]string{"email", "sms"}, 0, held}, part{[]string{"hooks"}, 100, held})
	r.receivers = map[string]bool{}
	check(500, 500, part{[]string{"email", "hooks", "sms"}, 12, held})
}
