package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// environ is the one reader of herald's settings from the environment. A variable
// that is unset or empty gives the default; one that is set but does not parse is
// remembered (err), so a typo is an error rather than a silent default; and the names
// read are remembered, so that a HERALD_ variable nothing read (a misspelt name, a
// channel without a sender) can be reported (unread).
type environ struct {
	errs  []error
	read  map[string]bool
	files []string // the secret files read (NAME_FILE), in order
}

// getenv is os.Getenv, remembering that name was read.
func (e *environ) getenv(name string) string {
	if e.read == nil {
		e.read = map[string]bool{}
	}
	e.read[name] = true
	return os.Getenv(name)
}

// unread lists the HERALD_ variables set in the environment that nothing has read,
// sorted; not the build and test tools' own (toolNames).
func (e *environ) unread() []string {
	var names []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "HERALD_") && !e.read[name] && !toolNames[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// toolNames are HERALD_ variables that the Makefile and the tests read, not herald.
var toolNames = map[string]bool{"HERALD_TERN": true, "HERALD_DEVDB_DIR": true, "HERALD_UPDATE_SCHEMA": true, "HERALD_UPDATE_PUBLIC_SUFFIXES": true}

func (e *environ) fail(format string, args ...any) {
	e.errs = append(e.errs, fmt.Errorf(format, args...))
}

// str returns the variable, or def when it is unset or empty.
func (e *environ) str(name, def string) string {
	if v := e.getenv(name); v != "" {
		return v
	}
	return def
}

// boolean returns the variable as true or false.
func (e *environ) boolean(name string, def bool) bool {
	switch v := e.getenv(name); v {
	case "":
		return def
	case "true":
		return true
	case "false":
		return false
	default:
		e.fail("%s=%q: want true or false", name, v)
		return def
	}
}

// int returns the variable as a whole number.
func (e *environ) int(name string, def int) int {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		e.fail("%s=%q is not a whole number", name, v)
		return def
	}
	return n
}

// duration returns the variable as a non-negative duration such as 30s.
func (e *environ) duration(name string, def time.Duration) time.Duration {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		e.fail("%s=%q is not a duration such as 30s", name, v)
		return def
	}
	return d
}

// number returns the variable as a non-negative number.
func (e *environ) number(name string, def float64) float64 {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		e.fail("%s=%q is not a non-negative number", name, v)
		return def
	}
	return f
}

// secret returns a secret from the variable NAME, or from the file named by
// NAME_FILE (one trailing newline dropped). Secrets are never logged or printed.
func (e *environ) secret(name string) string {
	v, file := e.getenv(name), e.getenv(name+"_FILE")
	switch {
	case v != "" && file != "":
		e.fail("set %s or %s_FILE, not both", name, name)
	case file != "":
		e.files = append(e.files, file)
		b, err := os.ReadFile(file)
		if err != nil {
			e.fail("%s_FILE: %v", name, err)
			return ""
		}
		return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	}
	return v
}

// withPrefix lists the variables whose names start with prefix, by the rest of the
// name, skipping empty values.
func (e *environ) withPrefix(prefix string) map[string]string {
	out := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" && v != "" {
			out[rest] = e.getenv(k)
		}
	}
	return out
}

// err is the first variable that did not parse, if any.
func (e *environ) err() error {
	if len(e.errs) == 0 {
		return nil
	}
	return e.errs[0]
}
