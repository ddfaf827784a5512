package experiment

import (
	"strings"
	"testing"

	"agentr1/rl/trainer"
)

// fakeRun is a finished unit with EM em on "heldout" and "unseen" (whose bridge questions
// score bridge).
func fakeRun(method string, seed uint64, em, bridge float64) *UnitResult {
	unseen := &trainer.EvalMetrics{Name: method + "/unseen", N: 10, EM: trainer.Num(em), F1: trainer.Num(em), FormatRate: 1, Turns: 2,
		Groups: map[string]*trainer.EvalMetrics{"type=bridge": {EM: trainer.Num(bridge)}, "dataset=world": {EM: trainer.Num(em)}}}
	held := &trainer.EvalMetrics{Name: method + "/heldout", N: 10, EM: trainer.Num(em / 2), F1: trainer.Num(em / 2), FormatRate: 1, Turns: 3}
	return &UnitResult{Method: method, Seed: seed, Evals: []*trainer.EvalMetrics{held, unseen}}
}

func TestMarkdownLayout(t *testing.T) {
	sets := []string{"heldout", "unseen"}
	cols := Columns(sets, []string{"bridge"})
	res := &Results{Request: Request{Preset: "paper-mini", Quick: true, Seeds: 2}, Seeds: []uint64{1, 2}, Columns: cols}
	rows := []struct {
		name     string
		ablation bool
		runs     []*UnitResult
	}{
		{"grpo", false, []*UnitResult{fakeRun("grpo", 1, 0.2, 0.5), fakeRun("grpo", 2, 0.4, 0.7)}},
		{"rloo", false, []*UnitResult{fakeRun("rloo", 1, 0.3, 0.1)}},
		{"grpo-no-loss-mask", true, nil},
	}
	for _, r := range rows {
		row := MethodResults{Name: r.name, Label: strings.ToUpper(r.name), Ablation: r.ablation, Runs: r.runs, Mean: map[string]float64{}, Std: map[string]float64{}}
		for _, c := range cols {
			var xs []float64
			for _, u := range r.runs {
				xs = append(xs, runColumns(u, sets, cols)[c])
			}
			if len(xs) > 0 {
				row.Mean[c], row.Std[c] = meanStd(xs)
			}
		}
		res.Methods = append(res.Methods, row)
	}
	md := res.Markdown()
	for _, tc := range []struct{ name, want string }{
		{"header", "| method | seeds | heldout EM | unseen EM | avg EM | unseen: bridge | F1 | format | turns |"},
		{"two seeds: mean ± std", "| GRPO | 2 | .150 ± .071 | .300 ± .141 | .225 ± .106 | .600 ± .141 | .225 ± .106 | 1.000 ± .000 | 2.50 ± 0.00 |"},
		{"one seed: mean only", "| RLOO | 1 | .150 | .300 | .225 | .100 | .225 | 1.000 | 2.50 |"},
		{"ablations after a separator", "| *ablations* |"},
		{"no seed finished", "| GRPO-NO-LOSS-MASK | 0 | – | – |"},
		{"title", "--preset paper-mini --quick"},
	} {
		if !strings.Contains(md, tc.want) {
			t.Errorf("%s: results.md lacks %q:\n%s", tc.name, tc.want, md)
		}
	}
	if strings.Index(md, "*ablations*") > strings.Index(md, "GRPO-NO-LOSS-MASK") || strings.Index(md, "*ablations*") < strings.Index(md, "| RLOO") {
		t.Errorf("the ablations separator is not between the main rows and the ablations:\n%s", md)
	}
}
