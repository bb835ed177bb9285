package events

import (
	"net/url"
	"testing"
)

// Twilio's published example of its request signature: the algorithm, pinned to
// Twilio's definition rather than to itself.
func TestTwilioSignatureMatchesTwilioExample(t *testing.T) {
	form := url.Values{"CallSid": {"CA1234567890ABCDE"}, "Caller": {"+14158675309"}, "Digits": {"1234"},
		"From": {"+14158675309"}, "To": {"+18005551212"}}
	if got := TwilioSignature("12345", "https://mycompany.com/myapp.php?foo=1&bar=2", form); got != "RSOYDt4T1cUTdK1PDd93/VVr8B8=" {
		t.Fatalf("signature %s", got)
	}
}
