package main

import (
	"context"
	"fmt"
	"time"
)

// purge: what retention costs once it has caught up, as the rows kept grow.
// o.purgeMessages sent e-mails finished over 40 days, stored in random physical order
// (as a table whose freed space new rows fill looks), 1 % of the first 10 days' still
// queued (reminders scheduled far ahead); herald.purge('30 days') first catches up
// (the first 10 days' rows), then each round asks it for the rows that became old
// enough in the next 30 minutes (about 1,000 at this volume), in a transaction rolled
// back; baseline = the read a purge bounded by time alone makes in that state (the
// oldest finished rows up to the batch, by a scan of the table: what purge did before
// it bounded its read by id). Rates are calls per second.
func purge(ctx context.Context, db *database, o options) ([]row, error) {
	if err := db.reset(ctx); err != nil {
		return nil, err
	}
	n := o.purgeMessages
	fmt.Printf("  purge: storing %d messages\n", n)
	if _, err := db.pool.Exec(ctx, `ALTER TABLE herald.messages DISABLE TRIGGER USER`); err != nil {
		return nil, err
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO herald.messages (id, producer, channel, recipient, payload, run_at, status,
			attempts, max_attempts, created_at, expires_at, finished_at, provider_message_id)
		SELECT i, 'bench', 'email', 'user' || (i % 50000) || '@example.com', jsonb_build_object('subject', 'Receipt ' || i, 'text', repeat('x', 200)),
		       t, 'sent', 1, 5, t, t + interval '1 day', t + interval '1 second', 'sg-' || i
		FROM (SELECT i, timestamptz '2030-01-01' + i * (interval '40 days' / $1) AS t FROM generate_series(1, $1::int) i ORDER BY random()) s`, n); err != nil {
		return nil, err
	}
	if _, err := db.pool.Exec(ctx, `ALTER TABLE herald.messages ENABLE TRIGGER USER`); err != nil {
		return nil, err
	}
	if _, err := db.pool.Exec(ctx, `UPDATE herald.messages SET status = 'queued', finished_at = NULL, attempts = 0,
		run_at = '2030-03-15', provider_message_id = NULL, expires_at = '2031-01-01'
		WHERE id % 100 = 0 AND created_at < '2030-01-11'`); err != nil {
		return nil, err
	}
	if _, err := db.pool.Exec(ctx, `VACUUM ANALYZE herald.messages`); err != nil {
		return nil, err
	}
	start, deleted := time.Now(), int64(0)
	for {
		var k int64
		if err := db.pool.QueryRow(ctx, `SELECT herald.purge('30 days', now => '2030-02-10', batch_size => 10000)`).Scan(&k); err != nil {
			return nil, err
		}
		deleted += k
		if k < 10000 {
			break
		}
	}
	catchUp := float64(deleted) / time.Since(start).Seconds()
	if _, err := db.pool.Exec(ctx, `VACUUM ANALYZE herald.messages`); err != nil { // as autovacuum would, after so many deletions
		return nil, err
	}
	h, b := result{name: "herald.purge"}, result{name: "read bounded by time alone"}
	for round := range o.rounds {
		at := time.Date(2030, 2, 10, 0, 30*(round+1), 0, 0, time.UTC)
		sides := []func() error{
			func() error {
				r, err := rolledBack(ctx, db, `SELECT herald.purge('30 days', now => $1, batch_size => 10000)`, at)
				h.rates = append(h.rates, r)
				return err
			},
			func() error {
				r, err := rolledBack(ctx, db, `SELECT count(*) FROM (SELECT ctid FROM herald.messages WHERE finished_at < $1::timestamptz - interval '30 days' LIMIT 10000) s`, at)
				b.rates = append(b.rates, r)
				return err
			},
		}
		if err := inTurn(round, sides[0], sides[1]); err != nil {
			return nil, err
		}
		fmt.Printf("  purge round %d: herald.purge %.1f ms, read bounded by time alone %.1f ms\n", round+1, 1000/h.rates[round], 1000/b.rates[round])
	}
	return []row{
		absRow(fmt.Sprintf("purge: catching up, %d of %d messages old enough, batches of 10,000", deleted, n), "messages/s", catchUp, 0),
		ratioRow(fmt.Sprintf("purge: a call once caught up (about 1,000 old enough) vs the read bounded by time alone, %d messages kept", n),
			"calls/s", h, b, 0),
	}, nil
}
