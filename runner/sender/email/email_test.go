package email_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/herald/herald/runner/idtag"
	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/email"
)

// A Message-ID is the herald id signed with the installation's key: the same for
// every attempt, parsed back to the id, and verified only by a key that made it (two
// keys while one is rotated out); without the key a tag cannot be made, so a forged
// bounce naming a message is told apart. No key, no e-mail: Build fails as
// configuration rather than send a Message-ID anyone could predict.
func TestMessageIDIsSignedWithTheKey(t *testing.T) {
	key, old := []byte("the current key, 32 bytes long!!"), []byte("the previous key, also 32 bytes")
	m := sender.Message{ID: 42, Channel: "email", Recipient: "ana@example.net", Payload: json.RawMessage(`{"subject":"s","text":"t"}`)}
	ctx := context.Background()
	e1, err := email.Build(ctx, m, email.Defaults{From: "noreply@example.com", MessageIDKey: idtag.StaticKey(key)})
	if err != nil {
		t.Fatal(err)
	}
	e2, _ := email.Build(ctx, m, email.Defaults{From: "noreply@example.com", MessageIDKey: idtag.StaticKey(key)})
	if e1.MessageID != e2.MessageID || !strings.HasPrefix(e1.MessageID, "<herald-42.") || !strings.HasSuffix(e1.MessageID, "@example.com>") {
		t.Fatalf("Message-ID %q, then %q", e1.MessageID, e2.MessageID)
	}
	for _, c := range []struct {
		msgID          string
		keys           [][]byte
		signed, parsed bool
	}{
		{e1.MessageID, [][]byte{key}, true, true},
		{strings.Trim(e1.MessageID, "<>"), [][]byte{old, key}, true, true}, // rotation; without brackets
		{e1.MessageID, [][]byte{old}, false, true},
		{e1.MessageID, nil, false, true},
		{"<herald-42@example.com>", [][]byte{key}, false, false},                 // no tag: not herald's
		{"<herald-43" + e1.MessageID[10:], [][]byte{key}, false, true},           // another id, the same tag
		{"<herald-42.abcdefghijklmnop@example.com>", [][]byte{key}, false, true}, // a made-up tag
		{"<CAxyz@mail.gmail.com>", [][]byte{key}, false, false},
	} {
		id, signed, ok := email.ParseMessageID(c.msgID, c.keys)
		if signed != c.signed || ok != c.parsed || (ok && id != 42 && !strings.HasPrefix(c.msgID, "<herald-43")) {
			t.Errorf("%q: id %d signed %v ok %v, want signed %v ok %v", c.msgID, id, signed, ok, c.signed, c.parsed)
		}
	}
	_, err = email.Build(ctx, m, email.Defaults{From: "noreply@example.com"})
	if f := sender.Classify(err); f.Class != sender.ClassConfiguration {
		t.Fatalf("without a key: %v", err)
	}
}

// Each address once: copies naming the recipient or an earlier copy (letter case
// aside) are left out, the first spelling kept, so SendGrid does not refuse the
// message and an SMTP server is not asked twice.
func TestAnAddressIsCopiedOnce(t *testing.T) {
	m := sender.Message{ID: 1, Channel: "email", Recipient: "ana@example.net", Payload: json.RawMessage(
		`{"subject":"s","text":"t","cc":["ANA@example.net","bo@example.net","Bo@Example.net"],"bcc":["bo@example.net","cy@example.net","cy@example.net"]}`)}
	e, err := email.Build(context.Background(), m, email.Defaults{From: "noreply@example.com", MessageIDKey: idtag.StaticKey([]byte("a key"))})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.Cc, ",") + " / " + strings.Join(e.Bcc, ","); got != "bo@example.net / cy@example.net" {
		t.Fatalf("cc / bcc: %s", got)
	}
}
