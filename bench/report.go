package main

import (
	"fmt"
	"io"
	"time"
)

// row is one line of the report: a figure measured for herald and for its baseline
// in the same run.
type row struct {
	Figure   string      `json:"figure"`
	Unit     string      `json:"unit"`
	Herald   float64     `json:"herald"`
	Baseline float64     `json:"baseline"`
	Ratio    float64     `json:"ratio"`
	Target   float64     `json:"target,omitempty"` // minimum ratio herald must reach; 0 = none
	Limit    float64     `json:"limit,omitempty"`  // maximum value herald may show (absolute figures); 0 = none
	Met      *bool       `json:"met,omitempty"`
	Rounds   [][]float64 `json:"rounds"` // herald's and the baseline's rate per round (ratio: median of their quotients)
}

// report is everything one run measured.
type report struct {
	Machine string    `json:"machine"`
	Options string    `json:"options"`
	Started time.Time `json:"started"`
	Rows    []row     `json:"rows"`
}

// ratioRow compares herald with its baseline. Herald and baseline alternate, so
// round i of each ran side by side: the ratio is the median of the per-round ratios
// (a slow stretch of a shared machine hits both sides of a pair), not the ratio of
// the two medians; the herald and baseline columns are the medians of their rates.
func ratioRow(figure, unit string, herald, baseline result, target float64) row {
	r := row{Figure: figure, Unit: unit, Herald: herald.median(), Baseline: baseline.median(), Target: target,
		Rounds: [][]float64{herald.rates, baseline.rates}}
	paired := result{}
	for i := range min(len(herald.rates), len(baseline.rates)) {
		if baseline.rates[i] > 0 {
			paired.rates = append(paired.rates, herald.rates[i]/baseline.rates[i])
		}
	}
	r.Ratio = paired.median()
	if target > 0 {
		met := r.Ratio >= target
		r.Met = &met
	}
	return r
}

// ratioRowValues is ratioRow for single measured values.
func ratioRowValues(figure, unit string, herald, baseline, target float64) row {
	return ratioRow(figure, unit, result{rates: []float64{herald}}, result{rates: []float64{baseline}}, target)
}

// absRow is a figure with no baseline, optionally with a limit it must not exceed.
func absRow(figure, unit string, v, limit float64) row {
	r := row{Figure: figure, Unit: unit, Herald: v, Limit: limit}
	if limit > 0 {
		met := v <= limit
		r.Met = &met
	}
	return r
}

func (rep report) print(w io.Writer) {
	fmt.Fprintf(w, "\nmachine: %s\noptions: %s\n\n", rep.Machine, rep.Options)
	fmt.Fprintf(w, "| figure | herald | baseline | ratio | target |\n|---|---|---|---|---|\n")
	for _, r := range rep.Rows {
		target := "—"
		if r.Met != nil {
			verdict := "met"
			if !*r.Met {
				verdict = "NOT met"
			}
			if r.Limit > 0 {
				target = fmt.Sprintf("≤ %g %s", r.Limit, verdict)
			} else {
				target = fmt.Sprintf("≥ %.2f %s", r.Target, verdict)
			}
		}
		if r.Baseline == 0 && r.Target == 0 {
			fmt.Fprintf(w, "| %s | %s %s | — | — | %s |\n", r.Figure, num(r.Herald), r.Unit, target)
			continue
		}
		fmt.Fprintf(w, "| %s | %s %s | %s %s | %.2f | %s |\n", r.Figure, num(r.Herald), r.Unit, num(r.Baseline), r.Unit, r.Ratio, target)
	}
}

func num(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
