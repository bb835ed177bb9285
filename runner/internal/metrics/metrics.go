// Package metrics is a small Prometheus registry: counters, gauges and histograms
// with labels, written in the Prometheus text exposition format (version 0.0.4).
// It exists so the runner exposes /metrics without the client library's
// dependencies; it has what the runner uses and nothing more.
package metrics

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Registry holds metric families and writes them out.
type Registry struct {
	mu       sync.Mutex
	families []*family
}

type kind string

type family struct {
	name, help string
	kind       kind
	labels     []string
	buckets    []float64
	mu         sync.Mutex
	series     map[string]*series
}

type series struct {
	labelValues []string
	value       float64  // counter, gauge; histogram sum
	count       uint64   // histogram
	buckets     []uint64 // histogram, cumulative at write time
}

func (r *Registry) add(f *family) *family {
	f.series = map[string]*series{}
	r.mu.Lock()
	r.families = append(r.families, f)
	r.mu.Unlock()
	return f
}

// Counter is a counter family.
type Counter struct{ f *family }

// Gauge is a gauge family.
type Gauge struct{ f *family }

// Histogram is a histogram family.
type Histogram struct{ f *family }

// Counter registers a counter with the given label names.
func (r *Registry) Counter(name, help string, labels ...string) Counter {
	return Counter{r.add(&family{name: name, help: help, kind: "counter", labels: labels})}
}

// Gauge registers a gauge with the given label names.
func (r *Registry) Gauge(name, help string, labels ...string) Gauge {
	return Gauge{r.add(&family{name: name, help: help, kind: "gauge", labels: labels})}
}

// Histogram registers a histogram with upper bucket bounds (ascending) and labels.
func (r *Registry) Histogram(name, help string, buckets []float64, labels ...string) Histogram {
	return Histogram{r.add(&family{name: name, help: help, kind: "histogram", labels: labels, buckets: buckets})}
}

func (f *family) get(values []string) *series {
	if len(values) != len(f.labels) {
		panic(fmt.Sprintf("metrics: %s takes %d label values, got %d", f.name, len(f.labels), len(values)))
	}
	key := strings.Join(values, "\xff")
	s := f.series[key]
	if s == nil {
		s = &series{labelValues: append([]string(nil), values...)}
		if f.kind == "histogram" {
			s.buckets = make([]uint64, len(f.buckets))
		}
		f.series[key] = s
	}
	return s
}

// Add adds v (≥ 0) to the counter with these label values.
func (c Counter) Add(v float64, labelValues ...string) {
	c.f.mu.Lock()
	c.f.get(labelValues).value += v
	c.f.mu.Unlock()
}

// Inc adds 1.
func (c Counter) Inc(labelValues ...string) { c.Add(1, labelValues...) }

// Set sets the gauge with these label values.
func (g Gauge) Set(v float64, labelValues ...string) {
	g.f.mu.Lock()
	g.f.get(labelValues).value = v
	g.f.mu.Unlock()
}

// Reset forgets every series of the gauge (before setting a fresh sample).
func (g Gauge) Reset() {
	g.f.mu.Lock()
	g.f.series = map[string]*series{}
	g.f.mu.Unlock()
}

// Observe records one value in the histogram with these label values.
func (h Histogram) Observe(v float64, labelValues ...string) {
	h.f.mu.Lock()
	s := h.f.get(labelValues)
	s.count++
	s.value += v
	for i, b := range h.f.buckets {
		if v <= b {
			s.buckets[i]++
			break
		}
	}
	h.f.mu.Unlock()
}

// Value returns the counter's or gauge's current value (for tests and logs).
func (c Counter) Value(labelValues ...string) float64 {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	return c.f.get(labelValues).value
}

// WriteTo writes every family in the text exposition format.
func (r *Registry) WriteTo(w io.Writer) (int64, error) {
	var b strings.Builder
	r.mu.Lock()
	fams := append([]*family(nil), r.families...)
	r.mu.Unlock()
	for _, f := range fams {
		f.mu.Lock()
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.kind)
		keys := make([]string, 0, len(f.series))
		for k := range f.series {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s := f.series[k]
			switch f.kind {
			case "histogram":
				var cum uint64
				for i, ub := range f.buckets {
					cum += s.buckets[i]
					fmt.Fprintf(&b, "%s_bucket%s %d\n", f.name, labels(f.labels, s.labelValues, "le", num(ub)), cum)
				}
				fmt.Fprintf(&b, "%s_bucket%s %d\n", f.name, labels(f.labels, s.labelValues, "le", "+Inf"), s.count)
				fmt.Fprintf(&b, "%s_sum%s %s\n", f.name, labels(f.labels, s.labelValues, "", ""), num(s.value))
				fmt.Fprintf(&b, "%s_count%s %d\n", f.name, labels(f.labels, s.labelValues, "", ""), s.count)
			default:
				fmt.Fprintf(&b, "%s%s %s\n", f.name, labels(f.labels, s.labelValues, "", ""), num(s.value))
			}
		}
		f.mu.Unlock()
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

func num(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func labels(names, values []string, extraName, extraValue string) string {
	if len(names) == 0 && extraName == "" {
		return ""
	}
	var parts []string
	for i, n := range names {
		parts = append(parts, fmt.Sprintf("%s=%q", n, values[i]))
	}
	if extraName != "" {
		parts = append(parts, fmt.Sprintf("%s=%q", extraName, extraValue))
	}
	return "{" + strings.Join(parts, ",") + "}"
}
