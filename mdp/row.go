package mdp

import "fmt"

// Row is one trajectory flattened for training. Every slice is aligned to Tokens: index i
// describes token i.
type Row struct {
	Tokens    []int // (T,) prompt, then each turn's action and observation
	PromptLen int   // tokens [0, PromptLen) are the prompt; the response is Tokens[PromptLen:]
	// ActionMask (the loss mask) is 1 exactly on agent tokens and 0 on prompt and observation
	// tokens. The policy loss, entropy, KL and value loss are taken over it.
	ActionMask []float64 // (T,)
	// AdvantageMask marks the positions advantages are computed over: the agent tokens, so
	// the backward recursion skips tool responses (docs/PAPER.md section 2). It equals ActionMask;
	// it is kept separate so the paper's ablations can switch either mask alone (the
	// "no advantage mask" run computes advantages over the batch's ResponseMask instead).
	AdvantageMask []float64 // (T,)
	// Rewards holds the token-level rewards: each process reward on the token closing its
	// tool call, the outcome reward on the last agent token. Nonzero only where ActionMask is 1.
	Rewards []float64 // (T,)
	// LogProbs holds each agent token's sampling log-prob, 0 elsewhere.
	LogProbs []float64 // (T,)
	// CutMaxTurns and CutMaxLength carry the trajectory's flags; Flatten sets CutMaxLength
	// when it cut the response to its budget.
	CutMaxTurns, CutMaxLength bool
	// UnplacedReward is reward that had no agent token to sit on (a trajectory whose kept
	// response has no action token at all). It is 0 whenever the row has an agent token;
	// trainer.FlattenResults refuses a row where it is not, since no estimator would see it.
	UnplacedReward float64
}

// ResponseLen is the number of tokens after the prompt.
func (r *Row) ResponseLen() int { return len(r.Tokens) - r.PromptLen }

// Flatten lays a trajectory out as a Row, cutting the response (everything after the prompt)
// to maxResponse tokens when maxResponse > 0 (verl's max_response_length).
//
// Reward placement, the paper's token-level rewards (docs/PAPER.md section 1): a process reward goes
// on the token that closes its tool call; the outcome reward on the last agent token of the
// row. A reward whose token was cut away moves to the last agent token that was kept, so a
// trajectory cut anywhere (after a tool response, inside an observation, at a zero-length
// action) keeps its whole reward on a trainable position. Only a row with no agent token at
// all cannot hold it; its reward is reported in UnplacedReward.
func Flatten(t *Trajectory, maxResponse int) (Row, error) {
	if err := t.Validate(); err != nil {
		return Row{}, err
	}
	respLen := t.ResponseLen()
	cutLen := false
	if maxResponse > 0 && respLen > maxResponse {
		respLen, cutLen = maxResponse, true
	}
	T := len(t.Prompt) + respLen
	r := Row{
		Tokens:        make([]int, 0, T),
		PromptLen:     len(t.Prompt),
		ActionMask:    make([]float64, T),
		AdvantageMask: make([]float64, T),
		Rewards:       make([]float64, T),
		LogProbs:      make([]float64, T),
		CutMaxTurns:   t.CutMaxTurns,
		CutMaxLength:  t.CutMaxLength || cutLen,
	}
	r.Tokens = append(r.Tokens, t.Prompt...)
	lastAgent := -1 // index of the last agent token kept so far
	pending := 0.0  // rewards whose token was cut away
	for _, turn := range t.Turns {
		start := len(r.Tokens)
		for j, tok := range turn.Action {
			if len(r.Tokens) == T {
				break
			}
			r.Tokens = append(r.Tokens, tok)
			i := start + j
			r.ActionMask[i], r.AdvantageMask[i] = 1, 1
			r.LogProbs[i] = float64(turn.ActionLogProbs[j])
			lastAgent = i
		}
		for _, c := range turn.ToolCalls {
			if i := start + c.End; i < T {
				r.Rewards[i] += c.Reward
			} else {
				pending += c.Reward
			}
		}
		for _, tok := range turn.Observation {
			if len(r.Tokens) == T {
				break
			}
			r.Tokens = append(r.Tokens, tok)
		}
	}
	pending += t.OutcomeReward
	if lastAgent < 0 {
		r.UnplacedReward = pending
	} else {
		r.Rewards[lastAgent] += pending
	}
	if len(r.Tokens) != T {
		panic(fmt.Sprintf("mdp.Flatten: laid out %d tokens, expected %d", len(r.Tokens), T))
	}
	return r, nil
}
