package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// forget: what erasing one person costs as the tables grow. o.forgetMessages e-mails
// to distinct recipients, and 10 to the person, are stored, sent (an accepted and a
// sent event each) and sequenced; herald = herald.forget('email', …), which scans
// herald.messages and herald.log_statements; baseline = the bare DELETE of the
// person's messages by recipient, one scan of herald.messages. Each call runs in a
// transaction that is rolled back, so every round erases the same data; rounds
// alternate which runs first. Rates are calls per second.
func forget(ctx context.Context, db *database, o options) ([]row, error) {
	if err := forgetSetup(ctx, db, o.forgetMessages); err != nil {
		return nil, err
	}
	h, b := result{name: "herald.forget"}, result{name: "DELETE by recipient"}
	for round := range o.rounds {
		sides := []func() error{
			func() error {
				r, err := rolledBack(ctx, db, `SELECT * FROM herald.forget('email', 'ana@example.com')`)
				h.rates = append(h.rates, r)
				return err
			},
			func() error {
				r, err := rolledBack(ctx, db, `DELETE FROM herald.messages WHERE lower(recipient) = 'ana@example.com'`)
				b.rates = append(b.rates, r)
				return err
			},
		}
		if err := inTurn(round, sides[0], sides[1]); err != nil {
			return nil, err
		}
		fmt.Printf("  forget round %d: herald.forget %.0f ms, DELETE by recipient %.0f ms\n",
			round+1, 1000/h.rates[round], 1000/b.rates[round])
	}
	return []row{ratioRow(fmt.Sprintf("forget: herald.forget vs DELETE by recipient, %d messages and their log", o.forgetMessages),
		"calls/s", h, b, 0)}, nil
}

// errRollback ends a timed transaction without keeping what it did.
var errRollback = fmt.Errorf("rolled back")

// rolledBack runs sql with args in a transaction that it rolls back, and returns how
// many such calls a second its time makes.
func rolledBack(ctx context.Context, db *database, sql string, args ...any) (float64, error) {
	var d time.Duration
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		t0 := time.Now()
		_, err := tx.Exec(ctx, sql, args...)
		d = time.Since(t0)
		if err == nil {
			err = errRollback
		}
		return err
	})
	if err != errRollback {
		return 0, err
	}
	return 1 / d.Seconds(), nil
}

// forgetSetup stores n e-mails to distinct recipients and 10 to ana@example.com, and
// sends them all (database.sendAll).
func forgetSetup(ctx context.Context, db *database, n int) error {
	if err := db.reset(ctx); err != nil {
		return err
	}
	for done := 0; done < n; done += 1000 {
		k := min(1000, n-done)
		if _, err := db.pool.Exec(ctx, `SELECT herald.enqueue_many(array_fill('email'::text, ARRAY[$1::int]),
			ARRAY(SELECT 'u' || ($3::int + g) || '@example.com' FROM generate_series(1, $1::int) g), array_fill($2::jsonb, ARRAY[$1::int]))`,
			k, payload, done); err != nil {
			return err
		}
	}
	if _, err := db.pool.Exec(ctx, `SELECT herald.enqueue('email', 'ana@example.com', $1) FROM generate_series(1, 10)`, payload); err != nil {
		return err
	}
	return db.sendAll(ctx)
}
