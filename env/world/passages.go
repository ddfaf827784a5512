package world

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"agentr1/env"
	"agentr1/env/qa"
)

// templates lists, per kind, the sentence groups of a passage; a passage takes one
// alternative of each group whose facts the entity has. {S} is the entity's name, {rel} a
// fact. Every alternative names its subject, so a fact can be read from any search result
// text, whatever the search tool's layout, without confusing it with another entity's.
var templates = map[Kind][][]string{
	Country: {
		{"{S} is a country. Its capital is {capital}.", "The capital of {S} is {capital}.", "{S} is a land whose capital is {capital}."},
	},
	City: {
		{"{S} is a city in {country}.", "{S} is a town in {country}.", "{S} lies in {country}."},
		{"{S} was founded in {founded}.", "The city of {S} dates from {founded}."},
		{"{S} has {population} thousand people.", "About {population} thousand people live in {S}."},
	},
	Person: {
		{"{S} was a {job} born in {born_in} in {born}.", "{S} ({born}) was a {job} from {born_in}.", "Born in {born_in} in {born}, {S} was a {job}."},
		{"{S} was a child of {father}.", "The father of {S} was {father}."},
	},
	Company: {
		{"{S} is a company based in {base}.", "{S} is a firm from {base}."},
		{"{S} was founded by {founder} in {founded}.", "{founder} founded {S} in {founded}."},
	},
	Band: {
		{"{S} is a band formed in {home} in {founded}.", "{S} is a music group from {home}. It was formed in {founded}."},
		{"The lead singer of {S} is {singer}.", "{singer} sings in {S}."},
	},
}

// countTemplates are the sentence groups of the count facts, which only worlds with numeric
// questions have (Config.Numeric). They follow a passage's other sentences and are chosen from
// the counts' own random stream, so that a world without them draws as it always does.
var countTemplates = map[Kind][][]string{
	Company: {{"{S} has {employees} employees.", "{S} employs {employees} people."}},
	Band:    {{"{S} has released {albums} albums.", "{S} made {albums} albums."}},
}

// sentenceGroups returns kind k's sentence groups: templates, then countTemplates.
func sentenceGroups(k Kind) [][]string { return slices.Concat(templates[k], countTemplates[k]) }

var slotRe = regexp.MustCompile(`\{([a-zA-Z_]+)\}`)

// fill substitutes {S} and the entity's facts into a template; ok is false if a fact is missing.
func fill(tmpl string, e *Entity) (string, bool) {
	ok := true
	out := slotRe.ReplaceAllStringFunc(tmpl, func(m string) string {
		name := m[1 : len(m)-1]
		if name == "S" {
			return e.Name
		}
		v, has := e.Facts[Rel(name)]
		ok = ok && has
		return v
	})
	return out, ok
}

// entityPassage writes the entity's passage, choosing one template of each group with rng and,
// in a world with counts (counts not nil), one of each count group with counts.
func entityPassage(rng, counts *rand.Rand, e *Entity) env.Passage {
	var sents []string
	for _, group := range templates[e.Kind] {
		s, ok := fill(group[rng.IntN(len(group))], e)
		if ok {
			sents = append(sents, s)
		}
	}
	if counts != nil {
		for _, group := range countTemplates[e.Kind] {
			if s, ok := fill(group[counts.IntN(len(group))], e); ok {
				sents = append(sents, s)
			}
		}
	}
	text := strings.Join(sents, " ")
	return env.Passage{ID: qa.PassageID(e.Name, text), Title: e.Name, Text: text}
}

// distractorPassage writes a passage about a river or a club named after city: it shares the
// city's name (a lexical near-miss for the search) but states no fact the questions ask about.
func distractorPassage(rng *rand.Rand, city *Entity, cities []*Entity) env.Passage {
	other := cities[rng.IntN(len(cities))]
	var title, text string
	if rng.IntN(2) == 0 {
		title = city.Name + " River"
		text = "The " + title + " flows through " + city.Name + " and " + other.Name + "."
	} else {
		title = city.Name + " FC"
		text = title + " is a football club from " + city.Name + ". The club was started in " +
			strconv.Itoa(1850+rng.IntN(150)) + "."
	}
	return env.Passage{ID: qa.PassageID(title, text), Title: title, Text: text}
}

// Object patterns by relation, for reading facts back out of text.
const (
	namePat = `[A-Z][a-z]+(?: [A-Z][a-z]+)?`
	numPat  = `[0-9]+`
	wordPat = `[a-z]+`
)

func objectPattern(r Rel) string {
	switch r {
	case RelPopulation, RelFounded, RelBorn, RelEmployees, RelAlbums:
		return numPat
	case RelJob:
		return wordPat
	}
	return namePat
}

// ReadFact finds the fact rel of the entity named subject in text (a search result, in any
// layout) by matching the passage templates, and returns its object. It is how the scripted
// agent reads: it knows what the sentences look like, not what the world holds.
func ReadFact(text, subject string, rel Rel) (string, bool) {
	for k := Country; k <= Band; k++ { // in kind order: deterministic
		for _, group := range sentenceGroups(k) {
			for _, tmpl := range group {
				if !strings.Contains(tmpl, "{"+string(rel)+"}") {
					continue
				}
				if m := factRegexp(tmpl, subject, rel).FindStringSubmatch(text); m != nil {
					return m[1], true
				}
			}
		}
	}
	return "", false
}

// factRegexp turns a template into a regexp capturing rel for subject; other slots match
// their object pattern.
func factRegexp(tmpl, subject string, rel Rel) *regexp.Regexp {
	var b strings.Builder
	last := 0
	for _, loc := range slotRe.FindAllStringSubmatchIndex(tmpl, -1) {
		b.WriteString(regexp.QuoteMeta(tmpl[last:loc[0]]))
		switch name := tmpl[loc[2]:loc[3]]; {
		case name == "S":
			if loc[0] == 0 {
				// The subject must not continue a longer name ("Kalo" in "Bo Kalo"): before
				// it comes the start, a non-letter, or a lower-case word. Inside a template
				// the words before {S} anchor it.
				b.WriteString(`(?:^|[^A-Za-z ]|[^A-Za-z] |(?:^|[^A-Za-z])[a-z]+ )`)
			}
			b.WriteString(regexp.QuoteMeta(subject) + `\b`)
		case Rel(name) == rel:
			b.WriteString(`\b(` + objectPattern(rel) + `)\b`)
		default:
			b.WriteString(`(?:` + objectPattern(Rel(name)) + `)`)
		}
		last = loc[1]
	}
	b.WriteString(regexp.QuoteMeta(tmpl[last:]))
	return regexp.MustCompile(b.String())
}
