package runner

import "testing"

// nullable turns empty provider ids into NULLs: the whole array when every id is
// empty, element by element when some are; ids are passed on as they are otherwise.
// (tests/runner_test.go checks what the database stores.)
func TestReceipts(t *testing.T) {
	if got, ok := nullable([]string{"a", "b"}).([]string); !ok || len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("nullable(a, b) = %#v, want the ids as they are", nullable([]string{"a", "b"}))
	}
	if got, ok := nullable([]string{"", ""}).([]string); !ok || got != nil {
		t.Errorf(`nullable("", "") = %#v, want a nil []string (a NULL array)`, nullable([]string{"", ""}))
	}
	got, ok := nullable([]string{"a", "", "c"}).([]*string)
	if !ok || len(got) != 3 || got[0] == nil || *got[0] != "a" || got[1] != nil || got[2] == nil || *got[2] != "c" {
		t.Errorf(`nullable(a, "", c) = %#v, want a, NULL, c`, nullable([]string{"a", "", "c"}))
	}
}
