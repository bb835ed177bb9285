package main

import (
	"context"
	"fmt"
	"strings"
)

// scenario runs one benchmark and returns its rows of the report.
type scenario func(ctx context.Context, db *database, o options) ([]row, error)

var scenarios = map[string]scenario{
	"enqueue-single": enqueueSingle,
	"enqueue-batch":  enqueueBatch,
	"drain":          drain,
	"latency":        latency,
	"soak":           soak,
}

// order is the order scenarios run in by default.
var order = []string{"enqueue-single", "enqueue-batch", "drain", "latency", "soak"}

func scenarioNames() []string { return order }

const payload = `{"subject":"Hi","text":"Hello"}`

// enqueueSingle: C connections in autocommit, one message per transaction.
// herald = herald.enqueue with the log and notify triggers on; baseline = a bare
// single-row INSERT into public.bare; also herald.enqueue with the triggers off,
// which isolates what the triggers cost.
func enqueueSingle(ctx context.Context, db *database, o options) ([]row, error) {
	variants := []variant{
		{name: "herald.enqueue, triggers on", triggers: true, sql: `SELECT herald.enqueue('email', 'ana@example.com', $1)`},
		{name: "herald.enqueue, triggers off", triggers: false, sql: `SELECT herald.enqueue('email', 'ana@example.com', $1)`},
		{name: "bare INSERT", triggers: false, sql: `INSERT INTO public.bare (channel, recipient, payload, run_at, max_attempts, created_at)
			VALUES ('email', 'ana@example.com', $1, now(), 5, now())`},
	}
	res, err := alternate(ctx, db, o, "enqueue-single", variants, 1, func() []any { return []any{payload} })
	if err != nil {
		return nil, err
	}
	unit := "messages/s"
	return []row{
		ratioRow("enqueue-single: herald.enqueue vs bare INSERT", unit, res[0], res[2], 0.60),
		ratioRow("enqueue-single: triggers on vs off (cost of log + NOTIFY)", unit, res[0], res[1], 0),
	}, nil
}

// enqueueBatch: C connections in autocommit, o.batch messages per transaction.
// herald = herald.enqueue_batch with the triggers on; baseline = a bare o.batch-row
// INSERT … SELECT into public.bare; also enqueue_batch with the triggers off.
func enqueueBatch(ctx context.Context, db *database, o options) ([]row, error) {
	items := make([]string, o.batch)
	for i := range items {
		items[i] = fmt.Sprintf(`{"channel":"email","recipient":"u%d@example.com","payload":%s}`, i, payload)
	}
	batch := "[" + strings.Join(items, ",") + "]"
	bare := fmt.Sprintf(`INSERT INTO public.bare (channel, recipient, payload, run_at, max_attempts, created_at)
		SELECT 'email', 'u' || g || '@example.com', $1::jsonb, now(), 5, now() FROM generate_series(1, %d) g`, o.batch)
	variants := []variant{
		{name: "herald.enqueue_batch, triggers on", triggers: true, sql: `SELECT herald.enqueue_batch($1)`},
		{name: "herald.enqueue_batch, triggers off", triggers: false, sql: `SELECT herald.enqueue_batch($1)`},
		{name: fmt.Sprintf("bare %d-row INSERT", o.batch), triggers: false, sql: bare},
	}
	args := [][]any{{batch}, {batch}, {payload}}
	res, err := alternateArgs(ctx, db, o, "enqueue-batch", variants, o.batch, args)
	if err != nil {
		return nil, err
	}
	unit := "messages/s"
	return []row{
		ratioRow(fmt.Sprintf("enqueue-batch: herald.enqueue_batch(%d) vs bare INSERT", o.batch), unit, res[0], res[2], 0.70),
		ratioRow("enqueue-batch: triggers on vs off (cost of log + NOTIFY)", unit, res[0], res[1], 0),
	}, nil
}
