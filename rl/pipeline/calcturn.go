package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"agentr1/env"
	"agentr1/env/calc"
	"agentr1/env/qa"
	"agentr1/mdp"
	"agentr1/model"
	"agentr1/tokenizer"
)

// A question that needs a calculation is answered in two searches, one calculator call and
// the answer. Copying (copying.go) is measured teacher-forced, token by token; this file
// measures the calculation's two turns free-running: it puts the policy in the state the
// demonstrations reach with both numbers read, or with the calculator's result read, and lets
// it write the next turn, greedy and sampled. RESULTS section 6 uses it to tell a policy that
// does not calculate from one that calculates with the wrong numbers, and one that answers
// the result from one that answers an operand.

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
		if k, expr, ok := calculatingTurn(tok, d, mistakesOf(mistakes, i)); ok {
			states = append(states, CalcState{Context: d.Before(k), Expression: expr})
		}
	}
	return states
}

// calculatingTurn finds demonstration d's first turn that calls the calculator and returns it
// with its expression, unless that turn is a mistake (mistakes, one per turn, may be short or
// nil) or its call is malformed.
func calculatingTurn(tok *tokenizer.Tokenizer, d *mdp.Trajectory, mistakes []bool) (k int, expr string, ok bool) {
	for k, turn := range d.Turns {
		action := tok.Decode(turn.Action)
		if !strings.Contains(action, calculatorCall) {
			continue
		}
		if k < len(mistakes) && mistakes[k] {
			return 0, "", false
		}
		expr, ok := calculatorCallIn(action)
		return k, expr, ok
	}
	return 0, "", false
}

// mistakesOf returns demonstration i's mistake marks, nil when mistakes holds none for it.
func mistakesOf(mistakes [][]bool, i int) []bool {
	if i < len(mistakes) {
		return mistakes[i]
	}
	return nil
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

// TurnStats is what a policy writes in a measure's states, greedy and sampled: S holds the
// measure's shares (CalcShares, AnswerShares).
type TurnStats[S any] struct {
	States          int // states measured
	Samples         int // sampled turns per state
	Greedy, Sampled S   // the shares of the greedy turns and of the sampled ones
}

// CalcTurnStats is what a policy writes in the calculating turn's states.
type CalcTurnStats = TurnStats[CalcShares]

// MeasureCalcTurn lets policy write one turn (at most maxTokens tokens, ended by a stop token)
// from each state, once greedy and samples times with sampler, drawing from a generator
// seeded with seed, and returns the shares. A turn calls the calculator when the
// environment's parser finds a well-formed call of it (env.ParseToolCalls), and calls it
// right when its expression is the state's. States longer than the policy's context with the
// turn are left out (not counted in States).
func MeasureCalcTurn(ctx context.Context, policy *model.Model, tok *tokenizer.Tokenizer, states []CalcState,
	sampler model.Sampler, samples, maxTokens int, stop []int, seed uint64) (CalcTurnStats, error) {
	contexts := make([][]int, len(states))
	for i, s := range states {
		contexts[i] = s.Context
	}
	return measureTurns(ctx, policy, tok, contexts, sampler, samples, maxTokens, stop,
		rand.New(rand.NewPCG(seed, 0xca1c)), func(c *CalcShares, i int, turn string) { c.count(turn, states[i].Expression) })
}

// measureTurns lets policy write one turn (at most maxTokens tokens, ended by a stop token)
// from each context, once greedy and then samples times with sampler, and tallies each decoded
// turn with count into the greedy or the sampled shares, which it then turns into shares of
// the turns written. Contexts too long for the policy's context with the turn are skipped, and
// not counted in States.
func measureTurns[S any, P interface {
	*S
	share(n int)
}](ctx context.Context, policy *model.Model, tok *tokenizer.Tokenizer, contexts [][]int, sampler model.Sampler,
	samples, maxTokens int, stop []int, rng *rand.Rand, count func(s P, i int, turn string)) (st TurnStats[S], err error) {
	st.Samples = samples
	defer func() {
		P(&st.Greedy).share(st.States)
		P(&st.Sampled).share(st.States * samples)
	}()
	if len(contexts) == 0 {
		return st, nil
	}
	// Row 0 is prefilled with the context once and copied to the sampled rows 1..samples.
	dec := policy.NewDecoder(1+samples, policy.Config.MaxPositionEmbeddings)
	sampledRows := make([]int, samples)
	for i := range sampledRows {
		sampledRows[i] = 1 + i
	}
	for i, c := range contexts {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if len(c)+maxTokens > dec.MaxLen() {
			continue
		}
		st.States++
		dec.Reset(0)
		dec.Append(0, c)
		for _, r := range sampledRows {
			dec.CopyRow(r, 0)
		}
		g := dec.Generate([]int{0}, maxTokens, model.Sampler{Greedy: true}, stop, rng)[0]
		count(&st.Greedy, i, tok.Decode(g.Tokens))
		if samples > 0 {
			for _, g := range dec.Generate(sampledRows, maxTokens, sampler, stop, rng) {
				count(&st.Sampled, i, tok.Decode(g.Tokens))
			}
		}
	}
	return st, nil
}

// AnswerState is one demonstrated answer turn after a calculation: the episode's tokens before
// it (the searches, the calculator's call and its result) and the numbers of that calculation.
type AnswerState struct {
	Context  []int     // token ids of the episode up to the answer turn
	Result   string    // the calculator's result, which the demonstrator answered ("433")
	Operands [2]string // the calculation's two numbers ("1838", "1405")
}

// AnswerStates finds each demonstration that ends with a calculation and the answer of its
// result, and returns the state before the answer turn. Demonstrations whose calculating or
// answer turn is a mistake (a wrong expression, a wrong answer on purpose) are left out, so
// every Result is the right answer. mistakes may be nil (no turn is a mistake).
func AnswerStates(tok *tokenizer.Tokenizer, demos []*mdp.Trajectory, mistakes [][]bool) []AnswerState {
	var states []AnswerState
	for i, d := range demos {
		k, expr, answer, ok := answerAfterCalculation(tok, d, mistakesOf(mistakes, i))
		if !ok {
			continue
		}
		x, y, ok := operandsOf(expr)
		if !ok {
			continue
		}
		states = append(states, AnswerState{Context: d.Before(k), Result: answer, Operands: [2]string{x, y}})
	}
	return states
}

// answerAfterCalculation finds demonstration d's answer turn k when the turn before it calls
// the calculator and neither turn is a mistake (mistakes, one per turn, may be short or nil),
// and returns the calculation's expression and the answer written.
func answerAfterCalculation(tok *tokenizer.Tokenizer, d *mdp.Trajectory, mistakes []bool) (k int, expr, answer string, ok bool) {
	k = len(d.Turns) - 1
	if k < 1 || (k < len(mistakes) && (mistakes[k] || mistakes[k-1])) {
		return 0, "", "", false
	}
	if expr, ok = calculatorCallIn(tok.Decode(d.Turns[k-1].Action)); !ok {
		return 0, "", "", false
	}
	if answer, _ = qa.CheckAnswerTurn(tok.Decode(d.Turns[k].Action), false); answer == "" {
		return 0, "", "", false
	}
	return k, expr, answer, true
}

// scaleCalcTurns multiplies the action weights (weights[i][k], one per turn, laid out as
// SFTOptions.ActionWeights) of each demonstration's calculating turn by call and of its answer
// turn after the calculation by answer: the turns CalcStates and AnswerStates measure.
func scaleCalcTurns(weights [][]float64, tok *tokenizer.Tokenizer, demos []*mdp.Trajectory, mistakes [][]bool, call, answer float64) {
	for i, d := range demos {
		m := mistakesOf(mistakes, i)
		if k, _, ok := calculatingTurn(tok, d, m); ok {
			weights[i][k] *= call
		}
		if k, _, _, ok := answerAfterCalculation(tok, d, m); ok {
			weights[i][k] *= answer
		}
	}
}

// AnswerShares is what a policy writes in the answer turns after a calculation: the share of
// turns that answer, that answer the calculation's result, that answer one of its operands
// instead, and whose thought before the answer holds the result.
type AnswerShares struct {
	Answers, Result, Operand, Noted float64 // shares of the turns, in [0, 1], in the order above
}

// count tallies one turn against state s. Answers, and the numbers of the thought, are
// compared as numbers, as the numeric questions' exact match compares them (qa.NumericMatch).
func (c *AnswerShares) count(turn string, s AnswerState) {
	think, _, _ := strings.Cut(turn, "</think>")
	if qa.NumericMatch(s.Result, qa.Numbers(think)) == 1 {
		c.Noted++
	}
	if !strings.Contains(turn, "<answer>") {
		return
	}
	c.Answers++
	answer, _ := qa.CheckAnswerTurn(turn, false)
	switch {
	case qa.NumericMatch(answer, []string{s.Result}) == 1:
		c.Result++
	case qa.NumericMatch(answer, s.Operands[:]) == 1:
		c.Operand++
	}
}

// share turns the tallies over n turns into shares.
func (c *AnswerShares) share(n int) {
	if n > 0 {
		c.Answers, c.Result, c.Operand, c.Noted = c.Answers/float64(n), c.Result/float64(n), c.Operand/float64(n), c.Noted/float64(n)
	}
}

// AnswerTurnStats is what a policy writes in the answer turn's states.
type AnswerTurnStats = TurnStats[AnswerShares]

// MeasureAnswerTurn lets policy write the answer turn from each state, as MeasureCalcTurn
// writes the calculating turn, and returns the shares: whether the policy answers the
// result it was just given, or an operand, and whether its thought restates the result.
func MeasureAnswerTurn(ctx context.Context, policy *model.Model, tok *tokenizer.Tokenizer, states []AnswerState,
	sampler model.Sampler, samples, maxTokens int, stop []int, seed uint64) (AnswerTurnStats, error) {
	contexts := make([][]int, len(states))
	for i, s := range states {
		contexts[i] = s.Context
	}
	return measureTurns(ctx, policy, tok, contexts, sampler, samples, maxTokens, stop,
		rand.New(rand.NewPCG(seed, 0xa45e)), func(c *AnswerShares, i int, turn string) { c.count(turn, states[i]) })
}

// answerTurnDemos is how many demonstrations, the first ones, WeakAnswerTurn reads: at the
// calculator task's share of numeric questions about 20 of them end with a calculation's
// answer, and it takes about a second to let the policy write those turns.
const answerTurnDemos = 600

// weakAnswerShare is the share of a warm start's greedy answer turns after a calculation,
// answering the calculator's result, under which WeakAnswerTurn warns. Of the calculator
// task's warm starts measured with RL after them, the four answering it from a quarter of the
// states or less gained at most 11 points on the numeric questions, since RL does not teach
// that turn; those answering it from .71 or more gained 14 to 71, the least where the warm
// start also calculated on the wrong numbers (docs/RESULTS.md section 6).
const weakAnswerShare = 0.5

// WeakAnswerTurn lets policy write, greedy, the answer turn after each calculation the first
// answerTurnDemos demonstrations of setup end with (MeasureAnswerTurn; at most maxTokens
// tokens) and returns a warning when it answers the calculator's result from under
// weakAnswerShare of them; "" otherwise, and when no demonstration ends so.
func WeakAnswerTurn(ctx context.Context, policy *model.Model, setup *Setup, maxTokens int) (string, error) {
	demos, mistakes := setup.Demos, setup.DemoMistakes
	if len(demos) > answerTurnDemos {
		demos = demos[:answerTurnDemos]
	}
	states := AnswerStates(setup.Tokenizer, demos, mistakes)
	stop := setup.Specials.TurnStops()
	st, err := MeasureAnswerTurn(ctx, policy, setup.Tokenizer, states, model.Sampler{}, 0, maxTokens, stop, 0)
	if err != nil {
		return "", err
	}
	return weakAnswerTurn(st.States, st.Greedy), nil
}

// weakAnswerTurn is WeakAnswerTurn's verdict on the greedy shares g of n answer turns.
func weakAnswerTurn(n int, g AnswerShares) string {
	if n == 0 || g.Result >= weakAnswerShare {
		return ""
	}
	return fmt.Sprintf("the warm start answers the calculator's result from %.0f of %d demonstrated states (an operand from %.0f): "+
		"a weak answer turn after a calculation, which RL does not teach; warm starts like it gained almost nothing on the numeric "+
		"questions (docs/RESULTS.md section 6); a larger --sft.calc-answer-weight or another seed draws another warm start",
		g.Result*float64(n), n, g.Operand*float64(n))
}

// operandsOf splits "x - y" or "x + y" into its two numbers.
func operandsOf(expr string) (x, y string, ok bool) {
	for _, op := range []string{" - ", " + "} {
		if x, y, ok := strings.Cut(expr, op); ok {
			x, y = strings.TrimSpace(x), strings.TrimSpace(y)
			return x, y, x != "" && y != ""
		}
	}
	return "", "", false
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
	x, y, ok := operandsOf(expr)
	return ok && x == y
}
