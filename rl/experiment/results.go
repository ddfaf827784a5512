package experiment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/exp/stats"

	"agentr1/internal/atomicfile"
)

// Results are the experiment's figures so far: per method, every finished seed's evaluation and
// the mean and standard deviation of each table column over those seeds.
type Results struct {
	Request Request         `json:"request"` // the plan's request
	Seeds   []uint64        `json:"seeds"`   // the plan's seeds, finished or not
	Columns []string        `json:"columns"` // the table's columns, in order (see Columns)
	Methods []MethodResults `json:"methods"` // one per plan method, in the plan's order
	// SharedSFT: every seed started from the first seed's SFT base (Plan.SharedSFT).
	SharedSFT bool `json:"shared_sft,omitempty"`
}

// MethodResults is one row of the table.
type MethodResults struct {
	Name     string             `json:"name"`               // Method.Name
	Label    string             `json:"label"`              // Method.Label
	Ablation bool               `json:"ablation,omitempty"` // Method.Ablation
	Runs     []*UnitResult      `json:"runs"`               // one per finished seed, in seed order
	Mean     map[string]float64 `json:"mean"`               // column -> mean over Runs
	Std      map[string]float64 `json:"std"`                // column -> sample standard deviation over Runs (0 with one run)
}

// Columns of the table, for evaluation sets sets (in order) and question types types (of the
// last set):
//
//	"<set>/em"           exact match on each set (the paper's per-dataset columns)
//	"avg/em"             their mean (the paper's "avg")
//	"<last>/type=<t>/em" exact match per question type on the last set (the unseen world)
//	"f1", "format", "turns"  mean over the sets of F1, format-valid rate and agent turns
func Columns(sets, types []string) []string {
	var cols []string
	for _, s := range sets {
		cols = append(cols, s+"/em")
	}
	cols = append(cols, "avg/em")
	if len(sets) > 0 {
		for _, t := range types {
			cols = append(cols, sets[len(sets)-1]+"/type="+t+"/em")
		}
	}
	return append(cols, "f1", "format", "turns")
}

// runColumns computes every column of one run.
func runColumns(r *UnitResult, sets, cols []string) map[string]float64 {
	out := map[string]float64{}
	var em, f1, format, turns float64
	n := 0
	for _, s := range sets {
		m := r.Eval(s)
		if m == nil {
			continue
		}
		n++
		out[s+"/em"] = float64(m.EM)
		em += float64(m.EM)
		f1 += float64(m.F1)
		format += float64(m.FormatRate)
		turns += float64(m.Turns)
		for k, g := range m.Groups {
			if strings.HasPrefix(k, "type=") {
				out[s+"/"+k+"/em"] = float64(g.EM)
			}
		}
	}
	if n > 0 {
		out["avg/em"], out["f1"], out["format"], out["turns"] = em/float64(n), f1/float64(n), format/float64(n), turns/float64(n)
	}
	maps.DeleteFunc(out, func(k string, _ float64) bool { return !slices.Contains(cols, k) })
	return out
}

// meanStd is the mean and the sample standard deviation (n−1; 0 for a single value) of xs
// (stats.MeanAndStdDev), and NaN, NaN for no values, where stats panics. The sample deviation
// is the right one here: the seeds are a sample of the runs the method could give.
func meanStd(xs []float64) (mean, std float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	return stats.MeanAndStdDev(xs)
}

// collect gathers every finished unit's result from the run directory and aggregates them.
func (r *runner) collect() (*Results, error) {
	p := r.plan
	res := &Results{Request: p.Request, Seeds: p.Seeds, SharedSFT: p.SharedSFT}
	var sets []string
	types := map[string]bool{}
	for _, m := range p.Methods {
		row := MethodResults{Name: m.Name, Label: m.Label, Ablation: m.Ablation}
		for _, s := range p.Seeds {
			u, done, err := r.finished(Unit{Seed: s, Method: &m})
			if err != nil {
				return nil, err
			}
			if !done {
				continue
			}
			row.Runs = append(row.Runs, u)
			for _, e := range u.Evals {
				if name := e.Set(); !slices.Contains(sets, name) {
					sets = append(sets, name)
				}
			}
		}
		res.Methods = append(res.Methods, row)
	}
	for _, row := range res.Methods {
		for _, u := range row.Runs {
			if len(sets) == 0 {
				break
			}
			if e := u.Eval(sets[len(sets)-1]); e != nil {
				for k := range e.Groups {
					if t, ok := strings.CutPrefix(k, "type="); ok {
						types[t] = true
					}
				}
			}
		}
	}
	res.Columns = Columns(sets, slices.Sorted(maps.Keys(types)))
	for i := range res.Methods {
		row := &res.Methods[i]
		row.Mean, row.Std = map[string]float64{}, map[string]float64{}
		for _, c := range res.Columns {
			var xs []float64
			for _, u := range row.Runs {
				if v, ok := runColumns(u, sets, res.Columns)[c]; ok {
					xs = append(xs, v)
				}
			}
			if len(xs) > 0 {
				row.Mean[c], row.Std[c] = meanStd(xs)
			}
		}
	}
	return res, nil
}

// writeResults aggregates the finished units and rewrites results.json and results.md.
// Processes sharing the run directory finish units and rewrite the tables at the same time,
// and of two renames the last wins: so after writing, the units are gathered again and the
// tables rewritten until they hold every unit finished by then. Each process does this after
// writing its unit's result.json, so the process that writes last has seen every result.json
// written before: no finished unit is lost from the tables.
func (r *runner) writeResults() (*Results, error) {
	res, err := r.collect()
	if err != nil {
		return nil, err
	}
	for {
		if err := writeJSON(filepath.Join(r.opt.Dir, ResultsJSONFile), res); err != nil {
			return nil, err
		}
		md := res.Markdown()
		if err := atomicfile.WriteBytes(filepath.Join(r.opt.Dir, ResultsMDFile), []byte(md)); err != nil {
			return nil, fmt.Errorf("experiment: %w", err)
		}
		again, err := r.collect()
		if err != nil {
			return nil, err
		}
		a, _ := json.Marshal(res)
		b, _ := json.Marshal(again)
		if bytes.Equal(a, b) {
			return res, nil
		}
		res = again
	}
}

// Markdown lays the results out as the paper's Table 2: one row per method (the ablations
// after a separator row), mean ± std over the finished seeds in every column.
func (res *Results) Markdown() string {
	var b strings.Builder
	req := res.Request
	fmt.Fprintf(&b, "# agentr1 experiment %s: Agent-R1 Table 2 in miniature\n\n", req.Flags())
	fmt.Fprintf(&b, "Exact match on each evaluation set of the generated world (heldout: new questions about the training world's entities; unseen: a world whose every name is new, answerable only by searching), mean ± std over the finished seeds (%s). ", seedList(res.Seeds))
	if res.SharedSFT {
		fmt.Fprintf(&b, "Every RL method starts from one SFT base, seed %d's, shared by all seeds (the seeds differ in their RL runs only, so the two baseline rows have no spread); ", res.Seeds[0])
	} else {
		b.WriteString("Every RL method starts from the same SFT base per seed; ")
	}
	b.WriteString("Base Tool Call is that SFT base with its search tool, Naive RAG the SFT base retrieving once with the question. ")
	b.WriteString("Per-type columns are exact match on the last set; F1, format (valid-format rate) and turns are means over the sets.\n\n")
	header := []string{"method", "seeds"}
	for _, c := range res.Columns {
		header = append(header, columnTitle(c))
	}
	writeHeader(&b, header)
	ablations := false
	for _, row := range res.Methods {
		if row.Ablation && !ablations {
			ablations = true
			cells := append([]string{"*ablations*"}, make([]string, len(header)-1)...)
			writeRow(&b, cells)
		}
		cells := []string{row.Label, fmt.Sprint(len(row.Runs))}
		for _, c := range res.Columns {
			cells = append(cells, cell(row, c))
		}
		writeRow(&b, cells)
	}
	b.WriteString(res.curveMarkdown())
	return b.String()
}

// curveMarkdown lays out the RL runs' evaluations during training (UnitResult.Curve), when any
// run has them: one row per method, one column per evaluation set and step, mean ± std over
// the seeds that reached that step.
func (res *Results) curveMarkdown() string {
	var sets []string
	for _, c := range res.Columns {
		if set, ok := strings.CutSuffix(c, "/em"); ok && set != "avg" && !strings.Contains(set, "/") {
			sets = append(sets, set)
		}
	}
	var steps []int
	for _, row := range res.Methods {
		for _, u := range row.Runs {
			for _, m := range u.Curve {
				if !slices.Contains(steps, m.Step) {
					steps = append(steps, m.Step)
				}
			}
		}
	}
	if len(steps) == 0 {
		return ""
	}
	slices.Sort(steps)
	var b strings.Builder
	b.WriteString("\n## During training\n\nExact match on each set at every evaluation of the RL runs (`--eval-every`), mean ± std over the seeds that reached that step; the last step is the final evaluation of the table above.\n\n")
	header := []string{"method", "seeds"}
	for _, set := range sets {
		for _, st := range steps {
			header = append(header, fmt.Sprintf("%s EM @%d", set, st))
		}
	}
	writeHeader(&b, header)
	for _, row := range res.Methods {
		curves := 0
		for _, u := range row.Runs {
			if len(u.Curve) > 0 {
				curves++
			}
		}
		if curves == 0 {
			continue
		}
		cells := []string{row.Label, fmt.Sprint(curves)}
		for _, set := range sets {
			for _, st := range steps {
				var xs []float64
				for _, u := range row.Runs {
					for _, m := range u.Curve {
						if m.Step == st && m.Set() == set {
							xs = append(xs, float64(m.EM))
						}
					}
				}
				if len(xs) == 0 {
					cells = append(cells, "–")
					continue
				}
				mean, std := meanStd(xs)
				cells = append(cells, rateCell(mean, std, len(xs)))
			}
		}
		writeRow(&b, cells)
	}
	return b.String()
}

func seedList(seeds []uint64) string {
	parts := make([]string, len(seeds))
	for i, s := range seeds {
		parts[i] = fmt.Sprint(s)
	}
	return "seeds " + strings.Join(parts, ", ")
}

// columnTitle is a column's header: "heldout EM", "unseen: bridge", "F1".
func columnTitle(c string) string {
	switch c {
	case "avg/em":
		return "avg EM"
	case "f1":
		return "F1"
	case "format":
		return "format"
	case "turns":
		return "turns"
	}
	if set, rest, ok := strings.Cut(c, "/type="); ok {
		return set + ": " + strings.TrimSuffix(rest, "/em")
	}
	return strings.TrimSuffix(c, "/em") + " EM"
}

// cell formats a column of a row: ".120 ± .010" (rates), "3.15 ± 0.20" (turns), "–" when no
// seed has finished.
func cell(row MethodResults, c string) string {
	m, ok := row.Mean[c]
	if !ok {
		return "–"
	}
	s := row.Std[c]
	if c == "turns" {
		if len(row.Runs) < 2 {
			return fmt.Sprintf("%.2f", m)
		}
		return fmt.Sprintf("%.2f ± %.2f", m, s)
	}
	return rateCell(m, s, len(row.Runs))
}

// rateCell formats the mean and standard deviation of a rate over n runs: ".120 ± .010", or
// the mean alone for a single run.
func rateCell(mean, std float64, n int) string {
	if n < 2 {
		return rate(mean)
	}
	return rate(mean) + " ± " + rate(std)
}

// writeHeader writes a Markdown table's header row and the separator under it.
func writeHeader(b *strings.Builder, header []string) {
	writeRow(b, header)
	fmt.Fprintf(b, "|%s\n", strings.Repeat("---|", len(header)))
}

// writeRow writes one row of a Markdown table.
func writeRow(b *strings.Builder, cells []string) {
	fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
}

// rate prints a value in [0, 1] as the paper does: ".1372" style, three decimals.
func rate(x float64) string {
	s := fmt.Sprintf("%.3f", x)
	if strings.HasPrefix(s, "0.") {
		return s[1:]
	}
	return s
}

// ReadResults reads a run directory's results.json.
func ReadResults(dir string) (*Results, error) {
	raw, err := os.ReadFile(filepath.Join(dir, ResultsJSONFile))
	if err != nil {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	var res Results
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("experiment: %s: %w", filepath.Join(dir, ResultsJSONFile), err)
	}
	return &res, nil
}
