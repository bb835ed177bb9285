package intake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Enqueue stores one message given as a JSON object with the fields of
// herald.enqueue (channel, recipient, payload, run_at, priority, idempotency_key,
// ordering_key, max_attempts, metadata). idempotencyKey, when not empty, is the
// message's idempotency key (the Idempotency-Key header; it must agree with a key in
// the body). Validation is herald's SQL: a bad message gives an *InputError, and
// nothing is stored.
func Enqueue(ctx context.Context, pool *pgxpool.Pool, body []byte, idempotencyKey string) (int64, error) {
	var msg map[string]json.RawMessage
	if err := decodeObject(body, &msg); err != nil {
		return 0, err
	}
	if idempotencyKey != "" {
		if k, ok := msg["idempotency_key"]; ok && !bytes.Equal(bytes.TrimSpace(k), []byte("null")) {
			var inBody string
			if json.Unmarshal(k, &inBody) != nil || inBody != idempotencyKey {
				return 0, &InputError{Code: "invalid_idempotency_key", Field: "idempotency_key",
					Message: "idempotency_key: the Idempotency-Key header and the body disagree"}
			}
		}
		k, _ := json.Marshal(idempotencyKey)
		msg["idempotency_key"] = k
	}
	batch, _ := json.Marshal([]map[string]json.RawMessage{msg})
	ids, err := enqueueBatch(ctx, pool, batch)
	if err != nil {
		var ie *InputError
		if errors.As(err, &ie) {
			// One message: no index to name. The text starts with the field path the
			// batch function gave it; say it as the single-message form would.
			ie.Index = nil
			ie.Message = strings.TrimPrefix(strings.TrimPrefix(ie.Message, "messages[0]."), "messages[0]")
			if ie.Field == "message" {
				ie.Field = ""
			}
		}
		return 0, err
	}
	return ids[0], nil
}

// EnqueueBatch stores a JSON array of messages (see Enqueue), all or nothing, and
// returns their ids in order. A bad message gives an *InputError naming its index
// and field. maxMessages bounds the array.
func EnqueueBatch(ctx context.Context, pool *pgxpool.Pool, body []byte, maxMessages int) ([]int64, error) {
	var msgs []json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&msgs); err != nil {
		return nil, badJSON("messages", "the body must be a JSON array of message objects: %v", err)
	}
	if dec.More() {
		return nil, badJSON("messages", "the body holds more than one JSON value")
	}
	if len(msgs) == 0 || len(msgs) > maxMessages {
		return nil, &InputError{Code: "invalid_batch", Field: "messages",
			Message: fmt.Sprintf("messages: %d messages; 1 to %d are allowed", len(msgs), maxMessages)}
	}
	return enqueueBatch(ctx, pool, body)
}

func enqueueBatch(ctx context.Context, pool *pgxpool.Pool, batch []byte) ([]int64, error) {
	var ids []int64
	err := pool.QueryRow(ctx, `SELECT herald.enqueue_batch($1::jsonb)`, string(batch)).Scan(&ids)
	if err != nil {
		if ie, ok := AsInputError(err); ok {
			return nil, ie
		}
		var pg *pgconn.PgError
		if errors.As(err, &pg) && strings.HasPrefix(pg.Code, "22") {
			// A value JSON allows but PostgreSQL's jsonb does not (\u0000, bad UTF-8).
			return nil, badJSON("", "the JSON cannot be stored: %s", pg.Message)
		}
		return nil, err
	}
	return ids, nil
}

// decodeObject parses body as exactly one JSON object.
func decodeObject(body []byte, v *map[string]json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil || *v == nil {
		if err == nil {
			err = errors.New("null")
		}
		return badJSON("", "the body must be a JSON object: %v", err)
	}
	if dec.More() {
		return badJSON("", "the body holds more than one JSON value")
	}
	return nil
}

// Status is what herald.status says about a message.
type Status struct {
	ID                int64      `json:"id"`
	Channel           string     `json:"channel"`
	Status            string     `json:"status"`
	Attempts          int        `json:"attempts"`
	MaxAttempts       int        `json:"max_attempts"`
	RunAt             time.Time  `json:"run_at"`
	CreatedAt         time.Time  `json:"created_at"`
	FinishedAt        *time.Time `json:"finished_at"`
	LastError         *string    `json:"last_error"`
	LastErrorClass    *string    `json:"last_error_class"`
	ProviderMessageID *string    `json:"provider_message_id"`
}

// ErrNotFound is returned by GetStatus for an unknown (or purged) id.
var ErrNotFound = errors.New("no such message")

// GetStatus reads herald.status(id).
func GetStatus(ctx context.Context, pool *pgxpool.Pool, id int64) (*Status, error) {
	s := Status{ID: id}
	err := pool.QueryRow(ctx, `SELECT channel, status, attempts, max_attempts, run_at, created_at, finished_at,
		last_error, last_error_class, provider_message_id FROM herald.status($1)`, id).
		Scan(&s.Channel, &s.Status, &s.Attempts, &s.MaxAttempts, &s.RunAt, &s.CreatedAt, &s.FinishedAt,
			&s.LastError, &s.LastErrorClass, &s.ProviderMessageID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &s, nil
}
