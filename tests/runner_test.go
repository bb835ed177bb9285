package tests

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald/herald/runner"
	"github.com/herald/herald/runner/idtag"
	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/egress"
	"github.com/herald/herald/runner/sender/webhook"
	"github.com/herald/herald/tests/testdb"
)

// recorder is a Sender that records every delivery; behave, when set, decides the
// outcome of each send.
type recorder struct {
	mu     sync.Mutex
	sends  map[int64]int
	behave func(ctx context.Context, m sender.Message) error
}

func newRecorder() *recorder { return &recorder{sends: map[int64]int{}} }

func (r *recorder) Send(ctx context.Context, m sender.Message) (sender.Result, error) {
	if r.behave != nil {
		if err := r.behave(ctx, m); err != nil {
			return sender.Result{}, err
		}
	}
	r.mu.Lock()
	r.sends[m.ID]++
	r.mu.Unlock()
	return sender.Result{ProviderMessageID: fmt.Sprintf("rec-%d", m.ID)}, nil
}

func (r *recorder) counts() map[int64]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[int64]int, len(r.sends))
	for k, v := range r.sends {
		out[k] = v
	}
	return out
}

// startRunner runs a Runner on its own pool until the returned stop is called (or
// the test ends); stop waits for Run to return.
func startRunner(t *testing.T, url string, cfg runner.Config) (*runner.Runner, func()) {
	t.Helper()
	conf, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	conf.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(context.Background(), conf)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	r, err := runner.New(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("runner did not stop within 30s")
			}
			pool.Close()
		})
	}
	t.Cleanup(stop)
	return r, stop
}

// eventually polls cond (a database condition, which has no other signal) every
// 20 ms until it holds, failing after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func countWhere(t *testing.T, pool *pgxpool.Pool, where string, args ...any) int64 {
	t.Helper()
	return scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE `+where, args...)
}

// enqueueNow stores a valid e-mail, ready now (enqueueEmail uses the fixed 2030 clock).
func enqueueNow(t *testing.T, pool *pgxpool.Pool, to string) int64 {
	t.Helper()
	return scalar[int64](t, pool, `SELECT herald.enqueue('email', $1, '{"subject":"Hi","text":"Hello"}')`, to)
}

func enqueueMany(t *testing.T, pool *pgxpool.Pool, n int, channel string) {
	t.Helper()
	recipient, payload := `'u' || g || '@example.com'`, `'{"subject":"s","text":"t"}'::jsonb`
	if channel == "sms" {
		recipient, payload = `'+1415' || lpad(g::text, 7, '0')`, `'{"text":"t"}'::jsonb`
	}
	for done := 0; done < n; done += 1000 {
		k := min(1000, n-done)
		mustExec(t, pool, fmt.Sprintf(`SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object(
			'channel', '%s', 'recipient', %s, 'payload', %s)) FROM generate_series(1, %d) g))`, channel, recipient, payload, k))
	}
}

// 1. 10,000 messages, 4 runners at once with a recording sender: each message is
// sent exactly once and all end sent.
func TestRunnersDeliverEachMessageOnce(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	enqueueMany(t, pool, 10000, "email")
	rec := newRecorder()
	var runners []*runner.Runner
	for i := 0; i < 4; i++ {
		r, _ := startRunner(t, url, runner.Config{Worker: fmt.Sprintf("r%d", i), Senders: map[string]sender.Sender{"email": rec},
			PollInterval: 200 * time.Millisecond})
		runners = append(runners, r)
	}
	eventually(t, 2*time.Minute, "10,000 messages sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 10000 })
	counts := rec.counts()
	if len(counts) != 10000 {
		t.Fatalf("%d distinct messages sent", len(counts))
	}
	for id, n := range counts {
		if n != 1 {
			t.Fatalf("message %d sent %d times", id, n)
		}
	}
	if n := countWhere(t, pool, `attempts <> 1 OR provider_message_id <> 'rec-' || id`); n != 0 {
		t.Fatalf("%d messages with more than one attempt or a wrong receipt", n)
	}
	var workers int64
	workers = scalar[int64](t, pool, `SELECT count(DISTINCT leased_by) FROM herald.messages`)
	if workers < 2 {
		t.Fatalf("only %d runner(s) did the work", workers)
	}
	// The metrics say so too, in an exposition the official parser reads, with the Go
	// runtime and process collectors beside herald's own.
	fams := scrape(t, runners[0].Handler())
	if v := metricValue(t, fams, "herald_sent_total", "channel", "email"); v <= 0 {
		t.Fatalf("herald_sent_total{channel=email} = %v", v)
	}
	if h := fams["herald_send_duration_seconds"]; h == nil || h.GetType() != dto.MetricType_HISTOGRAM ||
		h.Metric[0].GetHistogram().GetSampleCount() == 0 {
		t.Fatalf("herald_send_duration_seconds: %v", h)
	}
	if h := fams["herald_claim_duration_seconds"]; h == nil || h.Metric[0].GetHistogram().GetSampleCount() == 0 {
		t.Fatalf("herald_claim_duration_seconds: %v", h)
	}
	if v := metricValue(t, fams, "herald_listener_connected"); v != 1 {
		t.Fatalf("herald_listener_connected = %v", v)
	}
	for _, name := range []string{"herald_duplicates_total", "go_goroutines", "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total",
		"process_resident_memory_bytes"} {
		if fams[name] == nil {
			t.Fatalf("/metrics lacks %s", name)
		}
	}
	// The queue-depth gauge comes from herald.queue_depth: every channel, with 0 for
	// one that has no message at all (herald.queue_stats has no row for it).
	eventually(t, 10*time.Second, "the queue-depth sample", func() bool {
		f := scrape(t, runners[0].Handler())["herald_queue_depth_messages"]
		for _, m := range f.GetMetric() {
			if labelsAre(m, "channel", "sms", "status", "processing") && m.GetGauge().GetValue() == 0 {
				return true
			}
		}
		return false
	})
	rr := httptest.NewRecorder()
	runners[0].Handler().ServeHTTP(rr, httptest.NewRequest("GET", "/healthz", nil))
	if rr.Code != 200 || !strings.Contains(rr.Body.String(), `"listener":"connected"`) {
		t.Fatalf("/healthz %d %s", rr.Code, rr.Body.String())
	}
	t.Logf("10,000 messages by 4 runners (%d did work)", workers)
}

var (
	heraldBinOnce sync.Once
	heraldBin     string
	heraldBinErr  error
)

// buildHerald builds the herald binary once per test run.
func buildHerald(t *testing.T) string {
	t.Helper()
	heraldBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "herald-bin-")
		if err != nil {
			heraldBinErr = err
			return
		}
		heraldBin = filepath.Join(dir, "herald")
		cmd := exec.Command("go", "build", "-o", heraldBin, "./cmd/herald")
		cmd.Dir = testdb.RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			heraldBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if heraldBinErr != nil {
		t.Fatal(heraldBinErr)
	}
	return heraldBin
}

// runnerProcess starts `herald run` as a separate process, with no HTTP server.
func runnerProcess(t *testing.T, url string, env ...string) (*exec.Cmd, *logBuffer) {
	t.Helper()
	return runnerProcessArgs(t, url, []string{"run"}, append([]string{"HERALD_HTTP_ADDR=off"}, env...)...)
}

// runnerProcessArgs starts `herald ARGS…` as a separate process on the database at
// url, with env added to the environment; its output is collected.
func runnerProcessArgs(t *testing.T, url string, args []string, env ...string) (*exec.Cmd, *logBuffer) {
	t.Helper()
	cmd := exec.Command(buildHerald(t), args...)
	cmd.Env = append(os.Environ(), append([]string{"DATABASE_URL=" + url}, env...)...)
	logs := &logBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	return cmd, logs
}

// logBuffer collects a process's output; safe to read while the process writes.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// 2. kill -9 a runner process while it holds claimed messages: after the lease
// expires the reaper hands them to another runner; none is lost; duplicates are at
// most what that runner had in flight.
func TestKilledRunnerMessagesAreRedelivered(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	enqueueMany(t, pool, 50, "email")
	victim, _ := runnerProcess(t, url, "HERALD_SENDER_EMAIL=noop:1h", "HERALD_LEASE=2s",
		"HERALD_CONCURRENCY=10", "HERALD_BATCH_SIZE=10", "HERALD_WORKER=victim")
	eventually(t, 30*time.Second, "the victim to hold 10 messages", func() bool {
		return countWhere(t, pool, `status = 'processing' AND leased_by = 'victim'`) == 10
	})
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = victim.Process.Wait()
	inFlight := countWhere(t, pool, `status = 'processing' AND leased_by = 'victim'`)

	rec := newRecorder()
	startRunner(t, url, runner.Config{Worker: "rescuer", Senders: map[string]sender.Sender{"email": rec},
		ReapInterval: 200 * time.Millisecond, PollInterval: 200 * time.Millisecond})
	eventually(t, time.Minute, "all 50 messages sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 50 })
	counts := rec.counts()
	duplicates := 0
	for _, n := range counts {
		duplicates += n - 1
	}
	if len(counts) != 50 || int64(duplicates) > inFlight {
		t.Fatalf("sent %d distinct, %d duplicates (in flight at the kill: %d)", len(counts), duplicates, inFlight)
	}
	if reaped := countWhere(t, pool, `attempts = 2 AND errors -> 0 ->> 'error' = 'lease expired'`); reaped != inFlight {
		t.Fatalf("%d messages came back through the reaper, want the %d in flight", reaped, inFlight)
	}
	t.Logf("killed runner held %d messages; all 50 delivered; %d duplicate deliveries (the killed runner's noop sender never delivered)", inFlight, duplicates)
}

// A backlog of expired messages (a channel down past its messages' deadline) is
// reaped in batches of 10,000, each committed on its own: claims stop reading the
// expired rows batch by batch instead of all at the end (200,000 expired due e-mails
// cost each claim 33-45 ms until reaped), and no transaction holds every batch's row
// locks. Told apart by the rows' xmin: one transaction id per batch.
func TestReaperCommitsEachBatch(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	mustExec(t, pool, `INSERT INTO herald.messages (producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at)
		SELECT 'test', 'email', 'u' || g || '@example.com', '{"subject":"s","text":"t"}', now() - interval '1 hour', 5,
		       now() - interval '2 hours', now() - interval '1 minute'
		FROM generate_series(1, 25000) g`)
	startRunner(t, url, runner.Config{Worker: "reaper", Senders: map[string]sender.Sender{"email": newRecorder()},
		ReapInterval: 100 * time.Millisecond, PollInterval: time.Hour})
	eventually(t, time.Minute, "25,000 messages expired", func() bool { return countWhere(t, pool, `status = 'expired'`) == 25000 })
	if n := scalar[int64](t, pool, `SELECT count(DISTINCT xmin::text) FROM herald.messages WHERE status = 'expired'`); n < 3 {
		t.Fatalf("25,000 messages expired in %d transactions, want one per batch of 10,000 (3)", n)
	}
}

// 3. SIGTERM during a run: exit 0 within the grace period, nothing left processing,
// nothing lost; sends that outlive the grace are released for another runner.
func TestSigtermShutsDownCleanly(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	enqueueMany(t, pool, 100, "email")

	cmd, logs := runnerProcess(t, url, "HERALD_SENDER_EMAIL=noop:300ms", "HERALD_CONCURRENCY=8", "HERALD_SHUTDOWN_GRACE=5s")
	eventually(t, 30*time.Second, "some messages sent", func() bool { return countWhere(t, pool, `status = 'sent'`) >= 8 })
	waitExit(t, cmd, logs, 5*time.Second+3*time.Second)
	if n := countWhere(t, pool, `status = 'processing'`); n != 0 {
		t.Fatalf("%d messages left processing", n)
	}
	if n := countWhere(t, pool, `status IN ('sent', 'queued')`); n != 100 {
		t.Fatalf("%d of 100 messages sent or queued", n)
	}
	if n := countWhere(t, pool, `status = 'queued' AND attempts > 0`); n != 0 {
		t.Fatalf("%d messages were released though their sends fit in the grace period", n)
	}

	// Sends slower than the grace period are released: queued again, ready now.
	cmd, logs = runnerProcess(t, url, "HERALD_SENDER_EMAIL=noop:1h", "HERALD_CONCURRENCY=4", "HERALD_SHUTDOWN_GRACE=1s", "HERALD_WORKER=slow")
	eventually(t, 30*time.Second, "4 messages held", func() bool {
		return countWhere(t, pool, `status = 'processing' AND leased_by = 'slow'`) == 4
	})
	waitExit(t, cmd, logs, time.Second+5*time.Second)
	if n := countWhere(t, pool, `status = 'processing'`); n != 0 {
		t.Fatalf("%d messages left processing after the grace period", n)
	}
	if n := countWhere(t, pool, `status = 'queued' AND leased_by = 'slow' AND last_error_class = 'transient' AND run_at <= now()`); n != 4 {
		t.Fatalf("%d of the 4 unsent messages were released", n)
	}
}

// waitExit sends SIGTERM and expects exit status 0 within limit.
func waitExit(t *testing.T, cmd *exec.Cmd, logs *logBuffer, limit time.Duration) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("runner exited with %v; logs:\n%s", err, logs.String())
		}
	case <-time.After(limit):
		t.Fatalf("runner still running %s after SIGTERM; logs:\n%s", limit, logs.String())
	}
}

// 4. The listener's backend is killed: the runner reconnects and keeps delivering;
// a message enqueued afterwards is still sent. The poll interval is an hour, so only
// the listener can bring messages in.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	rec := newRecorder()
	startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"email": rec}, PollInterval: time.Hour})
	listenerPID := func() int32 {
		var pid int32
		_ = pool.QueryRow(context.Background(), `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND query = 'LISTEN herald_queue' AND pid <> pg_backend_pid()`).Scan(&pid)
		return pid
	}
	eventually(t, 10*time.Second, "the listener", func() bool { return listenerPID() != 0 })
	first := enqueueNow(t, pool, "first@example.com")
	eventually(t, 10*time.Second, "the first message sent", func() bool { return rec.counts()[first] == 1 })

	old := listenerPID()
	if !scalar[bool](t, pool, `SELECT pg_terminate_backend($1)`, old) {
		t.Fatal("pg_terminate_backend failed")
	}
	eventually(t, 20*time.Second, "a new listener", func() bool { p := listenerPID(); return p != 0 && p != old })
	second := enqueueNow(t, pool, "second@example.com")
	eventually(t, 20*time.Second, "the second message sent", func() bool { return rec.counts()[second] == 1 })
}

// 5. Postgres restarted under a running runner (a cluster of this test's own): the
// runner recovers by itself and delivers what was enqueued before and after.
func TestRunnerSurvivesPostgresRestart(t *testing.T) {
	t.Parallel()
	base, err := os.MkdirTemp("", "herald-restart-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	devdb := filepath.Join(testdb.RepoRoot(), "tests", "devdb.sh")
	cluster := func(cmd string) string {
		t.Helper()
		c := exec.Command(devdb, cmd)
		c.Env = append(os.Environ(), "HERALD_DEVDB_DIR="+filepath.Join(base, "db"))
		out, err := c.Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("devdb.sh %s: %v\n%s", cmd, err, stderr)
		}
		return strings.TrimSpace(string(out))
	}
	url := cluster("up")
	t.Cleanup(func() { cluster("destroy"); os.RemoveAll(base) })
	migrateURL(t, url, false)
	pool := testdb.Pool(t, url)

	rec := newRecorder()
	startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"email": rec, "sms": rec}, PollInterval: 200 * time.Millisecond})
	enqueueMany(t, pool, 20, "email")
	eventually(t, 20*time.Second, "the first 20 sent", func() bool { return len(rec.counts()) == 20 })

	cluster("stop")
	cluster("start")
	eventually(t, 30*time.Second, "the database back", func() bool { return pool.Ping(context.Background()) == nil })
	enqueueMany(t, pool, 20, "sms")
	eventually(t, 60*time.Second, "all 40 sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 40 })
	for id, n := range rec.counts() {
		if n != 1 {
			t.Fatalf("message %d sent %d times", id, n)
		}
	}
}

// 6. A sender slower than half the lease: the lease is extended, no other runner
// takes the message, and it is sent once.
func TestSlowSendGetsItsLeaseExtended(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	slow := newRecorder()
	slow.behave = func(ctx context.Context, _ sender.Message) error {
		select {
		case <-time.After(4500 * time.Millisecond): // 1.5 leases
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	fast := newRecorder()
	id := enqueueNow(t, pool, "slow@example.com")
	startRunner(t, url, runner.Config{Worker: "slow", Senders: map[string]sender.Sender{"email": slow},
		Lease: 3 * time.Second, ReapInterval: 100 * time.Millisecond, PollInterval: 100 * time.Millisecond})
	eventually(t, 10*time.Second, "the slow runner to claim", func() bool {
		return countWhere(t, pool, `status = 'processing' AND leased_by = 'slow'`) == 1
	})
	// A second runner reaps and claims eagerly: it must find nothing to take.
	startRunner(t, url, runner.Config{Worker: "thief", Senders: map[string]sender.Sender{"email": fast},
		ReapInterval: 100 * time.Millisecond, PollInterval: 100 * time.Millisecond})
	eventually(t, 20*time.Second, "the message sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 1 })
	var attempts int32
	var errs string
	if err := pool.QueryRow(context.Background(), `SELECT attempts, errors::text FROM herald.messages WHERE id = $1`, id).Scan(&attempts, &errs); err != nil {
		t.Fatal(err)
	}
	if attempts != 1 || errs != "[]" || slow.counts()[id] != 1 || len(fast.counts()) != 0 {
		t.Fatalf("attempts %d, errors %s, slow sends %d, thief sends %d", attempts, errs, slow.counts()[id], len(fast.counts()))
	}
}

// 7. A transient failure is retried and a permanent one ends dead: SQL decides from
// the class the sender reports.
func TestFailuresAreClassifiedBySQL(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	rec := newRecorder()
	rec.behave = func(_ context.Context, m sender.Message) error {
		switch {
		case m.Recipient == "gone@example.com":
			return sender.Permanent(fmt.Errorf("550 5.1.1 no such user"))
		case m.Recipient == "flaky@example.com" && m.Attempt == 1:
			return &sender.Failure{Class: sender.ClassTransient, RetryAt: time.Now(), Err: fmt.Errorf("421 try later")}
		}
		return nil
	}
	flaky := enqueueNow(t, pool, "flaky@example.com")
	gone := enqueueNow(t, pool, "gone@example.com")
	startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"email": rec}, PollInterval: 100 * time.Millisecond})
	eventually(t, 20*time.Second, "both settled", func() bool {
		return countWhere(t, pool, `(id = $1 AND status = 'sent') OR (id = $2 AND status = 'dead')`, flaky, gone) == 2
	})
	if a := scalar[int32](t, pool, `SELECT attempts FROM herald.messages WHERE id = $1`, flaky); a != 2 {
		t.Fatalf("flaky message took %d attempts, want 2", a)
	}
	var class, lastErr string
	if err := pool.QueryRow(context.Background(), `SELECT last_error_class, last_error FROM herald.dead_letters WHERE id = $1`, gone).
		Scan(&class, &lastErr); err != nil || class != "permanent" || !strings.Contains(lastErr, "550 5.1.1") {
		t.Fatalf("dead letter: %s %q %v", class, lastErr, err)
	}
}

// Sends run Config.Concurrency at once: never more, and that many when the queue
// holds more (the messages are claimed together and sent side by side, not in turn).
func TestSendsRunConcurrencyAtOnce(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	const concurrency = 4
	enqueueMany(t, pool, 10, "email")
	var mu sync.Mutex
	running, peak := 0, 0
	full := make(chan struct{})    // closed when concurrency sends run at once
	release := make(chan struct{}) // closed by the test: the held sends return
	rec := newRecorder()
	rec.behave = func(ctx context.Context, m sender.Message) error {
		mu.Lock()
		running++
		peak = max(peak, running)
		if running == concurrency {
			select {
			case <-full:
			default:
				close(full)
			}
		}
		mu.Unlock()
		<-release
		mu.Lock()
		running--
		mu.Unlock()
		return nil
	}
	startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"email": rec}, Concurrency: concurrency,
		BatchSize: 100, PollInterval: 50 * time.Millisecond})
	select {
	case <-full:
	case <-time.After(30 * time.Second):
		t.Fatalf("never %d sends at once", concurrency)
	}
	if n := countWhere(t, pool, `status = 'processing'`); n != concurrency {
		t.Fatalf("%d messages claimed while %d sends run (the claim must not take more than the free slots)", n, concurrency)
	}
	close(release)
	eventually(t, 30*time.Second, "10 messages sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 10 })
	mu.Lock()
	defer mu.Unlock()
	if peak != concurrency {
		t.Fatalf("peak of %d sends at once, want %d", peak, concurrency)
	}
}

// A sender gets each message as it was stored: its channel, recipient, payload and
// metadata (nil when NULL), whatever the sizes. The runner copies a claim's JSON
// values into shared blocks of 64 KiB, so the payloads here span several blocks,
// some of them bigger than a block, and each value must be capped: a sender
// that appends to its payload must not write over another message's.
func TestSendersGetWhatWasStored(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	const n = 60
	// E-mails with texts from 0 to about 100,000 bytes (the channel allows them), every
	// third with metadata; and SMS, so that two channels share the claims.
	mustExec(t, pool, `UPDATE herald.channels SET max_payload_bytes = 200000 WHERE name = 'email'`)
	mustExec(t, pool, `SELECT herald.enqueue_batch((SELECT jsonb_agg(CASE WHEN g % 5 = 0 THEN
		jsonb_build_object('channel', 'sms', 'recipient', '+1415' || lpad(g::text, 7, '0'),
		                   'payload', jsonb_build_object('text', 'sms ' || g))
		ELSE jsonb_build_object('channel', 'email', 'recipient', 'u' || g || '@example.com',
		     'payload', jsonb_build_object('subject', 's' || g, 'text', 't' || repeat('x', (g * 7919) % 100000)))
		  || CASE WHEN g % 3 = 0 THEN jsonb_build_object('metadata', jsonb_build_object('tenant', g)) ELSE '{}' END
		END) FROM generate_series(1, $1::integer) g))`, n)

	type got struct {
		channel, recipient, payload string
		metadata                    *string
	}
	var mu sync.Mutex
	sent := map[int64]got{}
	var capped []string
	rec := newRecorder()
	rec.behave = func(_ context.Context, m sender.Message) error {
		g := got{channel: m.Channel, recipient: m.Recipient, payload: string(m.Payload)}
		if m.Metadata != nil {
			s := string(m.Metadata)
			g.metadata = &s
		}
		mu.Lock()
		defer mu.Unlock()
		if cap(m.Payload) != len(m.Payload) || cap(m.Metadata) != len(m.Metadata) {
			capped = append(capped, fmt.Sprintf("message %d: payload len %d cap %d, metadata len %d cap %d",
				m.ID, len(m.Payload), cap(m.Payload), len(m.Metadata), cap(m.Metadata)))
		}
		_ = append(m.Payload, `"appended by the sender"`...)
		sent[m.ID] = g
		return nil
	}
	startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"email": rec, "sms": rec},
		BatchSize: 25, PollInterval: 50 * time.Millisecond})
	eventually(t, 30*time.Second, "every message sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == n })

	rows, err := pool.Query(context.Background(), `SELECT id, channel, recipient, payload::text, metadata::text FROM herald.messages`)
	if err != nil {
		t.Fatal(err)
	}
	var want []got
	var wantIDs []int64
	for rows.Next() {
		var id int64
		var w got
		if err := rows.Scan(&id, &w.channel, &w.recipient, &w.payload, &w.metadata); err != nil {
			t.Fatal(err)
		}
		wantIDs, want = append(wantIDs, id), append(want, w)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(capped) > 0 {
		t.Errorf("values handed to senders with room to append into:\n%s", strings.Join(capped, "\n"))
	}
	big, withMeta := 0, 0
	for i, id := range wantIDs {
		g, ok := sent[id]
		if !ok {
			t.Errorf("message %d was never handed to a sender", id)
			continue
		}
		w := want[i]
		if len(w.payload) > 64<<10 {
			big++
		}
		if w.metadata != nil {
			withMeta++
		}
		if g.channel != w.channel || g.recipient != w.recipient || g.payload != w.payload ||
			(g.metadata == nil) != (w.metadata == nil) || (g.metadata != nil && *g.metadata != *w.metadata) {
			t.Errorf("message %d: the sender got channel %q, recipient %q, payload of %d bytes, metadata (set %t) %q; stored: %q, %q, %d bytes, (set %t) %q",
				id, g.channel, g.recipient, len(g.payload), g.metadata != nil, deref(g.metadata),
				w.channel, w.recipient, len(w.payload), w.metadata != nil, deref(w.metadata))
		}
	}
	if big == 0 || withMeta == 0 {
		t.Fatalf("%d payloads over 64 KiB and %d messages with metadata: the test checks nothing", big, withMeta)
	}
}

// A delivery whose provider gave no id (an empty Result.ProviderMessageID) gets no
// receipt: provider_message_id NULL and a 'sent' event without one, never ”. Two
// batches: one where no delivery has an id (the whole argument is NULL) and one
// where some have.
func TestEmptyProviderIDIsNoReceipt(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	var withID atomic.Bool
	noID := sendFunc(func(ctx context.Context, m sender.Message) (sender.Result, error) {
		if withID.Load() && m.ID%2 == 0 {
			return sender.Result{ProviderMessageID: fmt.Sprintf("p-%d", m.ID)}, nil
		}
		return sender.Result{}, nil
	})
	_, stop := startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"email": noID}, BatchSize: 100,
		PollInterval: 50 * time.Millisecond})
	enqueueMany(t, pool, 10, "email")
	eventually(t, 30*time.Second, "the first 10 sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 10 })
	withID.Store(true)
	enqueueMany(t, pool, 10, "email")
	eventually(t, 30*time.Second, "all 20 sent", func() bool { return countWhere(t, pool, `status = 'sent'`) == 20 })
	stop()

	if n := countWhere(t, pool, `provider_message_id = ''`); n != 0 {
		t.Errorf("%d messages stored an empty receipt", n)
	}
	if n := countWhere(t, pool, `provider_message_id IS NULL AND (id <= 10 OR id % 2 = 1)`); n != 15 {
		t.Errorf("%d messages without a provider id have a NULL receipt, want 15", n)
	}
	if n := countWhere(t, pool, `id > 10 AND id % 2 = 0 AND provider_message_id = 'p-' || id`); n != 5 {
		t.Errorf("%d messages kept their provider id, want 5", n)
	}
	scalar[int32](t, pool, `SELECT herald.log_sequence(100000)`)
	events := `SELECT count(*) FROM herald.log WHERE kind = 'sent' AND `
	if n := scalar[int64](t, pool, events+`detail->>'provider_message_id' = ''`); n != 0 {
		t.Errorf("%d 'sent' events carry an empty provider_message_id", n)
	}
	if n := scalar[int64](t, pool, events+`NOT detail ? 'provider_message_id'`); n != 15 {
		t.Errorf("%d 'sent' events have no provider_message_id, want 15", n)
	}
}

// sendFunc is a Sender made of a function.
type sendFunc func(ctx context.Context, m sender.Message) (sender.Result, error)

func (f sendFunc) Send(ctx context.Context, m sender.Message) (sender.Result, error) {
	return f(ctx, m)
}

// metricsOf is the exposition a runner serves at addr's /metrics, once it listens.
func metricsOf(t *testing.T, addr string) []byte {
	t.Helper()
	waitHTTP(t, addr)
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// scrape reads h's /metrics with the Prometheus text parser.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, httptest.NewRequest("GET", "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(rr.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// metricValue is the counter or gauge value of the series of name with the given
// label pairs.
func metricValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	for _, m := range fams[name].GetMetric() {
		if labelsAre(m, labels...) {
			if m.Counter != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

// labelsAre reports whether m has exactly the label pairs given.
func labelsAre(m *dto.Metric, pairs ...string) bool {
	if len(m.GetLabel())*2 != len(pairs) {
		return false
	}
	for i := 0; i < len(pairs); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == pairs[i] && l.GetValue() == pairs[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// With nothing set, the runner fits its sends in flight to a slow provider: from 16
// at once it grows while latency holds (here a provider that answers every send after
// 50 ms, whatever the load), and claims stay batched. A provider that answers 429
// brings it back down.
func TestConcurrencyAdaptsToTheProvider(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	enqueueMany(t, pool, 3000, "email")
	var mu sync.Mutex
	running, peak := 0, 0
	var limited atomic.Bool
	rec := newRecorder()
	rec.behave = func(ctx context.Context, m sender.Message) error {
		mu.Lock()
		running++
		peak = max(peak, running)
		mu.Unlock()
		defer func() { mu.Lock(); running--; mu.Unlock() }()
		time.Sleep(50 * time.Millisecond) // the provider's latency: what the runner must wait out
		if limited.Load() {
			return sender.WithCode(sender.RateLimited(errors.New("429"), time.Now()), "429")
		}
		return nil
	}
	r, _ := startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"email": rec}, PollInterval: 20 * time.Millisecond})
	eventually(t, 30*time.Second, "more than 100 sends at once", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return peak > 100
	})
	limit := func() float64 { return metricValue(t, scrape(t, r.Handler()), "herald_concurrency_limit") }
	grown := limit()
	limited.Store(true)
	eventually(t, 30*time.Second, "the limit to come down on 429s", func() bool { return limit() < grown/2 })
	mu.Lock()
	defer mu.Unlock()
	t.Logf("peak %d at once; limit %v, then %v after 429s", peak, grown, limit())
}

// The runner counts the backlog of producers with a max_pending every QuotaInterval
// (herald.count_producers), so a producer over it is refused without an admin's call,
// and says so in herald_producers_at_max_pending (docs/deploy/alerts.yml).
func TestRunnerCountsProducersBacklogs(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	mustExec(t, pool, `INSERT INTO herald.producers (producer, max_pending) VALUES (current_user, 5)`)
	mustExec(t, pool, `SELECT herald.pause_channel('email', 'holding the backlog')`)
	enqueueMany(t, pool, 8, "email")
	r, _ := startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"email": newRecorder()}, QuotaInterval: 20 * time.Millisecond})
	eventually(t, 10*time.Second, "the runner to count the producer's 8 pending messages and report it at its bound", func() bool {
		f := scrape(t, r.Handler())["herald_producers_at_max_pending"]
		return scalar[bool](t, pool, `SELECT coalesce(pending = 8, false) FROM herald.producers WHERE producer = current_user`) &&
			f != nil && f.Metric[0].GetGauge().GetValue() == 1
	})
	_, err := pool.Exec(t.Context(), `SELECT herald.enqueue('email', 'x@example.com', '{"subject":"s","text":"t"}')`)
	wantPgError(t, err, "53400", "producer")
}

// The runner's count suspends a producer whose mail bounces over its max_bounce_rate
// (herald.count_producers) without an admin's call, says so in
// herald_producers_suspended (docs/deploy/alerts.yml), and its enqueues are refused.
func TestRunnerSuspendsABouncingProducer(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	mustExec(t, pool, `INSERT INTO herald.producers (producer, max_bounce_rate, rate_min_sent) VALUES (current_user, 0.2, 10)`)
	mustExec(t, pool, `UPDATE herald.producers SET rate_window = '1 minute' WHERE producer = current_user`) // recounted each second
	rec := newRecorder()
	rec.behave = func(_ context.Context, m sender.Message) error {
		if strings.HasPrefix(m.Recipient, "u1") { // u1, u10..u19: 11 of 20 do not exist
			return sender.WithCode(sender.Permanent(errors.New("550 5.1.1 unknown user")), "550 5.1.1")
		}
		return nil
	}
	enqueueMany(t, pool, 20, "email")
	r, _ := startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"email": rec}, QuotaInterval: 20 * time.Millisecond})
	eventually(t, 10*time.Second, "the runner to suspend the producer and report it", func() bool {
		f := scrape(t, r.Handler())["herald_producers_suspended"]
		return f != nil && f.Metric[0].GetGauge().GetValue() == 1
	})
	_, err := pool.Exec(t.Context(), `SELECT herald.enqueue('email', 'x@example.com', '{"subject":"s","text":"t"}')`)
	wantPgError(t, err, "53400", "producer")
	reason := scalar[string](t, pool, `SELECT suspended_reason FROM herald.producers WHERE producer = current_user`)
	if !strings.Contains(reason, "11 of 20 messages") {
		t.Fatalf("suspended_reason %q", reason)
	}
}

// One customer's dead webhook receiver must not slow everyone's delivery: a receiver
// that never answers (each request times out) is not the provider pushing back, so the
// runner's sends in flight do not shrink for it, and after a few failures in a row its
// host's circuit opens: its other messages wait (rate_limited, attempt given back)
// instead of each holding a send for the whole timeout. The healthy receiver gets all
// its messages meanwhile.
func TestADeadReceiverDoesNotSlowTheOthers(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	mustExec(t, pool, `INSERT INTO herald.channels (name, kind) VALUES ('hooks', 'webhook')`)
	var deadAsked, healthyAsked atomic.Int64
	gone := make(chan struct{})
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deadAsked.Add(1)
		select { // never answers: the sender's timeout ends it
		case <-r.Context().Done():
		case <-gone:
		}
	}))
	t.Cleanup(dead.Close)
	t.Cleanup(func() { close(gone) })
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		healthyAsked.Add(1)
		time.Sleep(5 * time.Millisecond)
	}))
	t.Cleanup(healthy.Close)
	mustExec(t, pool, `SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'hooks',
		'recipient', CASE WHEN g % 5 = 0 THEN $1 ELSE $2 END || '/h' || g, 'payload', '{}'::jsonb) ORDER BY g)
		FROM generate_series(1, 400) g))`, strings.Replace(dead.URL, "127.0.0.1", "localhost", 1),
		strings.Replace(healthy.URL, "127.0.0.1", "localhost", 1))
	s, err := webhook.New(webhook.Config{IDKey: idtag.StaticKey([]byte("a webhook-id key")), Secrets: []string{"whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 32))},
		Egress: egress.Policy{Allow: []string{"127.0.0.1/32"}}, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"hooks": s}, PollInterval: 20 * time.Millisecond,
		ConcurrencyStart: 16})
	eventually(t, 60*time.Second, "the healthy receiver's 320 messages", func() bool {
		return scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE status = 'sent'`) == 320
	})
	if limit := metricValue(t, scrape(t, r.Handler()), "herald_concurrency_limit"); limit < 16 {
		t.Fatalf("sends in flight fell to %v for one dead receiver (start 16)", limit)
	}
	if n := deadAsked.Load(); n >= 80 {
		t.Fatalf("the dead receiver was asked %d times for its 80 messages: its circuit never opened", n)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE status NOT IN ('queued', 'processing', 'sent')`); n != 0 {
		t.Fatalf("%d of the dead receiver's messages left the queue (dead or expired)", n)
	}
}

// A provider that is down (it answers every send 503) must not dead-letter the
// backlog: after OutageFailures such failures in a row the channel pauses in SQL for
// OutageWait (every runner stops claiming it) and the failures from then on give the
// attempt back (rate_limited, provider_down); the probe tries the channel after the
// wait, and once the provider answers again everything goes out, none dead, none
// having spent more than one attempt.
func TestAProviderOutageSpendsNoAttempts(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	mustExec(t, pool, `UPDATE herald.channels SET max_attempts = 2, backoff_base = '10 milliseconds', backoff_max = '20 milliseconds' WHERE name = 'email'`)
	const n = 60
	enqueueMany(t, pool, n, "email")
	var down atomic.Bool
	down.Store(true)
	rec := newRecorder()
	rec.behave = func(_ context.Context, m sender.Message) error {
		if down.Load() {
			return sender.FromHTTP(503, nil, "Service Unavailable", time.Now())
		}
		return nil
	}
	startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"email": rec}, BatchSize: 5, OutageFailures: 5,
		OutageWait: 300 * time.Millisecond, ProbeInterval: 50 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	eventually(t, 20*time.Second, "the channel to pause for the outage", func() bool {
		return scalar[bool](t, pool, `SELECT coalesce(paused_until IS NOT NULL AND paused_reason LIKE '%failed every send%', false)
			FROM herald.channels WHERE name = 'email'`)
	})
	eventually(t, 20*time.Second, "failures to give their attempt back", func() bool {
		return countWhere(t, pool, `last_error_code = 'provider_down'`) > 0
	})
	down.Store(false)
	eventually(t, 30*time.Second, "all sent once the provider answers", func() bool { return countWhere(t, pool, `status = 'sent'`) == n })
	if k := countWhere(t, pool, `status <> 'sent' OR attempts > 2`); k != 0 {
		t.Fatalf("%d messages dead or over their attempts after an outage", k)
	}
}

// The failure that completes the outage streak stops the channel in the runner at
// once, not when its report lands: a provider failing fast (a 503 answered at once)
// was called over a hundred times for a streak of ten, as freed send slots claimed
// and sent more in the report's lag. Now at most the sends under way then are made
// (streak + concurrency − 1), and every message is still queued: only the failures
// before the streak was complete spent an attempt.
func TestADownProviderIsNotCalledPastItsStreak(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	pool := testdb.Pool(t, url)
	const n, streak, conc = 300, 10, 4
	enqueueMany(t, pool, n, "email")
	var calls atomic.Int64
	rec := newRecorder()
	rec.behave = func(_ context.Context, m sender.Message) error {
		calls.Add(1)
		return sender.FromHTTP(503, nil, "Service Unavailable", time.Now())
	}
	startRunner(t, url, runner.Config{Senders: map[string]sender.Sender{"email": rec}, OutageFailures: streak,
		OutageWait: time.Hour, Concurrency: conc, FixedConcurrency: true, PollInterval: 20 * time.Millisecond})
	eventually(t, 20*time.Second, "the channel paused for the outage with nothing in flight", func() bool {
		return scalar[bool](t, pool, `SELECT coalesce(paused_until IS NOT NULL, false)
			AND NOT EXISTS (SELECT FROM herald.messages WHERE status = 'processing') FROM herald.channels WHERE name = 'email'`)
	})
	if got := calls.Load(); got < streak || got > streak+conc-1 {
		t.Fatalf("the down provider was called %d times, want %d..%d (the streak and the sends under way at its end)", got, streak, streak+conc-1)
	}
	if k := countWhere(t, pool, `status <> 'queued'`); k != 0 {
		t.Fatalf("%d messages left the queue", k)
	}
	if k := countWhere(t, pool, `attempts > 0`); k != streak-1 {
		t.Fatalf("%d messages spent an attempt, want the %d failures before the streak was complete", k, streak-1)
	}
}

// A HERALD_ variable herald run does not read — a misspelt name, a setting of a
// channel with no sender — is named in a warning at start (names only: a value may be
// a secret); the settings it does read are not.
func TestRunnerNamesTheVariablesItDoesNotRead(t *testing.T) {
	t.Parallel()
	url := testdb.New(t)
	cmd, logs := runnerProcess(t, url, "HERALD_SENDER_EMAIL=sink:-", "HERALD_POLL_INTERVAL=100ms",
		"HERALD_CONCURENCY=3", "HERALD_ALERTS_FROM=alerts@example.com", "HERALD_SMTP_PASSWORD=never-printed")
	eventually(t, 15*time.Second, "the warning", func() bool { return strings.Contains(logs.String(), "does not read") })
	var warning string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "does not read") {
			warning = line
		}
	}
	for _, name := range []string{"HERALD_CONCURENCY", "HERALD_ALERTS_FROM", "HERALD_SMTP_PASSWORD"} {
		if !strings.Contains(warning, name) {
			t.Errorf("the warning does not name %s: %s", name, warning)
		}
	}
	if strings.Contains(warning, "HERALD_POLL_INTERVAL") || strings.Contains(warning, "HERALD_SENDER_EMAIL") || strings.Contains(logs.String(), "never-printed") {
		t.Errorf("the warning names a setting that is read, or prints a value: %s", warning)
	}
	waitExit(t, cmd, logs, 15*time.Second)
}
