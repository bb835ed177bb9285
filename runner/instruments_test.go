package runner

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Every metric the shipped Grafana dashboard queries is one the runner exposes (a
// renamed metric would leave a panel empty without an error anywhere).
func TestDashboardQueriesExistingMetrics(t *testing.T) {
	labels := exposedLabels(t)
	exposed := map[string]bool{}
	for name := range labels {
		exposed[name] = true
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

// The shipped Prometheus alerting rules (docs/deploy/alerts.yml) are well formed
// (every rule an alert with an expression, a severity and a summary; brackets
// balanced; durations Prometheus reads) and query only metrics the runner exposes,
// grouped and matched by labels those metrics carry.
func TestAlertRulesQueryExistingMetrics(t *testing.T) {
	labels := exposedLabels(t)
	raw, err := os.ReadFile("../docs/deploy/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Alert, Expr, For    string
				Labels, Annotations map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	metricName := regexp.MustCompile(`\bherald_[a-z_]+`)
	grouping := regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	matcher := regexp.MustCompile(`\{([^}]*)\}`)
	rules := 0
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			rules++
			if r.Alert == "" || r.Expr == "" || (r.Labels["severity"] != "critical" && r.Labels["severity"] != "warning") || r.Annotations["summary"] == "" {
				t.Errorf("rule %+v: needs alert, expr, severity critical or warning, summary", r)
			}
			if r.For != "" && !regexp.MustCompile(`^[0-9]+[smh]$`).MatchString(r.For) {
				t.Errorf("%s: for %q is not a Prometheus duration", r.Alert, r.For)
			}
			for _, pair := range []string{"()", "[]", "{}"} {
				if strings.Count(r.Expr, pair[:1]) != strings.Count(r.Expr, pair[1:]) {
					t.Errorf("%s: unbalanced %s in %q", r.Alert, pair, r.Expr)
				}
			}
			usable := map[string]bool{}
			names := metricName.FindAllString(r.Expr, -1)
			if len(names) == 0 {
				t.Errorf("%s queries no herald metric", r.Alert)
			}
			for _, n := range names {
				base, histogram := strings.CutSuffix(n, "_bucket")
				set, ok := labels[base]
				if !ok {
					t.Errorf("%s queries %s, which the runner does not expose", r.Alert, n)
				}
				for l := range set {
					usable[l] = true
				}
				if histogram {
					usable["le"] = true
				}
			}
			var used []string
			for _, g := range grouping.FindAllStringSubmatch(r.Expr, -1) {
				used = append(used, strings.Split(g[1], ",")...)
			}
			for _, mt := range matcher.FindAllStringSubmatch(r.Expr, -1) {
				for _, kv := range strings.Split(mt[1], ",") {
					name, _, _ := strings.Cut(kv, "=")
					used = append(used, strings.TrimRight(name, "!~"))
				}
			}
			for _, l := range used {
				if l = strings.TrimSpace(l); l != "" && !usable[l] {
					t.Errorf("%s: label %q is not on the metrics it queries", r.Alert, l)
				}
			}
		}
	}
	if rules < 5 {
		t.Fatalf("found %d rules", rules)
	}
}

// exposedLabels is every metric the runner registers, with its label names.
// Series of labelled families exist once used, so each is used once.
func exposedLabels(t *testing.T) map[string]map[string]bool {
	t.Helper()
	m := newInstruments()
	m.claimed.WithLabelValues("email").Add(0)
	m.sent.WithLabelValues("email").Add(0)
	m.failed.WithLabelValues("email", "transient").Add(0)
	m.held.WithLabelValues("hooks", "host_busy").Add(0)
	m.inDoubt.WithLabelValues("email").Add(0)
	m.events.WithLabelValues("sendgrid", "bounced").Add(0)
	m.intake.WithLabelValues("shop", "429", "recipient_limit_exceeded").Add(0)
	m.queueDepth.WithLabelValues("email", "queued").Set(0)
	m.logLag.WithLabelValues("herald.callbacks").Set(0)
	m.sendSeconds.WithLabelValues("email").Observe(0)
	m.paused.WithLabelValues("email").Set(0)
	m.quiet.WithLabelValues("email").Set(0)
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]map[string]bool{}
	for _, f := range fams {
		set := map[string]bool{}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				set[l.GetName()] = true
			}
		}
		labels[f.GetName()] = set
	}
	return labels
}
