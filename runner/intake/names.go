package intake

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// repeatedName finds the first object member whose name its object already has, as
// the path to it (`payload.text`, `[2].recipient`) and the name; ok is false when
// every object's names are unique. body must be valid JSON (decoded before). RFC 8259
// leaves such an object to each reader: Go and PostgreSQL keep the last member, many
// readers the first, so a proxy or filter in front of herald could judge one value
// while herald stores another. Names are compared unescaped ("a" is "\u0061").
func repeatedName(body []byte) (path, name string, ok bool) {
	var stack []nameLevel
	for i := 0; i < len(body); i++ {
		top := len(stack) - 1
		switch body[i] {
		case '"':
			j, escaped := i+1, false
			for ; j < len(body) && body[j] != '"'; j++ {
				if body[j] == '\\' {
					j, escaped = j+1, true
				}
			}
			if j >= len(body) {
				return "", "", false // not JSON: the decoder says why
			}
			if top >= 0 && stack[top].key {
				n := body[i+1 : j]
				if escaped {
					var s string
					json.Unmarshal(body[i:j+1], &s)
					n = []byte(s)
				}
				if stack[top].repeats(n) {
					return namePath(stack), string(n), true
				}
			}
			i = j
		case '{', '[':
			if len(stack) < cap(stack) { // a level used before: keep its names' array
				stack = stack[:top+2]
				stack[top+1] = nameLevel{names: stack[top+1].names[:0]}
			} else {
				stack = append(stack, nameLevel{})
			}
			stack[top+1].object = body[i] == '{'
			stack[top+1].key = stack[top+1].object
		case '}', ']':
			stack = stack[:top]
		case ',':
			if stack[top].object {
				stack[top].key = true
			} else {
				stack[top].index++
			}
		}
	}
	return "", "", false
}

// nameLevel is one object or array open in repeatedName's scan.
type nameLevel struct {
	object bool
	key    bool     // object: the next string is a member's name
	names  [][]byte // object: its names so far
	seen   map[string]bool
	index  int // array: the element being read
}

// repeats records the member name n of an object and reports whether it had it
// already; past 16 names it keeps them in a map.
func (l *nameLevel) repeats(n []byte) bool {
	l.key = false
	if l.seen != nil {
		l.names = append(l.names[:0], n) // the member's name, for the path
		if l.seen[string(n)] {
			return true
		}
		l.seen[string(n)] = true
		return false
	}
	for _, m := range l.names {
		if bytes.Equal(m, n) {
			l.names = append(l.names, n)
			return true
		}
	}
	l.names = append(l.names, n)
	if len(l.names) > 16 {
		l.seen = make(map[string]bool, 2*len(l.names))
		for _, m := range l.names {
			l.seen[string(m)] = true
		}
		l.names = append(l.names[:0], n)
	}
	return false
}

// namePath is the path to the member being read in the innermost level of stack.
func namePath(stack []nameLevel) string {
	var b strings.Builder
	for _, l := range stack {
		switch {
		case !l.object:
			b.WriteString("[" + strconv.Itoa(l.index) + "]")
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.Write(l.names[len(l.names)-1])
		}
	}
	return b.String()
}
