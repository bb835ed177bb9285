package runner

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every metric the shipped Grafana dashboard queries is one the runner exposes (a
// renamed metric would leave a panel empty without an error anywhere).
func TestDashboardQueriesExistingMetrics(t *testing.T) {
	m := newInstruments()
	// Series of labelled families exist once used; use each once.
	m.claimed.WithLabelValues("email").Add(0)
	m.sent.WithLabelValues("email").Add(0)
	m.failed.WithLabelValues("email", "transient").Add(0)
	m.queueDepth.WithLabelValues("email", "queued").Set(0)
	m.sendSeconds.WithLabelValues("email").Observe(0)
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exposed := map[string]bool{}
	for _, f := range fams {
		exposed[f.GetName()] = true
	}
	dashboard, err := os.ReadFile("../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`\b(?:herald|go|process)_[a-z_]+`).FindAllString(string(dashboard), -1)
	if len(names) < 10 {
		t.Fatalf("found only %v in the dashboard", names)
	}
	for _, n := range names {
		base := n
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suffix); ok && exposed[b] {
				base = b
			}
		}
		if !exposed[base] {
			t.Errorf("the dashboard queries %s, which the runner does not expose", n)
		}
	}
}
