package intake

import (
	"net/http"
	"testing"
)

// Tokens replaced while the intake serves never change whether it is open: an open
// intake does not start requiring tokens, and one with tokens is never opened by an
// empty list; either is refused and the tokens stay.
func TestSetTokensNeverOpensOrClosesTheIntake(t *testing.T) {
	open := Register(http.NewServeMux(), nil, Config{TokenConns: 1})
	if err := open.SetTokens([]Token{{Name: "shop", Secret: "s"}}); err == nil || len(*open.h.tokens.Load()) != 0 {
		t.Fatalf("an open intake took tokens: %v", err)
	}
	guarded := Register(http.NewServeMux(), nil, Config{TokenConns: 1, Tokens: []Token{{Name: "shop", Secret: "s"}}})
	if err := guarded.SetTokens(nil); err == nil || len(*guarded.h.tokens.Load()) != 1 {
		t.Fatalf("an empty list opened the intake: %v", err)
	}
	if err := guarded.SetTokens([]Token{{Name: "billing", Secret: "b"}}); err != nil || (*guarded.h.tokens.Load())[0].Name != "billing" {
		t.Fatalf("tokens not replaced: %v", err)
	}
}
