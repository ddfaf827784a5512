package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// results is eval.json read as the sets it names: for each evaluation set, the policy before
// and after RL and the baselines. Two layouts are read: the current one (sets.<set>.before_rl,
// after_rl, baselines, and during_rl) and the earlier one, whose "sets" held every evaluation
// under "<phase>/<set>" ("sft/heldout", "rl/unseen", "naive-rag/heldout") and whose "history"
// listed them all in the order they ran.
type results struct {
	RLSteps int    // RL steps run; -1 when eval.json does not say
	Start   string // what "before RL" evaluated: "SFT base", "pretrained model"
	Sets    []setResults
	During  []*value // evaluations during RL, each with "name" "rl/<set>" and "step"
}

// setResults is one evaluation set's figures; a nil member was not evaluated.
type setResults struct {
	Name, About   string
	Before, After *value
	Baselines     [3]*value // in baselineNames' order
}

// baselineNames are the paper's baselines in the order the page shows them: eval.json's key,
// the earlier layout's phase name, and the column head.
var baselineNames = [3]struct{ Key, Phase, Title string }{
	{"base_tool_call", "base-tool-call", "Base Tool Call"},
	{"naive_rag", "naive-rag", "Naive RAG"},
	{"closed_book", "closed-book", "closed book"},
}

// setOrder puts the sets every run has first: held-out (in-domain) before unseen.
var setOrder = []string{"heldout", "unseen"}

// setLabels are the names the page gives the sets.
var setLabels = map[string]string{"heldout": "held-out", "unseen": "unseen"}

// setLabel is the page's name of a set.
func setLabel(name string) string {
	if l, ok := setLabels[name]; ok {
		return l
	}
	return name
}

// readResults reads eval.json's sets in either layout; ok is false when v has neither (the
// page then shows its numbers as generic tables).
func readResults(v *value) (res *results, ok bool) {
	sets := v.get("sets")
	if sets == nil || sets.Kind != '{' || len(sets.Fields) == 0 {
		return nil, false
	}
	res = &results{RLSteps: -1}
	if n := v.get("rl_steps"); n != nil && n.Kind == 'n' {
		res.RLSteps = int(n.Num)
	}
	if s := v.get("starting_policy"); s != nil && s.Kind == 's' {
		res.Start = s.Str
	}
	byName := map[string]*setResults{}
	var names []string // in file order
	set := func(name string) *setResults {
		if byName[name] == nil {
			byName[name] = &setResults{Name: name}
			names = append(names, name)
		}
		return byName[name]
	}
	for _, f := range sets.Fields {
		if strings.Contains(f.Key, "/") {
			// The earlier layout: "<phase>/<set>" -> one evaluation.
			phase, name, _ := strings.Cut(f.Key, "/")
			s := set(name)
			switch phase {
			case "sft", "pretrained":
				s.Before = f.Val
				if res.Start == "" {
					res.Start = map[string]string{"sft": "SFT base", "pretrained": "pretrained model"}[phase]
				}
			case "rl":
				s.After = f.Val
				if st := f.Val.get("step"); st != nil && st.Kind == 'n' {
					res.RLSteps = int(st.Num)
				}
			}
			for i, b := range baselineNames {
				if phase == b.Phase {
					s.Baselines[i] = f.Val
				}
			}
			continue
		}
		if f.Val.get("before_rl") == nil && f.Val.get("after_rl") == nil && f.Val.get("baselines") == nil {
			return nil, false // not a set of this layout: eval.json has another shape
		}
		s := set(f.Key)
		if a := f.Val.get("about"); a != nil && a.Kind == 's' {
			s.About = a.Str
		}
		s.Before, s.After = f.Val.get("before_rl"), f.Val.get("after_rl")
		for i, b := range baselineNames {
			s.Baselines[i] = f.Val.get("baselines").get(b.Key)
		}
	}
	// Held-out, unseen, then any other set in file order.
	rank := func(name string) int {
		if i := slices.Index(setOrder, name); i >= 0 {
			return i
		}
		return len(setOrder)
	}
	slices.SortStableFunc(names, func(a, b string) int { return rank(a) - rank(b) })
	for _, name := range names {
		res.Sets = append(res.Sets, *byName[name])
	}
	if res.Start == "" {
		res.Start = "before RL"
	}
	during := v.get("during_rl")
	if during == nil {
		during = v.get("history") // the earlier layout: every evaluation, the final ones too
	}
	if during != nil && during.Kind == '[' {
		for _, m := range during.Items {
			name, step := m.get("name"), m.get("step")
			if name == nil || name.Kind != 's' || !strings.HasPrefix(name.Str, "rl/") || step == nil || step.Kind != 'n' {
				continue
			}
			if res.RLSteps >= 0 && int(step.Num) == res.RLSteps && v.get("during_rl") == nil {
				continue // the earlier layout's history repeats the final evaluation
			}
			res.During = append(res.During, m)
		}
	}
	return res, true
}

// num returns member key of an evaluation when it is a finite number.
func num(m *value, key string) (float64, bool) {
	x := m.get(key)
	if x == nil || x.Kind != 'n' {
		return 0, false
	}
	return x.Num, true
}

// fixed3 prints a rate with three decimals, "" when absent.
func fixed3(m *value, key string) string {
	if x, ok := num(m, key); ok {
		return fmt.Sprintf("%.3f", x)
	}
	return ""
}

// gain prints after − before of a rate with its sign and three decimals, and the class that
// colours it; "" when either is absent.
func gain(before, after *value, key string) (text, class string) {
	b, ok1 := num(before, key)
	a, ok2 := num(after, key)
	if !ok1 || !ok2 {
		return "", ""
	}
	d := a - b
	switch {
	case d > 0.0005:
		return fmt.Sprintf("+%.3f", d), "up"
	case d < -0.0005:
		return fmt.Sprintf("%.3f", d), "down"
	}
	return fmt.Sprintf("%+.3f", 0.0), ""
}

// SignedPoints prints a gain in points rounded to a whole point, with its sign ("+0" for a
// gain that rounds to nothing, never "-0"), as the report and `agentr1 train` both give gains.
func SignedPoints(x float64) string {
	r := math.Round(x)
	if r == 0 {
		return "+0"
	}
	return fmt.Sprintf("%+.0f", r)
}

// headline is the table that opens the Evaluation section: for each set, EM and F1 of the
// starting policy, after RL and the gain, beside the baselines.
type headline struct {
	Start     string // the "before" column's head
	Baselines []string
	Rows      []headlineRow
	NamesRead bool // some set has a "names read" row (answersRead)
}

// headlineRow is one metric of one set.
type headlineRow struct {
	Set, About, N   string // set columns, on its first row only
	First           bool   // the set's first row (its cells span the set's rows)
	Span            int    // rows of the set
	Metric          string // "EM", "F1"
	Before, After   string
	Gain, GainClass string
	Baselines       []string
}

// headlineMetrics are the metrics of the headline table: eval.json's key and the row's name.
var headlineMetrics = []struct{ Key, Name string }{{"em", "EM"}, {"f1", "F1"}}

// buildHeadline lays out the headline table of res.
func buildHeadline(res *results) *headline {
	h := &headline{Start: res.Start}
	for _, b := range baselineNames {
		h.Baselines = append(h.Baselines, b.Title)
	}
	for _, s := range res.Sets {
		n := ""
		for _, m := range append([]*value{s.After, s.Before}, s.Baselines[:]...) {
			if x, ok := num(m, "n"); ok && n == "" {
				n = formatValue(x)
			}
		}
		span := len(headlineMetrics)
		systems := append([]*value{s.Before, s.After}, s.Baselines[:]...)
		read := slices.ContainsFunc(systems, func(m *value) bool { return answersRead(m) != "" })
		if read {
			span++
			h.NamesRead = true
		}
		for i, m := range headlineMetrics {
			r := headlineRow{Set: setLabel(s.Name), About: s.About, N: n, First: i == 0, Span: span, Metric: m.Name,
				Before: fixed3(s.Before, m.Key), After: fixed3(s.After, m.Key)}
			r.Gain, r.GainClass = gain(s.Before, s.After, m.Key)
			for _, b := range s.Baselines {
				r.Baselines = append(r.Baselines, fixed3(b, m.Key))
			}
			h.Rows = append(h.Rows, r)
		}
		if read {
			r := headlineRow{Set: setLabel(s.Name), Span: span, Metric: "names read", Before: answersRead(s.Before), After: answersRead(s.After)}
			for _, b := range s.Baselines {
				r.Baselines = append(r.Baselines, answersRead(b))
			}
			h.Rows = append(h.Rows, r)
		}
	}
	return h
}

// answersRead prints how many of an evaluation's name answers stand earlier in their episodes
// (in the question or in what the agent read or noted; the rest it invented), "88 of 89", from
// eval.json's answer_sources; "" when absent or when no answer was a name.
func answersRead(m *value) string {
	a := m.get("answer_sources")
	names, ok1 := num(a, "names")
	invented, ok2 := num(a, "invented")
	if !ok1 || !ok2 || names == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d", int(names-invented), int(names))
}

// resultCards are the summary cards of the sets: each set's EM gain over the starting policy,
// in points as `agentr1 train` prints it and the results document gives it, as the card's
// figure; EM before and after under it; and, when y names the set, the yardstick's spread with
// where this run's gain lies against it (Spread.Place).
func resultCards(res *results, y *Yardstick) []card {
	var cards []card
	for _, s := range res.Sets {
		a, ok := num(s.After, "em")
		if !ok {
			continue
		}
		c := card{Label: setLabel(s.Name) + " EM after RL", Value: fixed3(s.After, "em")}
		if b, ok := num(s.Before, "em"); ok {
			g := 100 * (a - b)
			c = card{Label: setLabel(s.Name) + ": EM gain over the " + res.Start,
				Value: SignedPoints(g) + " points", Sub: fmt.Sprintf("EM %.3f → %.3f", b, a)}
			if y != nil {
				if sp, ok := y.Gains[s.Name]; ok {
					c.Note = fmt.Sprintf("%s: %s points; this run %s", y.Source, sp, sp.Place(g))
				}
			}
		}
		cards = append(cards, c)
	}
	return cards
}

// groupTable is one set's EM by question type (and by dataset when there are several):
// before and after RL, the gain, and the baselines.
func groupTable(res *results, s setResults) (tableView, bool) {
	t := tableView{Caption: "EM by question type: " + setLabel(s.Name),
		Header: []string{"", "n", res.Start, "after RL", "gain"}}
	for _, b := range baselineNames {
		t.Header = append(t.Header, b.Title)
	}
	systems := append([]*value{s.Before, s.After}, s.Baselines[:]...)
	var keys []string
	datasets := 0
	for _, m := range systems {
		for _, g := range m.get("groups").fieldsOrNil() {
			if !slices.Contains(keys, g.Key) {
				keys = append(keys, g.Key)
				if strings.HasPrefix(g.Key, "dataset=") {
					datasets++
				}
			}
		}
	}
	for _, k := range keys {
		kind, name, _ := strings.Cut(k, "=")
		if kind == "dataset" && datasets < 2 {
			continue // one dataset: its row repeats the set's figures
		}
		if kind == "dataset" {
			name = "dataset " + name
		}
		var g [5]*value
		n := ""
		for i, m := range systems {
			g[i] = m.get("groups").get(k)
			if x, ok := num(g[i], "n"); ok && n == "" {
				n = formatValue(x)
			}
		}
		d, _ := gain(g[0], g[1], "em")
		t.Rows = append(t.Rows, []string{name, n, fixed3(g[0], "em"), fixed3(g[1], "em"), d,
			fixed3(g[2], "em"), fixed3(g[3], "em"), fixed3(g[4], "em")})
	}
	return t, len(t.Rows) > 0
}

// duringTable is EM on every set at each evaluated step: the start (step 0), the evaluations
// during RL, and the end.
func duringTable(res *results) (tableView, bool) {
	if len(res.During) == 0 {
		return tableView{}, false
	}
	t := tableView{Caption: "EM during RL (step s: after s RL steps)", Header: []string{"step"}}
	for _, s := range res.Sets {
		t.Header = append(t.Header, setLabel(s.Name))
	}
	rows := map[int][]string{}
	var steps []int
	put := func(step int, label string, set int, m *value) {
		if rows[step] == nil {
			rows[step] = make([]string, 1+len(res.Sets))
			rows[step][0] = label
			steps = append(steps, step)
		}
		rows[step][1+set] = fixed3(m, "em")
	}
	for i, s := range res.Sets {
		if s.Before != nil {
			put(0, "0 ("+res.Start+")", i, s.Before)
		}
	}
	for _, m := range res.During {
		step, _ := num(m, "step")
		name := m.get("name").Str
		for i, s := range res.Sets {
			if name == "rl/"+s.Name {
				put(int(step), formatValue(step), i, m)
			}
		}
	}
	for i, s := range res.Sets {
		if s.After != nil {
			step := res.RLSteps
			if x, ok := num(s.After, "step"); ok {
				step = int(x)
			}
			put(step, fmt.Sprintf("%d (after RL)", step), i, s.After)
		}
	}
	slices.Sort(steps)
	for _, st := range steps {
		t.Rows = append(t.Rows, rows[st])
	}
	return t, true
}
