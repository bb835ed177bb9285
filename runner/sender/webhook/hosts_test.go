package webhook

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/herald/herald/runner/idtag"
	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/egress"
)

// A host past its bound is refused with a wait (here with the wait for a slot over at
// once): its held messages are given turns at the pace its slots free up, the first
// after one send's time (the sends' moving average), each next one a send's time
// divided by the bound later, never more than a minute ahead; while none of its sends
// has finished, each waits as long as the first has been out (1 second to 1 minute).
// Other hosts are not held; a host with nothing in flight for a minute is forgotten;
// no bound below 1.
func TestHostBound(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	over, cancel := context.WithCancel(context.Background())
	cancel()
	h := newHosts(2)
	clock := t0
	h.clock = func() time.Time { return clock }
	for i := range 2 {
		if _, ok := h.acquire(over, "slow.example", t0); !ok {
			t.Fatalf("send %d refused under the bound", i+1)
		}
	}
	wantWait := func(now time.Time, want time.Duration) {
		t.Helper()
		if wait, ok := h.acquire(over, "slow.example", now); ok || wait != want {
			t.Fatalf("at +%v: ok %v, wait %v, want refused for %v", now.Sub(t0), ok, wait, want)
		}
	}
	take := func(now time.Time) {
		t.Helper()
		if _, ok := h.acquire(over, "slow.example", now); !ok {
			t.Fatal("a freed slot refused")
		}
	}
	wantWait(t0.Add(200*time.Millisecond), time.Second) // none finished: no pace yet, at least 1 s
	wantWait(t0.Add(20*time.Second), 20*time.Second)    // as long as the first has been out
	wantWait(t0.Add(5*time.Minute), time.Minute)        // at most a minute
	if _, ok := h.acquire(over, "fast.example", t0); !ok {
		t.Fatal("another host held")
	}
	h.release("slow.example", 8*time.Second)
	take(t0)
	wantWait(t0.Add(time.Hour), 8*time.Second)  // a send's time
	wantWait(t0.Add(time.Hour), 12*time.Second) // the next turn, 8 s / 2 later
	h.release("slow.example", 4*time.Second)
	take(t0.Add(2 * time.Hour))
	wantWait(t0.Add(2*time.Hour), 7*time.Second) // (3 × 8 s + 4 s) / 4
	h.release("slow.example", 0)                 // not sent: the average stays
	take(t0.Add(3 * time.Hour))
	wantWait(t0.Add(3*time.Hour), 7*time.Second)
	h.release("slow.example", time.Second)
	h.release("slow.example", time.Second)
	h.release("fast.example", time.Second)
	clock = t0.Add(4 * time.Hour) // a minute and more with nothing in flight: forgotten
	if _, ok := h.acquire(over, "other.example", clock); !ok {
		t.Fatal("another host held")
	}
	h.release("other.example", time.Second)
	if _, kept := h.load["slow.example"]; kept || len(h.load) != 1 {
		t.Fatalf("hosts idle for a minute kept: %v", h.load)
	}
	unbounded := newHosts(-1)
	for range 1000 {
		if _, ok := unbounded.acquire(over, "x", t0); !ok {
			t.Fatal("bounded below 1")
		}
	}
}

// A send past a full site's bound waits in the runner for its next free slot, and
// gets it when a send ends; as many wait as the bound, the next is held at once; a
// wait lasts at most two of the site's send times.
func TestAFullSiteLendsItsNextFreeSlot(t *testing.T) {
	ctx := context.Background()
	acquire := func(h *hosts) bool { _, ok := h.acquire(ctx, "busy.example", time.Now()); return ok }
	full := func(pace time.Duration) *hosts { // two in flight, the pace known
		h := newHosts(2)
		if !acquire(h) || !acquire(h) {
			t.Fatal("sends under the bound refused")
		}
		h.release("busy.example", pace)
		if !acquire(h) {
			t.Fatal("a freed slot refused")
		}
		return h
	}
	h := full(5 * time.Second)
	got := make(chan bool)
	for range 2 {
		go func() { got <- acquire(h) }()
	}
	waiting := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.load["busy.example"].waiting
	}
	for waiting() != 2 { // a state to reach, not a signal to wait for
		runtime.Gosched()
	}
	if wait, ok := h.acquire(ctx, "busy.example", time.Now()); ok || wait < 5*time.Second {
		t.Fatalf("a send past the bound and its waiters: ok %v, wait %v; want held at once for a turn", ok, wait)
	}
	for range 2 {
		h.release("busy.example", 5*time.Second)
		if !<-got {
			t.Fatal("a waiting send did not get the freed slot")
		}
	}
	for range 2 {
		h.release("busy.example", 5*time.Second)
	}
	h = full(20 * time.Millisecond)
	if acquire(h) { // nobody frees a slot: held after two send times, 40 ms
		t.Fatal("a wait with no slot freed took one")
	}
}

// The bound's key is the registrable domain, whatever the port: subdomains share it,
// a hosting platform's customers (the Public Suffix List's private section) and
// addresses do not; a name without one (localhost) is keyed with its port.
func TestSiteOf(t *testing.T) {
	for hostPort, want := range map[string]string{
		"hooks.example.com": "example.com", "A.B.Example.COM.": "example.com", "example.com:8443": "example.com",
		"shop.example.co.uk": "example.co.uk", "x1.evil.test:1": "evil.test", "x2.evil.test:2": "evil.test",
		"shop.herokuapp.com": "shop.herokuapp.com", "a.shop.herokuapp.com": "shop.herokuapp.com",
		"203.0.113.7:1": "203.0.113.7", "203.0.113.7:2": "203.0.113.7", "[::1]:80": "::1",
		"localhost": "localhost", "localhost:8080": "localhost:8080", "hooks-internal:9000": "hooks-internal:9000",
	} {
		u := &url.URL{Host: hostPort}
		if got := siteOf(u.Hostname(), u.Port()); got != want {
			t.Errorf("siteOf(%q) = %q, want %q", hostPort, got, want)
		}
	}
}

// An attack on the bound: a producer spreads a slow receiver's URLs over six names of
// its domain (a1.evil.test … a6.evil.test, every name reaching the same server here).
// With a bound of 2, two requests arrive and the other four are held untried
// (host_busy), while a receiver of another domain is sent to at once.
func TestBoundHoldsASiteUnderManyNames(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	arrived := map[string]int{}
	came := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived[r.Host]++
		mu.Unlock()
		came <- r.Host
		if r.Host != "good.example" {
			<-release
		}
	}))
	defer srv.Close()
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free() // before srv.Close, which waits for the handlers
	s, err := New(Config{IDKey: idtag.StaticKey([]byte("a webhook-id key")), Secrets: []string{SecretPrefix + base64.StdEncoding.EncodeToString(make([]byte, 32))}, HostConcurrency: 2,
		Egress: egress.Policy{Allow: []string{"127.0.0.1/32"}}})
	if err != nil {
		t.Fatal(err)
	}
	// Every name resolves to the test server (the test's DNS).
	s.client.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}
	send := func(host string) error {
		_, err := s.Send(context.Background(), sender.Message{ID: 1, Recipient: "http://" + host + "/hook", Payload: json.RawMessage(`{}`)})
		return err
	}
	results := make(chan error, 6)
	for i := 1; i <= 6; i++ {
		go func() { results <- send(fmt.Sprintf("a%d.evil.test", i)) }()
	}
	next := func() error {
		select {
		case err := <-results:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("no answer from a send in 10 s: past the bound, it was sent")
			return nil
		}
	}
	held := 0
	for range 4 {
		var f *sender.Failure
		if err := next(); !errors.As(err, &f) || !f.Held || f.Code != "host_busy" {
			t.Fatalf("a send past the bound: %v, want held with code host_busy", err)
		}
		held++
	}
	<-came
	<-came
	if err := send("good.example"); err != nil {
		t.Fatalf("another domain's receiver, while evil.test holds its bound: %v", err)
	}
	free()
	for range 2 {
		if err := next(); err != nil {
			t.Fatalf("a send within the bound: %v", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for host, k := range arrived {
		if host != "good.example" {
			n += k
		}
	}
	if n != 2 || held != 4 {
		t.Fatalf("%d requests of evil.test arrived (%v), %d held; want 2 and 4", n, arrived, held)
	}
}
