// Package idtag makes and checks the tags that bind a herald message id to one use
// under a secret key: an HMAC-SHA256 of "<use>:<id>". A tag cannot be made without the
// key, and one made for a use (an unsubscribe link, a Message-ID) does not serve
// another. Keys come as a list while one is rotated out: the first makes tags, all
// check them.
package idtag

import (
	"crypto/hmac"
	"crypto/sha256"
	"strconv"
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
