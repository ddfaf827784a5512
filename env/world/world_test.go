package world

import (
	"context"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"agentr1/env"
	"agentr1/env/calc"
	"agentr1/env/qa"
	"agentr1/mdp"
)

func mustWorld(t *testing.T, cfg Config) *World {
	t.Helper()
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestDeterministic(t *testing.T) {
	a := mustWorld(t, DefaultConfig(7, Train))
	b := mustWorld(t, DefaultConfig(7, Train))
	if !reflect.DeepEqual(a.Passages, b.Passages) || !reflect.DeepEqual(a.Tasks, b.Tasks) {
		t.Errorf("two worlds of seed 7 differ")
	}
	c := mustWorld(t, DefaultConfig(8, Train))
	if reflect.DeepEqual(a.Passages, c.Passages) {
		t.Errorf("seeds 7 and 8 give the same world")
	}
}

// words splits names into their generated words (dropping shared industry suffixes).
func words(w *World) map[string]bool {
	out := map[string]bool{}
	for _, e := range w.Entities {
		out[e.Name] = true
		for _, part := range strings.Fields(e.Name) {
			if !contains(industries, part) {
				out[part] = true
			}
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func TestTrainEvalDisjoint(t *testing.T) {
	for _, seeds := range [][2]uint64{{1, 1}, {1, 2}, {3, 9}} {
		tr := words(mustWorld(t, DefaultConfig(seeds[0], Train)))
		ev := mustWorld(t, DefaultConfig(seeds[1], Eval))
		for wd := range words(ev) {
			if tr[wd] {
				t.Errorf("seeds %v: %q is in both the train and the eval world", seeds, wd)
			}
		}
		trainQ := map[string]bool{}
		for _, q := range mustWorld(t, DefaultConfig(seeds[0], Train)).Tasks {
			trainQ[q.Question.Question] = true
			trainQ[q.Answers[0]] = true
		}
		for _, q := range ev.Tasks {
			if trainQ[q.Question.Question] {
				t.Errorf("seeds %v: question %q in both worlds", seeds, q.Question.Question)
			}
			if a := q.Answers[0]; a != "yes" && a != "no" && trainQ[a] && !isNumber(a) && !contains(jobs, a) {
				t.Errorf("seeds %v: answer %q in both worlds", seeds, a)
			}
		}
	}
}

func isNumber(s string) bool { return strings.Trim(s, "0123456789") == "" }

func TestWorldConsistency(t *testing.T) {
	numeric := DefaultConfig(11, Train)
	numeric.Numeric = 0.3
	for _, cfg := range []Config{DefaultConfig(11, Train), numeric} {
		t.Run(fmt.Sprintf("numeric=%v", cfg.Numeric), func(t *testing.T) { checkWorldConsistency(t, cfg) })
	}
}

// checkWorldConsistency checks that cfg's world has its questions, unique passage ids, every
// fact readable from its entity's passage, supporting passages in the corpus, and enough
// questions of each type.
func checkWorldConsistency(t *testing.T, cfg Config) {
	w := mustWorld(t, cfg)
	if len(w.Tasks) != 1000 {
		t.Errorf("%d tasks, want 1000", len(w.Tasks))
	}
	ids := map[string]string{}
	for _, p := range w.Passages {
		if other, dup := ids[p.ID]; dup {
			t.Errorf("passage id %s shared by %q and %q", p.ID, p.Title, other)
		}
		ids[p.ID] = p.Title
	}
	// Every fact can be read back from its entity's passage, and from no other entity's.
	for i, e := range w.Entities {
		p := w.Passages[i]
		if p.Title != e.Name || w.PassageID(e.Name) != p.ID {
			t.Fatalf("passage %d is %q, entity %q", i, p.Title, e.Name)
		}
		for rel, want := range e.Facts {
			got, ok := ReadFact(p.Text, e.Name, rel)
			if !ok || got != want {
				t.Errorf("%s %q: read %s = %q (%v) from %q, want %q", e.Kind, e.Name, rel, got, ok, p.Text, want)
			}
		}
	}
	types := map[string]int{}
	for _, task := range w.Tasks {
		types[task.Type]++
		if len(task.SupportingPIDs) < 2 || len(task.SupportingPIDs) != len(task.SupportingTitles) {
			t.Errorf("%s: supporting %v %v", task.ID, task.SupportingTitles, task.SupportingPIDs)
		}
		for _, id := range task.SupportingPIDs {
			if _, ok := ids[id]; !ok {
				t.Errorf("%s: supporting pid %s not in the corpus", task.ID, id)
			}
		}
		if len(task.Answers) != 1 || task.Answers[0] == "" {
			t.Errorf("%s: answers %v", task.ID, task.Answers)
		}
	}
	want := []string{"bridge", "compositional", "inference", "comparison", "bridge_comparison"}
	if cfg.Numeric > 0 {
		want = append(want, "year_difference", "population_difference", "count_difference", "count_sum")
	}
	for _, typ := range want {
		if types[typ] < 20 {
			t.Errorf("only %d %s questions: %v", types[typ], typ, types)
		}
	}
	t.Logf("question types: %v; %d passages", types, len(w.Passages))
}

func TestReadFactIgnoresOtherSubjects(t *testing.T) {
	text := `Doc 1 (Title: "Kalo FC") Kalo FC is a football club from Kalo. The club was started in 1901.
Doc 2 (Title: "Bo Kalo") Bo Kalo (1880) was a pilot from Miren.
Doc 3 (Title: "Kalo") Kalo lies in Dunia. About 120 thousand people live in Kalo. Kalo was founded in 1420.`
	cases := []struct {
		subject string
		rel     Rel
		want    string
		ok      bool
	}{
		{"Kalo", RelFounded, "1420", true},
		{"Kalo", RelCountry, "Dunia", true},
		{"Kalo", RelPopulation, "120", true},
		{"Bo Kalo", RelBornIn, "Miren", true},
		{"Bo Kalo", RelBorn, "1880", true},
		{"Kalo", RelBorn, "", false},
		{"Miren", RelFounded, "", false},
		{"Bo", RelJob, "", false},
	}
	for _, c := range cases {
		got, ok := ReadFact(text, c.subject, c.rel)
		if got != c.want || ok != c.ok {
			t.Errorf("ReadFact(%s, %s) = %q, %v; want %q, %v", c.subject, c.rel, got, ok, c.want, c.ok)
		}
	}
}

func TestScriptedAgent(t *testing.T) {
	w := mustWorld(t, Config{Seed: 5, Split: Eval, Questions: 300})
	search := NewTitleSearch(w.Passages, 5)
	cfg := QAConfig(0.1)
	cases := []struct {
		noise        float64
		minEM, maxEM float64
	}{
		{0, 1, 1},
		{0.1, 0.6, 0.97},
		{0.3, 0.2, 0.8},
	}
	for _, c := range cases {
		demos, s, err := Run(context.Background(), w, cfg, []env.Tool{search}, w.Tasks, Habits{Noise: c.noise}, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("noise %.2f: EM %.3f F1 %.3f reward %.3f format-ok %.3f turns %.2f searches %.2f by type %v",
			c.noise, s.EM, s.F1, s.Reward, s.FormatOK, s.Turns, s.Searches, s.EMByType)
		if s.EM < c.minEM || s.EM > c.maxEM {
			t.Errorf("noise %v: EM %.3f outside [%v, %v]", c.noise, s.EM, c.minEM, c.maxEM)
		}
		// Mistakes are marked where they are made: a malformed call (a format error in its
		// observation), a search for an entity the plan does not reach, or a wrong answer.
		marked, clean := 0, 0
		for _, d := range demos {
			for i, turn := range d.Turns {
				last := i == len(d.Turns)-1
				formatErr := strings.Contains(turn.Observation, "Error:")
				if !turn.Mistake {
					clean++
					if formatErr {
						t.Errorf("noise %v: %s turn %d has a malformed call but is not marked a mistake:\n%s", c.noise, d.Task.ID, i, turn.Action)
					}
					continue
				}
				marked++
				if c.noise == 0 {
					t.Errorf("noise 0: %s turn %d marked a mistake:\n%s", d.Task.ID, i, turn.Action)
				}
				if last && d.Score.EM != 0 && d.Score.Format == 1 {
					t.Errorf("noise %v: %s: the answer is marked a mistake but is right: %q", c.noise, d.Task.ID, d.Score.Answer)
				}
			}
		}
		if c.noise > 0 && (marked == 0 || clean == 0) {
			t.Errorf("noise %v: %d turns marked mistakes, %d not; want both", c.noise, marked, clean)
		}
		if c.noise == 0 {
			for _, d := range demos {
				if d.Score.Reward != 1 || d.Score.ProcessReward == 0 {
					t.Fatalf("noise 0: %s scored %+v\n%s", d.Task.ID, d.Score, d.Text())
				}
			}
			d := demos[0]
			if !strings.HasPrefix(d.Text(), d.Prompt) || !strings.HasSuffix(d.Turns[len(d.Turns)-1].Action, "</answer><|im_end|>") {
				t.Errorf("transcript layout:\n%s", d.Text())
			}
		}
	}
}

func TestDemoTrajectory(t *testing.T) {
	w := mustWorld(t, Config{Seed: 3, Questions: 20})
	cfg := qa.DefaultConfig()
	cfg.ProcessReward = 0.25
	demos, _, err := Run(context.Background(), w, cfg, []env.Tool{NewTitleSearch(w.Passages, 5)}, w.Tasks, Habits{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	// A byte-level "tokeniser": one id per byte, so lengths are checkable.
	encode := func(s string) []int {
		ids := make([]int, len(s))
		for i := range s {
			ids[i] = int(s[i])
		}
		return ids
	}
	for _, d := range demos {
		tr := d.Trajectory(encode, true)
		row, err := mdp.Flatten(&tr, 0)
		if err != nil {
			t.Fatalf("%s: %v", d.Task.ID, err)
		}
		if len(row.Tokens) != len(d.Text()) {
			t.Errorf("%s: %d tokens, transcript has %d bytes", d.Task.ID, len(row.Tokens), len(d.Text()))
		}
		agent, sum := 0.0, 0.0
		for i := range row.Tokens {
			agent += row.ActionMask[i]
			sum += row.Rewards[i]
		}
		wantAgent := 0
		for _, turn := range d.Turns {
			wantAgent += len(turn.Action)
		}
		if int(agent) != wantAgent {
			t.Errorf("%s: %v agent tokens, want %d", d.Task.ID, agent, wantAgent)
		}
		if want := d.Score.Reward + d.Score.ProcessReward; math.Abs(sum-want) > 1e-12 || d.Score.ProcessReward == 0 {
			t.Errorf("%s: rewards sum to %v, want %v (outcome %v + process %v)", d.Task.ID, sum, want, d.Score.Reward, d.Score.ProcessReward)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"too few countries", Config{Countries: 1}, "too small"},
		{"too many entities", Config{People: 9000}, "name space"},
		{"too many questions", Config{Countries: 2, Cities: 2, People: 4, Companies: 2, Bands: 2, Questions: 500}, "distinct questions"},
	}
	for _, c := range cases {
		_, err := New(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// TestMerge checks that merged summaries weight each part by its size, overall and per type.
func TestMerge(t *testing.T) {
	a := Summary{N: 1, EM: 1, F1: 1, Reward: 1, FormatOK: 1, Turns: 2, Searches: 1,
		EMByType: map[string]float64{"bridge": 1}, CountsByType: map[string]int{"bridge": 1}}
	b := Summary{N: 3, EM: 0, F1: 0.5, Reward: 0, FormatOK: 1, Turns: 4, Searches: 3,
		EMByType: map[string]float64{"bridge": 0, "comparison": 0}, CountsByType: map[string]int{"bridge": 2, "comparison": 1}}
	m := Merge([]Summary{a, b})
	want := Summary{N: 4, EM: 0.25, F1: 0.625, Reward: 0.25, FormatOK: 1, Turns: 3.5, Searches: 2.5}
	if m.N != want.N || m.EM != want.EM || m.F1 != want.F1 || m.Reward != want.Reward || m.FormatOK != want.FormatOK || m.Turns != want.Turns || m.Searches != want.Searches {
		t.Errorf("Merge = %+v, want %+v", m, want)
	}
	if m.EMByType["bridge"] != 1.0/3 || m.CountsByType["bridge"] != 3 || m.CountsByType["comparison"] != 1 {
		t.Errorf("Merge by type: EM %v counts %v", m.EMByType, m.CountsByType)
	}
	if e := Merge(nil); e.N != 0 || e.EM != 0 {
		t.Errorf("Merge(nil) = %+v", e)
	}
}

// The tasks are shuffled: a tail of them (the trainer's held-out set) has the question mix of
// the whole, not the comparisons the generator falls back on once chains run out.
func TestTaskMixUniform(t *testing.T) {
	w := mustWorld(t, DefaultConfig(1, Train))
	frac := func(tasks []Task) float64 {
		n := 0
		for _, tk := range tasks {
			if tk.Plan.Final != LastValue {
				n++
			}
		}
		return float64(n) / float64(len(tasks))
	}
	all, head, tail := frac(w.Tasks), frac(w.Tasks[:200]), frac(w.Tasks[len(w.Tasks)-200:])
	t.Logf("comparisons: all %.3f, first 200 %.3f, last 200 %.3f", all, head, tail)
	if math.Abs(head-all) > 0.08 || math.Abs(tail-all) > 0.08 {
		t.Errorf("comparison share: all %.3f, first 200 %.3f, last 200 %.3f; want the slices within 0.08 of the whole", all, head, tail)
	}
	for i, tk := range w.Tasks {
		if want := fmt.Sprintf("world-train-1-%d", i); tk.ID != want {
			t.Fatalf("task %d has id %q, want %q", i, tk.ID, want)
		}
	}
}

// An impatient agent answers some multi-hop questions before reading every fact: with the
// bridge entity for a chain (never right) or a coin flip for a comparison. Its calls stay
// well-formed and unmarked, and every transcript still ends in an answer.
func TestImpatientAgent(t *testing.T) {
	w := mustWorld(t, Config{Seed: 5, Split: Eval, Questions: 300})
	search := NewTitleSearch(w.Passages, 5)
	demos, s, err := Run(context.Background(), w, QAConfig(0.1), []env.Tool{search}, w.Tasks, Habits{Impatience: 0.6}, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("impatience 0.6: EM %.3f searches %.2f by type %v", s.EM, s.Searches, s.EMByType)
	early, chainsEarly, lucky := 0, 0, 0
	for _, d := range demos {
		hops := len(d.Task.Plan.Hops)
		if d.Score.Searches > hops {
			t.Errorf("%s: %d searches for %d hops with no noise", d.Task.ID, d.Score.Searches, hops)
		}
		if d.Score.Searches == hops {
			if d.Score.EM != 1 {
				t.Errorf("%s: searched every hop but EM %v:\n%s", d.Task.ID, d.Score.EM, d.Text())
			}
			continue
		}
		early++
		if d.Score.Searches < 1 || d.Score.Format != 1 {
			t.Errorf("%s: answered early with %d searches, format %v:\n%s", d.Task.ID, d.Score.Searches, d.Score.Format, d.Text())
		}
		if d.Task.Plan.Final == LastValue {
			chainsEarly++
			lucky += int(d.Score.EM) // the bridge entity can be the answer (a birthplace that is a capital)
		}
		for _, turn := range d.Turns {
			if turn.Mistake {
				t.Errorf("%s: an impatient transcript has a turn marked a mistake:\n%s", d.Task.ID, turn.Action)
			}
		}
	}
	// Every task has two or more hops, so about 0.6 of them (more of the longer ones) end early.
	if f := float64(early) / float64(len(demos)); f < 0.5 || f > 0.85 || chainsEarly == 0 {
		t.Errorf("%d of %d transcripts answered early (%d chains); want 0.5-0.85 of them", early, len(demos), chainsEarly)
	}
	if lucky*10 > chainsEarly {
		t.Errorf("%d of %d early chain answers scored; want the bridge entity, right only by coincidence", lucky, chainsEarly)
	}
}

// TestChooses checks Final.Chooses against the questions: a plan that chooses has its gold
// answer among the two names its question offers, and no other plan's answer is one of them.
func TestChooses(t *testing.T) {
	w := mustWorld(t, Config{Seed: 5, Split: Eval, Questions: 300, Numeric: 0.3})
	chooses := 0
	for _, task := range w.Tasks {
		p := task.Plan
		named := p.Options != [2]string{} && slices.Contains(p.Options[:], task.Answers[0])
		if p.Final.Chooses() != named {
			t.Errorf("%s %q: plan ends %v (chooses %v), answer %q, options %q", task.ID, task.Question.Question, p.Final, p.Final.Chooses(), task.Answers[0], p.Options)
		}
		if named {
			chooses++
		}
	}
	if chooses == 0 {
		t.Error("no question chooses between two names")
	}
}

// TestNumericQuestions checks the calculation questions of Config.Numeric: their share, their
// answers (the positive difference, or the sum, of the two facts their plan reads), and the
// scripted agent on them: patient and exact, two searches, one calculator call and the right
// number; noisy, marked mistakes it recovers from; impatient, no calculator call and the last
// number read.
func TestNumericQuestions(t *testing.T) {
	w := mustWorld(t, Config{Seed: 5, Split: Eval, Questions: 300, Numeric: 0.3})
	var numeric []Task
	sums := 0
	for _, task := range w.Tasks {
		p := task.Plan
		if p.Final != Difference && p.Final != Sum {
			if task.Numeric || len(task.Operands) > 0 {
				t.Errorf("%s %q: marked numeric (operands %v), plan ends %v", task.ID, task.Question.Question, task.Operands, p.Final)
			}
			continue
		}
		numeric = append(numeric, task)
		x := w.ByName[p.Hops[p.Compare[0]].Subject].Num(p.Hops[p.Compare[0]].Rel)
		y := w.ByName[p.Hops[p.Compare[1]].Subject].Num(p.Hops[p.Compare[1]].Rel)
		want, op := x-y, "-"
		if p.Final == Sum {
			want, op = x+y, "+"
			sums++
		}
		if !task.Numeric || task.Answers[0] != fmt.Sprint(want) || want <= 0 || len(task.SupportingPIDs) != 2 {
			t.Errorf("%s %q: answer %v, facts %d %s %d, numeric %v", task.ID, task.Question.Question, task.Answers, x, op, y, task.Numeric)
		}
		if got := task.Operands; len(got) != 2 || !slices.Contains(got, fmt.Sprint(x)) || !slices.Contains(got, fmt.Sprint(y)) {
			t.Errorf("%s %q: operands %v, want the facts %d and %d", task.ID, task.Question.Question, got, x, y)
		}
	}
	if f := float64(len(numeric)) / float64(len(w.Tasks)); f < 0.2 || f > 0.4 {
		t.Errorf("%d of %d questions numeric, want about 0.3", len(numeric), len(w.Tasks))
	}
	if sums == 0 || sums == len(numeric) {
		t.Errorf("%d of %d numeric questions are sums, want some and not all", sums, len(numeric))
	}
	tools := []env.Tool{NewTitleSearch(w.Passages, 5), calc.Tool{}}
	calcCalls := func(d Demo) int {
		n := 0
		for _, turn := range d.Turns {
			n += strings.Count(turn.Action, `"name": "calculator"`)
		}
		return n
	}
	for _, c := range []struct {
		name         string
		h            Habits
		minEM, maxEM float64
	}{
		{"exact", Habits{}, 1, 1},
		{"noisy", Habits{Noise: 0.3}, 0.2, 0.8},
		{"impatient", Habits{Impatience: 1}, 0, 0.05},
	} {
		demos, s, err := Run(context.Background(), w, QAConfig(0), tools, numeric, c.h, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: EM %.3f searches %.2f by type %v", c.name, s.EM, s.Searches, s.EMByType)
		if s.EM < c.minEM || s.EM > c.maxEM {
			t.Errorf("%s: EM %.3f outside [%v, %v]", c.name, s.EM, c.minEM, c.maxEM)
		}
		mistakes := 0
		for _, d := range demos {
			switch n := calcCalls(d); {
			case c.name == "exact" && (n != 1 || d.Score.Searches != 3 || d.Score.Reward != 1):
				t.Errorf("exact: %s: %d calculator calls, %d calls ran, reward %v:\n%s", d.Task.ID, n, d.Score.Searches, d.Score.Reward, d.Text())
			case c.name == "impatient" && n != 0:
				t.Errorf("impatient: %s called the calculator:\n%s", d.Task.ID, d.Text())
			}
			for _, turn := range d.Turns {
				if turn.Mistake && strings.Contains(turn.Action, "calculator") {
					mistakes++
				}
			}
		}
		if (c.name == "noisy") != (mistakes > 0) {
			t.Errorf("%s: %d calculator turns marked mistakes", c.name, mistakes)
		}
	}
}

// TestImpatienceSparesTheCalculation checks that impatience is a habit of searching only: an
// impatient agent answers some numeric questions after the first search, with the number it
// read, but one that has read both numbers always calls the calculator, and (noise off) gets
// the answer.
func TestImpatienceSparesTheCalculation(t *testing.T) {
	w := mustWorld(t, Config{Seed: 5, Split: Eval, Questions: 300, Numeric: 0.3})
	var numeric []Task
	for _, task := range w.Tasks {
		if task.Numeric {
			numeric = append(numeric, task)
		}
	}
	tools := []env.Tool{NewTitleSearch(w.Passages, 5), calc.Tool{}}
	demos, _, err := Run(context.Background(), w, QAConfig(0), tools, numeric, Habits{Impatience: 0.5}, 1)
	if err != nil {
		t.Fatal(err)
	}
	early := 0
	for _, d := range demos {
		var searches, calcs int
		for _, turn := range d.Turns {
			searches += strings.Count(turn.Action, `"name": "search"`)
			calcs += strings.Count(turn.Action, `"name": "calculator"`)
		}
		switch {
		case searches == 1 && calcs == 0 && d.Score.EM == 0:
			early++ // answered the one number read
		case searches == 2 && calcs == 1 && d.Score.Reward == 1:
		default:
			t.Errorf("%s: %d searches, %d calculator calls, reward %v; want 1 search and a wrong answer, or 2 searches, 1 calculation and the answer:\n%s",
				d.Task.ID, searches, calcs, d.Score.Reward, d.Text())
		}
	}
	if f := float64(early) / float64(len(demos)); f < 0.3 || f > 0.7 {
		t.Errorf("%d of %d answered after one search, want about half", early, len(demos))
	}
}

// TestCountFacts checks that a world with numeric questions is the world without them plus the
// counts: the same entities with the same other facts, each company's employees and each band's
// albums, and the same passages with the count sentence added at the end of the companies' and
// bands' ones (so the setting leaves the default world as it is).
func TestCountFacts(t *testing.T) {
	plain := mustWorld(t, DefaultConfig(3, Train))
	cfg := DefaultConfig(3, Train)
	cfg.Numeric = 0.2
	counted := mustWorld(t, cfg)
	if len(plain.Entities) != len(counted.Entities) || len(plain.Passages) != len(counted.Passages) {
		t.Fatalf("%d entities and %d passages, want %d and %d", len(counted.Entities), len(counted.Passages), len(plain.Entities), len(plain.Passages))
	}
	for i, e := range counted.Entities {
		facts := maps.Clone(e.Facts)
		var count Rel
		switch e.Kind {
		case Company:
			count = RelEmployees
		case Band:
			count = RelAlbums
		}
		if count != "" {
			if n := e.Num(count); n < 1 {
				t.Errorf("%s %q: %s = %d, want a positive count", e.Kind, e.Name, count, n)
			}
			delete(facts, count)
		}
		if !maps.Equal(facts, plain.Entities[i].Facts) {
			t.Errorf("%s %q: facts %v, want %v and the count", e.Kind, e.Name, e.Facts, plain.Entities[i].Facts)
		}
		text, before := counted.Passages[i].Text, plain.Passages[i].Text
		if count == "" && text != before || count != "" && !strings.HasPrefix(text, before+" ") {
			t.Errorf("%s %q: passage %q, want %q with a count sentence added", e.Kind, e.Name, text, before)
		}
	}
	for i := len(counted.Entities); i < len(counted.Passages); i++ {
		if counted.Passages[i] != plain.Passages[i] {
			t.Errorf("distractor %d: %+v, want %+v", i, counted.Passages[i], plain.Passages[i])
		}
	}
}
