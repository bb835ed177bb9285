package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// callbacks: what status callbacks cost the database. A producer with a
// callback_url has o.callbackMessages messages enqueued and sent (an accepted and a
// sent event each). herald = herald.dispatch_callbacks(1000) until it has read the
// log to its end (every sent event becomes a webhook enqueued on the callbacks
// channel, whose own accepted event it then reads and skips); baseline = a consumer
// group reading the same log with herald.log_read(1000) and herald.log_ack, one
// transaction per batch: the reading any consumer of the log pays. Both are events
// read per second; the difference is what turning events into callbacks costs.
// Each round sets up afresh; rounds alternate which side runs first.
func callbacks(ctx context.Context, db *database, o options) ([]row, error) {
	h, b := result{name: "dispatch_callbacks"}, result{name: "log_read + log_ack"}
	var sent result
	for round := range o.rounds {
		if err := callbacksSetup(ctx, db, o.callbackMessages); err != nil {
			return nil, err
		}
		sides := []func() error{
			func() error {
				events, made, d, err := dispatchAll(ctx, db)
				h.rates = append(h.rates, float64(events)/d.Seconds())
				sent.rates = append(sent.rates, float64(made)/d.Seconds())
				return err
			},
			func() error {
				events, d, err := readAll(ctx, db)
				b.rates = append(b.rates, float64(events)/d.Seconds())
				return err
			},
		}
		if err := inTurn(round, sides[0], sides[1]); err != nil {
			return nil, err
		}
		fmt.Printf("  callbacks round %d: dispatch %.0f events/s (%.0f callbacks/s), log_read %.0f events/s\n",
			round+1, h.rates[round], sent.rates[round], b.rates[round])
	}
	return []row{
		ratioRow("callbacks: dispatch_callbacks vs log_read + log_ack of the same log", "events/s", h, b, 0),
		absRow("callbacks: status callbacks enqueued by dispatch_callbacks", "callbacks/s", sent.median(), 0),
	}, nil
}

// callbacksSetup empties the queue and the log, gives the session's role a
// callback_url (which starts the callbacks' group at the log's end), creates the
// baseline's group there too, and stores and completes n e-mails in batches of 1,000.
func callbacksSetup(ctx context.Context, db *database, n int) error {
	if err := db.reset(ctx); err != nil {
		return err
	}
	for _, q := range []string{
		`DELETE FROM herald.producers`,
		`DELETE FROM herald.consumer_groups`,
		`INSERT INTO herald.channels (name, kind, producers) VALUES ('callbacks', 'webhook', '{herald:callbacks}') ON CONFLICT (name) DO NOTHING`,
		`INSERT INTO herald.producers (producer, callback_url, callback_channel)
		 VALUES (current_user, 'https://shop.example.com/herald-events', 'callbacks')`,
		`SELECT herald.create_consumer_group('bench')`,
	} {
		if _, err := db.pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("callbacks setup: %w", err)
		}
	}
	for done := 0; done < n; done += 1000 {
		k := min(1000, n-done)
		if _, err := db.pool.Exec(ctx, `SELECT herald.enqueue_many(array_fill('email'::text, ARRAY[$1::int]),
			array_fill('ana@example.com'::text, ARRAY[$1::int]), array_fill($2::jsonb, ARRAY[$1::int]))`, k, payload); err != nil {
			return err
		}
	}
	return db.sendAll(ctx)
}

// dispatchAll calls herald.dispatch_callbacks(1000) until it reads less than 1,000.
func dispatchAll(ctx context.Context, db *database) (events, made int, d time.Duration, err error) {
	t0 := time.Now()
	for {
		var e, c, s int
		if err := db.pool.QueryRow(ctx, `SELECT events, callbacks, set_aside FROM herald.dispatch_callbacks(1000)`).Scan(&e, &c, &s); err != nil {
			return events, made, time.Since(t0), err
		}
		if s > 0 {
			return events, made, time.Since(t0), fmt.Errorf("callbacks: %d set aside", s)
		}
		events, made = events+e, made+c
		if e < 1000 {
			return events, made, time.Since(t0), nil
		}
	}
}

// readAll reads group bench to the log's end, 1,000 events per transaction.
func readAll(ctx context.Context, db *database) (events int, d time.Duration, err error) {
	t0 := time.Now()
	for {
		var n int
		err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
			var last *int64
			if err := tx.QueryRow(ctx, `SELECT count(*), max("offset") FROM herald.log_read('bench', 0, 1000)`).Scan(&n, &last); err != nil {
				return err
			}
			if last == nil {
				return nil
			}
			_, err := tx.Exec(ctx, `SELECT herald.log_ack('bench', 0, $1)`, *last)
			return err
		})
		if err != nil {
			return events, time.Since(t0), err
		}
		events += n
		if n < 1000 {
			return events, time.Since(t0), nil
		}
	}
}
