// Package idtag makes and checks the tags that bind a herald message id to one use
// under a secret key: an HMAC-SHA256 of "<use>:<id>". A tag cannot be made without the
// key, and one made for a use (an unsubscribe link, a Message-ID, a webhook-id) does
// not serve another. Keys come as a list while one is rotated out: the first makes
// tags, all check them. The installation's own keys, which make e-mail Message-IDs
// and webhook-ids, are the rows of herald.message_id_keys (LoadKeys).
package idtag

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/herald/herald/runner/sender"
)

// MinLen is the shortest tag Valid accepts, in bytes (80 bits).
const MinLen = 10

// Sum is the tag of message id for use under key (sha256.Size bytes; a caller may
// keep a prefix of at least MinLen).
func Sum(key []byte, use string, id int64) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(use + ":" + strconv.FormatInt(id, 10)))
	return h.Sum(nil)
}

// Valid reports whether tag, a whole Sum or a prefix of at least MinLen bytes, is
// message id's tag for use under one of keys (compared in constant time).
func Valid(keys [][]byte, use string, id int64, tag []byte) bool {
	if len(tag) < MinLen || len(tag) > sha256.Size {
		return false
	}
	for _, k := range keys {
		if hmac.Equal(tag, Sum(k, use, id)[:len(tag)]) {
			return true
		}
	}
	return false
}

// Text is the tag of message id for use under key as it goes into an identifier:
// its first MinLen bytes in lower-case base32, 16 characters.
func Text(key []byte, use string, id int64) string {
	return strings.ToLower(base32.StdEncoding.EncodeToString(Sum(key, use, id)[:MinLen]))
}

// KeySource gives the key that makes an installation's tags; it may read it from
// the database on first use (ctx bounds the read).
type KeySource func(ctx context.Context) ([]byte, error)

// StaticKey is a KeySource that always gives key.
func StaticKey(key []byte) KeySource {
	return func(context.Context) ([]byte, error) { return key, nil }
}

// LoadKeys reads the installation's keys, herald.message_id_keys, newest first: the
// first makes tags, every one checks them (Valid). The role of q must be a member of
// herald_worker or herald_events. The error is a configuration failure when the
// database answered (no key, not allowed, no table), else a transient one.
func LoadKeys(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}) ([][]byte, error) {
	rows, _ := q.Query(ctx, `SELECT key FROM herald.message_id_keys ORDER BY created_at DESC, key`)
	keys, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr):
		return nil, sender.Configuration(fmt.Errorf("reading herald.message_id_keys: %w", err), "")
	case err != nil:
		return nil, sender.Transient(fmt.Errorf("reading herald.message_id_keys: %w", err))
	case len(keys) == 0:
		return nil, sender.Configuration(errors.New("herald.message_id_keys is empty: INSERT INTO herald.message_id_keys DEFAULT VALUES"), "")
	}
	return keys, nil
}
