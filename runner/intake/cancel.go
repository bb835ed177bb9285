package intake

import (
	"context"
	"fmt"
)

// NotCancellable is the error of a cancel that found the message in a state that
// cannot be cancelled.
type NotCancellable struct {
	// Status is the message's state: processing, sent, dead, expired or suppressed.
	Status string
}

// Error says the state.
func (e *NotCancellable) Error() string { return fmt.Sprintf("the message is %s", e.Status) }

// Cancel withdraws the caller's message id with herald.cancel on q (a pool, a
// connection, the caller's transaction, or AsProducer's Querier): nil when it is
// cancelled (now or before), a *NotCancellable when a send is under way or it has
// finished, ErrNotFound when the caller has no such message.
func Cancel(ctx context.Context, q Querier, id int64) error {
	return cancelled(ctx, q, `SELECT herald.cancel(id => $1)`, id)
}

// CancelByKey is Cancel of the caller's message enqueued with idempotency key key. A
// key of the wrong length is an *InputError (invalid_idempotency_key).
func CancelByKey(ctx context.Context, q Querier, key string) error {
	return cancelled(ctx, q, `SELECT herald.cancel(idempotency_key => $1)`, key)
}

func cancelled(ctx context.Context, q Querier, sql string, arg any) error {
	var status *string
	if err := q.QueryRow(ctx, sql, arg).Scan(&status); err != nil {
		return keyError(err)
	}
	switch {
	case status == nil:
		return ErrNotFound
	case *status != "cancelled":
		return &NotCancellable{Status: *status}
	}
	return nil
}
