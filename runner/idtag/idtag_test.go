package idtag_test

import (
	"testing"

	"github.com/herald/herald/runner/idtag"
)

// A tag is bound to its key, its use and its id; a prefix of at least MinLen bytes
// checks, a shorter one never does; a rotated-out key still checks.
func TestTagsAreBoundToKeyUseAndID(t *testing.T) {
	key, old := []byte("the current key"), []byte("the previous key")
	tag := idtag.Sum(old, "herald-message-id", 42)
	for _, c := range []struct {
		name string
		keys [][]byte
		use  string
		id   int64
		tag  []byte
		want bool
	}{
		{"rotated out, still listed", [][]byte{key, old}, "herald-message-id", 42, tag, true},
		{"a prefix", [][]byte{old}, "herald-message-id", 42, tag[:idtag.MinLen], true},
		{"too short a prefix", [][]byte{old}, "herald-message-id", 42, tag[:idtag.MinLen-1], false},
		{"another key", [][]byte{key}, "herald-message-id", 42, tag, false},
		{"another use", [][]byte{old}, "herald-unsubscribe", 42, tag, false},
		{"another id", [][]byte{old}, "herald-message-id", 43, tag, false},
		{"no keys", nil, "herald-message-id", 42, tag, false},
	} {
		if got := idtag.Valid(c.keys, c.use, c.id, c.tag); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
