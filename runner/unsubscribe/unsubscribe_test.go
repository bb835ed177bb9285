package unsubscribe_test

import (
	"strings"
	"testing"

	"github.com/herald/herald/runner/unsubscribe"
)

// A token checks under the key that made it, and under no other; changing the id, the
// mac or the form of either makes a token nobody can use; during a rotation both
// keys check.
func TestTokens(t *testing.T) {
	oldKey, newKey, otherKey := []byte(strings.Repeat("o", 32)), []byte(strings.Repeat("n", 32)), []byte(strings.Repeat("x", 32))
	tok := unsubscribe.Token(oldKey, 42)
	if id, ok := unsubscribe.Check([][]byte{newKey, oldKey}, tok); !ok || id != 42 {
		t.Fatalf("rotation: %d %v", id, ok)
	}
	if _, ok := unsubscribe.Check([][]byte{otherKey}, tok); ok {
		t.Fatal("checked under another key")
	}
	_, mac, _ := strings.Cut(tok, ".")
	flipped := []byte(mac)
	flipped[3] ^= 1
	for _, bad := range []string{
		"43." + mac,  // another message, the same mac
		"042." + mac, // the same id written otherwise
		"+42." + mac, //
		"-42." + mac, //
		"42." + string(flipped),
		"42." + mac + "=", // padding
		"42." + mac[:len(mac)-1],
		"42",
		"",
		"42." + mac + ".x",
	} {
		if id, ok := unsubscribe.Check([][]byte{oldKey}, bad); ok {
			t.Errorf("%q checked as message %d", bad, id)
		}
	}
	if l := unsubscribe.Link("https://n.example/v1/unsubscribe/", oldKey, 42); l != "https://n.example/v1/unsubscribe/"+tok {
		t.Fatalf("link %q", l)
	}
}
