package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/herald/herald/runner/intake"
)

// scenario runs one benchmark and returns its rows of the report.
type scenario func(ctx context.Context, db *database, o options) ([]row, error)

var scenarios = map[string]scenario{
	"enqueue-single": enqueueSingle,
	"enqueue-batch":  enqueueBatch,
	"drain":          drain,
	"deliver":        deliver,
	"callbacks":      callbacks,
	"forget":         forget,
	"purge":          purge,
	"fair":           fair,
	"sign":           sign,
	"smtp":           smtpDeliver,
	"latency":        latency,
	"soak":           soak,
	"intake":         intakeBench,
}

// order is the order scenarios run in by default.
var order = []string{"enqueue-single", "enqueue-batch", "drain", "latency", "soak"}

func scenarioNames() []string { return order }

const payload = `{"subject":"Hi","text":"Hello"}`

// enqueueSingle: C connections in autocommit, one message per transaction.
// herald = herald.enqueue with the log and notify triggers on; baseline = a bare
// single-row INSERT into public.bare; also herald.enqueue with the triggers off,
// which isolates what the triggers cost, and with one entry in herald.suppressions
// (every deployment that has seen a bounce), which shows what the suppression check
// costs.
func enqueueSingle(ctx context.Context, db *database, o options) ([]row, error) {
	variants := []variant{
		{name: "herald.enqueue, triggers on", triggers: true, sql: `SELECT herald.enqueue('email', 'ana@example.com', $1)`},
		{name: "herald.enqueue, triggers off", triggers: false, sql: `SELECT herald.enqueue('email', 'ana@example.com', $1)`},
		{name: "bare INSERT", triggers: false, sql: `INSERT INTO public.bare (producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at)
			VALUES ('bench', 'email', 'ana@example.com', $1, now(), 5, now(), now() + interval '5 days')`},
		{name: "herald.enqueue, one suppression entry", triggers: true, suppressed: true, sql: `SELECT herald.enqueue('email', 'ana@example.com', $1)`},
	}
	res, err := alternate(ctx, db, o, "enqueue-single", variants, 1, func() []any { return []any{payload} })
	if err != nil {
		return nil, err
	}
	unit := "messages/s"
	return []row{
		ratioRow("enqueue-single: herald.enqueue vs bare INSERT", unit, res[0], res[2], 0.60),
		ratioRow("enqueue-single: triggers on vs off (cost of NOTIFY)", unit, res[0], res[1], 0),
		ratioRow("enqueue-single: one suppression entry vs none (cost of the suppression check)", unit, res[3], res[0], 0),
	}, nil
}

// enqueueBatch: C connections in autocommit, o.batch messages per transaction.
// herald = herald.enqueue_batch (a JSON array) and the Go bulk path
// intake.EnqueueMany (herald.enqueue_many, parallel arrays in the binary protocol),
// triggers on; baseline = a bare o.batch-row INSERT of the same rows sent by the
// client (unnest of parameter arrays: what a producer's own bulk insert does). Also
// reported: enqueue_batch with the triggers off, with one entry in
// herald.suppressions, and against a bare INSERT … SELECT whose rows the server
// generates (generate_series: no data from the client).
func enqueueBatch(ctx context.Context, db *database, o options) ([]row, error) {
	items := make([]string, o.batch)
	msgs := make([]intake.Message, o.batch)
	channels, recipients, payloads := make([]string, o.batch), make([]string, o.batch), make([]string, o.batch)
	for i := range items {
		r := fmt.Sprintf("u%d@example.com", i)
		items[i] = fmt.Sprintf(`{"channel":"email","recipient":%q,"payload":%s}`, r, payload)
		msgs[i] = intake.Message{Channel: "email", Recipient: r, Payload: json.RawMessage(payload)}
		channels[i], recipients[i], payloads[i] = "email", r, payload
	}
	batch := "[" + strings.Join(items, ",") + "]"
	generated := fmt.Sprintf(`INSERT INTO public.bare (producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at)
		SELECT 'bench', 'email', 'u' || g || '@example.com', $1::jsonb, now(), 5, now(), now() + interval '5 days' FROM generate_series(1, %d) g`, o.batch)
	clientRows := `INSERT INTO public.bare (producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at)
		SELECT 'bench', u.c, u.r, u.p, now(), 5, now(), now() + interval '5 days' FROM unnest($1::text[], $2::text[], $3::jsonb[]) AS u(c, r, p)`
	variants := []variant{
		{name: "herald.enqueue_batch, triggers on", triggers: true, sql: `SELECT herald.enqueue_batch($1)`},
		{name: "intake.EnqueueMany (herald.enqueue_many), triggers on", triggers: true,
			call: func(ctx context.Context, c *pgxpool.Conn) error {
				_, err := intake.EnqueueMany(ctx, c, msgs)
				return err
			}},
		{name: fmt.Sprintf("bare %d-row INSERT of the client's rows", o.batch), triggers: false, sql: clientRows},
		{name: "herald.enqueue_batch, triggers off", triggers: false, sql: `SELECT herald.enqueue_batch($1)`},
		{name: fmt.Sprintf("bare %d-row INSERT … SELECT generate_series", o.batch), triggers: false, sql: generated},
		{name: "herald.enqueue_batch, one suppression entry", triggers: true, suppressed: true, sql: `SELECT herald.enqueue_batch($1)`},
	}
	args := [][]any{{batch}, nil, {channels, recipients, payloads}, {batch}, {payload}, {batch}}
	res, err := alternateArgs(ctx, db, o, "enqueue-batch", variants, o.batch, args)
	if err != nil {
		return nil, err
	}
	unit := "messages/s"
	return []row{
		ratioRow(fmt.Sprintf("enqueue-batch: herald.enqueue_batch(%d) vs bare INSERT of the client's rows", o.batch), unit, res[0], res[2], 0.70),
		ratioRow(fmt.Sprintf("enqueue-batch: Go bulk path EnqueueMany(%d) vs bare INSERT of the client's rows", o.batch), unit, res[1], res[2], 0.70),
		ratioRow("enqueue-batch: enqueue_batch vs bare INSERT … SELECT generate_series (server-made rows)", unit, res[0], res[4], 0),
		ratioRow("enqueue-batch: enqueue_batch triggers on vs off (cost of NOTIFY)", unit, res[0], res[3], 0),
		ratioRow("enqueue-batch: enqueue_batch with one suppression entry vs none (cost of the suppression check)", unit, res[5], res[0], 0),
	}, nil
}
