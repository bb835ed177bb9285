package webhook

import (
	"testing"
	"time"
)

// A host's circuit opens after the failures in a row, lets one trial through after
// the wait, doubles the wait when the trial fails (up to 32 times), and closes on a
// success; other hosts and a host below the count are never held.
func TestCircuit(t *testing.T) {
	c := newCircuit(3, 10*time.Second)
	t0 := time.Unix(1_800_000_000, 0)
	held := func(host string, at time.Duration) bool {
		open, _, _ := c.hold(t0.Add(at), host)
		return open != ""
	}
	for i := 0; i < 2; i++ {
		c.record("down:443", true, t0)
	}
	if held("down:443", 0) {
		t.Fatal("held after 2 failures of 3")
	}
	c.record("down:443", true, t0)
	if open, until, n := c.hold(t0.Add(time.Second), "down:443"); open != "down:443" || n != 3 || !until.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("after 3 failures: open %q, %d, until %v", open, n, until)
	}
	if held("up:443", time.Second) {
		t.Fatal("another host held")
	}
	if held("down:443", 10*time.Second) { // the trial goes
		t.Fatal("no trial after the wait")
	}
	if open, until, _ := c.hold(t0.Add(10*time.Second), "down:443"); open == "" || !until.Equal(t0.Add(20*time.Second)) {
		t.Fatalf("a second request while the trial is out: open %q until %v", open, until)
	}
	c.record("down:443", true, t0.Add(11*time.Second)) // the trial failed: twice the wait
	if _, until, _ := c.hold(t0.Add(12*time.Second), "down:443"); !until.Equal(t0.Add(31 * time.Second)) {
		t.Fatalf("after a failed trial: until %v, want 20 s after it", until)
	}
	for i := 0; i < 10; i++ { // failed trials: the wait stops at 32 times
		at := 1000 * time.Hour * time.Duration(i+1)
		held("down:443", at)
		c.record("down:443", true, t0.Add(at))
	}
	if _, until, _ := c.hold(t0.Add(10000*time.Hour+time.Second), "down:443"); until.Sub(t0.Add(10000*time.Hour)) != 320*time.Second {
		t.Fatalf("the wait grew to %v, want at most 320 s", until.Sub(t0.Add(10000*time.Hour)))
	}
	held("down:443", 20000*time.Hour)
	c.record("down:443", false, t0.Add(20000*time.Hour))
	if held("down:443", 20000*time.Hour) || len(c.keys) != 0 {
		t.Fatal("a success did not close the circuit")
	}
	off := newCircuit(-1, time.Second)
	for i := 0; i < 10; i++ {
		off.record("down:443", true, t0)
	}
	if open, _, _ := off.hold(t0, "down:443"); open != "" {
		t.Fatal("a circuit turned off held a host")
	}
}
