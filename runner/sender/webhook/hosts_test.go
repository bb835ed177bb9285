package webhook

import (
	"testing"
	"time"
)

// A host past its bound is refused with a wait: while none of its sends has finished,
// how long its first has been out; then their moving average; within 1 second and 1
// minute. Other hosts are not held; a host with nothing in flight is forgotten; no
// bound below 1.
func TestHostBound(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	h := newHosts(2)
	for i := range 2 {
		if _, ok := h.acquire("slow.example", t0); !ok {
			t.Fatalf("send %d refused under the bound", i+1)
		}
	}
	wantWait := func(now time.Time, want time.Duration) {
		t.Helper()
		if wait, ok := h.acquire("slow.example", now); ok || wait != want {
			t.Fatalf("at +%v: ok %v, wait %v, want refused for %v", now.Sub(t0), ok, wait, want)
		}
	}
	wantWait(t0.Add(200*time.Millisecond), time.Second)
	wantWait(t0.Add(20*time.Second), 20*time.Second)
	wantWait(t0.Add(5*time.Minute), time.Minute)
	if _, ok := h.acquire("fast.example", t0); !ok {
		t.Fatal("another host held")
	}
	h.release("slow.example", 8*time.Second)
	if _, ok := h.acquire("slow.example", t0); !ok {
		t.Fatal("a freed slot refused")
	}
	wantWait(t0.Add(time.Hour), 8*time.Second)
	h.release("slow.example", 4*time.Second)
	if _, ok := h.acquire("slow.example", t0); !ok {
		t.Fatal("a freed slot refused")
	}
	wantWait(t0, 7*time.Second)  // (3 × 8 s + 4 s) / 4
	h.release("slow.example", 0) // not sent: the average stays
	if _, ok := h.acquire("slow.example", t0); !ok {
		t.Fatal("a freed slot refused")
	}
	wantWait(t0, 7*time.Second)
	h.release("slow.example", time.Second)
	h.release("slow.example", time.Second)
	h.release("fast.example", time.Second)
	if len(h.load) != 0 {
		t.Fatalf("hosts kept with nothing in flight: %v", h.load)
	}
	unbounded := newHosts(-1)
	for range 1000 {
		if _, ok := unbounded.acquire("x", t0); !ok {
			t.Fatal("bounded below 1")
		}
	}
}
