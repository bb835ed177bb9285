package intake

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// InputError is bad input, as herald's SQL reported it: a stable code, the field,
// and for a batch the index of the first bad message. Forbidden marks input the
// producer is not allowed (HTTP 403) rather than malformed (400); KeyReused an
// idempotency key given before with another channel, recipient or payload (422);
// OverQuota a call refused while the producer is at its max_pending or suspended, or
// a recipient at its channel's recipient_limit (429: retry later); Busy one that
// waited its channel's budget_wait for a recipient's or range's budget another
// transaction holds (503: retry soon).
type InputError struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Index   *int   `json:"index,omitempty"`
	Message string `json:"message"`
	// Status, for a cancel refused (not_cancellable), is the message's state.
	Status    string `json:"status,omitempty"`
	Forbidden bool   `json:"-"`
	KeyReused bool   `json:"-"`
	OverQuota bool   `json:"-"`
	Busy      bool   `json:"-"`
	// RetryAfter, for an OverQuota refusal of a suspended producer or a recipient at
	// its limit, is how long until it is let in again (herald.producer_wait,
	// herald.recipient_wait); zero: the count interval.
	RetryAfter time.Duration `json:"-"`
}

// Error returns the message, which starts with the field.
func (e *InputError) Error() string { return e.Message }

// codes maps herald's SQLSTATEs (docs/sql.md, "Errors") to the codes of the HTTP API.
var codes = map[string]string{
	"22V01": "unknown_channel",
	"22V02": "invalid_recipient",
	"22V03": "invalid_payload",
	"22V04": "payload_too_large",
	"22V05": "invalid_run_at",
	"22V06": "invalid_priority",
	"22V07": "invalid_max_attempts",
	"22V08": "invalid_metadata",
	"22V09": "invalid_idempotency_key",
	"22V10": "invalid_ordering_key",
	"22V11": "invalid_message",
	"22V12": "invalid_argument",
	"22V17": "invalid_expires_at",
	"22V19": "invalid_recipient_zone",
	"22V20": "idempotency_key_reused",
}

// notGranted maps the fields of herald's 42501 errors that are the producer's input
// (a value its herald.producers row or the channel's policy does not allow) to the
// codes of the HTTP API. A 42501 on anything else (the intake's own role) is the
// operator's problem, not the client's.
var notGranted = map[string]string{
	"channel":      "channel_not_granted",
	"recipient":    "recipient_not_allowed",
	"priority":     "priority_not_granted",
	"payload.from": "sender_not_granted",
}

// batchField splits enqueue_batch's COLUMN, "messages[3].recipient", into 3 and
// "recipient". It reads a structured field, never the message text.
var batchField = regexp.MustCompile(`^messages\[(\d+)\](?:\.(.+))?$`)

// AsInputError returns the InputError behind err when err is one of herald's
// validation errors (a 22Vxx SQLSTATE), a value the producer is not granted (42501 on
// a field of notGranted), its max_pending reached or suspended (53400 on producer), a
// recipient at its limit (53400 on recipient), its budget held by another
// transaction (55P03 on recipient or messages), and false for anything else.
func AsInputError(err error) (*InputError, bool) {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		return nil, false
	}
	ie := &InputError{Field: pg.ColumnName, Message: pg.Message}
	if m := batchField.FindStringSubmatch(pg.ColumnName); m != nil {
		i, _ := strconv.Atoi(m[1])
		ie.Index = &i
		ie.Field = m[2]
		if ie.Field == "" {
			ie.Field = "message"
		}
	}
	switch {
	case pg.Code == "42501":
		ie.Code, ie.Forbidden = notGranted[ie.Field], true
	case pg.Code == "53400" && ie.Field == "producer": // herald.producers: max_pending, suspended
		ie.Code, ie.OverQuota = "quota_exceeded", true
	case pg.Code == "53400" && ie.Field == "recipient": // herald.channels.recipient_limit
		ie.Code, ie.OverQuota = "recipient_limit_exceeded", true
	case pg.Code == "55P03" && (ie.Field == "recipient" || ie.Field == "messages"): // herald.channels.budget_wait
		ie.Code, ie.Busy = "recipient_busy", true
	default:
		ie.Code, ie.KeyReused = codes[pg.Code], pg.Code == "22V20"
	}
	if ie.Code == "" {
		return nil, false
	}
	return ie, true
}

// timedOut reports whether err is the end of the request's time (its context's
// deadline, herald's HERALD_HTTP_TIMEOUT) or a statement cancelled for taking too
// long (57014: the deadline's cancel request, or a statement_timeout).
func timedOut(err error) bool {
	var pg *pgconn.PgError
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &pg) && pg.Code == "57014"
}

// Unavailable reports whether err means the database cannot be reached or cannot
// serve now (connection failures, shutdown, too many connections, a serialization
// failure to retry, a read-only server: a standby, or a primary during a failover):
// the request may be retried later.
func Unavailable(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code[:2] {
		case "08", "53", "57", "40":
			return true
		}
		return pg.Code == "25006" // read_only_sql_transaction
	}
	return err != nil
}

func badJSON(field, format string, args ...any) *InputError {
	return &InputError{Code: "invalid_json", Field: field, Message: fmt.Sprintf(format, args...)}
}

// keyError is err of a call by id or idempotency key: herald's validation errors as
// *InputError, and a key PostgreSQL cannot hold (a NUL) as invalid_idempotency_key.
func keyError(err error) error {
	if ie, ok := AsInputError(err); ok {
		return ie
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) && strings.HasPrefix(pg.Code, "22") {
		return &InputError{Code: "invalid_idempotency_key", Field: "idempotency_key", Message: "idempotency_key: " + pg.Message}
	}
	return err
}
