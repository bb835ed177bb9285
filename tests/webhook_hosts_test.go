package tests

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald/herald/tests/testdb"
)

// Attack: one producer's receiver answers slowly (here: not until the test lets it)
// with a backlog older than everyone else's. Unbounded, its sends would take every
// one of the runner's send slots and the other receivers' webhooks would wait behind
// it. With HERALD_WEBHOOK_HOST_CONCURRENCY=2 the slow host holds two sends; the
// other receiver gets all of its webhooks while the slow one still holds them; once
// it answers, its backlog goes out too, every message once, the held ones with their
// attempt given back (host_busy).
func TestSlowReceiverHoldsFewSends(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('hooks', 'webhook')`)
	rc := newHeldReceivers(t)
	secret := "whsec_" + strings.Repeat("SG9va3Nz", 4)
	for i := range 30 {
		mustExec(t, pool, `SELECT herald.enqueue('hooks', $1, jsonb_build_object('n', $2::int))`, strings.Replace(rc.slow.URL, "127.0.0.1", "localhost", 1)+"/in", i)
	}
	for i := range 10 {
		mustExec(t, pool, `SELECT herald.enqueue('hooks', $1, jsonb_build_object('n', $2::int))`, strings.Replace(rc.fast.URL, "127.0.0.1", "localhost", 1)+"/in", i)
	}
	addr := freeAddr(t)
	cmd, logs := runnerProcess(t, dbURL, "HERALD_HTTP_ADDR="+addr, "HERALD_INTAKE=off", "HERALD_SENDER_HOOKS=webhook", "HERALD_HOOKS_WEBHOOK_SECRETS="+secret,
		"HERALD_WEBHOOK_ALLOW=127.0.0.1/32", "HERALD_WEBHOOK_TIMEOUT=2m", "HERALD_WEBHOOK_HOST_CONCURRENCY=2",
		"HERALD_CONCURRENCY=8", "HERALD_CONCURRENCY_FIXED=true", "HERALD_BATCH_SIZE=8", "HERALD_POLL_INTERVAL=100ms")
	eventually(t, 30*time.Second, "the fast receiver's ten webhooks while the slow one holds its sends", func() bool {
		return rc.fastServed.Load() == 10
	})
	if n := rc.inFlight.most.Load(); n > 2 || rc.slowServed.Load() != 0 {
		t.Fatalf("the slow host had %d sends at once (%d answered), want at most 2\n%s", n, rc.slowServed.Load(), logs.String())
	}
	rc.release()
	eventually(t, 90*time.Second, "all forty sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 40 })
	if n := rc.slowServed.Load(); n != 30 {
		t.Fatalf("the slow receiver answered %d requests for 30 messages", n)
	}
	if n := countWhere(t, pool, `attempts = 1`); n != 40 {
		t.Fatalf("%d of 40 messages with one attempt: a held send used an attempt", n)
	}
	if n := countWhere(t, pool, `last_error_code = 'host_busy'`); n == 0 {
		t.Fatalf("no message was held for its busy host\n%s", logs.String())
	}
	body := metricsOf(t, addr)
	if !regexp.MustCompile(`(?m)^herald_held_total\{channel="hooks",reason="host_busy"\} [1-9]`).Match(body) {
		t.Fatalf("/metrics does not count the held sends:\n%s", body)
	}
	waitExit(t, cmd, logs, 15*time.Second)
}

// A site with a backlog gets all of its slots used, and its held messages come back
// about once or twice each: 120 webhooks to one receiver that answers in 20 ms, bound
// 4 in flight. A send past the bound waits in the runner for the next free slot (as
// many as the bound), and the others are given turns at the pace the site's slots
// free up; held once a second each until their turn instead, they were held 1,740
// times and the site got 4 sends a second instead of 4 at once (31 s for what takes
// under 3).
func TestABusySiteGetsItsTurnsInOrder(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('hooks', 'webhook')`)
	var inFlight peak
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight.enter()
		time.Sleep(20 * time.Millisecond) // the receiver's own answer time
		inFlight.leave()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer busy.Close()
	mustExec(t, pool, `SELECT herald.enqueue('hooks', $1, jsonb_build_object('n', g)) FROM generate_series(1, 120) g`,
		strings.Replace(busy.URL, "127.0.0.1", "localhost", 1)+"/in")
	addr := freeAddr(t)
	cmd, logs := runnerProcess(t, dbURL, "HERALD_HTTP_ADDR="+addr, "HERALD_INTAKE=off", "HERALD_SENDER_HOOKS=webhook",
		"HERALD_HOOKS_WEBHOOK_SECRETS=whsec_"+strings.Repeat("SG9va3Nz", 4), "HERALD_WEBHOOK_ALLOW=localhost",
		"HERALD_WEBHOOK_HOST_CONCURRENCY=4", "HERALD_POLL_INTERVAL=50ms")
	eventually(t, 60*time.Second, "all 120 sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 120 })
	if n := inFlight.most.Load(); n > 4 {
		t.Fatalf("%d sends at once to the site, bound 4", n)
	}
	body := metricsOf(t, addr)
	m := regexp.MustCompile(`(?m)^herald_held_total\{channel="hooks",reason="host_busy"\} (\d+)`).FindSubmatch(body)
	held := 0
	if m != nil {
		held, _ = strconv.Atoi(string(m[1]))
	}
	if held > 3*120 {
		t.Fatalf("held %d times for 120 messages: the held ones came back before the site had a turn for them", held)
	}
	t.Logf("held %d times for 120 messages", held)
	waitExit(t, cmd, logs, 15*time.Second)
}

// peak counts requests in progress and the most there were at once.
type peak struct{ now, most atomic.Int64 }

func (p *peak) enter() {
	n := p.now.Add(1)
	for m := p.most.Load(); n > m && !p.most.CompareAndSwap(m, n); m = p.most.Load() {
	}
}

func (p *peak) leave() { p.now.Add(-1) }

// heldReceivers are two webhook receivers: slow holds every request until release
// (at the latest when the test ends), counting those in progress; fast answers at
// once. Each counts the requests it answered.
type heldReceivers struct {
	slow, fast             *httptest.Server
	slowServed, fastServed atomic.Int64
	inFlight               peak
	release                func()
}

func newHeldReceivers(t *testing.T) *heldReceivers {
	t.Helper()
	rc := &heldReceivers{}
	held := make(chan struct{})
	var once sync.Once
	rc.release = func() { once.Do(func() { close(held) }) }
	rc.slow = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.inFlight.enter()
		<-held
		rc.inFlight.leave()
		rc.slowServed.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	rc.fast = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.fastServed.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.fast.Close)
	t.Cleanup(rc.slow.Close)
	t.Cleanup(rc.release) // before the slow receiver closes: Close waits for its requests
	return rc
}

// Receivers and providers have send slots of their own (two lanes): a receiver that
// holds every request it gets (40 webhooks to one site, the default bound of 32) takes
// no slot from the e-mail channel's provider nor the runner's adaptive limit, which
// starts at 16 and follows providers; so e-mails (a password reset) and webhooks to
// another receiver go out at once, with the default settings, while the slow
// receiver still holds its sends. With one pool of slots under the adaptive limit,
// the slow site took all 16 and every e-mail waited for its answers.
func TestASlowReceiverTakesNoProvidersSlots(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('hooks', 'webhook')`)
	release := make(chan struct{})
	var once sync.Once
	var held atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		held.Add(1)
		<-release
		w.WriteHeader(http.StatusNoContent)
	}))
	defer slow.Close()
	defer once.Do(func() { close(release) })
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer fast.Close()
	for i := range 40 {
		mustExec(t, pool, `SELECT herald.enqueue('hooks', $1, jsonb_build_object('n', $2::int))`, strings.Replace(slow.URL, "127.0.0.1", "localhost", 1)+"/in", i)
	}
	addr := freeAddr(t)
	cmd, logs := runnerProcess(t, dbURL, "HERALD_HTTP_ADDR="+addr, "HERALD_INTAKE=off", "HERALD_SENDER_EMAIL=noop", "HERALD_SENDER_HOOKS=webhook",
		"HERALD_HOOKS_WEBHOOK_SECRETS=whsec_"+strings.Repeat("SG9va3Nz", 4), "HERALD_WEBHOOK_ALLOW=localhost",
		"HERALD_WEBHOOK_TIMEOUT=10m", "HERALD_POLL_INTERVAL=100ms") // the slow sends end when released, not by a timeout
	eventually(t, 30*time.Second, "the slow receiver holding its sends", func() bool { return held.Load() >= 16 })
	mustExec(t, pool, `SELECT herald.enqueue('email', 'u' || g || '@example.com', '{"subject":"Reset your password","text":"t"}') FROM generate_series(1, 20) g`)
	for i := range 20 {
		mustExec(t, pool, `SELECT herald.enqueue('hooks', $1, jsonb_build_object('n', $2::int))`, strings.Replace(fast.URL, "127.0.0.1", "localhost", 1)+"/in", i)
	}
	eventually(t, 30*time.Second, "the e-mails and the other receiver's webhooks sent while the slow one holds its sends", func() bool {
		return countWhere(t, pool, `status = 'sent' AND (channel = 'email' OR recipient LIKE $1)`, strings.Replace(fast.URL, "127.0.0.1", "localhost", 1)+"%") == 40
	})
	if n := countWhere(t, pool, `status = 'sent' AND recipient LIKE $1`, strings.Replace(slow.URL, "127.0.0.1", "localhost", 1)+"%"); n != 0 {
		t.Fatalf("%d of the slow receiver's webhooks answered before it was released", n)
	}
	// The receivers' limit grew past its start (16) as its slots held claims back.
	m := regexp.MustCompile(`(?m)^herald_receiver_concurrency_limit (\d+)$`).FindSubmatch(metricsOf(t, addr))
	if m == nil || len(m[1]) < 2 || string(m[1]) == "16" {
		t.Fatalf("herald_receiver_concurrency_limit: %q, want above 16", m)
	}
	once.Do(func() { close(release) })
	eventually(t, 90*time.Second, "all eighty sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 80 })
	waitExit(t, cmd, logs, 15*time.Second)
}

// Attack: a producer whose webhooks go to receivers that never answer (here: not until
// the test lets them), enqueued before anyone else's, with the per-site bound set
// aside (as many slow sites would). Unbounded, its sends take all eight of the
// runner's receiver slots and alice's webhooks wait for its timeouts. With the
// channel's producer_concurrency at 4, mallory holds four slots; alice's webhooks go
// out while mallory's receivers still hold theirs, and the rest of mallory's stay
// queued, no attempt spent, until her sends are answered.
func TestSlowProducerHoldsFewSends(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, producer_concurrency) VALUES ('hooks', 'webhook', 4)`)
	mallory := loginPool(t, pool, "herald_test_mallory", "herald_producer")
	alice := loginPool(t, pool, "herald_test_alice", "herald_producer")
	rc := newHeldReceivers(t)
	mustExec(t, mallory, `SELECT herald.enqueue('hooks', $1, jsonb_build_object('n', g)) FROM generate_series(1, 30) g`,
		strings.Replace(rc.slow.URL, "127.0.0.1", "localhost", 1)+"/in")
	cmd, logs := runnerProcess(t, dbURL, "HERALD_INTAKE=off", "HERALD_SENDER_HOOKS=webhook",
		"HERALD_HOOKS_WEBHOOK_SECRETS=whsec_"+strings.Repeat("SG9va3Nz", 4), "HERALD_WEBHOOK_ALLOW=localhost",
		"HERALD_WEBHOOK_TIMEOUT=10m", "HERALD_WEBHOOK_HOST_CONCURRENCY=-1",
		"HERALD_CONCURRENCY=8", "HERALD_CONCURRENCY_FIXED=true", "HERALD_POLL_INTERVAL=100ms")
	eventually(t, 30*time.Second, "mallory's receiver holding four sends", func() bool { return rc.inFlight.now.Load() == 4 })
	mustExec(t, alice, `SELECT herald.enqueue('hooks', $1, jsonb_build_object('n', g)) FROM generate_series(1, 10) g`,
		strings.Replace(rc.fast.URL, "127.0.0.1", "localhost", 1)+"/in")
	eventually(t, 30*time.Second, "alice's ten webhooks sent while mallory's receiver holds its sends", func() bool {
		return rc.fastServed.Load() == 10
	})
	if n, answered := rc.inFlight.most.Load(), rc.slowServed.Load(); n != 4 || answered != 0 {
		t.Fatalf("mallory had %d sends at once (%d answered), want 4\n%s", n, answered, logs.String())
	}
	if n := countWhere(t, pool, `status = 'queued' AND producer = 'herald_test_mallory' AND attempts = 0`); n != 26 {
		t.Fatalf("%d of mallory's other 26 webhooks queued with no attempt spent", n)
	}
	rc.release()
	eventually(t, 60*time.Second, "all forty sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 40 })
	if n := rc.inFlight.most.Load(); n != 4 {
		t.Fatalf("mallory had %d sends at once, bound 4", n)
	}
	if n := countWhere(t, pool, `attempts = 1`); n != 40 {
		t.Fatalf("%d of 40 messages with one attempt", n)
	}
	waitExit(t, cmd, logs, 15*time.Second)
}

// A bounded producer's messages follow its reports, not the poll: bound 2, twenty
// webhooks to a receiver that answers at once, and a poll interval longer than the
// test. Each claim after the first finds room only once sends are reported (a freed
// slot wakes the claim loop before that): the report wakes it again.
func TestBoundedProducerFollowsItsReports(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind, producer_concurrency) VALUES ('hooks', 'webhook', 2)`)
	var served atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	mustExec(t, pool, `SELECT herald.enqueue('hooks', $1, jsonb_build_object('n', g)) FROM generate_series(1, 20) g`,
		strings.Replace(receiver.URL, "127.0.0.1", "localhost", 1)+"/in")
	cmd, logs := runnerProcess(t, dbURL, "HERALD_INTAKE=off", "HERALD_SENDER_HOOKS=webhook",
		"HERALD_HOOKS_WEBHOOK_SECRETS=whsec_"+strings.Repeat("SG9va3Nz", 4), "HERALD_WEBHOOK_ALLOW=localhost",
		"HERALD_POLL_INTERVAL=10m")
	eventually(t, 30*time.Second, "twenty sent, two at a time, with no poll", func() bool { return countWhere(t, pool, `status = 'sent'`) == 20 })
	if n := served.Load(); n != 20 {
		t.Fatalf("the receiver answered %d requests for 20 messages", n)
	}
	waitExit(t, cmd, logs, 15*time.Second)
}
