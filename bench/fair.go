package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
)

// fair: what one producer's backlog costs another producer's message on the same
// channel and priority. One runner sends e-mail to a sink; each round, the login role
// bench_newsletter enqueues o.fairBacklog e-mails in one transaction, then
// bench_reset enqueues one. Figures: how long after its commit the reset is sent,
// and how long the runner takes to send the whole backlog — what a queue that serves
// producers first come, first served makes the reset wait. Medians of o.rounds.
func fair(ctx context.Context, db *database, o options) ([]row, error) {
	bin, err := buildHerald(ctx)
	if err != nil {
		return nil, err
	}
	if err := db.reset(ctx); err != nil {
		return nil, err
	}
	urls := map[string]string{}
	for _, role := range []string{"bench_newsletter", "bench_reset"} {
		if _, err := db.pool.Exec(ctx, fmt.Sprintf(`DO $$ BEGIN CREATE ROLE %s LOGIN PASSWORD 'bench';
			EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`, role)); err != nil {
			return nil, err
		}
		if _, err := db.pool.Exec(ctx, `GRANT herald_producer TO `+role); err != nil {
			return nil, err
		}
		u, err := url.Parse(db.url)
		if err != nil {
			return nil, err
		}
		u.User = url.UserPassword(role, "bench")
		urls[role] = u.String()
	}
	sink := filepath.Join(os.TempDir(), "herald-bench-fair.jsonl")
	os.Remove(sink)
	defer os.Remove(sink)
	p, err := startRunner(bin, db.url, "HERALD_SENDER_EMAIL=sink:"+sink, "HERALD_WORKER=fair")
	if err != nil {
		return nil, err
	}
	defer p.stop()
	newsletter, err := pgx.Connect(ctx, urls["bench_newsletter"])
	if err != nil {
		return nil, err
	}
	defer newsletter.Close(ctx)
	reset, err := pgx.Connect(ctx, urls["bench_reset"])
	if err != nil {
		return nil, err
	}
	defer reset.Close(ctx)

	// sentBy polls until no message of producer is unsent and returns when that was seen.
	sentBy := func(producer string) (time.Time, error) {
		for {
			var left int64
			if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM herald.messages WHERE producer = $1 AND status <> 'sent'`,
				producer).Scan(&left); err != nil {
				return time.Time{}, err
			}
			if left == 0 {
				return time.Now(), nil
			}
			time.Sleep(time.Millisecond)
		}
	}
	var waits, backlogs []float64
	for round := range o.rounds {
		tx, err := newsletter.Begin(ctx)
		if err != nil {
			return nil, err
		}
		for left := o.fairBacklog; left > 0; left -= 10000 {
			if _, err := tx.Exec(ctx, `SELECT herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'email',
				'recipient', 'u' || g || '@example.com', 'payload', '{"subject":"News","text":"t"}'::jsonb))
				FROM generate_series(1, $1::int) g))`, min(left, 10000)); err != nil {
				return nil, err
			}
		}
		if err := tx.Commit(ctx); err != nil {
			return nil, err
		}
		start := time.Now()
		if _, err := reset.Exec(ctx, `SELECT herald.enqueue('email', 'reset@example.com', '{"subject":"Reset","text":"t"}')`); err != nil {
			return nil, err
		}
		committed := time.Now()
		resetSent, err := sentBy("bench_reset")
		if err != nil {
			return nil, err
		}
		backlogSent, err := sentBy("bench_newsletter")
		if err != nil {
			return nil, err
		}
		waits = append(waits, float64(resetSent.Sub(committed).Microseconds())/1000)
		backlogs = append(backlogs, float64(backlogSent.Sub(start).Microseconds())/1000)
		fmt.Printf("  fair round %d: the reset sent %.1f ms after its commit; the backlog of %d in %.0f ms\n",
			round+1, waits[round], o.fairBacklog, backlogs[round])
	}
	return []row{
		absRow(fmt.Sprintf("fair: one producer's message behind another's %d on the same channel, commit → sent", o.fairBacklog),
			"ms", result{rates: waits}.median(), 0),
		absRow(fmt.Sprintf("fair: the runner sends that backlog of %d (a first-come queue's wait for the message)", o.fairBacklog),
			"ms", result{rates: backlogs}.median(), 0),
	}, nil
}
