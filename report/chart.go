package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// chartSpec says which metrics.jsonl fields share one chart. The first key present in a
// run's metrics draws the first series, and so on; Band names the field whose value is drawn
// as a +-band around the first series (reward_std around reward_mean).
type chartSpec struct {
	Title    string
	YLabel   string
	Keys     []string
	Band     string
	Required bool // the page notes when a run logs none of Keys
}

// chartSpecs is the layout of the training-curves section, most telling first. Fields not
// named here get a chart of their own after these.
var chartSpecs = []chartSpec{
	{Title: "Reward", YLabel: "reward", Keys: []string{"reward_mean", "reward"}, Band: "reward_std", Required: true},
	{Title: "Exact match", YLabel: "fraction", Keys: []string{"em", "f1", "format_rate"}, Required: true},
	{Title: "KL divergence", YLabel: "KL", Keys: []string{"approx_kl", "ppo_kl", "ref_kl", "kl", "kl_loss", "kl_penalty"}, Required: true},
	{Title: "Entropy", YLabel: "nats / token", Keys: []string{"entropy"}, Required: true},
	{Title: "Response length", YLabel: "tokens", Keys: []string{"response_length", "response_len", "agent_tokens"}, Required: true},
	{Title: "Turns per episode", YLabel: "turns", Keys: []string{"turns"}},
	{Title: "Tool calls per episode", YLabel: "calls", Keys: []string{"searches", "tool_calls", "tool_errors"}},
	{Title: "Cut by a limit", YLabel: "fraction", Keys: []string{"truncated_rate"}},
	{Title: "Clip fraction", YLabel: "fraction", Keys: []string{"clipfrac", "pg_clipfrac"}},
	{Title: "Policy loss", YLabel: "loss", Keys: []string{"pg_loss", "policy_loss", "loss"}},
	{Title: "Value loss", YLabel: "loss", Keys: []string{"value_loss", "vf_loss"}},
	{Title: "Explained variance", YLabel: "1 − Var(R−V)/Var(R)", Keys: []string{"explained_variance", "explained_var"}},
	{Title: "Gradient norm", YLabel: "norm", Keys: []string{"grad_norm", "critic_grad_norm"}},
	{Title: "Learning rate", YLabel: "lr", Keys: []string{"lr", "critic_lr"}},
	{Title: "Throughput", YLabel: "tokens / s", Keys: []string{"tokens_per_s"}},
}

// notPlotted are fields that are not curves: the x axis and wall-clock timestamps.
var notPlotted = map[string]bool{"step": true, "time": true, "timestamp": true, "wall_time": true, "unix_time": true}

// seriesColors is the palette of a chart's lines, in order.
var seriesColors = []string{"#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2"}

// Chart geometry in SVG user units: the whole chart and the plot area's margins.
const (
	chartW, chartH                             = 440, 250
	marginL, marginR, marginT, marginB         = 58, 14, 26, 40
	maxPointMarks                              = 80 // above this many values a line has no dots
	smoothFrom                                 = 30 // from this many rows on, a moving average is drawn over the faint raw line
	smoothWeight                               = 0.8
	plotX0, plotY0, plotX1, plotY1     float64 = marginL, marginT, chartW - marginR, chartH - marginB
)

// chartView is one chart ready for the template: every coordinate already in SVG units.
type chartView struct {
	Title, XLabel, YLabel string
	W, H                  int
	X0, Y0, X1, Y1        float64 // the plot area
	TickEnd               float64 // lower end of the x-axis tick marks
	XTicks, YTicks        []tickView
	Series                []seriesView
	Band                  string // polygon points of the +-band, "" for none
	BandName              string
	Smoothed              bool // the series carry a moving average
}

type tickView struct {
	Pos   float64 // x for XTicks, y for YTicks
	Label string
}

type seriesView struct {
	Name, Color string
	Path        string // the SVG path's d attribute: the raw values
	Smooth      string // the moving average's path, "" when the raw line is drawn alone
	Points      []pointView
	Last        string // the last value, formatted
}

type pointView struct {
	X, Y  float64
	Title string
}

// buildCharts lays out the charts of the metrics, and returns the names of the required
// charts the run has no data for.
func buildCharts(m *metrics) (charts []chartView, absent []string) {
	if m == nil || len(m.Rows) == 0 {
		return nil, nil
	}
	xs, xlabel := xValues(m)
	has := map[string]bool{}
	for _, f := range m.Fields {
		has[f] = true
	}
	used := map[string]bool{}
	for _, spec := range chartSpecs {
		var keys []string
		for _, k := range spec.Keys {
			if has[k] && !used[k] {
				keys = append(keys, k)
				used[k] = true
			}
		}
		if len(keys) == 0 {
			if spec.Required {
				absent = append(absent, spec.Title+" ("+strings.Join(spec.Keys, ", ")+")")
			}
			continue
		}
		band := ""
		if spec.Band != "" && has[spec.Band] {
			band = spec.Band
			used[band] = true
		}
		charts = append(charts, lineChart(spec.Title, xlabel, spec.YLabel, xs, m.Rows, keys, band))
	}
	// Durations ("step_time_s", "gen_time", "elapsed_s") share one chart.
	var times []string
	for _, f := range m.Fields {
		if !used[f] && !notPlotted[f] && isDuration(f) {
			times = append(times, f)
			used[f] = true
		}
	}
	if len(times) > 0 {
		charts = append(charts, lineChart("Time per step", xlabel, "seconds", xs, m.Rows, times, ""))
	}
	for _, f := range m.Fields {
		if used[f] || notPlotted[f] {
			continue
		}
		charts = append(charts, lineChart(f, xlabel, f, xs, m.Rows, []string{f}, ""))
	}
	return charts, absent
}

// xValues is the x coordinate of every row: its "step" when every row has one, else its
// 1-based line number among the rows.
func xValues(m *metrics) ([]float64, string) {
	xs := make([]float64, len(m.Rows)) // (rows,)
	for i, r := range m.Rows {
		s, ok := r["step"]
		if !ok {
			for j := range xs {
				xs[j] = float64(j + 1)
			}
			return xs, "row"
		}
		xs[i] = s
	}
	return xs, "step"
}

// lineChart draws keys against xs as lines (broken where a row lacks the key), with a
// +-band of the field band around the first line when band is not "".
func lineChart(title, xlabel, ylabel string, xs []float64, rows []metricRow, keys []string, band string) chartView {
	c := chartView{Title: title, XLabel: xlabel, YLabel: ylabel, W: chartW, H: chartH,
		X0: plotX0, Y0: plotY0, X1: plotX1, Y1: plotY1, TickEnd: plotY1 + 5}

	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	see := func(x, y float64) {
		xmin, xmax = min(xmin, x), max(xmax, x)
		ymin, ymax = min(ymin, y), max(ymax, y)
	}
	for i, r := range rows {
		for _, k := range keys {
			if y, ok := finite(r, k); ok {
				see(xs[i], y)
			}
		}
		if band != "" {
			y, ok1 := finite(r, keys[0])
			s, ok2 := finite(r, band)
			if ok1 && ok2 {
				see(xs[i], y-s)
				see(xs[i], y+s)
			}
		}
	}
	if math.IsInf(xmin, 1) { // no finite value at all
		xmin, xmax, ymin, ymax = 0, 1, 0, 1
	}
	xlo, xhi, xstep := niceRange(xmin, xmax, 6, true)
	ylo, yhi, ystep := niceRange(ymin, ymax, 5, false)
	px := func(x float64) float64 { return plotX0 + (x-xlo)/(xhi-xlo)*(plotX1-plotX0) }
	py := func(y float64) float64 { return plotY1 - (y-ylo)/(yhi-ylo)*(plotY1-plotY0) }

	for _, v := range ticks(xlo, xhi, xstep) {
		c.XTicks = append(c.XTicks, tickView{Pos: round1(px(v)), Label: formatTick(v, xstep)})
	}
	for _, v := range ticks(ylo, yhi, ystep) {
		c.YTicks = append(c.YTicks, tickView{Pos: round1(py(v)), Label: formatTick(v, ystep)})
	}

	if band != "" {
		var upper, lower []string
		for i, r := range rows {
			y, ok1 := finite(r, keys[0])
			s, ok2 := finite(r, band)
			if ok1 && ok2 {
				upper = append(upper, fmt.Sprintf("%.1f,%.1f", px(xs[i]), py(y+s)))
				lower = append(lower, fmt.Sprintf("%.1f,%.1f", px(xs[i]), py(y-s)))
			}
		}
		slices.Reverse(lower)
		if len(upper) > 0 {
			c.Band = strings.Join(append(upper, lower...), " ")
			c.BandName = "± " + band
		}
	}

	c.Smoothed = len(rows) >= smoothFrom
	for si, k := range keys {
		s := seriesView{Name: k, Color: seriesColors[si%len(seriesColors)]}
		ys := make([]float64, len(rows)) // (rows,) NaN where the row lacks a finite value
		n := 0
		for i, r := range rows {
			y, ok := finite(r, k)
			if !ok {
				y = math.NaN()
			} else {
				s.Last = formatValue(y)
				n++
			}
			ys[i] = y
		}
		// Dots go on a series of few values, however many rows: a metric recorded only every
		// few steps (logp_diff_max) has no two values in adjacent rows, so its line has no
		// segment to draw and the dots are all there is to see.
		for i, y := range ys {
			if n <= maxPointMarks && !math.IsNaN(y) {
				s.Points = append(s.Points, pointView{X: round1(px(xs[i])), Y: round1(py(y)),
					Title: fmt.Sprintf("%s %s: %s = %s", xlabel, formatValue(xs[i]), k, formatValue(y))})
			}
		}
		s.Path = linePath(xs, ys, px, py)
		if c.Smoothed {
			s.Smooth = linePath(xs, smooth(ys, smoothWeight), px, py)
		}
		c.Series = append(c.Series, s)
	}
	return c
}

// isDuration reports whether a metrics field names a duration rather than a rate.
func isDuration(name string) bool {
	return !strings.Contains(name, "per_") && (strings.Contains(name, "time") || strings.Contains(name, "elapsed") || strings.Contains(name, "duration"))
}

// linePath is the SVG path through the points (xs[i], ys[i]), broken where ys[i] is NaN.
func linePath(xs, ys []float64, px, py func(float64) float64) string {
	var d strings.Builder
	pen := false // whether the previous point was drawn, so the line continues from it
	for i, y := range ys {
		if math.IsNaN(y) {
			pen = false
			continue
		}
		op := "L"
		if !pen {
			op = "M"
		}
		fmt.Fprintf(&d, "%s%.1f %.1f ", op, px(xs[i]), py(y))
		pen = true
	}
	return strings.TrimSpace(d.String())
}

// smooth is the debiased exponential moving average TensorBoard draws:
// m_i = w*m_{i-1} + (1-w)*y_i, shown as m_i / (1 - w^k) after k values. NaN values are
// skipped and stay NaN.
func smooth(ys []float64, w float64) []float64 {
	out := make([]float64, len(ys)) // (rows,)
	m, k := 0.0, 0
	for i, y := range ys {
		if math.IsNaN(y) {
			out[i] = y
			continue
		}
		m = w*m + (1-w)*y
		k++
		out[i] = m / (1 - math.Pow(w, float64(k)))
	}
	return out
}

// finite returns row[k] when it is present and finite.
func finite(r metricRow, k string) (float64, bool) {
	v, ok := r[k]
	return v, ok && !math.IsNaN(v) && !math.IsInf(v, 0)
}

// niceRange widens [lo, hi] to multiples of a 1-2-5 step giving about n intervals. A flat
// range is widened around its value; integer axes never get a step below 1.
func niceRange(lo, hi float64, n int, integer bool) (nlo, nhi, step float64) {
	if hi == lo {
		pad := math.Abs(lo) * 0.1
		if pad == 0 {
			pad = 1
		}
		lo, hi = lo-pad, hi+pad
	}
	step = niceStep((hi - lo) / float64(n))
	if integer && step < 1 {
		step = 1
	}
	// The 1e-9 keeps a bound that is a multiple of step up to rounding from gaining a step.
	nlo = math.Floor(lo/step+1e-9) * step
	nhi = math.Ceil(hi/step-1e-9) * step
	return nlo, nhi, step
}

// niceStep rounds raw up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / p; {
	case f <= 1:
		return p
	case f <= 2:
		return 2 * p
	case f <= 5:
		return 5 * p
	default:
		return 10 * p
	}
}

// ticks lists lo, lo+step, ..., hi (computed by index, so no drift accumulates).
func ticks(lo, hi, step float64) []float64 {
	n := int(math.Round((hi - lo) / step))
	out := make([]float64, 0, n+1)
	for i := 0; i <= n; i++ {
		out = append(out, lo+float64(i)*step)
	}
	return out
}

// formatTick prints a tick value with as many decimals as its step needs.
func formatTick(v, step float64) string {
	if math.Abs(v) < step*1e-9 {
		v = 0 // no "-0" and no 1e-17 from rounding
	}
	if step < 1e-3 || step >= 1e6 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	dec := 0
	if step < 1 {
		dec = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// formatValue prints a measured value with four significant digits.
func formatValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e9 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
