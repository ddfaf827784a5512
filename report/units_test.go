package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestSamplesRoundTrip: WriteSamples appends, ReadSamples gives back every field, and the file
// keeps agent text readable (no \u003c escapes).
func TestSamplesRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), SamplesFile)
	a := []Sample{demoSample(1, 1, 1, "James Cameron")}
	b := []Sample{demoSample(2, -1, -0.5, "<b>x</b>"), {Step: 3, Outcome: "cut: max turns"}}
	for _, batch := range [][]Sample{a, b} {
		if err := WriteSamples(path, batch); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadSamples(path)
	if err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(a), b...)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip: got %d samples, want %d; first difference in %+v", len(got), len(want), got)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n != 3 {
		t.Errorf("file has %d lines, want 3", n)
	}
	for _, key := range []string{`"<tool_call>"`, `"action_mask":1`, `"advantage_mask":1`, `"tool_calls":[`, `"logprob":-0.25`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("file lacks %s", key)
		}
	}
	if _, err := ReadSamples(filepath.Join(t.TempDir(), "none.jsonl")); err == nil {
		t.Errorf("missing file: no error")
	}
}

func TestParseSteps(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		bad  bool
	}{
		{"", nil, false},
		{"1,10,last", []int{1, 10, LastStep}, false},
		{" 0 , last ,", []int{0, LastStep}, false},
		{"x", nil, true},
		{"-3", nil, true},
		{"1;2", nil, true},
	} {
		got, err := ParseSteps(tc.in)
		if (err != nil) != tc.bad || !slices.Equal(got, tc.want) {
			t.Errorf("ParseSteps(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

// TestSelectSamples: the chosen steps in the asked order, "last" resolved, the per-step cap
// spread evenly over the step's samples, and absent steps reported.
func TestSelectSamples(t *testing.T) {
	path := filepath.Join(t.TempDir(), SamplesFile)
	var all []Sample
	for step := 0; step <= 4; step++ {
		for i := range 10 {
			all = append(all, Sample{Step: step, Question: fmt.Sprintf("q%d.%d", step, i)})
		}
	}
	if err := WriteSamples(path, all); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		opt       Options
		steps     []int
		questions []string // of the first step shown
		notFound  []int
	}{
		{"default first middle last", Options{MaxSamples: 2}, []int{0, 2, 4}, []string{"q0.0", "q0.5"}, nil},
		{"asked order, last, absent", Options{Steps: []int{3, LastStep, 7, 3}, MaxSamples: 3}, []int{3, 4}, []string{"q3.0", "q3.3", "q3.6"}, []int{7}},
		{"cap above count", Options{Steps: []int{1}, MaxSamples: 20}, []int{1}, []string{"q1.0", "q1.1", "q1.2", "q1.3", "q1.4", "q1.5", "q1.6", "q1.7", "q1.8", "q1.9"}, nil},
		{"default cap", Options{Steps: []int{1}}, []int{1}, []string{"q1.0", "q1.2", "q1.5", "q1.7"}, nil},
	} {
		ix, err := selectSamples(path, tc.opt)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var steps []int
		for _, st := range ix.Shown {
			steps = append(steps, st.Step)
			if st.Total != 10 {
				t.Errorf("%s: step %d total %d, want 10", tc.name, st.Step, st.Total)
			}
		}
		var qs []string
		for j, s := range ix.Shown[0].Samples {
			qs = append(qs, s.Question)
			if want := fmt.Sprintf("q%d.%d", s.Step, ix.Shown[0].Index[j]); s.Question != want {
				t.Errorf("%s: sample %d has index %d, but it is %s", tc.name, j, ix.Shown[0].Index[j], s.Question)
			}
		}
		if !slices.Equal(steps, tc.steps) || !slices.Equal(qs, tc.questions) || !slices.Equal(ix.NotFound, tc.notFound) {
			t.Errorf("%s: steps %v questions %v not found %v; want %v %v %v",
				tc.name, steps, qs, ix.NotFound, tc.steps, tc.questions, tc.notFound)
		}
		if !slices.Equal(ix.Available, []int{0, 1, 2, 3, 4}) {
			t.Errorf("%s: available %v", tc.name, ix.Available)
		}
	}
}

func TestNiceRangeAndTicks(t *testing.T) {
	for _, tc := range []struct {
		name          string
		lo, hi        float64
		n             int
		integer       bool
		wlo, whi, wst float64
		labels        string
	}{
		{"unit interval", 0, 1, 5, false, 0, 1, 0.2, "0.0 0.2 0.4 0.6 0.8 1.0"},
		{"negative reward", -0.43, 0.81, 5, false, -0.5, 1, 0.5, "-0.5 0.0 0.5 1.0"},
		{"steps", 1, 3, 6, true, 1, 3, 1, "1 2 3"},
		{"many steps", 0, 200, 6, true, 0, 200, 50, "0 50 100 150 200"},
		{"flat", 5, 5, 5, false, 4.4, 5.6, 0.2, "4.4 4.6 4.8 5.0 5.2 5.4 5.6"},
		{"flat zero", 0, 0, 5, false, -1, 1, 0.5, "-1.0 -0.5 0.0 0.5 1.0"},
		{"learning rate", 1e-6, 1e-6, 5, false, 9e-7, 1.1e-6, 5e-8, "9e-07 9.5e-07 1e-06 1.05e-06 1.1e-06"},
	} {
		lo, hi, st := niceRange(tc.lo, tc.hi, tc.n, tc.integer)
		var labels []string
		for _, v := range ticks(lo, hi, st) {
			labels = append(labels, formatTick(v, st))
		}
		if !near(lo, tc.wlo) || !near(hi, tc.whi) || !near(st, tc.wst) || strings.Join(labels, " ") != tc.labels {
			t.Errorf("%s: range [%g, %g] step %g labels %q; want [%g, %g] step %g labels %q",
				tc.name, lo, hi, st, strings.Join(labels, " "), tc.wlo, tc.whi, tc.wst, tc.labels)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

// TestLineChartGaps: a row without the field breaks the line instead of bridging it.
func TestLineChartGaps(t *testing.T) {
	rows := []metricRow{{"v": 0}, {"v": 1}, {}, {"v": 0}, {"v": 1}}
	c := lineChart("v", "row", "v", []float64{1, 2, 3, 4, 5}, rows, []string{"v"}, "")
	if got, want := c.Series[0].Path, "M58.0 210.0 L150.0 26.0 M334.0 210.0 L426.0 26.0"; got != want {
		t.Errorf("path %q, want %q", got, want)
	}
	if len(c.Series[0].Points) != 4 {
		t.Errorf("%d point marks, want 4", len(c.Series[0].Points))
	}
}

// TestLineChartSparse: a field recorded every tenth row of 240 (as logp_diff_max is) has no
// line segment to draw, so each of its values gets a dot; a field in every row gets none.
func TestLineChartSparse(t *testing.T) {
	var rows []metricRow
	var xs []float64
	for i := range 240 {
		r := metricRow{"every": float64(i)}
		if i%10 == 0 {
			r["sparse"] = float64(i)
		}
		rows, xs = append(rows, r), append(xs, float64(i+1))
	}
	c := lineChart("v", "step", "v", xs, rows, []string{"every", "sparse"}, "")
	if n := len(c.Series[0].Points); n != 0 {
		t.Errorf("%d dots on a series of 240 values, want none", n)
	}
	if n := len(c.Series[1].Points); n != 24 {
		t.Errorf("%d dots on a series of 24 values, want 24", n)
	}
	if strings.Contains(c.Series[1].Path, "L") {
		t.Errorf("the sparse series has a line segment: %q", c.Series[1].Path)
	}
}

func TestHeatScale(t *testing.T) {
	for _, tc := range []struct {
		adv, scale float64
		level      int
		class      string
		color      string
	}{
		{0, 1, 0, "h0", "#ffffff"},
		{1, 1, 10, "hp10", "#b2182b"},
		{-2, 1, -10, "hn10", "#2166ac"}, // clipped
		{-0.5, 1, -5, "hn5", "#92c5de"},
		{0.25, 0.5, 5, "hp5", "#f4a582"},
		{0.04, 1, 0, "h0", "#ffffff"},
	} {
		l := heatLevel(tc.adv, tc.scale)
		if l != tc.level || heatClass(l) != tc.class || heatColor(l).hex() != tc.color {
			t.Errorf("advantage %g scale %g: level %d class %s colour %s; want %d %s %s",
				tc.adv, tc.scale, l, heatClass(l), heatColor(l).hex(), tc.level, tc.class, tc.color)
		}
	}
}

func TestSplitVisible(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []piece
	}{
		{"abc", []piece{{Text: "abc"}}},
		{"\n", []piece{{Newline: true}}},
		{"a\n\nb", []piece{{Text: "a"}, {Newline: true}, {Newline: true}, {Text: "b"}}},
		{"x\r\n", []piece{{Text: "x␍"}, {Newline: true}}},
		{"", nil},
	} {
		if got := splitVisible(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitVisible(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestZeroRewardBadge: an outcome reward of 0 is marked on the last trained token; a
// trajectory with a nonzero token reward gets no extra mark.
func TestZeroRewardBadge(t *testing.T) {
	s := demoSample(1, 1, 0, "wrong")
	v := viewSample(s, 1)
	var badges []string
	for _, tv := range v.Body {
		if tv.Badge != "" {
			badges = append(badges, tv.Badge+"/"+tv.BadgeClass)
		}
	}
	last := v.Body[len(v.Body)-1]
	if !slices.Equal(badges, []string{"0/zero"}) || last.Badge != "0" {
		t.Errorf("zero reward: badges %v (last token %q), want one 0/zero on the last token", badges, last.Badge)
	}
	v = viewSample(demoSample(1, 1, -1, "bad"), 1)
	badges = nil
	for _, tv := range v.Body {
		if tv.Badge != "" {
			badges = append(badges, tv.Badge+"/"+tv.BadgeClass)
		}
	}
	if !slices.Equal(badges, []string{"-1/neg"}) {
		t.Errorf("negative reward: badges %v, want [-1/neg]", badges)
	}
	if len(v.Prompt) != 39 || v.Counts[RoleAgent] != 26 || v.Trained != 26 || v.WithAdvantage != 26 {
		t.Errorf("counts: prompt %d agent %d trained %d with advantage %d; want 39 26 26 26",
			len(v.Prompt), v.Counts[RoleAgent], v.Trained, v.WithAdvantage)
	}
}

// TestGridTables: the shapes by_type may take each become readable tables.
func TestGridTables(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       []string // caption | header | rows, one string per table
	}{
		{"type by metric", `{"bridge": {"em": 0.4, "f1": 0.5}, "comparison": {"em": 0.3}}`,
			[]string{"t | ,em,f1 | bridge,0.4,0.5;comparison,0.3,"}},
		{"system by type by metric", `{"base": {"bridge": {"em": 0.1}}, "final": {"bridge": {"em": 0.2}}}`,
			[]string{"t / base | ,em | bridge,0.1", "t / final | ,em | bridge,0.2"}},
		{"flat", `{"em": 0.123456, "name": "x"}`, []string{"t | key,value | em,0.1235;name,x"}},
		{"scalar", `3`, []string{"t | value | 3"}},
		{"list of records", `[{"name": "rl/heldout", "step": 20, "em": 0.4}, {"name": "rl/unseen", "step": 20}]`,
			[]string{"t | ,name,step,em | 1,rl/heldout,20,0.4;2,rl/unseen,20,"}},
	} {
		v, err := parseValue([]byte(tc.json))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, tb := range gridTables("t", v) {
			var rows []string
			for _, r := range tb.Rows {
				rows = append(rows, strings.Join(r, ","))
			}
			got = append(got, tb.Caption+" | "+strings.Join(tb.Header, ",")+" | "+strings.Join(rows, ";"))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: tables %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestSmooth: the debiased moving average keeps a constant series constant, skips NaN and
// weighs recent values by 1-w.
func TestSmooth(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		in   []float64
		w    float64
		want []float64
	}{
		{"constant", []float64{2, 2, 2}, 0.8, []float64{2, 2, 2}},
		{"gap", []float64{0, nan, 1}, 0.5, []float64{0, nan, 2.0 / 3}},
		{"no smoothing", []float64{1, 5, -3}, 0, []float64{1, 5, -3}},
	} {
		got := smooth(tc.in, tc.w)
		for i := range got {
			if !(near(got[i], tc.want[i]) || math.IsNaN(got[i]) && math.IsNaN(tc.want[i])) {
				t.Errorf("%s: smooth = %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
}

// TestBuildEvalTrainerShape: eval.json as rl/trainer writes it (EvalMetrics with a name and
// nested groups) gives a comparison of the numbers and one table per metric by group.
func TestBuildEvalTrainerShape(t *testing.T) {
	v, err := parseValue([]byte(`{
 "base": {"name": "sft", "n": 10, "em": 0.1, "f1": 0.2,
   "groups": {"type=bridge": {"name": "sft", "n": 5, "em": 0.2, "f1": 0.3}, "type=comparison": {"em": 0}}},
 "final": {"name": "rl", "n": 10, "em": 0.4, "f1": null, "groups": {"type=bridge": {"em": 0.4}}},
 "baselines": {"naive_rag": {"em": 0.15}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ev := buildEval(v)
	flat := func(tb tableView) string {
		var rows []string
		for _, r := range tb.Rows {
			rows = append(rows, strings.Join(r, ","))
		}
		return tb.Caption + " | " + strings.Join(tb.Header, ",") + " | " + strings.Join(rows, ";")
	}
	for _, tc := range []struct{ name, got, want string }{
		{"compare", flat(*ev.Compare), "Evaluation | metric,base,final,naive_rag,final − base | n,10,10,,0;em,0.1,0.4,0.15,+0.3;f1,0.2,null,,"},
		{"em by group", flat(ev.Groups[0]), "em by groups | ,base,final,naive_rag | type=bridge,0.2,0.4,;type=comparison,0,,"},
		{"f1 by group", flat(ev.Groups[1]), "f1 by groups | ,base,final,naive_rag | type=bridge,0.3,,;type=comparison,,,"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, tc.got, tc.want)
		}
	}
	if len(ev.Groups) != 2 || len(ev.Extra) != 0 {
		t.Errorf("%d group tables and %d extra tables, want 2 and 0", len(ev.Groups), len(ev.Extra))
	}
}

// TestBuildChartsTrainerNames: the trainer's field names land in the right charts, durations
// share one, unknown fields get their own, and the required charts without data are named.
func TestBuildChartsTrainerNames(t *testing.T) {
	m := &metrics{Fields: []string{"step", "reward_mean", "response_len", "agent_tokens", "time_rollout", "time_total", "searches", "foo"}}
	for i := range 3 {
		m.Rows = append(m.Rows, metricRow{"step": float64(i), "reward_mean": 0.1, "response_len": 100, "agent_tokens": 60,
			"time_rollout": 1, "time_total": 2, "searches": 1.5, "foo": 7})
	}
	charts, absent := buildCharts(m)
	var got []string
	for _, c := range charts {
		var names []string
		for _, s := range c.Series {
			names = append(names, s.Name)
		}
		got = append(got, c.Title+":"+strings.Join(names, "+"))
	}
	want := []string{"Reward:reward_mean", "Response length:response_len+agent_tokens", "Tool calls per episode:searches",
		"Time per step:time_rollout+time_total", "foo:foo"}
	if !slices.Equal(got, want) {
		t.Errorf("charts %q, want %q", got, want)
	}
	if len(absent) != 3 || !strings.HasPrefix(absent[0], "Exact match") || !strings.HasPrefix(absent[2], "Entropy") {
		t.Errorf("absent %q, want Exact match, KL divergence, Entropy", absent)
	}
}
