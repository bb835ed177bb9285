package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// process is the runner under test.
type process struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (s *suite) start(env ...string) (*process, error) {
	cmd := exec.Command(s.cmd[0], s.cmd[1:]...)
	cmd.Env = append(append(os.Environ(), env...), "DATABASE_URL="+s.dbURL, "HERALD_CONFORMANCE_CHANNEL="+channel,
		"HERALD_CONFORMANCE_SECRET="+s.secret, "HERALD_CONFORMANCE_ALLOW=127.0.0.0/8",
		fmt.Sprintf("HERALD_CONFORMANCE_LEASE_SECONDS=%d", leaseSeconds), fmt.Sprintf("HERALD_CONFORMANCE_POLL_SECONDS=%d", pollSeconds))
	p := &process{cmd: cmd, out: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// stop sends sig and waits up to limit for the exit; it returns the exit error and
// whether the process exited in time (it is killed otherwise).
func (p *process) stop(sig syscall.Signal, limit time.Duration) (error, bool) {
	p.cmd.Process.Signal(sig)
	select {
	case err := <-p.done:
		return err, true
	case <-time.After(limit):
		p.cmd.Process.Kill()
		return <-p.done, false
	}
}

// until polls cond every 50 ms for at most limit.
func until(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cond()
}

func (s *suite) count(ctx context.Context, where string, args ...any) int {
	var n int
	s.db.QueryRow(ctx, `SELECT count(*) FROM herald.messages WHERE `+where, args...).Scan(&n)
	return n
}

func (s *suite) enqueue(ctx context.Context, path string, n int, orderingKey string) error {
	var key any
	if orderingKey != "" {
		key = orderingKey
	}
	_, err := s.db.Exec(ctx, `SELECT herald.enqueue_many(array_fill($1::text, ARRAY[$3::int]), array_fill($2::text, ARRAY[$3::int]),
		array_fill('{}'::jsonb, ARRAY[$3::int]), ordering_keys => array_fill($4::text, ARRAY[$3::int]))`, channel, s.recv.base+path, n, key)
	return err
}

func (s *suite) settled(ctx context.Context, limit time.Duration) bool {
	return until(limit, func() bool { return s.count(ctx, `status IN ('queued', 'processing')`) == 0 })
}

var checks = []check{
	{"drain, once each, receipts", func(ctx context.Context, s *suite) (string, bool) {
		const n = 2000
		if err := s.enqueue(ctx, "/ok", n, ""); err != nil {
			return err.Error(), false
		}
		p, err := s.start()
		if err != nil {
			return err.Error(), false
		}
		defer p.stop(syscall.SIGTERM, 15*time.Second)
		dups := func() (dup int) {
			for _, t := range s.recv.arrivals() {
				dup += len(t) - 1
			}
			return dup
		}
		// Settled, or a duplicate seen (no need to wait for the rest then).
		until(90*time.Second, func() bool { return s.count(ctx, `status IN ('queued', 'processing')`) == 0 || dups() > 0 })
		dup := dups()
		receipts := s.count(ctx, `status = 'sent' AND provider_message_id = 'rcpt-msg_' || id`)
		return fmt.Sprintf("%d sent, %d duplicate deliveries, %d with the receiver's id as receipt", s.count(ctx, `status = 'sent'`), dup, receipts),
			dup == 0 && receipts == n
	}},
	{"failure classes and times", func(ctx context.Context, s *suite) (string, bool) {
		for _, path := range []string{"/fail-once", "/busy", "/gone", "/lost-once"} {
			if err := s.enqueue(ctx, path, 1, ""); err != nil {
				return err.Error(), false
			}
		}
		p, err := s.start()
		if err != nil {
			return err.Error(), false
		}
		defer p.stop(syscall.SIGTERM, 15*time.Second)
		if !s.settled(ctx, 30*time.Second) {
			return "not settled after 30 s", false
		}
		arr := s.recv.arrivals()
		var ev []string
		ok := true
		rows, _ := s.db.Query(ctx, `SELECT id, recipient, status, attempts, coalesce(errors -> 0 ->> 'code', '') FROM herald.messages ORDER BY id`)
		for rows.Next() {
			var id int64
			var rcpt, status, code string
			var attempts int
			rows.Scan(&id, &rcpt, &status, &attempts, &code)
			t := arr[fmt.Sprintf("msg_%d", id)]
			gap := time.Duration(0)
			if len(t) >= 2 {
				gap = t[1].Sub(t[0]).Round(10 * time.Millisecond)
			}
			path := rcpt[strings.LastIndex(rcpt, "/"):]
			ev = append(ev, fmt.Sprintf("%s: %s after %d attempt(s) (retry after %v; first code %q)", path, status, attempts, gap, code))
			switch path {
			case "/fail-once": // transient: retried after the channel's backoff (1 s base, at least half of it)
				ok = ok && status == "sent" && attempts == 2 && gap >= 450*time.Millisecond
			case "/busy": // 429: waits out Retry-After 2 s and gives the attempt back
				ok = ok && status == "sent" && attempts == 1 && gap >= 1900*time.Millisecond
			case "/gone": // permanent: dead at once
				ok = ok && status == "dead" && attempts == 1 && len(t) == 1 && code == "410"
			case "/lost-once": // sent whole, no answer: in doubt, and retried
				ok = ok && status == "sent" && attempts == 2 && code == "in_doubt"
			}
		}
		rows.Close()
		return strings.Join(ev, "; "), ok
	}},
	{"slow send, lease extended", func(ctx context.Context, s *suite) (string, bool) {
		if err := s.enqueue(ctx, fmt.Sprintf("/slow?ms=%d", 2500*leaseSeconds), 1, ""); err != nil {
			return err.Error(), false
		}
		p, err := s.start()
		if err != nil {
			return err.Error(), false
		}
		defer p.stop(syscall.SIGTERM, 15*time.Second)
		stolen := 0
		until(time.Duration(4*leaseSeconds)*time.Second, func() bool { // another runner reaps and claims eagerly
			var n int
			s.db.QueryRow(ctx, `SELECT herald.reap_stale()`).Scan(&n)
			stolen += n
			return s.count(ctx, `status = 'sent'`) == 1
		})
		deliveries := len(s.recv.arrivals()[fmt.Sprintf("msg_%d", firstID(ctx, s))])
		return fmt.Sprintf("a %d s send with a %d s lease: %d delivery, %d lease(s) expired and reaped, status %s",
				5*leaseSeconds/2, leaseSeconds, deliveries, stolen, statusOf(ctx, s)),
			deliveries == 1 && stolen == 0 && statusOf(ctx, s) == "sent"
	}},
	{"wake-up, and polling without it", func(ctx context.Context, s *suite) (string, bool) {
		p, err := s.start()
		if err != nil {
			return err.Error(), false
		}
		defer p.stop(syscall.SIGTERM, 15*time.Second)
		if !until(10*time.Second, func() bool { return listeners(ctx, s) > 0 }) {
			return "no LISTEN herald_queue session after 10 s", false
		}
		time.Sleep(300 * time.Millisecond) // idle
		t0 := time.Now()
		s.enqueue(ctx, "/ok", 1, "")
		woke := until(pollSeconds*time.Second, func() bool { return s.count(ctx, `status = 'sent'`) == 1 })
		wake := time.Since(t0)
		// Notifications lost: the suite ends the runner's LISTEN session.
		s.db.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND query ILIKE 'LISTEN%herald_queue%'`)
		time.Sleep(200 * time.Millisecond)
		t1 := time.Now()
		s.enqueue(ctx, "/ok", 1, "")
		polled := until((pollSeconds+3)*time.Second, func() bool { return s.count(ctx, `status = 'sent'`) == 2 })
		return fmt.Sprintf("delivered %v after the commit while idle (poll %d s); %v after the LISTEN session was killed",
			wake.Round(10*time.Millisecond), pollSeconds, time.Since(t1).Round(10*time.Millisecond)), woke && wake < 2*time.Second && polled
	}},
	{"SIGTERM: finish, report, exit 0", func(ctx context.Context, s *suite) (string, bool) {
		s.enqueue(ctx, "/slow?ms=1500", 4, "")
		s.enqueue(ctx, "/ok", 200, "")
		p, err := s.start()
		if err != nil {
			return err.Error(), false
		}
		until(10*time.Second, func() bool { return len(s.recv.arrivals()) > 0 })
		err, inTime := p.stop(syscall.SIGTERM, 20*time.Second)
		processing := s.count(ctx, `status = 'processing'`)
		unreported := 0
		for id := range s.recv.arrivals() {
			var n int
			s.db.QueryRow(ctx, `SELECT count(*) FROM herald.messages WHERE 'msg_' || id = $1 AND status <> 'sent'`, id).Scan(&n)
			unreported += n
		}
		return fmt.Sprintf("exit %v (in time: %v); %d message(s) left processing; %d delivered but not reported sent", err, inTime, processing, unreported),
			err == nil && inTime && processing == 0 && unreported == 0
	}},
	{"kill -9: nothing lost", func(ctx context.Context, s *suite) (string, bool) {
		const n = 400
		s.enqueue(ctx, "/slow?ms=20", n, "")
		p, err := s.start()
		if err != nil {
			return err.Error(), false
		}
		until(30*time.Second, func() bool { return len(s.recv.arrivals()) >= n/4 })
		p.cmd.Process.Kill()
		<-p.done
		inFlight := s.count(ctx, `status = 'processing'`)
		s.db.Exec(ctx, `UPDATE herald.messages SET lease_expires_at = now() - interval '1 second' WHERE status = 'processing'`)
		q, err := s.start()
		if err != nil {
			return err.Error(), false
		}
		defer q.stop(syscall.SIGTERM, 15*time.Second)
		done := s.settled(ctx, 60*time.Second)
		dup := 0
		for _, t := range s.recv.arrivals() {
			dup += len(t) - 1
		}
		sent := s.count(ctx, `status = 'sent'`)
		return fmt.Sprintf("%d of %d sent after a restart; %d duplicate deliveries, %d in flight at the kill", sent, n, dup, inFlight),
			done && sent == n && dup <= inFlight
	}},
	{"fencing: a lost lease changes nothing", func(ctx context.Context, s *suite) (string, bool) {
		s.enqueue(ctx, "/hold", 1, "")
		p, err := s.start()
		if err != nil {
			return err.Error(), false
		}
		defer p.stop(syscall.SIGTERM, 15*time.Second)
		select {
		case <-s.recv.held:
		case <-time.After(10 * time.Second):
			return "the send never started", false
		}
		// The suite takes the message over — expire, reap, claim, in one transaction
		// so that the runner cannot claim it back first — and completes it.
		id := firstID(ctx, s)
		var token int64
		err = pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `UPDATE herald.messages SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, id); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `SELECT herald.reap_stale()`); err != nil {
				return err
			}
			return tx.QueryRow(ctx, `SELECT lease_token FROM herald.claim_batch('conformance-suite', 1)`).Scan(&token)
		})
		if err != nil {
			return "the suite could not take the message over: " + err.Error(), false
		}
		s.db.Exec(ctx, `SELECT herald.complete($1::bigint, $2::bigint, 'suite-receipt')`, id, token)
		before := s.recv.answers()
		s.recv.release()
		until(5*time.Second, func() bool { return s.recv.answers() > before })
		time.Sleep(time.Second) // the runner reports after the answer; a black box gives no other signal
		var receipt string
		s.db.QueryRow(ctx, `SELECT coalesce(provider_message_id, '') FROM herald.messages WHERE id = $1`, id).Scan(&receipt)
		return fmt.Sprintf("receipt after the old owner finished: %q", receipt), receipt == "suite-receipt"
	}},
	{"priorities, as SQL hands them out", func(ctx context.Context, s *suite) (string, bool) {
		// One send at a time, so arrivals show the order the runner sent in.
		if _, err := s.db.Exec(ctx, `SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', $1::text,
			'recipient', $2::text, 'payload', '{}'::jsonb, 'priority', p) ORDER BY g)
			FROM generate_series(1, 6) g, LATERAL (SELECT CASE WHEN g <= 3 THEN 50 ELSE 0 END AS p) x))`,
			channel, s.recv.base+"/order"); err != nil {
			return err.Error(), false
		}
		p, err := s.start("HERALD_CONFORMANCE_CONCURRENCY=1")
		if err != nil {
			return err.Error(), false
		}
		defer p.stop(syscall.SIGTERM, 15*time.Second)
		if !s.settled(ctx, 30*time.Second) {
			return "not settled after 30 s", false
		}
		s.recv.mu.Lock()
		order := append([]string(nil), s.recv.order...)
		s.recv.mu.Unlock()
		var want []string
		rows, _ := s.db.Query(ctx, `SELECT 'msg_' || id FROM herald.messages ORDER BY priority, run_at, id`)
		for rows.Next() {
			var id string
			rows.Scan(&id)
			want = append(want, id)
		}
		rows.Close()
		return fmt.Sprintf("arrivals %v, SQL's order %v (concurrency 1)", order, want), strings.Join(order, " ") == strings.Join(want, " ")
	}},
	{"per-endpoint secrets", func(ctx context.Context, s *suite) (string, bool) {
		// Each receiver verifies with its own URL's secret only (derived from the
		// channel's): a request signed with the channel secret alone is refused.
		s.recv.mu.Lock()
		s.recv.perEndpoint = true
		s.recv.mu.Unlock()
		for _, path := range []string{"/tenant-a", "/tenant-b"} {
			if err := s.enqueue(ctx, path, 2, ""); err != nil {
				return err.Error(), false
			}
		}
		p, err := s.start("HERALD_CONFORMANCE_PER_ENDPOINT=true")
		if err != nil {
			return err.Error(), false
		}
		defer p.stop(syscall.SIGTERM, 15*time.Second)
		settled := s.settled(ctx, 20*time.Second)
		s.recv.mu.Lock()
		seen, bad := len(s.recv.seen), s.recv.bad
		s.recv.mu.Unlock()
		return fmt.Sprintf("%d of 4 verified with their URL's own secret, %d refused", seen, bad), settled && seen == 4 && bad == 0
	}},
	{"status callbacks", func(ctx context.Context, s *suite) (string, bool) {
		// The webhook channel carries the callbacks alone (another producer on it could
		// forge them); the messages they report are e-mails the suite sends and fails
		// itself, on a channel the runner does not serve.
		var sent, dead int64
		if _, err := s.db.Exec(ctx, `UPDATE herald.channels SET producers = '{herald:callbacks}' WHERE name = $1`, channel); err != nil {
			return err.Error(), false
		}
		if _, err := s.db.Exec(ctx, `INSERT INTO herald.producers (producer, callback_url, callback_channel, callback_events)
			VALUES (current_user, $1, $2, '{sent,dead}')`, s.recv.base+"/callback", channel); err != nil {
			return err.Error(), false
		}
		defer s.db.Exec(ctx, `DELETE FROM herald.producers; UPDATE herald.channels SET producers = NULL`)
		err := s.db.QueryRow(ctx, `SELECT herald.enqueue('email', 'ana@example.com', '{"subject":"s","text":"t"}'),
			herald.enqueue('email', 'bo@example.com', '{"subject":"s","text":"t"}')`).Scan(&sent, &dead)
		if err != nil {
			return err.Error(), false
		}
		if _, err := s.db.Exec(ctx, `SELECT CASE WHEN c.id = $1 THEN herald.complete(c.id, c.lease_token)
			ELSE herald.fail(c.id, c.lease_token, '550 5.1.1 no such user', 'permanent') END
			FROM herald.claim_batch('suite', 2, channels => ARRAY['email']) AS c`, sent); err != nil {
			return err.Error(), false
		}
		p, err := s.start()
		if err != nil {
			return err.Error(), false
		}
		defer p.stop(syscall.SIGTERM, 15*time.Second)
		got := func() []string {
			s.recv.mu.Lock()
			defer s.recv.mu.Unlock()
			return append([]string(nil), s.recv.callbacks...)
		}
		until(30*time.Second, func() bool { return len(got()) >= 2 })
		want := []string{fmt.Sprintf("sent %d", sent), fmt.Sprintf("dead %d", dead)}
		cbs := got()
		ok := len(cbs) == 2 && (fmt.Sprint(cbs) == fmt.Sprint(want) || fmt.Sprint(cbs) == fmt.Sprint([]string{want[1], want[0]}))
		return fmt.Sprintf("callbacks %v (want %v, in either order)", cbs, want), ok
	}},
	{"ordering key: one at a time, in order", func(ctx context.Context, s *suite) (string, bool) {
		s.enqueue(ctx, "/order", 6, "k")
		p, err := s.start()
		if err != nil {
			return err.Error(), false
		}
		defer p.stop(syscall.SIGTERM, 15*time.Second)
		if !s.settled(ctx, 30*time.Second) {
			return "not settled after 30 s", false
		}
		s.recv.mu.Lock()
		order, most := append([]string(nil), s.recv.order...), s.recv.orderMax
		s.recv.mu.Unlock()
		inOrder := true
		for i := 1; i < len(order); i++ {
			var a, b int64
			fmt.Sscanf(order[i-1], "msg_%d", &a)
			fmt.Sscanf(order[i], "msg_%d", &b)
			inOrder = inOrder && a < b
		}
		return fmt.Sprintf("arrivals %v, at most %d at once", order, most), len(order) == 6 && inOrder && most == 1
	}},
}

func firstID(ctx context.Context, s *suite) int64 {
	var id int64
	s.db.QueryRow(ctx, `SELECT min(id) FROM herald.messages`).Scan(&id)
	return id
}

func statusOf(ctx context.Context, s *suite) string {
	var st string
	s.db.QueryRow(ctx, `SELECT status FROM herald.messages ORDER BY id LIMIT 1`).Scan(&st)
	return st
}

func listeners(ctx context.Context, s *suite) int {
	var n int
	s.db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%herald_queue%'`).Scan(&n)
	return n
}
