package tracecontext

import "testing"

// The W3C specification's example is valid; what is malformed, reserved, zero or
// carries a line break (a header injection) is not passed on.
func TestValid(t *testing.T) {
	for s, want := range map[string]bool{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":              true,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00":              true,
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01":              false, // upper case
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":              false, // version ff
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01":              false,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01":              false,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\nX-Evil: 1": false,
		"": false,
	} {
		if got := ValidParent(s); got != want {
			t.Errorf("ValidParent(%q) = %v, want %v", s, got, want)
		}
	}
	for s, want := range map[string]bool{
		"rojo=00f067aa0ba902b7,congo=t61rcWkgMzE": true,
		"a=b\r\nX-Evil: 1":                        false,
		"":                                        false,
	} {
		if got := ValidState(s); got != want {
			t.Errorf("ValidState(%q) = %v, want %v", s, got, want)
		}
	}
}
