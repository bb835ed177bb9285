package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sink"
)

// senderSpecs collects channel=spec pairs from HERALD_SENDER_<CHANNEL> variables
// and --sender flags (a flag wins over the variable for the same channel).
type senderSpecs map[string]string

func (s senderSpecs) String() string {
	var parts []string
	for ch, spec := range s {
		parts = append(parts, ch+"="+spec)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// Set parses one --sender CHANNEL=SPEC.
func (s senderSpecs) Set(v string) error {
	ch, spec, ok := strings.Cut(v, "=")
	if !ok || ch == "" || spec == "" {
		return fmt.Errorf("want CHANNEL=SPEC, e.g. email=sink:-, got %q", v)
	}
	s[strings.ToLower(ch)] = spec
	return nil
}

func sendersFromEnv() senderSpecs {
	s := senderSpecs{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if ch, ok := strings.CutPrefix(k, "HERALD_SENDER_"); ok && ch != "" && v != "" {
			s[strings.ToLower(ch)] = v
		}
	}
	return s
}

// closer is implemented by senders that hold a file or connection.
type closer interface{ Close() error }

// buildSender turns a spec into a Sender:
//
//	sink:-          one JSON line per delivery on standard output
//	sink:PATH       the same, appended to the file PATH
//	noop            accept and drop (benchmarks)
//	noop:DURATION   accept and drop after DURATION (a slow provider, for tests)
func buildSender(spec string) (sender.Sender, error) {
	kind, arg, _ := strings.Cut(spec, ":")
	switch kind {
	case "sink":
		if arg == "" {
			return nil, fmt.Errorf("sender %q: sink needs a path or - (sink:-)", spec)
		}
		return sink.Open(arg)
	case "noop":
		var d time.Duration
		if arg != "" {
			var err error
			if d, err = time.ParseDuration(arg); err != nil || d < 0 {
				return nil, fmt.Errorf("sender %q: noop takes a duration such as noop:250ms", spec)
			}
		}
		return sink.Noop{Delay: d}, nil
	default:
		return nil, fmt.Errorf("sender %q: unknown kind %q (known: sink, noop)", spec, kind)
	}
}
