// Package unsubscribe makes and checks herald's one-click unsubscribe links (RFC
// 8058). A link is <base>/<token>, token = "<message id>.<tag>", tag the unpadded
// base64url of the message id's idtag for "herald-unsubscribe": it names one message
// and cannot be made without the key, so only someone who received the message (or
// was forwarded it) can unsubscribe its recipient.
package unsubscribe

import (
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/herald/herald/runner/idtag"
)

// use is what an unsubscribe link's tag is for (idtag).
const use = "herald-unsubscribe"

// Token is the token of message id under key.
func Token(key []byte, id int64) string {
	return strconv.FormatInt(id, 10) + "." + base64.RawURLEncoding.EncodeToString(idtag.Sum(key, use, id))
}

// Link is the unsubscribe URL of message id: base (the endpoint's public URL, no
// trailing slash needed) and the token under key.
func Link(base string, key []byte, id int64) string {
	return strings.TrimRight(base, "/") + "/" + Token(key, id)
}

// Check returns the message id of token when one of keys made it (the whole tag).
func Check(keys [][]byte, token string) (int64, bool) {
	idText, sig, ok := strings.Cut(token, ".")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != idText {
		return 0, false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || len(got) != sha256.Size || !idtag.Valid(keys, use, id, got) {
		return 0, false
	}
	return id, true
}
