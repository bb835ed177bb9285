package main

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
)

// series is one line of a chart: y values at x positions.
type series struct {
	Name string
	X, Y []float64
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"}

// writeLineChart writes an SVG line chart of the series to path.
func writeLineChart(path, title, xLabel, yLabel string, ss []series) error {
	return writeChart(path, title, xLabel, yLabel, ss, nil)
}

// writeChart is writeLineChart with optional labels for the x positions 0, 1, 2…
// (in place of a numeric axis).
func writeChart(path, title, xLabel, yLabel string, ss []series, xTicks []string) error {
	const w, h, left, right, top, bottom = 760.0, 380.0, 70.0, 20.0, 40.0, 50.0
	maxX, maxY := 0.0, 0.0
	for _, s := range ss {
		for i := range s.X {
			maxX, maxY = math.Max(maxX, s.X[i]), math.Max(maxY, s.Y[i])
		}
	}
	if maxX == 0 {
		maxX = 1
	}
	if maxY == 0 {
		maxY = 1
	}
	maxY *= 1.1
	px := func(x float64) float64 { return left + x/maxX*(w-left-right) }
	py := func(y float64) float64 { return h - bottom - y/maxY*(h-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="22" font-size="15">%s</text>`+"\n", left, esc(title))
	for i := 0; i <= 4; i++ {
		y := maxY * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n",
			left, w-right, py(y), py(y), left-6, py(y)+4, short(y))
		if xTicks == nil {
			x := maxX * float64(i) / 4
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(x), h-bottom+18, short(x))
		}
	}
	for i, label := range xTicks {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(float64(i)), h-bottom+18, esc(label))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", (left+w-right)/2, h-10, esc(xLabel))
	fmt.Fprintf(&b, `<text x="14" y="%.1f" transform="rotate(-90 14 %.1f)" text-anchor="middle">%s</text>`+"\n", (top+h-bottom)/2, (top+h-bottom)/2, esc(yLabel))
	for i, s := range ss {
		var pts []string
		for j := range s.X {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[j]), py(s.Y[j])))
		}
		c := palette[i%len(palette)]
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="12" height="3" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`+"\n",
			w-right-200, top+float64(i)*16, c, w-right-184, top+float64(i)*16+5, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// writeHistogram writes an SVG histogram of latencies (milliseconds, log-spaced
// buckets) for each named sample set.
func writeHistogram(path, title string, samples map[string][]float64) error {
	edges := []float64{0.25, 0.5, 1, 2, 3, 5, 10, 20, 50, 100, 250, 1000}
	var ss []series
	names := make([]string, 0, len(samples))
	for name := range samples {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := samples[name]
		counts := make([]float64, len(edges))
		for _, ms := range v {
			for i, e := range edges {
				if ms <= e || i == len(edges)-1 {
					counts[i]++
					break
				}
			}
		}
		s := series{Name: name}
		for i := range edges {
			s.X = append(s.X, float64(i))
			s.Y = append(s.Y, 100*counts[i]/math.Max(1, float64(len(v))))
		}
		ss = append(ss, s)
	}
	var labels []string
	for _, e := range edges {
		labels = append(labels, "≤"+short(e))
	}
	return writeChart(path, title, "latency, milliseconds (buckets)", "% of messages", ss, labels)
}

func short(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v == math.Trunc(v) || v >= 10:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
