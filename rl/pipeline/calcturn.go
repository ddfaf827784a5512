package pipeline

import (
	"context"
	"math/rand/v2"
	"strings"

	"agentr1/env"
	"agentr1/env/calc"
	"agentr1/mdp"
	"agentr1/model"
	"agentr1/tokenizer"
)

// A question that needs a calculation is answered in two searches, one calculator call and
// the answer. Copying (copying.go) is measured teacher-forced, token by token; this file
// measures the calculating turn free-running: it puts the policy in the state the
// demonstrations reach with both numbers read and lets it write the next turn, greedy and
// sampled. RESULTS section 6 uses it to tell a policy that does not calculate from one that
// calculates with the wrong numbers.

// CalcState is one demonstrated calculating turn: the episode's tokens before it (the prompt,
// the searches and what they returned) and the expression the demonstrator computed.
type CalcState struct {
	Context    []int  // token ids of the episode up to the calculating turn
	Expression string // the demonstrated calculator expression ("1875 - 1730")
}

// calculatorCall is the text that opens a calculator call, as the demonstrator writes it. The
// system prompt may show it too; only the agent's turns are searched for it.
const calculatorCall = "<tool_call>\n{\"name\": \"calculator\""

// CalcStates finds each demonstration's first calculator call and returns the state before
// it. Calls the demonstrator got wrong on purpose (mistakes, as world.DemoTurn.Mistake marks
// them: a malformed call or the operands swapped) are left out, so every Expression is the
// right one. mistakes may be nil (no call is a mistake).
func CalcStates(tok *tokenizer.Tokenizer, demos []*mdp.Trajectory, mistakes [][]bool) []CalcState {
	var states []CalcState
	for i, d := range demos {
		for k, turn := range d.Turns {
			action := tok.Decode(turn.Action)
			if !strings.Contains(action, calculatorCall) {
				continue
			}
			if i < len(mistakes) && k < len(mistakes[i]) && mistakes[i][k] {
				break
			}
			expr, ok := calculatorCallIn(action)
			if !ok {
				break
			}
			states = append(states, CalcState{Context: d.Before(k), Expression: expr})
			break
		}
	}
	return states
}

// CalcShares is what a policy writes in the calculating turns: the share of turns that call
// the calculator, that call it on the demonstrated expression, that call it on one number
// twice ("1875 - 1875": both operands the number read last), and that answer instead.
type CalcShares struct {
	Calls, Right, Twice, Answers float64 // shares of the turns, in [0, 1], in the order above
}

// count tallies one turn against the demonstrated expression want.
func (c *CalcShares) count(turn, want string) {
	expr, ok := calculatorCallIn(turn)
	if !ok {
		if strings.Contains(turn, "<answer>") {
			c.Answers++
		}
		return
	}
	c.Calls++
	switch {
	case expr == want:
		c.Right++
	case oneNumberTwice(expr):
		c.Twice++
	}
}

// share turns the tallies over n turns into shares.
func (c *CalcShares) share(n int) {
	if n > 0 {
		c.Calls, c.Right, c.Twice, c.Answers = c.Calls/float64(n), c.Right/float64(n), c.Twice/float64(n), c.Answers/float64(n)
	}
}

// CalcTurnStats is what a policy writes in the calculating turn's states, greedy and sampled.
type CalcTurnStats struct {
	States          int        // states measured
	Samples         int        // sampled turns per state
	Greedy, Sampled CalcShares // the shares of the greedy turns and of the sampled ones
}

// MeasureCalcTurn lets policy write one turn (at most maxTokens tokens, ended by a stop token)
// from each state, once greedy and samples times with sampler, drawing from a generator
// seeded with seed, and returns the shares. A turn calls the calculator when the
// environment's parser finds a well-formed call of it (env.ParseToolCalls), and calls it
// right when its expression is the state's. States longer than the policy's context with the
// turn are left out (not counted in States).
func MeasureCalcTurn(ctx context.Context, policy *model.Model, tok *tokenizer.Tokenizer, states []CalcState,
	sampler model.Sampler, samples, maxTokens int, stop []int, seed uint64) (CalcTurnStats, error) {
	st := CalcTurnStats{Samples: samples}
	if len(states) == 0 {
		return st, nil
	}
	// Row 0 is prefilled with the state once and copied to the sampled rows 1..samples.
	dec := policy.NewDecoder(1+samples, policy.Config.MaxPositionEmbeddings)
	sampledRows := make([]int, samples)
	for i := range sampledRows {
		sampledRows[i] = 1 + i
	}
	rng := rand.New(rand.NewPCG(seed, 0xca1c))
	for _, s := range states {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if len(s.Context)+maxTokens > dec.MaxLen() {
			continue
		}
		st.States++
		dec.Reset(0)
		dec.Append(0, s.Context)
		for _, r := range sampledRows {
			dec.CopyRow(r, 0)
		}
		g := dec.Generate([]int{0}, maxTokens, model.Sampler{Greedy: true}, stop, rng)[0]
		st.Greedy.count(tok.Decode(g.Tokens), s.Expression)
		if samples > 0 {
			for _, g := range dec.Generate(sampledRows, maxTokens, sampler, stop, rng) {
				st.Sampled.count(tok.Decode(g.Tokens), s.Expression)
			}
		}
	}
	st.Greedy.share(st.States)
	st.Sampled.share(st.States * samples)
	return st, nil
}

// calculatorCallIn returns the expression of the first well-formed calculator call of turn
// ("" when its expression is missing or not a string), and whether there is one.
func calculatorCallIn(turn string) (string, bool) {
	calls, _ := env.ParseToolCalls(turn, 0)
	for _, c := range calls {
		if c.Name == calc.Name {
			return calc.ExpressionOf(c.Arguments), true
		}
	}
	return "", false
}

// oneNumberTwice reports whether expr applies + or - to one number and itself ("1875 - 1875"),
// what a policy writes when it copies the number it read last into both operands.
func oneNumberTwice(expr string) bool {
	for _, op := range []string{" - ", " + "} {
		if x, y, ok := strings.Cut(expr, op); ok {
			x, y = strings.TrimSpace(x), strings.TrimSpace(y)
			return x != "" && x == y
		}
	}
	return false
}
