// Package world generates small fictional encyclopedias and multi-hop questions over them,
// for fast agent-RL runs on a CPU: countries, cities, people, companies and bands linked by
// relations (a city lies in a country, a person was born in a city, a company was founded by
// a person, ...), one wiki-style passage per entity plus distractor passages, and questions
// of the HotpotQA and 2WikiMultihopQA kinds (bridge, compositional, inference, comparison,
// bridge-comparison) whose answers need 2 to 4 searches. With Config.Numeric, a share of the
// questions need two searches and one calculation (a difference of years, populations or
// employee counts, a sum of album counts), answered with the calculator tool. Training and evaluation worlds draw
// their names from disjoint halves of the name space, so an agent can only score on an
// evaluation world by searching. The vocabulary is small and the texts short, so that a tiny
// BPE model can learn the format.
//
// A scripted Agent solves the questions by searching, with a learner's habits (mistakes,
// impatience), and produces the demonstration transcripts of the SFT warm start.
package world

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"

	"agentr1/env"
	"agentr1/env/qa"
)

// Kind is an entity's kind.
type Kind int

// The entity kinds.
const (
	Country Kind = iota
	City
	Person
	Company
	Band
)

// String is the kind's lower-case name.
func (k Kind) String() string {
	return [...]string{"country", "city", "person", "company", "band"}[k]
}

// Rel names a relation: a fact about an entity. Each Kind has its own relations.
type Rel string

// The relations and the kinds they belong to. Objects are entity names, years, numbers of
// thousands of people, counts, or occupation words. The two counts exist only in worlds with
// numeric questions (Config.Numeric).
const (
	RelCapital    Rel = "capital"    // country -> city
	RelCountry    Rel = "country"    // city -> country it lies in
	RelPopulation Rel = "population" // city -> thousands of people
	RelFounded    Rel = "founded"    // city, company, band -> year
	RelBornIn     Rel = "born_in"    // person -> city
	RelBorn       Rel = "born"       // person -> year of birth
	RelJob        Rel = "job"        // person -> occupation
	RelFather     Rel = "father"     // person -> person
	RelFounder    Rel = "founder"    // company -> person
	RelBase       Rel = "base"       // company -> city it is based in
	RelSinger     Rel = "singer"     // band -> person
	RelHome       Rel = "home"       // band -> city it was formed in
	RelEmployees  Rel = "employees"  // company -> number of employees (numeric worlds only)
	RelAlbums     Rel = "albums"     // band -> number of albums released (numeric worlds only)
)

// Entity is one thing the encyclopedia describes.
type Entity struct {
	Kind  Kind           // country, city, person, company or band
	Name  string         // the unique name, from the world's split of the name space
	Facts map[Rel]string // relation -> object (a name, or a number as decimal digits)
}

// Num returns a numeric fact (year, population, count). It panics if the fact is not a number.
func (e *Entity) Num(r Rel) int {
	n, err := strconv.Atoi(e.Facts[r])
	if err != nil {
		panic(fmt.Sprintf("world: %s %q has no numeric %s", e.Kind, e.Name, r))
	}
	return n
}

// Config sets the size of a world. Zero counts take the defaults of DefaultConfig; a negative
// count means none (only meaningful for Distractors).
type Config struct {
	Seed        uint64 // the generator's seed: the same Config always gives the same world
	Split       Split  // the half of the name space the entity names come from
	Countries   int    // countries generated (at least 2)
	Cities      int    // cities generated (at least one per country)
	People      int    // people generated (at least 4)
	Companies   int    // companies generated (at least 2)
	Bands       int    // bands generated (at least 2)
	Distractors int    // passages about rivers and clubs named after cities: lexical near-misses
	Questions   int    // questions generated (Tasks)
	// Numeric is the share of questions that need two searches and one calculation (the
	// difference of two years, two populations or two companies' employees, the sum of two
	// bands' albums; calculator tool), in [0, 1]. A world with numeric questions also states
	// the counts (employees, albums) in its passages. 0: none, and the world (passages and
	// questions) is exactly that of a configuration without the setting.
	Numeric float64
}

// DefaultConfig is a world of 8 countries, 40 cities, 120 people, 40 companies and 30 bands
// with 40 distractor passages and 1000 questions.
func DefaultConfig(seed uint64, split Split) Config {
	return Config{Seed: seed, Split: split, Countries: 8, Cities: 40, People: 120, Companies: 40,
		Bands: 30, Distractors: 40, Questions: 1000}
}

// World is a generated encyclopedia: its entities, its passages (the search corpus) and its
// questions.
type World struct {
	Config   Config             // the configuration, defaults filled in
	Entities []*Entity          // every entity of the world
	ByName   map[string]*Entity // name -> entity
	Passages []env.Passage      // one per entity (same order as Entities), then the distractors
	Tasks    []Task             // the questions with their plans
	pidOf    map[string]string  // entity name -> passage id
}

// maxEntities bounds a world's size well inside the ~12,000 two-syllable words of one split.
const maxEntities = 8000

var jobs = []string{"singer", "painter", "writer", "actor", "farmer", "doctor", "teacher", "pilot"}
var industries = []string{"Motors", "Foods", "Games", "Bank", "Books", "Tools"}

// New generates a world. The same Config always gives the same world.
func New(cfg Config) (*World, error) {
	def := DefaultConfig(cfg.Seed, cfg.Split)
	orDefault(&cfg.Countries, def.Countries)
	orDefault(&cfg.Cities, def.Cities)
	orDefault(&cfg.People, def.People)
	orDefault(&cfg.Companies, def.Companies)
	orDefault(&cfg.Bands, def.Bands)
	orDefault(&cfg.Distractors, def.Distractors)
	orDefault(&cfg.Questions, def.Questions)
	if cfg.Countries < 2 || cfg.Cities < cfg.Countries || cfg.People < 4 || cfg.Companies < 2 || cfg.Bands < 2 {
		return nil, fmt.Errorf("world: config %+v too small: need >= 2 countries, a city per country, 4 people, 2 companies, 2 bands", cfg)
	}
	if !(cfg.Numeric >= 0 && cfg.Numeric <= 1) {
		return nil, fmt.Errorf("world: Numeric = %v, want a share in [0, 1]", cfg.Numeric)
	}
	if n := cfg.Countries + cfg.Cities + cfg.People + cfg.Companies + cfg.Bands; n > maxEntities {
		return nil, fmt.Errorf("world: %d entities; the name space of one split holds about %d", n, maxEntities)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed_0f_a_b1a))
	w := &World{Config: cfg, ByName: map[string]*Entity{}, pidOf: map[string]string{}}
	names := newNamer(rng, cfg.Split)
	add := func(k Kind, name string) *Entity {
		e := &Entity{Kind: k, Name: name, Facts: map[Rel]string{}}
		w.Entities = append(w.Entities, e)
		w.ByName[name] = e
		return e
	}
	countries := make([]*Entity, cfg.Countries)
	for i := range countries {
		suffix := []string{"ia", "land"}[rng.IntN(2)]
		countries[i] = add(Country, names.word(2, 2, suffix))
	}
	cities := make([]*Entity, cfg.Cities)
	pops := rng.Perm(990)
	for i := range cities {
		c := add(City, names.word(2, 2, ""))
		country := countries[i%len(countries)] // every country gets a city; the first is its capital
		if i < len(countries) {
			country.Facts[RelCapital] = c.Name
		} else {
			country = countries[rng.IntN(len(countries))]
		}
		c.Facts[RelCountry] = country.Name
		c.Facts[RelPopulation] = strconv.Itoa(10 + pops[i])
		c.Facts[RelFounded] = strconv.Itoa(1000 + rng.IntN(900))
		cities[i] = c
	}
	firsts := make([]string, 24)
	for i := range firsts {
		firsts[i] = names.word(1, 2, "")
	}
	people := make([]*Entity, cfg.People)
	for i := range people {
		var name string
		for name == "" || w.ByName[name] != nil {
			name = firsts[rng.IntN(len(firsts))] + " " + names.word(2, 2, "")
		}
		p := add(Person, name)
		p.Facts[RelBornIn] = cities[rng.IntN(len(cities))].Name
		p.Facts[RelBorn] = strconv.Itoa(1800 + rng.IntN(190))
		p.Facts[RelJob] = jobs[rng.IntN(len(jobs))]
		people[i] = p
	}
	// Fathers: about 3 in 4 people, each father born 20 to 60 years earlier.
	byYear := append([]*Entity(nil), people...)
	sort.SliceStable(byYear, func(a, b int) bool { return byYear[a].Num(RelBorn) < byYear[b].Num(RelBorn) })
	for _, p := range people {
		if rng.IntN(4) == 0 {
			continue
		}
		var cands []*Entity
		for _, f := range byYear {
			if d := p.Num(RelBorn) - f.Num(RelBorn); d >= 20 && d <= 60 {
				cands = append(cands, f)
			}
		}
		if len(cands) > 0 {
			p.Facts[RelFather] = cands[rng.IntN(len(cands))].Name
		}
	}
	for range cfg.Companies {
		founder := people[rng.IntN(len(people))]
		c := add(Company, names.word(2, 2, "")+" "+industries[rng.IntN(len(industries))])
		c.Facts[RelFounder] = founder.Name
		c.Facts[RelBase] = cities[rng.IntN(len(cities))].Name
		c.Facts[RelFounded] = strconv.Itoa(min(2020, founder.Num(RelBorn)+20+rng.IntN(40)))
	}
	for range cfg.Bands {
		singer := people[rng.IntN(len(people))]
		singer.Facts[RelJob] = "singer"
		b := add(Band, names.word(2, 3, ""))
		b.Facts[RelSinger] = singer.Name
		b.Facts[RelHome] = cities[rng.IntN(len(cities))].Name
		b.Facts[RelFounded] = strconv.Itoa(min(2020, singer.Num(RelBorn)+16+rng.IntN(30)))
	}
	// The count facts and their sentences draw from a stream of their own, so that the rest of
	// the world's draws stay those of a world without numeric questions.
	var counts *rand.Rand
	if cfg.Numeric > 0 {
		counts = rand.New(rand.NewPCG(cfg.Seed, 0xc0_0a75))
		addCounts(counts, w.Entities)
	}
	for _, e := range w.Entities {
		p := entityPassage(rng, counts, e)
		w.pidOf[e.Name] = p.ID
		w.Passages = append(w.Passages, p)
	}
	for i := range cfg.Distractors {
		w.Passages = append(w.Passages, distractorPassage(rng, cities[i%len(cities)], cities))
	}
	w.Tasks = makeTasks(rng, w, cfg.Questions)
	if len(w.Tasks) < cfg.Questions {
		return nil, fmt.Errorf("world: only %d distinct questions over %d entities, %d asked; add entities",
			len(w.Tasks), len(w.Entities), cfg.Questions)
	}
	return w, nil
}

// addCounts gives every company its number of employees and every band its number of albums.
func addCounts(rng *rand.Rand, entities []*Entity) {
	for _, e := range entities {
		switch e.Kind {
		case Company:
			e.Facts[RelEmployees] = strconv.Itoa(100 + rng.IntN(900))
		case Band:
			e.Facts[RelAlbums] = strconv.Itoa(2 + rng.IntN(28))
		}
	}
}

// orDefault replaces a zero count by its default and a negative one by zero.
func orDefault(p *int, def int) {
	if *p == 0 {
		*p = def
	}
	*p = max(*p, 0)
}

// PassageID returns the id of the passage describing the named entity ("" if none).
func (w *World) PassageID(name string) string { return w.pidOf[name] }

// Questions returns the tasks' questions.
func (w *World) Questions() []qa.Question { return QuestionsOf(w.Tasks) }

// QuestionsOf returns the questions of tasks, in order.
func QuestionsOf(tasks []Task) []qa.Question {
	out := make([]qa.Question, len(tasks))
	for i, t := range tasks {
		out[i] = t.Question
	}
	return out
}

// SystemPrompt is a short system message for tiny models trained from scratch on a world:
// the format in one line each, without Qwen's <tools> block (a model that has never read JSON
// schemas gains nothing from one and pays for its tokens on every prompt).
const SystemPrompt = `Answer the question. Think in <think> </think>. Search the wiki with
<tool_call>
{"name": "search", "arguments": {"query": "..."}}
</tool_call>
Give the short answer in <answer> </answer>.`

// QAConfig is the QA environment configuration for worlds: SystemPrompt, think required,
// 6 turns (the 4-search bridge comparisons plus an answer, with one turn to spare for a
// retry), 1 call per turn (the rollout stops at the first "</tool_call>"), and the given
// process reward (0 for none).
func QAConfig(processReward float64) qa.Config {
	cfg := qa.DefaultConfig()
	cfg.SystemPrompt = SystemPrompt
	cfg.Env.MaxTurns = 6
	cfg.Env.MaxCallsPerTurn = 1
	cfg.ProcessReward = processReward
	return cfg
}
