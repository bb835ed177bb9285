package tests

import (
	"maps"
	"sync"
	"testing"
	"time"
)

// A channel's rate is a token bucket in SQL: claim_batch gives out its burst at once,
// then rate per second, whatever the batch size asked; other channels are not held
// back; a channel without a rate is not limited.
func TestChannelRateLimitsClaims(t *testing.T) {
	_, pool := setup(t)
	mustExec(t, pool, `UPDATE herald.channels SET rate = 10, burst = 5 WHERE name = 'email'`)
	enqueueBatch(t, pool, "email", 50, t0)
	enqueueBatch(t, pool, "sms", 20, t0)
	count := func(at time.Duration, channel string) int {
		n := 0
		for _, c := range claim(t, pool, 100, t0.Add(at)) {
			if c.Channel == channel {
				n++
			}
		}
		return n
	}
	if n := count(0, "email"); n != 5 {
		t.Fatalf("first claim: %d e-mails, want the burst of 5", n)
	}
	if n := scalar[int64](t, pool, `SELECT count(*) FROM herald.messages WHERE channel = 'sms' AND status = 'processing'`); n != 20 {
		t.Fatalf("the unlimited sms channel gave %d of 20", n)
	}
	for _, c := range []struct {
		at   time.Duration
		want int
	}{{0, 0}, {300 * time.Millisecond, 3}, {time.Second, 5}, {time.Hour, 5}, {time.Hour + 100*time.Millisecond, 1}} {
		if n := count(c.at, "email"); n != c.want {
			t.Fatalf("claim at t0+%v: %d e-mails, want %d", c.at, n, c.want)
		}
	}
}

// A rate-limited channel with a backlog larger than a batch does not hold back the
// others: the claim takes the channel's tokens' worth and fills the rest of the batch
// from the other channels (it once read the batch in (priority, run_at, id) order,
// kept the burst of e-mails and returned, so the SMS queued behind the e-mails waited
// for the whole e-mail backlog).
func TestRateLimitedBacklogDoesNotHoldBackOthers(t *testing.T) {
	_, pool := setup(t)
	mustExec(t, pool, `UPDATE herald.channels SET rate = 10, burst = 5 WHERE name = 'email'`)
	enqueueBatch(t, pool, "email", 300, t0.Add(-time.Minute))
	enqueueBatch(t, pool, "sms", 20, t0)
	for i, want := range []map[string]int{{"email": 5, "sms": 20}, {}, {"email": 1}} {
		got := map[string]int{}
		for _, c := range claim(t, pool, 100, t0.Add(time.Duration(i)*50*time.Millisecond)) {
			got[c.Channel]++
		}
		if !maps.Equal(got, want) {
			t.Fatalf("claim %d took %v, want %v", i+1, got, want)
		}
	}
}

// Many runners together never exceed a channel's rate: four connections claim as
// fast as they can for a second and a half; what they got in all is at most the
// burst plus rate × the time between the first and the last claim (the database's
// clock, the only one the limit reads).
func TestChannelRateHoldsAcrossRunners(t *testing.T) {
	ctx, pool := setup(t)
	mustExec(t, pool, `UPDATE herald.channels SET rate = 40, burst = 10 WHERE name = 'email'`)
	mustExec(t, pool, `SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'email',
		'recipient', 'u' || g || '@example.com', 'payload', '{"subject":"s","text":"t"}'::jsonb)) FROM generate_series(1, 1000) g))`)
	var mu sync.Mutex
	total := 0
	var first, last time.Time
	var wg sync.WaitGroup
	stop := time.Now().Add(1500 * time.Millisecond)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				var n int
				var at time.Time
				if err := pool.QueryRow(ctx, `SELECT count(*), now() FROM herald.claim_batch('runner', 100)`).Scan(&n, &at); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				total += n
				if first.IsZero() || at.Before(first) {
					first = at
				}
				if at.After(last) {
					last = at
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	limit := 10 + 40*last.Sub(first).Seconds()
	if float64(total) > limit+1 {
		t.Fatalf("%d claimed in %v by four runners; the rate allows %.1f", total, last.Sub(first), limit)
	}
	if total < 20 {
		t.Fatalf("only %d claimed in %v: the limit starves", total, last.Sub(first))
	}
	t.Logf("%d claimed in %v (limit %.1f)", total, last.Sub(first), limit)
}
