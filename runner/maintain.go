package runner

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// reaperLockKey is the advisory lock (pg_try_advisory_xact_lock) that lets one runner
// at a time call herald.reap_stale.
const reaperLockKey int64 = 0x6865_7261_6c64_01 // "herald" 1

// maintain runs the periodic work: reap_stale (one runner at a time), log_sequence
// (so the ordered log moves on when no consumer reads), dispatch_callbacks and
// refresh_statistics (so that no connection keeps a plan made while the tables were
// small) every poll interval, the queue-depth and log-lag samples, the probe of
// paused channels and count_producers.
func (r *Runner) maintain(ctx context.Context) {
	reap := time.NewTicker(r.cfg.ReapInterval)
	defer reap.Stop()
	seq := time.NewTicker(r.cfg.PollInterval)
	defer seq.Stop()
	stats := time.NewTicker(r.cfg.StatsInterval)
	defer stats.Stop()
	probe := time.NewTicker(r.cfg.ProbeInterval)
	defer probe.Stop()
	quota := time.NewTicker(r.cfg.QuotaInterval)
	defer quota.Stop()
	r.sampleQueueDepth(ctx)
	r.sampleLogLag(ctx)
	r.sampleCode(ctx)
	r.probe(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-reap.C:
			r.reap(ctx)
		case <-seq.C:
			if _, err := r.pool.Exec(ctx, `SELECT herald.log_sequence()`); err != nil && ctx.Err() == nil {
				r.log.Warn("log_sequence failed", "err", err)
			}
			r.dispatchCallbacks(ctx)
			r.refreshStatistics(ctx)
		case <-stats.C:
			r.sampleQueueDepth(ctx)
			r.sampleLogLag(ctx)
			r.sampleCode(ctx)
		case <-probe.C:
			r.probe(ctx)
		case <-quota.C:
			r.countProducers(ctx)
		}
	}
}

// reap calls herald.reap_stale while each call returns a full batch (10,000, the
// function's contract), each call in a transaction of its own that holds the reaper
// lock: what a call ends is visible to claims at once (they stop reading messages
// already expired), no transaction holds the row locks of every batch, and a failed
// call undoes only itself.
func (r *Runner) reap(ctx context.Context) {
	total := 0
	for {
		n, mine := r.reapOnce(ctx)
		total += n
		if !mine || n < 10000 {
			break
		}
	}
	if total > 0 {
		r.m.reaped.Add(float64(total))
		r.log.Info("reaped expired leases", "messages", total)
	}
}

// reapOnce is one herald.reap_stale call under the reaper lock; mine is false when
// another runner holds the lock or the call failed.
func (r *Runner) reapOnce(ctx context.Context) (n int, mine bool) {
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return 0, false
	}
	defer tx.Rollback(context.Background())
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, reaperLockKey).Scan(&mine); err != nil || !mine {
		return 0, false
	}
	if err := tx.QueryRow(ctx, `SELECT herald.reap_stale()`).Scan(&n); err != nil {
		if ctx.Err() == nil {
			r.log.Warn("reap_stale failed", "err", err)
		}
		return 0, false
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, false
	}
	return n, true
}

// dispatchCallbacks calls herald.dispatch_callbacks until it reads less than a full
// batch: the status callbacks of producers with a callback_url go into the queue as
// webhooks. Each call is its own transaction, so a failure undoes only itself and is
// tried again at the next poll; a call that finds the group held by another runner
// reads nothing.
func (r *Runner) dispatchCallbacks(ctx context.Context) {
	const batch = 1000
	for {
		var events, callbacks, setAside int
		err := r.pool.QueryRow(ctx, `SELECT events, callbacks, set_aside FROM herald.dispatch_callbacks($1)`, batch).
			Scan(&events, &callbacks, &setAside)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("dispatch_callbacks failed", "err", err)
			}
			return
		}
		r.m.callbacks.Add(float64(callbacks))
		if setAside > 0 {
			r.m.setAside.Add(float64(setAside))
			r.log.Warn("status callbacks refused and set aside (herald.consumer_dead_letters, group herald.callbacks)", "events", setAside)
		}
		if events < batch {
			return
		}
	}
}

// refreshStatistics calls herald.refresh_statistics and logs what it analyzed.
func (r *Runner) refreshStatistics(ctx context.Context) {
	var analyzed []string
	if err := r.pool.QueryRow(ctx, `SELECT herald.refresh_statistics()`).Scan(&analyzed); err != nil {
		if ctx.Err() == nil {
			r.log.Warn("refresh_statistics failed", "err", err)
		}
		return
	}
	if len(analyzed) > 0 {
		r.log.Info("analyzed tables that outgrew their statistics", "tables", analyzed)
	}
}

// countProducers calls herald.count_producers, which counts the backlogs and recent
// bounces and complaints of the bounded producers and suspends those over their
// rates (one runner at a time; the others get no row), and reports those at their
// max_pending and those suspended in log lines and gauges.
func (r *Runner) countProducers(ctx context.Context) {
	var over, suspended int32
	err := r.pool.QueryRow(ctx, `SELECT at_max_pending, suspended FROM herald.count_producers()`).Scan(&over, &suspended)
	if errors.Is(err, pgx.ErrNoRows) {
		return // another runner is counting
	}
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("count_producers failed", "err", err)
		}
		return
	}
	r.m.atMaxPending.Set(float64(over))
	r.m.suspended.Set(float64(suspended))
	if over > 0 {
		r.log.Warn("producers at their max_pending: their enqueues are refused", "producers", over)
	}
	if suspended > 0 {
		r.log.Warn("producers suspended for their bounce or complaint rate: their enqueues are refused and their messages wait (herald.producers.suspended_reason)",
			"producers", suspended)
	}
}

// sampleLogLag copies each consumer group's lag (its furthest-behind partition,
// from herald.consumer_lag) into the log-lag gauge: the status callbacks' group
// among them, so callbacks that fall behind show.
func (r *Runner) sampleLogLag(ctx context.Context) {
	rows, err := r.pool.Query(ctx, `SELECT group_name, max(lag) FROM herald.consumer_lag GROUP BY group_name`)
	if err != nil {
		return
	}
	defer rows.Close()
	r.m.logLag.Reset()
	for rows.Next() {
		var group string
		var lag int64
		if rows.Scan(&group, &lag) == nil {
			r.m.logLag.WithLabelValues(group).Set(float64(lag))
		}
	}
}

// sampleQueueDepth copies herald.queue_depth (due, scheduled, held and processing
// per channel, read through the partial indexes) into the queue-depth gauge, and
// herald.quiet_channels() into the quiet gauge (1 for each channel in quiet hours or
// days that end, 0 for the others), so that a backlog alert can leave a quiet channel
// alone. A channel held because the server does not know its quiet_zone (quiet_until
// NULL) counts as not quiet, and is logged as an error when first seen so.
func (r *Runner) sampleQueueDepth(ctx context.Context) {
	rows, err := r.pool.Query(ctx, `SELECT d.channel, d.status, d.count, q.quiet_until IS NOT NULL, c.quiet_zone
		FROM herald.queue_depth d LEFT JOIN herald.quiet_channels() q ON q.channel = d.channel
		LEFT JOIN herald.channels c ON c.name = q.channel AND q.quiet_until IS NULL`)
	if err != nil {
		return
	}
	defer rows.Close()
	r.m.queueDepth.Reset()
	r.m.quiet.Reset()
	zoneless := map[string]string{}
	for rows.Next() {
		var ch, st string
		var n int64
		var quiet bool
		var zone *string
		if rows.Scan(&ch, &st, &n, &quiet, &zone) != nil {
			continue
		}
		r.m.queueDepth.WithLabelValues(ch, st).Set(float64(n))
		v := 0.0
		if quiet {
			v = 1
		}
		r.m.quiet.WithLabelValues(ch).Set(v)
		if zone != nil {
			zoneless[ch] = *zone
		}
	}
	if rows.Err() != nil {
		return
	}
	for ch, zone := range zoneless {
		if _, known := r.zoneless[ch]; !known {
			r.log.Error("channel held: its quiet_zone is not a time zone the database server knows, so its quiet hours cannot be told; set one it has (herald.channels.quiet_zone) or install the zone data",
				"channel", ch, "quiet_zone", zone)
		}
	}
	for ch := range r.zoneless {
		if _, still := zoneless[ch]; !still {
			r.log.Info("channel no longer held for its quiet_zone", "channel", ch)
		}
	}
	r.zoneless = zoneless
}

// sampleCode compares herald.installed_code with Config.CodeHash (the herald_sql_code
// matches gauge): a runner and SQL code of different builds, as in a rolling upgrade
// half done, may not agree on arguments or results. It warns when they start to
// differ and says when they agree again. Code installed by hand (no hash) counts as
// matching: it cannot be told.
func (r *Runner) sampleCode(ctx context.Context) {
	if r.cfg.CodeHash == "" {
		return
	}
	var installed *string
	if err := r.pool.QueryRow(ctx, `SELECT hash FROM herald.installed_code`).Scan(&installed); err != nil {
		return
	}
	other := installed != nil && *installed != r.cfg.CodeHash
	switch {
	case other && !r.otherCode:
		r.log.Warn("the database holds herald SQL code of another build: run herald migrate with this binary, or run the binary that installed it",
			"installed", *installed, "this_binary", r.cfg.CodeHash)
	case !other && r.otherCode:
		r.log.Info("the database's herald SQL code is this binary's again")
	}
	r.otherCode = other
	if other {
		r.m.codeMatches.Set(0)
	} else {
		r.m.codeMatches.Set(1)
	}
}
