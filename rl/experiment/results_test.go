package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"agentr1/rl/pipeline"
	"agentr1/rl/trainer"
)

// fakeRun is a finished unit with EM em on "heldout" and "unseen" (whose bridge questions
// score bridge).
func fakeRun(method string, seed uint64, em, bridge float64) *UnitResult {
	unseen := &pipeline.EvalMetrics{Name: method + "/unseen", N: 10, EM: trainer.Num(em), F1: trainer.Num(em), FormatRate: 1, Turns: 2,
		Groups: map[string]*pipeline.EvalMetrics{"type=bridge": {EM: trainer.Num(bridge)}, "dataset=world": {EM: trainer.Num(em)}}}
	held := &pipeline.EvalMetrics{Name: method + "/heldout", N: 10, EM: trainer.Num(em / 2), F1: trainer.Num(em / 2), FormatRate: 1, Turns: 3}
	return &UnitResult{Method: method, Seed: seed, Evals: []*pipeline.EvalMetrics{held, unseen}}
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

// TestMarkdownDuringTraining checks the table of evaluations during training: one column per
// set and step, mean ± std over the seeds that reached the step, "–" where none did, and no
// table at all when no run evaluated during training.
func TestMarkdownDuringTraining(t *testing.T) {
	point := func(set string, step int, em float64) *pipeline.EvalMetrics {
		return &pipeline.EvalMetrics{Name: "rl/" + set, Step: step, EM: trainer.Num(em)}
	}
	a, b := fakeRun("grpo", 1, 0.2, 0.5), fakeRun("grpo", 2, 0.4, 0.7)
	a.Curve = []*pipeline.EvalMetrics{point("heldout", 20, 0.1), point("unseen", 20, 0.3), point("heldout", 40, 0.1), point("unseen", 40, 0.2)}
	b.Curve = []*pipeline.EvalMetrics{point("heldout", 20, 0.3), point("unseen", 20, 0.1)} // stopped before step 40
	res := &Results{Seeds: []uint64{1, 2}, Columns: Columns([]string{"heldout", "unseen"}, nil),
		Methods: []MethodResults{{Name: "grpo", Label: "GRPO", Runs: []*UnitResult{a, b}}, {Name: "naive-rag", Label: "Naive RAG", Runs: []*UnitResult{fakeRun("naive-rag", 1, 0.1, 0)}}}}
	md := res.curveMarkdown()
	for _, want := range []string{
		"| method | seeds | heldout EM @20 | heldout EM @40 | unseen EM @20 | unseen EM @40 |",
		"| GRPO | 2 | .200 ± .141 | .100 | .200 ± .141 | .200 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the table lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Naive RAG") {
		t.Errorf("a method without evaluations during training has a row:\n%s", md)
	}
	a.Curve, b.Curve = nil, nil
	if md := res.curveMarkdown(); md != "" {
		t.Errorf("no run evaluated during training, but the table is\n%s", md)
	}
}

// TestReadCurve checks that readCurve keeps the RL evaluations of evals.jsonl in step order,
// the last record of a set and step winning, without their groups; that an evaluation at one
// step only gives no curve; that a torn last line is skipped with a warning and the whole
// lines kept; and that a malformed line before the last is an error naming the file and line.
func TestReadCurve(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	path := write("evals.jsonl", `{"name":"rl/heldout","step":40,"em":0.3}
{"name":"rl/heldout","step":20,"em":0.1}
{"name":"rl/heldout","step":40,"em":0.4,"groups":{"type=bridge":{"name":"type=bridge","em":1}}}
{"name":"rl/unseen","step":20,"em":0.2}
{"name":"sft/heldout","step":0,"em":0.05}

`)
	noWarn := func(msg string) { t.Errorf("unexpected warning: %s", msg) }
	curve, err := readCurve(path, noWarn)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range curve {
		got = append(got, fmt.Sprintf("%s@%d=%v groups=%d", m.Name, m.Step, m.EM, len(m.Groups)))
	}
	want := []string{"rl/heldout@20=0.1 groups=0", "rl/unseen@20=0.2 groups=0", "rl/heldout@40=0.4 groups=0"}
	if !slices.Equal(got, want) {
		t.Errorf("curve %v, want %v", got, want)
	}
	if curve, err := readCurve(write("final.jsonl", `{"name":"rl/heldout","step":40,"em":0.3}`+"\n"), noWarn); err != nil || curve != nil {
		t.Errorf("one step only: curve %v, err %v; want none", curve, err)
	}

	var warnings []string
	curve, err = readCurve(write("torn.jsonl", `{"name":"rl/heldout","step":20,"em":0.1}
{"name":"rl/heldout","step":40,"em":0.4}
{"name":"rl/heldout","st`), func(msg string) { warnings = append(warnings, msg) })
	if err != nil {
		t.Fatalf("torn last line: %v, want it skipped", err)
	}
	if len(curve) != 2 || curve[0].Step != 20 || curve[1].Step != 40 {
		t.Errorf("torn last line: curve %v, want the steps 20 and 40 of the whole lines", curve)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "torn.jsonl:3: skipped a torn last line") {
		t.Errorf("torn last line: warnings %q, want one naming torn.jsonl:3", warnings)
	}

	for _, c := range []struct{ name, body string }{
		{"bad.jsonl", `{"name":"rl/heldout","step":20,"em":0.1}` + "\n{not json\n"},
		{"middle.jsonl", `{"name":"rl/heldout","step":20,"em":0.1}` + "\n{not json\n" + `{"name":"rl/heldout","step":40,"em":0.4}`},
	} {
		_, err = readCurve(write(c.name, c.body), noWarn)
		if err == nil || !strings.Contains(err.Error(), c.name+":2:") {
			t.Errorf("%s: malformed line 2: %v, want an error naming %s:2", c.name, err, c.name)
		}
	}
}
