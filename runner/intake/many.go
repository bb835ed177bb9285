package intake

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// Message is one notification for Enqueue and EnqueueMany: the arguments of
// herald.enqueue as Go values. nil means the default: no run_at (now), priority 0 (or
// the producer's min_priority when above 0), no keys, the channel's max_attempts, no
// metadata, the channel's time-to-live, the channel's quiet_zone.
type Message struct {
	Channel        string
	Recipient      string
	Payload        json.RawMessage // a JSON object
	RunAt          *time.Time
	Priority       *int
	IdempotencyKey *string
	OrderingKey    *string
	MaxAttempts    *int
	Metadata       json.RawMessage // a JSON object, or nil
	ExpiresAt      *time.Time      // not sent by then: expired (capped by the channel's ttl)
	RecipientZone  *string         // the recipient's IANA time zone (quiet_per_recipient channels)
}

// Querier is what the producer functions (Enqueue, EnqueueBatch, EnqueueMany,
// GetStatus) run their statement on: a *pgxpool.Pool, a *pgx.Conn or a pgx.Tx, so
// that a service can enqueue inside its own transaction.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// EnqueueMany stores msgs, all or nothing, and returns their ids in order. It is the
// bulk path: one call of herald.enqueue_many with the messages as parallel arrays in
// the binary protocol, so no JSON document is built or parsed for the batch
// (docs/sql.md, "herald.enqueue_many"). At most 10,000 messages per call. A bad
// message gives an *InputError naming its index and field, and nothing is stored.
func EnqueueMany(ctx context.Context, q Querier, msgs []Message) ([]int64, error) {
	n := len(msgs)
	channels, recipients := make([]string, n), make([]string, n)
	payloads := make([]json.RawMessage, n)
	var (
		runAts      []*time.Time
		priorities  []*int
		idemKeys    []*string
		orderKeys   []*string
		maxAttempts []*int
		metadata    []json.RawMessage
		expiresAts  []*time.Time
		zones       []*string
	)
	// Optional arrays are sent only when some message sets the field (NULL = all
	// defaults), which keeps the common batch small on the wire.
	for i, m := range msgs {
		channels[i], recipients[i], payloads[i] = m.Channel, m.Recipient, m.Payload
		if m.RunAt != nil {
			put(&runAts, n, i, m.RunAt)
		}
		if m.Priority != nil {
			put(&priorities, n, i, m.Priority)
		}
		if m.IdempotencyKey != nil {
			put(&idemKeys, n, i, m.IdempotencyKey)
		}
		if m.OrderingKey != nil {
			put(&orderKeys, n, i, m.OrderingKey)
		}
		if m.MaxAttempts != nil {
			put(&maxAttempts, n, i, m.MaxAttempts)
		}
		if m.Metadata != nil {
			put(&metadata, n, i, m.Metadata)
		}
		if m.ExpiresAt != nil {
			put(&expiresAts, n, i, m.ExpiresAt)
		}
		if m.RecipientZone != nil {
			put(&zones, n, i, m.RecipientZone)
		}
	}
	var ids []int64
	err := q.QueryRow(ctx, `SELECT herald.enqueue_many($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		channels, recipients, payloads, runAts, priorities, idemKeys, orderKeys, maxAttempts, metadata, expiresAts,
		zones).Scan(&ids)
	if err != nil {
		return nil, inputOr(err)
	}
	return ids, nil
}

// put sets element i of *s to v, making *s a slice of n zero values (NULLs on the
// wire) the first time.
func put[T any](s *[]T, n, i int, v T) {
	if *s == nil {
		*s = make([]T, n)
	}
	(*s)[i] = v
}
