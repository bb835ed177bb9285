package intake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
)

// tokenNames is repeatedName written on encoding/json's tokens: slower (about 20
// times), obviously right, the reference the scanner is checked against.
func tokenNames(body []byte) (string, bool) {
	type level struct {
		names  map[string]bool
		member string
		index  int
		key    bool
	}
	var stack []level
	done := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].names != nil {
				stack[n-1].key = true
			} else {
				stack[n-1].index++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		top := len(stack) - 1
		if s, isString := tok.(string); isString && top >= 0 && stack[top].key {
			if stack[top].names[s] {
				var b strings.Builder
				for _, l := range stack[:top] {
					if l.names != nil {
						if b.Len() > 0 {
							b.WriteByte('.')
						}
						b.WriteString(l.member)
					} else {
						b.WriteString("[" + strconv.Itoa(l.index) + "]")
					}
				}
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(s)
				return b.String(), true
			}
			stack[top].names[s], stack[top].member, stack[top].key = true, s, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, level{names: map[string]bool{}, key: true})
		case json.Delim('['):
			stack = append(stack, level{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:top]
			done()
		default:
			done()
		}
	}
}

// randomJSON is a random JSON value of nested objects and arrays whose member names
// repeat often, some escaped ("\u0061" is "a").
func randomJSON(r *rand.Rand, depth int) string {
	names := []string{"a", "b", `\u0061`, "c", "x y", `q\"`, "k1", "k2"}
	switch k := r.Intn(6); {
	case depth > 4 || k < 2:
		return []string{`1`, `"s"`, `true`, `null`, `"a,b}"`, `"\\"`, `-1.5e3`}[r.Intn(7)]
	case k < 4:
		n := r.Intn(5)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = randomJSON(r, depth+1)
		}
		return "[" + strings.Join(parts, " , ") + "]"
	default:
		n := r.Intn(25)
		parts := make([]string, n)
		for i := range parts {
			nm := names[r.Intn(len(names))]
			if r.Intn(3) == 0 {
				nm = fmt.Sprintf("n%d", r.Intn(40))
			}
			parts[i] = `"` + nm + `" : ` + randomJSON(r, depth+1)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
}

// repeatedName finds the first repeated member name and its path as the reference
// does, on 5,000 random documents (about half with a repeat) and on hand-picked ones.
func TestRepeatedNameAgainstTokens(t *testing.T) {
	for _, c := range []struct{ in, path string }{
		{`{"a":1,"b":2}`, ""},
		{`{"a":1,"\u0061":2}`, "a"},
		{`{"a":{"x":1},"b":{"x":2}}`, ""},
		{`{"p":{"x":[1,{"y":1,"y":2}]}}`, "p.x[1].y"},
		{`[{"a":1},{"a":1,"b":[],"a":3}]`, "[1].a"},
		{`{"s":"{\"a\":1,\"a\":2}"}`, ""},
		{`{"a`, ""},
	} {
		if p, _, ok := repeatedName([]byte(c.in)); p != c.path || ok != (c.path != "") {
			t.Errorf("%s: %q %v, want %q", c.in, p, ok, c.path)
		}
	}
	r := rand.New(rand.NewSource(1))
	for range 5000 {
		b := []byte(randomJSON(r, 0))
		if !json.Valid(b) {
			t.Fatalf("the generator wrote invalid JSON: %s", b)
		}
		want, wok := tokenNames(b)
		if got, _, gok := repeatedName(b); want != got || wok != gok {
			t.Fatalf("%.2000s: %q %v, want %q %v", b, got, gok, want, wok)
		}
	}
}

// message is a message as producers send it; `go test -run - -bench
// 'Name|Decode|BatchLen' ./runner/intake` compares the check of its names with
// decoding it, alone and in a batch of 1,000.
var message = []byte(`{"channel":"email","recipient":"ana@example.com","payload":{"subject":"Your receipt","text":"Hello Ana, thanks for your order 12345.","html":"<p>Hello Ana</p>"},"idempotency_key":"order-12345","metadata":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}`)

// BenchmarkRepeatedName checks one message's names.
func BenchmarkRepeatedName(b *testing.B) {
	for b.Loop() {
		repeatedName(message)
	}
}

// BenchmarkDecodeMessage decodes one message (its names checked too).
func BenchmarkDecodeMessage(b *testing.B) {
	for b.Loop() {
		DecodeMessage(message)
	}
}

// BenchmarkRepeatedNameBatch1000 checks the names of a batch of 1,000 messages.
func BenchmarkRepeatedNameBatch1000(b *testing.B) {
	batch := []byte("[" + strings.TrimSuffix(strings.Repeat(string(message)+",", 1000), ",") + "]")
	b.SetBytes(int64(len(batch)))
	for b.Loop() {
		repeatedName(batch)
	}
}

// BenchmarkBatchLen1000 decodes a batch of 1,000 messages (its names checked too).
func BenchmarkBatchLen1000(b *testing.B) {
	batch := []byte("[" + strings.TrimSuffix(strings.Repeat(string(message)+",", 1000), ",") + "]")
	b.SetBytes(int64(len(batch)))
	for b.Loop() {
		batchLen(batch, 10000)
	}
}
