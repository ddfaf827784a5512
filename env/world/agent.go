package world

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"agentr1/env"
	"agentr1/env/calc"
	"agentr1/env/qa"
	"agentr1/mdp"
)

// relNoun is how the agent's thoughts name each relation.
var relNoun = map[Rel]string{
	RelCapital: "capital", RelCountry: "country", RelPopulation: "population",
	RelFounded: "founding year", RelBornIn: "birthplace", RelBorn: "birth year", RelJob: "job",
	RelFather: "father", RelFounder: "founder", RelBase: "base city", RelSinger: "lead singer",
	RelHome: "home city", RelEmployees: "number of employees", RelAlbums: "number of albums",
}

// Habits are how the scripted agent departs from a perfect solver.
type Habits struct {
	// Noise is the probability of each mistake a learner makes: a search for a wrong entity,
	// a malformed call (bad JSON, an unknown tool or a wrong argument name), a wrong answer.
	Noise float64
	// Impatience is the probability, each time the agent has read a fact and needs more, that
	// it stops searching and answers from what it has: the entity it reached for a chain (the
	// father where the grandfather was asked), a coin flip for a comparison, the one number
	// read for a calculation. It is the habit of a model that can search but under-uses its
	// tool; such an agent's transcripts teach a warm start the format and the reading, and
	// leave RL the search strategy to learn. It applies before searches only: with both
	// numbers of a calculation read, the agent always calculates.
	Impatience float64
}

// Agent is a scripted solver of a world's questions: it follows each task's plan, searching
// for one entity per turn, reading the fact it needs out of the search results with ReadFact,
// searching again when the fact is not there, and answering in the format the reward wants.
// Its Habits make it err like a learner. Its transcripts are the SFT warm start's
// demonstrations.
type Agent struct {
	Habits
	rng   *rand.Rand
	names []string // entity names, for wrong queries and wrong answers
}

// NewAgent returns an agent for w's tasks with the given habits, its choices drawn from seed.
func NewAgent(w *World, h Habits, seed uint64) *Agent {
	a := &Agent{Habits: h, rng: rand.New(rand.NewPCG(seed, 0xa6e47))}
	for _, e := range w.Entities {
		a.names = append(a.names, e.Name)
	}
	return a
}

// DemoTurn is one turn of a transcript: the agent's text (ending in "</tool_call>" or, for
// the answer, "<|im_end|>"), then the environment's observation ("" after the answer).
type DemoTurn struct {
	Action      string // the agent's text of the turn
	Observation string // the environment's reply; "" after the answer
	// Mistake marks an action in which the agent erred on purpose (Noise): it searched for a
	// wrong entity, wrote a malformed call or answered wrongly. The turns after it are the
	// recovery; a warm start can imitate those without imitating the mistake. An impatient
	// answer is not marked: it is a habit the warm start is meant to pick up.
	Mistake bool
}

// Demo is one episode's transcript in the exact format of a rollout: tokenise Prompt and each
// Observation as environment text (masked), each Action as agent text (trained on).
type Demo struct {
	Task   Task       // the question solved
	Prompt string     // the episode's prompt text, as the environment's Reset renders it
	Turns  []DemoTurn // the turns, in order
	Score  qa.Score   // the environment's score of the episode
	// ProcessRewards holds each turn's process reward (the sum over its calls).
	ProcessRewards []float64
}

// Text is the whole transcript as one string.
func (d *Demo) Text() string {
	var b strings.Builder
	b.WriteString(d.Prompt)
	for _, t := range d.Turns {
		b.WriteString(t.Action)
		b.WriteString(t.Observation)
	}
	return b.String()
}

// happens reports true with probability p, drawing from the agent's stream only when p > 0 (so
// a habit set to 0 leaves the other habits' draws, and the transcripts, as they were).
func (a *Agent) happens(p float64) bool { return p > 0 && a.rng.Float64() < p }

func (a *Agent) otherName(not string) string {
	for {
		if n := a.names[a.rng.IntN(len(a.names))]; n != not {
			return n
		}
	}
}

// Solve runs one episode of t in e (which it resets) and returns the transcript. The search
// is whatever tool e offers under the name "search".
func (a *Agent) Solve(ctx context.Context, e *qa.Env, t Task) Demo {
	d := Demo{Task: t, Prompt: e.Reset(t.Question)}
	step := func(text string, mistake bool) qa.Step {
		s := e.Step(ctx, text)
		d.Turns = append(d.Turns, DemoTurn{Action: text, Observation: s.Observation, Mistake: mistake})
		r := 0.0
		for _, x := range s.ProcessRewards {
			r += x
		}
		d.ProcessRewards = append(d.ProcessRewards, r)
		return s
	}
	values := make([]string, len(t.Plan.Hops))
	var notes []string // facts read so far, as sentences
	for i, h := range t.Plan.Hops {
		subject := h.Subject
		if h.From >= 0 {
			subject = values[h.From]
		}
		if subject == "" {
			break // an earlier hop failed; no point going on
		}
		if i > 0 && values[i-1] != "" && a.happens(a.Impatience) {
			break // answer from what it has
		}
		need := fmt.Sprintf("I need the %s of %s.", relNoun[h.Rel], subject)
		think := need
		if len(notes) > 0 {
			think = notes[len(notes)-1] + " " + need
		}
		for values[i] == "" && e.MaxTurns()-len(d.Turns) > 1 {
			query := subject
			if a.happens(a.Noise) {
				query = a.otherName(subject)
			}
			call, malformed := a.call(query)
			s := step("<think>"+think+"</think>\n"+call, malformed || query != subject)
			switch v, ok := ReadFact(s.Observation, subject, h.Rel); {
			case ok:
				values[i] = v
				notes = append(notes, fmt.Sprintf("The %s of %s is %s.", relNoun[h.Rel], subject, v))
			case len(s.Calls) > 0 && s.Calls[0].Status.FormatError():
				think = "My call was wrong. " + need
			default:
				think = "It is not there. " + need
			}
		}
	}
	if e.Done() { // cannot happen while MaxTurns >= 1: the loop leaves a turn for the answer
		d.Score = e.Score()
		return d
	}
	answer := ""
	if t.Plan.Final == Difference || t.Plan.Final == Sum {
		answer, notes = a.calculate(e, t.Plan, values, notes, step)
	}
	if answer == "" {
		answer = a.conclude(t.Plan, values)
	}
	wrong := a.happens(a.Noise)
	if wrong {
		answer = a.otherName(answer)
	}
	summary := strings.Join(notes, " ")
	if summary == "" {
		summary = "I could not find it."
	}
	step("<think>"+summary+"</think>\n<answer>"+answer+"</answer>"+env.ImEnd, wrong)
	d.Score = e.Score()
	return d
}

// calculate finishes a Difference or Sum plan: with both numbers read, it calls the calculator
// on "x - y" or "x + y" until a plausible result comes back or one turn is left for the answer,
// and returns the result and the notes with it added. Impatience does not reach this step: it
// is the habit of skipping a search, and an agent that holds both numbers has nothing left to
// look up, so it calculates (an impatient agent answers before the second search instead,
// with the one number it read). The warm start then calls the calculator whenever it has read
// both numbers, and what RL has to teach is the second search, as for the bridge questions.
// Noise makes a call malformed or gets the expression wrong: the operands of a difference
// swapped (a negative result), a sum subtracted (a total below one of its parts); the agent
// notices and calculates again. Both are marked as mistakes.
func (a *Agent) calculate(e *qa.Env, p Plan, values, notes []string, step func(string, bool) qa.Step) (string, []string) {
	x, y := values[p.Compare[0]], values[p.Compare[1]]
	if x == "" || y == "" {
		return "", notes
	}
	expr, wrongExpr := x+" - "+y, y+" - "+x
	if p.Final == Sum {
		expr, wrongExpr = x+" + "+y, x+" - "+y
	}
	need := "I need " + expr + "."
	think := strings.Join(notes, " ") + " " + need
	for e.MaxTurns()-len(e.Turns()) > 1 {
		written, mistake := expr, false
		if a.happens(a.Noise) {
			written, mistake = wrongExpr, true
		}
		call, malformed := a.toolCall(calc.Name, calc.Param, written)
		s := step("<think>"+think+"</think>\n"+call, mistake || malformed)
		result, ok := ToolResult(s.Observation)
		switch {
		case ok && plausible(p.Final, result, x, y):
			return result, append(notes, expr+" is "+result+".")
		case ok && !strings.HasPrefix(result, "Error"):
			think = wrongResult(p.Final, result) + " " + need
		default:
			think = "My call was wrong. " + need
		}
	}
	return "", notes
}

// plausible reports whether result can be the calculation final on x and y: a difference is not
// negative, a sum is at least each of its parts.
func plausible(final Final, result, x, y string) bool {
	r, err := strconv.Atoi(result)
	if err != nil {
		return false
	}
	if final == Sum {
		nx, _ := strconv.Atoi(x)
		ny, _ := strconv.Atoi(y)
		return r >= nx && r >= ny
	}
	return r >= 0
}

// wrongResult is the agent's thought on an implausible result.
func wrongResult(final Final, result string) string {
	if final == Sum {
		return "A total of " + result + " cannot be right."
	}
	return "A difference of " + result + " cannot be right."
}

// ToolResult returns the text of the first <tool_response> block of an observation.
func ToolResult(observation string) (string, bool) {
	_, rest, ok := strings.Cut(observation, "<tool_response>\n")
	if !ok {
		return "", false
	}
	result, _, ok := strings.Cut(rest, "\n</tool_response>")
	return result, ok
}

// call writes a search call for query, malformed with probability Noise (reported).
func (a *Agent) call(query string) (call string, malformed bool) {
	return a.toolCall("search", "query", query)
}

// toolCall writes a call of tool with one string argument key = value, malformed with
// probability Noise (reported): bad JSON, an unknown tool or a wrong argument name.
func (a *Agent) toolCall(tool, key, value string) (call string, malformed bool) {
	name, quote := tool, `"`
	if malformed = a.happens(a.Noise); malformed {
		switch a.rng.IntN(3) {
		case 0:
			quote = "" // bad JSON: an unquoted string
		case 1:
			name = "lookup" // no such tool
		default:
			key = key[:1] // missing required argument ("q" for "query")
		}
	}
	return fmt.Sprintf("<tool_call>\n{\"name\": \"%s\", \"arguments\": {\"%s\": %s%s%s}}\n</tool_call>",
		name, key, quote, value, quote), malformed
}

// conclude derives the answer from the hop values; a missing value gives a guess: a coin flip
// for a comparison, else the last value found (the bridge entity), else a random name.
func (a *Agent) conclude(p Plan, values []string) string {
	switch p.Final {
	case Same:
		x, y := values[p.Compare[0]], values[p.Compare[1]]
		if x == "" || y == "" {
			return []string{"yes", "no"}[a.rng.IntN(2)]
		}
		return map[bool]string{true: "yes", false: "no"}[x == y]
	case Larger, Smaller:
		x, y := values[p.Compare[0]], values[p.Compare[1]]
		if x == "" || y == "" {
			return p.Options[a.rng.IntN(2)]
		}
		var nx, ny int
		fmt.Sscan(x, &nx)
		fmt.Sscan(y, &ny)
		if (nx > ny) == (p.Final == Larger) {
			return p.Options[0]
		}
		return p.Options[1]
	}
	for i := len(values) - 1; i >= 0; i-- {
		if values[i] != "" {
			return values[i]
		}
	}
	return a.names[a.rng.IntN(len(a.names))]
}

// Summary aggregates an agent's scores over tasks.
type Summary struct {
	N            int                // tasks summarised
	EM, F1       float64            // means
	Reward       float64            // mean Eq. 6 reward
	FormatOK     float64            // fraction with r_format = 1
	Turns        float64            // mean turns
	Searches     float64            // mean searches run
	EMByType     map[string]float64 // question type -> mean EM
	CountsByType map[string]int     // question type -> tasks
}

// Run solves every task with a fresh agent (habits, seed) in an environment made of cfg and
// tools (the run's tools, so that the demonstrations' prompts are the training prompts; the
// agent searches with the one named "search"), and returns the transcripts and their summary.
func Run(ctx context.Context, w *World, cfg qa.Config, tools []env.Tool, tasks []Task, h Habits, seed uint64) ([]Demo, Summary, error) {
	e, err := qa.New(cfg, tools...)
	if err != nil {
		return nil, Summary{}, err
	}
	a := NewAgent(w, h, seed)
	s := Summary{EMByType: map[string]float64{}, CountsByType: map[string]int{}}
	demos := make([]Demo, 0, len(tasks))
	for _, t := range tasks {
		if err := ctx.Err(); err != nil {
			return demos, s, err
		}
		d := a.Solve(ctx, e, t)
		demos = append(demos, d)
		sc := d.Score
		s.N++
		s.EM += sc.EM
		s.F1 += sc.F1
		s.Reward += sc.Reward
		if sc.Format == 1 {
			s.FormatOK++
		}
		s.Turns += float64(sc.Turns)
		s.Searches += float64(sc.Searches)
		s.EMByType[t.Type] += sc.EM
		s.CountsByType[t.Type]++
	}
	if s.N > 0 {
		n := float64(s.N)
		s.EM, s.F1, s.Reward, s.FormatOK, s.Turns, s.Searches = s.EM/n, s.F1/n, s.Reward/n, s.FormatOK/n, s.Turns/n, s.Searches/n
		for k, c := range s.CountsByType {
			s.EMByType[k] /= float64(c)
		}
	}
	return demos, s, nil
}

// Merge combines summaries of disjoint task sets into one, weighting each by its N.
func Merge(sums []Summary) Summary {
	m := Summary{EMByType: map[string]float64{}, CountsByType: map[string]int{}}
	for _, s := range sums {
		m.N += s.N
		n := float64(s.N)
		m.EM += s.EM * n
		m.F1 += s.F1 * n
		m.Reward += s.Reward * n
		m.FormatOK += s.FormatOK * n
		m.Turns += s.Turns * n
		m.Searches += s.Searches * n
		for k, c := range s.CountsByType {
			m.EMByType[k] += s.EMByType[k] * float64(c)
			m.CountsByType[k] += c
		}
	}
	if m.N > 0 {
		n := float64(m.N)
		m.EM, m.F1, m.Reward, m.FormatOK, m.Turns, m.Searches = m.EM/n, m.F1/n, m.Reward/n, m.FormatOK/n, m.Turns/n, m.Searches/n
		for k, c := range m.CountsByType {
			m.EMByType[k] /= float64(c)
		}
	}
	return m
}

// Trajectory tokenises the transcript for the SFT warm start, segment by segment as a rollout
// sees it: the prompt and each observation as environment text, each action as agent text
// (with zero log-probs: demonstrations are not sampled). A tool-calling action's last token
// closes its call and carries the turn's process rewards; the outcome is the Eq. 6 reward.
func (d *Demo) Trajectory(encode func(string) []int, processRewards bool) mdp.Trajectory {
	tr := mdp.Trajectory{Prompt: encode(d.Prompt), OutcomeReward: d.Score.Reward, CutMaxTurns: d.Score.CutMaxTurns}
	for i, t := range d.Turns {
		turn := mdp.Turn{Action: encode(t.Action), Observation: encode(t.Observation)}
		turn.ActionLogProbs = make([]float32, len(turn.Action))
		if n := len(turn.Action); n > 0 && strings.HasSuffix(t.Action, env.ToolCallClose) {
			r := 0.0
			if processRewards && i < len(d.ProcessRewards) {
				r = d.ProcessRewards[i]
			}
			turn.ToolCalls = []mdp.ToolCall{{End: n - 1, Reward: r}}
		}
		tr.Turns = append(tr.Turns, turn)
	}
	return tr
}
