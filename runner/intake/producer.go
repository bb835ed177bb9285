package intake

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// Token is one bearer token of the intake and the producer it stands for: messages
// enqueued with it belong to "intake:<Name>" in herald.messages.producer, which
// scopes their idempotency keys and who may read their status (docs/security.md).
type Token struct {
	// Name is the producer's name: 1 to 64 of A-Z a-z 0-9 . _ - (herald._producer checks it).
	Name string
	// Secret is the bearer token itself; it is never logged or printed.
	Secret string
}

// Batcher is what a producer's queries run on: a pool, a connection or a transaction.
type Batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// AsProducer returns a Querier whose every query runs for the named producer: it is
// sent in one pipelined batch after set_config('herald.producer', name, true), so
// both run in one transaction (the caller's, or an implicit one) and the setting
// ends with it. The database role must be a member of herald_intake.
func AsProducer(b Batcher, name string) Querier { return producerQuerier{b: b, name: name} }

type producerQuerier struct {
	b    Batcher
	name string
}

func (p producerQuerier) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	batch := &pgx.Batch{}
	batch.Queue(`SELECT set_config('herald.producer', $1, true)`, p.name)
	batch.Queue(sql, args...)
	return &producerRow{results: p.b.SendBatch(ctx, batch)}
}

// producerRow reads the second result of the batch and closes it.
type producerRow struct{ results pgx.BatchResults }

func (r *producerRow) Scan(dest ...any) error {
	_, setErr := r.results.Exec()
	err := r.results.QueryRow().Scan(dest...)
	closeErr := r.results.Close()
	if setErr != nil {
		return setErr
	}
	if err != nil {
		return err
	}
	return closeErr
}

// CheckTokens asks the database whether every token's name is a producer the
// connection's role may serve (a member of herald_intake, a valid name), so that a
// misconfiguration stops the server at start rather than failing every request.
// Returns nil when there is nothing to check.
func CheckTokens(ctx context.Context, b Batcher, tokens []Token) error {
	for _, t := range tokens {
		var n int64
		if err := AsProducer(b, t.Name).QueryRow(ctx, `SELECT count(*) FROM herald.status(0)`).Scan(&n); err != nil {
			return errors.Join(errors.New("intake token "+t.Name), err)
		}
	}
	return nil
}
