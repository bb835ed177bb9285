package intake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Enqueue stores one message with herald.enqueue and returns its id. q may be a pool,
// a connection or the caller's transaction. A bad message gives an *InputError naming
// the field (herald's SQL decides), and nothing is stored.
func Enqueue(ctx context.Context, q Querier, m Message) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, `SELECT herald.enqueue(channel => $1, recipient => $2, payload => $3,
		run_at => $4, priority => $5, idempotency_key => $6, ordering_key => $7,
		max_attempts => $8, metadata => $9, expires_at => $10, recipient_zone => $11)`,
		m.Channel, m.Recipient, jsonArg(m.Payload), m.RunAt, m.Priority, m.IdempotencyKey,
		m.OrderingKey, m.MaxAttempts, jsonArg(m.Metadata), m.ExpiresAt, m.RecipientZone).Scan(&id)
	if err != nil {
		return 0, inputOr(err)
	}
	return id, nil
}

// DecodeMessage reads one message from a JSON object with the fields of
// herald.enqueue: channel, recipient, payload, run_at (RFC 3339), priority,
// idempotency_key, ordering_key, max_attempts, metadata, expires_at (RFC 3339),
// recipient_zone; null is the same as absent.
// It checks only what JSON decides (one object, known fields, each of its JSON type);
// the values are herald.enqueue's to judge. Errors are *InputError naming the field.
func DecodeMessage(body []byte) (Message, error) {
	var m Message
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&fields); err != nil || fields == nil {
		if err == nil {
			err = errors.New("null")
		}
		return m, badJSON("", "the body must be a JSON object: %v", err)
	}
	if dec.More() {
		return m, badJSON("", "the body holds more than one JSON value")
	}
	if path, name, ok := repeatedName(body); ok {
		return m, repeated(path, name)
	}
	for k, v := range fields {
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			continue
		}
		var err error
		switch k {
		case "channel":
			err = json.Unmarshal(v, &m.Channel)
		case "recipient":
			err = json.Unmarshal(v, &m.Recipient)
		case "idempotency_key":
			err = json.Unmarshal(v, &m.IdempotencyKey)
		case "ordering_key":
			err = json.Unmarshal(v, &m.OrderingKey)
		case "recipient_zone":
			err = json.Unmarshal(v, &m.RecipientZone)
		case "payload":
			m.Payload = v
		case "metadata":
			m.Metadata = v
		case "run_at", "expires_at":
			var s string
			if json.Unmarshal(v, &s) != nil {
				return m, &InputError{Code: "invalid_" + k, Field: k, Message: k + ": must be a timestamp string such as \"2030-01-02T03:04:05Z\""}
			}
			t, perr := time.Parse(time.RFC3339Nano, s)
			if perr != nil {
				return m, &InputError{Code: "invalid_" + k, Field: k, Message: fmt.Sprintf("%s: %q is not an RFC 3339 timestamp", k, s)}
			}
			if k == "run_at" {
				m.RunAt = &t
			} else {
				m.ExpiresAt = &t
			}
		case "priority", "max_attempts":
			n, ok := jsonInteger(v)
			if !ok {
				return m, &InputError{Code: "invalid_" + k, Field: k, Message: k + ": must be an integer"}
			}
			if k == "priority" {
				m.Priority = &n
			} else {
				m.MaxAttempts = &n
			}
		default:
			return m, &InputError{Code: "invalid_message", Field: k, Message: k + ": is not a message field"}
		}
		if err != nil {
			return m, &InputError{Code: "invalid_message", Field: k, Message: k + ": must be a string"}
		}
	}
	return m, nil
}

// repeated is the error of a member name given twice in one object, at path.
func repeated(path, name string) *InputError {
	return badJSON(path, "%s: the name %q is given twice in one object; JSON readers differ on which counts", path, name)
}

// jsonInteger reads a JSON number or string holding an integer of at most 9 digits.
func jsonInteger(v json.RawMessage) (int, bool) {
	s := strings.TrimSpace(string(v))
	var unq string
	if json.Unmarshal(v, &unq) == nil {
		s = unq
	}
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || len(digits) > 9 || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// EnqueueBatch stores a JSON array of messages (the objects of DecodeMessage) with
// herald.enqueue_batch, all or nothing, and returns their ids in order. A bad message
// gives an *InputError naming its index and field. maxMessages bounds the array.
func EnqueueBatch(ctx context.Context, q Querier, body []byte, maxMessages int) ([]int64, error) {
	if _, err := batchLen(body, maxMessages); err != nil {
		return nil, err
	}
	return storeBatch(ctx, q, body)
}

// batchLen checks that body is one JSON array of 1 to maxMessages elements and
// returns how many it holds.
func batchLen(body []byte, maxMessages int) (int, error) {
	var msgs []json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&msgs); err != nil {
		return 0, badJSON("messages", "the body must be a JSON array of message objects: %v", err)
	}
	if dec.More() {
		return 0, badJSON("messages", "the body holds more than one JSON value")
	}
	if path, name, ok := repeatedName(body); ok {
		ie := repeated("messages"+path, name)
		if m := batchField.FindStringSubmatch(ie.Field); m != nil {
			i, _ := strconv.Atoi(m[1])
			ie.Index, ie.Field = &i, m[2]
		}
		return 0, ie
	}
	if len(msgs) == 0 || len(msgs) > maxMessages {
		return 0, &InputError{Code: "invalid_batch", Field: "messages",
			Message: fmt.Sprintf("messages: %d messages; 1 to %d are allowed", len(msgs), maxMessages)}
	}
	return len(msgs), nil
}

// storeBatch is herald.enqueue_batch of a body batchLen accepted.
func storeBatch(ctx context.Context, q Querier, body []byte) ([]int64, error) {
	var ids []int64
	if err := q.QueryRow(ctx, `SELECT herald.enqueue_batch($1::jsonb)`, string(body)).Scan(&ids); err != nil {
		return nil, inputOr(err)
	}
	return ids, nil
}

// inputOr turns herald's validation errors into *InputError, and a value JSON allows
// but jsonb refuses (\u0000, bad UTF-8) into invalid_json; other errors pass.
func inputOr(err error) error {
	if ie, ok := AsInputError(err); ok {
		return ie
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) && strings.HasPrefix(pg.Code, "22") {
		return badJSON("", "the JSON cannot be stored: %s", pg.Message)
	}
	return err
}

// jsonArg is a jsonb argument that is NULL when absent.
func jsonArg(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
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
	ExpiresAt         time.Time  `json:"expires_at"`
	LastErrorClass    *string    `json:"last_error_class"`
	LastErrorCode     *string    `json:"last_error_code"`
	ProviderMessageID *string    `json:"provider_message_id"`
	// Outcome is what the provider reported after sent: delivered, deferred, bounced,
	// complained, unsubscribed or undelivered (nil: nothing yet).
	Outcome     *string    `json:"outcome"`
	OutcomeType *string    `json:"outcome_type"`
	OutcomeCode *string    `json:"outcome_code"`
	OutcomeAt   *time.Time `json:"outcome_at"`
}

// ErrNotFound is returned by GetStatus, GetStatusByKey, Cancel and CancelByKey for an
// unknown (or purged) message, or another producer's.
var ErrNotFound = errors.New("no such message")

// GetStatus reads herald.status(id) on q: ErrNotFound unless the message exists and
// belongs to the caller's producer (or the caller is herald_admin).
func GetStatus(ctx context.Context, q Querier, id int64) (*Status, error) {
	return getStatus(ctx, q, `FROM herald.status(id => $1)`, id)
}

// GetStatusByKey reads the status of the caller's message enqueued with idempotency
// key key: ErrNotFound when it has none, an *InputError for a key of the wrong length.
func GetStatusByKey(ctx context.Context, q Querier, key string) (*Status, error) {
	return getStatus(ctx, q, `FROM herald.status(idempotency_key => $1)`, key)
}

// Event is one entry of herald.history: what happened to a message and when.
type Event struct {
	At    time.Time `json:"at"`
	Event string    `json:"event"`
	// Attempt is a failed attempt's number, or a sent message's attempts.
	Attempt *int `json:"attempt"`
	// Class is a failure's class, or a report's type (hard, soft, …).
	Class *string `json:"class"`
	Code  *string `json:"code"`
	// Copy is true for a report about a cc or bcc copy.
	Copy bool `json:"copy"`
}

// GetHistory reads herald.history(id) on q, oldest first: ErrNotFound unless the
// message exists and belongs to the caller's producer (or the caller is herald_admin).
func GetHistory(ctx context.Context, q Querier, id int64) ([]Event, error) {
	var b []byte // one row, so that any Querier (a transaction too) will do
	if err := q.QueryRow(ctx, `SELECT coalesce(json_agg(json_build_object('at', h.at, 'event', h.event, 'attempt', h.attempt,
		'class', h.class, 'code', h.code, 'copy', h.copy) ORDER BY h.n), '[]')
		FROM herald.history(id => $1) WITH ORDINALITY AS h (at, event, attempt, class, code, copy, n)`, id).Scan(&b); err != nil {
		return nil, keyError(err)
	}
	var evs []Event
	if err := json.Unmarshal(b, &evs); err != nil {
		return nil, err
	}
	if len(evs) == 0 { // a message has at least its accepted event
		return nil, ErrNotFound
	}
	return evs, nil
}

func getStatus(ctx context.Context, q Querier, from string, arg any) (*Status, error) {
	var s Status
	err := q.QueryRow(ctx, `SELECT message_id, channel, status, attempts, max_attempts, run_at, created_at, finished_at,
		expires_at, last_error_class, last_error_code, provider_message_id, outcome, outcome_type, outcome_code, outcome_at
		`+from, arg).
		Scan(&s.ID, &s.Channel, &s.Status, &s.Attempts, &s.MaxAttempts, &s.RunAt, &s.CreatedAt, &s.FinishedAt,
			&s.ExpiresAt, &s.LastErrorClass, &s.LastErrorCode, &s.ProviderMessageID, &s.Outcome, &s.OutcomeType, &s.OutcomeCode, &s.OutcomeAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, keyError(err)
	}
	return &s, nil
}
