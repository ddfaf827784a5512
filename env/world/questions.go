package world

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"agentr1/env/qa"
)

// Hop is one lookup of a plan: read relation Rel of an entity, named either literally
// (Subject, from the question) or by the value an earlier hop found (From >= 0).
type Hop struct {
	Subject string // the entity named in the question; "" when From names the hop
	From    int    // index of an earlier hop, or -1
	Rel     Rel    // the relation read
}

// Final says how a plan's answer follows from its hops.
type Final int

// The ways a plan ends.
const (
	LastValue  Final = iota // the last hop's value
	Larger                  // the option whose compared hop value is larger
	Smaller                 // the option whose compared hop value is smaller (born first, ...)
	Same                    // "yes" if the compared hops' values are equal, else "no"
	Difference              // the first compared hop's number minus the second's (a calculation)
	Sum                     // the two compared hops' numbers added (a calculation)
)

// Chooses reports whether a plan ending so answers with one of the two names its question
// offers (Plan.Options).
func (f Final) Chooses() bool { return f == Larger || f == Smaller }

// Plan is how a question is solved: the lookups in order and how the answer follows. The
// scripted agent follows it; a model has to find it.
type Plan struct {
	Hops    []Hop     // the lookups, in order
	Final   Final     // how the answer follows from them
	Compare [2]int    // hops compared (Larger, Smaller, Same), subtracted (Difference) or added (Sum)
	Options [2]string // the names the question offers (Larger, Smaller)
}

// Task is a generated question with its plan.
type Task struct {
	qa.Question
	Plan Plan // how the scripted agent solves it
}

// pick returns a random entity of kind k satisfying ok (nil: any), or nil after many tries.
func pick(rng *rand.Rand, byKind map[Kind][]*Entity, k Kind, ok func(*Entity) bool) *Entity {
	es := byKind[k]
	for range 200 {
		e := es[rng.IntN(len(es))]
		if ok == nil || ok(e) {
			return e
		}
	}
	return nil
}

func has(r Rel) func(*Entity) bool {
	return func(e *Entity) bool { _, ok := e.Facts[r]; return ok }
}

// chain is a question answered by following relations from one named entity.
type chain struct {
	kind  Kind
	qtype string
	text  string // fmt format with one %s: the entity's name
	rels  []Rel
}

var chains = []chain{
	{Company, "bridge", "Where was the founder of %s born?", []Rel{RelFounder, RelBornIn}},
	{Company, "bridge", "What was the job of the founder of %s?", []Rel{RelFounder, RelJob}},
	{Band, "bridge", "Where was the lead singer of %s born?", []Rel{RelSinger, RelBornIn}},
	{Person, "bridge", "When was the city where %s was born founded?", []Rel{RelBornIn, RelFounded}},
	{Band, "bridge", "In which country was %s formed?", []Rel{RelHome, RelCountry}},
	{Company, "compositional", "In which country is %s based?", []Rel{RelBase, RelCountry}},
	{Band, "compositional", "Who is the father of the lead singer of %s?", []Rel{RelSinger, RelFather}},
	{Person, "compositional", "What is the capital of the country where %s was born?", []Rel{RelBornIn, RelCountry, RelCapital}},
	{Company, "compositional", "In which country was the founder of %s born?", []Rel{RelFounder, RelBornIn, RelCountry}},
	{Person, "inference", "Who is the grandfather of %s?", []Rel{RelFather, RelFather}},
	{Person, "bridge", "Where was the father of %s born?", []Rel{RelFather, RelBornIn}},
	{Person, "bridge", "What was the job of the father of %s?", []Rel{RelFather, RelJob}},
	{Person, "bridge", "How many thousand people live in the city where %s was born?", []Rel{RelBornIn, RelPopulation}},
	{Company, "bridge", "When was the founder of %s born?", []Rel{RelFounder, RelBorn}},
	{Band, "bridge", "When was the lead singer of %s born?", []Rel{RelSinger, RelBorn}},
	{City, "compositional", "What is the capital of the country where %s lies?", []Rel{RelCountry, RelCapital}},
}

// comparison is a question comparing a fact of two entities of a kind, or of the entities
// one relation leads to (bridge comparison, when via is set).
type comparison struct {
	kind  Kind
	qtype string
	text  string // fmt format with two %s
	via   Rel    // "" or the relation followed first from each option
	rel   Rel
	final Final
}

var comparisons = []comparison{
	{City, "comparison", "Which city has more people, %s or %s?", "", RelPopulation, Larger},
	{Person, "comparison", "Who was born first, %s or %s?", "", RelBorn, Smaller},
	{Company, "comparison", "Which company was founded first, %s or %s?", "", RelFounded, Smaller},
	{Band, "comparison", "Which band was formed later, %s or %s?", "", RelFounded, Larger},
	{Person, "comparison", "Were %s and %s born in the same city?", "", RelBornIn, Same},
	{City, "comparison", "Are %s and %s in the same country?", "", RelCountry, Same},
	{Company, "bridge_comparison", "Whose founder was born first, %s or %s?", RelFounder, RelBorn, Smaller},
}

// numeric is a question whose answer is a calculation on a numeric fact of two entities: a
// difference drawn positive, or a sum.
type numeric struct {
	kinds [2]Kind
	rels  [2]Rel
	final Final // Difference or Sum
	// later marks a Difference whose second option has the larger value ("how many years after
	// X was founded was Y born": born(Y) - founded(X)); otherwise the first option's is larger
	// ("by how much does A exceed B": A - B).
	later bool
	qtype string
	text  string // fmt format with two %s, the options in order
}

// numerics are the calculation questions of Config.Numeric: differences of years and of
// populations, and, over the counts of numeric worlds, a difference of employees and a sum of
// albums. The plan reads the options in the question's order.
var numerics = []numeric{
	{[2]Kind{City, Person}, [2]Rel{RelFounded, RelBorn}, Difference, true, "year_difference", "How many years after %s was founded was %s born?"},
	{[2]Kind{Company, Person}, [2]Rel{RelFounded, RelBorn}, Difference, true, "year_difference", "How many years after %s was founded was %s born?"},
	{[2]Kind{City, City}, [2]Rel{RelPopulation, RelPopulation}, Difference, false, "population_difference", "By how many thousand people does the population of %s exceed that of %s?"},
	{[2]Kind{Company, Company}, [2]Rel{RelEmployees, RelEmployees}, Difference, false, "count_difference", "How many more employees does %s have than %s?"},
	{[2]Kind{Band, Band}, [2]Rel{RelAlbums, RelAlbums}, Sum, false, "count_sum", "How many albums did %s and %s release in all?"},
}

// makeNumeric draws a numeric question: two entities with the facts, whose difference, for a
// Difference, is positive.
func makeNumeric(rng *rand.Rand, w *World, byKind map[Kind][]*Entity, c numeric) (Task, bool) {
	a := pick(rng, byKind, c.kinds[0], has(c.rels[0]))
	if a == nil {
		return Task{}, false
	}
	b := pick(rng, byKind, c.kinds[1], func(e *Entity) bool {
		if e == a || !has(c.rels[1])(e) {
			return false
		}
		d := e.Num(c.rels[1]) - a.Num(c.rels[0])
		return c.final == Sum || (c.later && d > 0) || (!c.later && d < 0)
	})
	if b == nil {
		return Task{}, false
	}
	t := Task{Question: qa.Question{Question: fmt.Sprintf(c.text, a.Name, b.Name), Type: c.qtype, Numeric: true}}
	w.support(&t.Question, []*Entity{a, b})
	p := &t.Plan
	p.Hops = []Hop{{Subject: a.Name, From: -1, Rel: c.rels[0]}, {Subject: b.Name, From: -1, Rel: c.rels[1]}}
	p.Final, p.Options, p.Compare = c.final, [2]string{a.Name, b.Name}, [2]int{0, 1}
	if c.later {
		p.Compare = [2]int{1, 0}
	}
	x, y := a.Num(c.rels[0]), b.Num(c.rels[1])
	answer := x + y
	if c.final == Difference {
		answer = max(x-y, y-x)
	}
	t.Answers = []string{strconv.Itoa(answer)}
	t.Operands = []string{strconv.Itoa(x), strconv.Itoa(y)}
	return t, true
}

// makeTasks draws n distinct questions, 3 in 4 of them chains, the others comparisons (fewer
// once the chain templates run out of fresh questions, each entity having had one). Two-option
// comparisons can be guessed half the time; keeping them a minority keeps guessing poor.
// The questions come out shuffled, so that any slice of them (demonstrations, RL questions,
// a held-out tail) has the mix of the whole: in drawing order the chains run out first, and
// the last 100 of 1,000 were 56% comparisons against 23% of the first 100.
func makeTasks(rng *rand.Rand, w *World, n int) []Task {
	byKind := map[Kind][]*Entity{}
	for _, e := range w.Entities {
		byKind[e.Kind] = append(byKind[e.Kind], e)
	}
	seen := map[string]bool{}
	var tasks []Task
	for tries := 0; len(tasks) < n && tries < 50*n; tries++ {
		var t Task
		var ok bool
		if w.Config.Numeric > 0 && rng.Float64() < w.Config.Numeric {
			t, ok = makeNumeric(rng, w, byKind, numerics[rng.IntN(len(numerics))])
		} else if rng.IntN(4) < 3 {
			t, ok = makeChain(rng, w, byKind, chains[rng.IntN(len(chains))])
		} else {
			t, ok = makeComparison(rng, w, byKind, comparisons[rng.IntN(len(comparisons))])
		}
		if !ok || seen[t.Question.Question] {
			continue
		}
		seen[t.Question.Question] = true
		tasks = append(tasks, t)
	}
	rng.Shuffle(len(tasks), func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
	for i := range tasks {
		tasks[i].ID = fmt.Sprintf("world-%s-%d-%d", w.Config.Split, w.Config.Seed, i)
		tasks[i].Dataset, tasks[i].Split = "world", w.Config.Split.String()
	}
	return tasks
}

// follow walks rels from start, returning the entities visited and the final value.
func follow(w *World, start *Entity, rels []Rel) ([]*Entity, string, bool) {
	visited := []*Entity{start}
	cur := start
	var v string
	for i, r := range rels {
		val, ok := cur.Facts[r]
		if !ok {
			return nil, "", false
		}
		v = val
		if i < len(rels)-1 {
			if cur = w.ByName[val]; cur == nil {
				return nil, "", false
			}
			visited = append(visited, cur)
		}
	}
	return visited, v, true
}

func (w *World) support(q *qa.Question, es []*Entity) {
	for _, e := range es {
		q.SupportingTitles = append(q.SupportingTitles, e.Name)
		q.SupportingPIDs = append(q.SupportingPIDs, w.pidOf[e.Name])
	}
}

func makeChain(rng *rand.Rand, w *World, byKind map[Kind][]*Entity, c chain) (Task, bool) {
	start := pick(rng, byKind, c.kind, func(e *Entity) bool { _, _, ok := follow(w, e, c.rels); return ok })
	if start == nil {
		return Task{}, false
	}
	visited, answer, _ := follow(w, start, c.rels)
	t := Task{Question: qa.Question{Question: fmt.Sprintf(c.text, start.Name), Answers: []string{answer}, Type: c.qtype}}
	w.support(&t.Question, visited)
	for i, r := range c.rels {
		h := Hop{Subject: start.Name, From: i - 1, Rel: r}
		if i > 0 {
			h.Subject = ""
		}
		t.Plan.Hops = append(t.Plan.Hops, h)
	}
	return t, true
}

func makeComparison(rng *rand.Rand, w *World, byKind map[Kind][]*Entity, c comparison) (Task, bool) {
	rels := []Rel{c.rel}
	if c.via != "" {
		rels = []Rel{c.via, c.rel}
	}
	valid := func(e *Entity) bool { _, _, ok := follow(w, e, rels); return ok }
	a := pick(rng, byKind, c.kind, valid)
	if a == nil {
		return Task{}, false
	}
	va, vb := "", ""
	var b *Entity
	wantSame := c.final == Same && rng.IntN(2) == 0
	b = pick(rng, byKind, c.kind, func(e *Entity) bool {
		if e == a || !valid(e) {
			return false
		}
		_, x, _ := follow(w, a, rels)
		_, y, _ := follow(w, e, rels)
		if c.final == Same {
			return (x == y) == wantSame
		}
		return x != y
	})
	if b == nil {
		return Task{}, false
	}
	visA, va, _ := follow(w, a, rels)
	visB, vb, _ := follow(w, b, rels)
	var answer string
	switch c.final {
	case Same:
		answer = map[bool]string{true: "yes", false: "no"}[va == vb]
	case Larger, Smaller:
		x, _ := strconv.Atoi(va)
		y, _ := strconv.Atoi(vb)
		if (x > y) == (c.final == Larger) {
			answer = a.Name
		} else {
			answer = b.Name
		}
	}
	t := Task{Question: qa.Question{Question: fmt.Sprintf(c.text, a.Name, b.Name), Answers: []string{answer}, Type: c.qtype}}
	w.support(&t.Question, append(visA, visB...))
	p := &t.Plan
	p.Final, p.Options = c.final, [2]string{a.Name, b.Name}
	if c.via == "" {
		p.Hops = []Hop{{Subject: a.Name, From: -1, Rel: c.rel}, {Subject: b.Name, From: -1, Rel: c.rel}}
		p.Compare = [2]int{0, 1}
	} else {
		p.Hops = []Hop{{Subject: a.Name, From: -1, Rel: c.via}, {Subject: b.Name, From: -1, Rel: c.via},
			{From: 0, Rel: c.rel}, {From: 1, Rel: c.rel}}
		p.Compare = [2]int{2, 3}
	}
	return t, true
}
