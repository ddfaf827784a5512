package mdp

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// lp returns n distinct log-probs so that misalignment shows.
func lp(base float32, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = -(base + float32(i)/8)
	}
	return out
}

// checkRow asserts the invariants every flattened row must hold.
func checkRow(t *testing.T, name string, tr *Trajectory, r Row, maxResponse int) {
	t.Helper()
	T := len(r.Tokens)
	for _, s := range []int{len(r.ActionMask), len(r.AdvantageMask), len(r.Rewards), len(r.LogProbs)} {
		if s != T {
			t.Fatalf("%s: slice of length %d, tokens %d", name, s, T)
		}
	}
	if maxResponse > 0 && r.ResponseLen() > maxResponse {
		t.Errorf("%s: response %d > budget %d", name, r.ResponseLen(), maxResponse)
	}
	// Tokens are the trajectory's tokens in order, cut to the budget.
	var want []int
	want = append(want, tr.Prompt...)
	var wantMask []float64
	var wantLP []float64
	for range tr.Prompt {
		wantMask = append(wantMask, 0)
		wantLP = append(wantLP, 0)
	}
	for _, turn := range tr.Turns {
		want = append(want, turn.Action...)
		for j := range turn.Action {
			wantMask = append(wantMask, 1)
			wantLP = append(wantLP, float64(turn.ActionLogProbs[j]))
		}
		want = append(want, turn.Observation...)
		for range turn.Observation {
			wantMask = append(wantMask, 0)
			wantLP = append(wantLP, 0)
		}
	}
	want, wantMask, wantLP = want[:T], wantMask[:T], wantLP[:T]
	if !slices.Equal(r.Tokens, want) {
		t.Errorf("%s: tokens %v, want %v", name, r.Tokens, want)
	}
	if !slices.Equal(r.ActionMask, wantMask) {
		t.Errorf("%s: action mask %v, want %v", name, r.ActionMask, wantMask)
	}
	if !slices.Equal(r.AdvantageMask, r.ActionMask) {
		t.Errorf("%s: advantage mask %v differs from action mask %v", name, r.AdvantageMask, r.ActionMask)
	}
	if !slices.Equal(r.LogProbs, wantLP) {
		t.Errorf("%s: log-probs %v, want %v", name, r.LogProbs, wantLP)
	}
	// No reward on a masked position, none lost.
	sum := r.UnplacedReward
	hasAgent := false
	for i, x := range r.Rewards {
		if x != 0 && r.ActionMask[i] == 0 {
			t.Errorf("%s: reward %v on masked position %d", name, x, i)
		}
		hasAgent = hasAgent || r.ActionMask[i] == 1
		sum += x
	}
	if math.Abs(sum-tr.TotalReward()) > 1e-12 {
		t.Errorf("%s: rewards sum to %v (unplaced %v), trajectory total %v", name, sum, r.UnplacedReward, tr.TotalReward())
	}
	if hasAgent && r.UnplacedReward != 0 {
		t.Errorf("%s: unplaced reward %v although the row has agent tokens", name, r.UnplacedReward)
	}
}

func TestFlattenCases(t *testing.T) {
	prompt := []int{1, 2, 3}
	cases := []struct {
		name        string
		tr          Trajectory
		maxResponse int
		rewards     []float64 // want Rewards (nil: only invariants)
		cutLength   bool
	}{
		{
			name: "one turn answer",
			tr: Trajectory{Prompt: prompt, OutcomeReward: 1,
				Turns: []Turn{{Action: []int{10, 11}, ActionLogProbs: lp(1, 2)}}},
			rewards: []float64{0, 0, 0, 0, 1},
		},
		{
			name: "tool call then answer with process reward",
			tr: Trajectory{Prompt: prompt, OutcomeReward: 1,
				Turns: []Turn{
					{Action: []int{10, 11, 12}, ActionLogProbs: lp(1, 3), Observation: []int{50, 51},
						ToolCalls: []ToolCall{{End: 2, Reward: 0.25}}},
					{Action: []int{13, 14}, ActionLogProbs: lp(2, 2)},
				}},
			rewards: []float64{0, 0, 0, 0, 0, 0.25, 0, 0, 0, 1},
		},
		{
			name: "cut at max turns right after a tool response",
			tr: Trajectory{Prompt: prompt, OutcomeReward: -0.5, CutMaxTurns: true,
				Turns: []Turn{
					{Action: []int{10, 11}, ActionLogProbs: lp(1, 2), Observation: []int{50, 51, 52},
						ToolCalls: []ToolCall{{End: 1, Reward: 0.1}}},
				}},
			rewards: []float64{0, 0, 0, 0, 0.1 - 0.5, 0, 0, 0},
		},
		{
			name: "cut at max length inside the observation",
			tr: Trajectory{Prompt: prompt, OutcomeReward: 1,
				Turns: []Turn{
					{Action: []int{10, 11}, ActionLogProbs: lp(1, 2), Observation: []int{50, 51, 52}},
					{Action: []int{12}, ActionLogProbs: lp(2, 1)},
				}},
			maxResponse: 3,
			rewards:     []float64{0, 0, 0, 0, 1, 0},
			cutLength:   true,
		},
		{
			name: "cut at max length inside an action moves the process reward",
			tr: Trajectory{Prompt: prompt, OutcomeReward: 1,
				Turns: []Turn{
					{Action: []int{10, 11, 12, 13}, ActionLogProbs: lp(1, 4), Observation: []int{50},
						ToolCalls: []ToolCall{{End: 3, Reward: 0.5}}},
				}},
			maxResponse: 2,
			rewards:     []float64{0, 0, 0, 0, 1.5},
			cutLength:   true,
		},
		{
			name: "empty observation and zero-length last action",
			tr: Trajectory{Prompt: prompt, OutcomeReward: 1,
				Turns: []Turn{
					{Action: []int{10}, ActionLogProbs: lp(1, 1)},
					{Action: []int{}, ActionLogProbs: []float32{}},
				}},
			rewards: []float64{0, 0, 0, 1},
		},
		{
			name: "no agent token at all",
			tr: Trajectory{Prompt: prompt, OutcomeReward: -1,
				Turns: []Turn{{Observation: []int{50}}}},
			rewards: []float64{0, 0, 0, 0},
		},
		{
			name: "no turns",
			tr:   Trajectory{Prompt: prompt, OutcomeReward: 0.5},
		},
		{
			name: "budget exactly the response",
			tr: Trajectory{Prompt: prompt, OutcomeReward: 1,
				Turns: []Turn{{Action: []int{10, 11}, ActionLogProbs: lp(1, 2), Observation: []int{7}}}},
			maxResponse: 3,
			rewards:     []float64{0, 0, 0, 0, 1, 0},
		},
	}
	for _, c := range cases {
		r, err := Flatten(&c.tr, c.maxResponse)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		checkRow(t, c.name, &c.tr, r, c.maxResponse)
		if c.rewards != nil && !slices.Equal(r.Rewards, c.rewards) {
			t.Errorf("%s: rewards %v, want %v", c.name, r.Rewards, c.rewards)
		}
		if r.CutMaxLength != c.cutLength {
			t.Errorf("%s: CutMaxLength = %v, want %v", c.name, r.CutMaxLength, c.cutLength)
		}
		if r.CutMaxTurns != c.tr.CutMaxTurns {
			t.Errorf("%s: CutMaxTurns not carried", c.name)
		}
	}
}

func TestFlattenRejectsInconsistentTrajectories(t *testing.T) {
	cases := []struct {
		name string
		tr   Trajectory
	}{
		{"log-probs short", Trajectory{Turns: []Turn{{Action: []int{1, 2}, ActionLogProbs: lp(1, 1)}}}},
		{"tool call past the action", Trajectory{Turns: []Turn{{Action: []int{1}, ActionLogProbs: lp(1, 1),
			ToolCalls: []ToolCall{{End: 1}}}}}},
		{"tool call in an empty action", Trajectory{Turns: []Turn{{ToolCalls: []ToolCall{{End: 0}}}}}},
		{"negative end", Trajectory{Turns: []Turn{{Action: []int{1}, ActionLogProbs: lp(1, 1),
			ToolCalls: []ToolCall{{End: -1}}}}}},
	}
	for _, c := range cases {
		if _, err := Flatten(&c.tr, 0); err == nil {
			t.Errorf("%s: Flatten accepted it", c.name)
		}
	}
}

// randomTrajectory draws a trajectory with empty actions, empty observations and tool calls.
func randomTrajectory(rng *rand.Rand) Trajectory {
	tr := Trajectory{Prompt: make([]int, 1+rng.IntN(5)), OutcomeReward: float64(rng.IntN(5)) - 2,
		CutMaxTurns: rng.IntN(4) == 0}
	for i := range tr.Prompt {
		tr.Prompt[i] = 1000 + i
	}
	tok := 0
	for range rng.IntN(5) {
		n, m := rng.IntN(5), rng.IntN(4)
		turn := Turn{Action: make([]int, n), ActionLogProbs: lp(float32(rng.IntN(9)), n), Observation: make([]int, m)}
		for j := range turn.Action {
			tok++
			turn.Action[j] = tok
		}
		for j := range turn.Observation {
			turn.Observation[j] = 500 + j
		}
		if n > 0 && rng.IntN(2) == 0 {
			turn.ToolCalls = append(turn.ToolCalls, ToolCall{End: rng.IntN(n), Reward: 0.125 * float64(rng.IntN(4))})
		}
		tr.Turns = append(tr.Turns, turn)
	}
	return tr
}

func TestFlattenAndCollateRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 300 {
		var rows []Row
		for range 1 + rng.IntN(4) {
			tr := randomTrajectory(rng)
			budget := rng.IntN(12) // 0: no budget
			r, err := Flatten(&tr, budget)
			if err != nil {
				t.Fatalf("iter %d: %v", iter, err)
			}
			checkRow(t, "random", &tr, r, budget)
			rows = append(rows, r)
		}
		checkBatch(t, iter, rows, Collate(rows, -7), -7)
	}
}

// checkBatch asserts the layout of a collated batch against its rows.
func checkBatch(t *testing.T, iter int, rows []Row, b *Batch, pad int) {
	t.Helper()
	T, L := b.T(), b.L
	if b.B != len(rows) || len(b.Tokens) != b.B*T || len(b.Rewards) != b.B*L {
		t.Fatalf("iter %d: shapes B=%d P=%d L=%d tokens %d rewards %d", iter, b.B, b.P, b.L, len(b.Tokens), len(b.Rewards))
	}
	for bi, r := range rows {
		p, n := r.PromptLen, r.ResponseLen()
		for j := 0; j < T; j++ {
			real := j >= b.P-p && j < b.P+n
			tok, att := b.Tokens[bi*T+j], b.AttentionMask[bi*T+j]
			if real != (att == 1) {
				t.Fatalf("iter %d row %d col %d: attention %v, real %v", iter, bi, j, att, real)
			}
			if !real {
				if tok != pad {
					t.Fatalf("iter %d row %d col %d: padding holds token %d", iter, bi, j, tok)
				}
				continue
			}
			k := j - (b.P - p) // index into the row
			if tok != r.Tokens[k] {
				t.Fatalf("iter %d row %d col %d: token %d, want %d", iter, bi, j, tok, r.Tokens[k])
			}
		}
		sumR := 0.0
		for j := 0; j < L; j++ {
			o := bi*L + j
			if b.Responses[o] != b.Tokens[bi*T+b.P+j] {
				t.Fatalf("iter %d row %d: responses differ from tokens at %d", iter, bi, j)
			}
			if j >= n {
				if b.ResponseMask[o] != 0 || b.ActionMask[o] != 0 || b.AdvantageMask[o] != 0 || b.Rewards[o] != 0 || b.OldLogProbs[o] != 0 {
					t.Fatalf("iter %d row %d: padding column %d not zero", iter, bi, j)
				}
				continue
			}
			k := p + j
			if b.ResponseMask[o] != 1 || b.ActionMask[o] != r.ActionMask[k] || b.Rewards[o] != r.Rewards[k] || b.OldLogProbs[o] != r.LogProbs[k] {
				t.Fatalf("iter %d row %d: response column %d does not match the row", iter, bi, j)
			}
			if b.Rewards[o] != 0 && b.ActionMask[o] == 0 {
				t.Fatalf("iter %d row %d: reward on masked column %d", iter, bi, j)
			}
			sumR += b.Rewards[o]
		}
		rowSum := 0.0
		for _, x := range r.Rewards {
			rowSum += x
		}
		if sumR != rowSum {
			t.Fatalf("iter %d row %d: batch rewards %v, row %v", iter, bi, sumR, rowSum)
		}
	}
}

func TestCollateLayout(t *testing.T) {
	a := Trajectory{Prompt: []int{1, 2}, OutcomeReward: 1,
		Turns: []Turn{{Action: []int{10, 11}, ActionLogProbs: []float32{-1, -2}, Observation: []int{50}},
			{Action: []int{12}, ActionLogProbs: []float32{-3}}}}
	b := Trajectory{Prompt: []int{3, 4, 5}, OutcomeReward: 0,
		Turns: []Turn{{Action: []int{20}, ActionLogProbs: []float32{-4}}}}
	ra, _ := Flatten(&a, 0)
	rb, _ := Flatten(&b, 0)
	batch := Collate([]Row{ra, rb}, 0)
	wantTokens := []int{
		0, 1, 2, 10, 11, 50, 12,
		3, 4, 5, 20, 0, 0, 0,
	}
	wantAtt := []float32{0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}
	wantAction := []float64{1, 1, 0, 1, 1, 0, 0, 0}
	wantRewards := []float64{0, 0, 0, 1, 0, 0, 0, 0}
	wantLP := []float64{-1, -2, 0, -3, -4, 0, 0, 0}
	if batch.P != 3 || batch.L != 4 {
		t.Fatalf("P, L = %d, %d, want 3, 4", batch.P, batch.L)
	}
	if !slices.Equal(batch.Tokens, wantTokens) || !slices.Equal(batch.AttentionMask, wantAtt) {
		t.Errorf("layout:\n tokens %v\n att %v", batch.Tokens, batch.AttentionMask)
	}
	if !slices.Equal(batch.ActionMask, wantAction) || !slices.Equal(batch.Rewards, wantRewards) || !slices.Equal(batch.OldLogProbs, wantLP) {
		t.Errorf("response side:\n action %v\n rewards %v\n logprobs %v", batch.ActionMask, batch.Rewards, batch.OldLogProbs)
	}
}

func TestCollateToPanicsOnOverflow(t *testing.T) {
	tr := Trajectory{Prompt: []int{1, 2}, Turns: []Turn{{Action: []int{3}, ActionLogProbs: []float32{0}}}}
	r, _ := Flatten(&tr, 0)
	defer func() {
		if recover() == nil {
			t.Errorf("CollateTo with a too-small width did not panic")
		}
	}()
	CollateTo([]Row{r}, 0, 1, 1)
}

// TestBefore checks the state before each turn: the prompt, then every earlier turn's action
// and observation in order, in a slice of its own.
func TestBefore(t *testing.T) {
	tr := Trajectory{Prompt: []int{1, 2}, Turns: []Turn{
		{Action: []int{3}, Observation: []int{4, 5}},
		{Action: []int{6, 7}, Observation: []int{8}},
		{Action: []int{9}},
	}}
	for k, want := range [][]int{{1, 2}, {1, 2, 3, 4, 5}, {1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 3, 4, 5, 6, 7, 8, 9}} {
		got := tr.Before(k)
		if !slices.Equal(got, want) {
			t.Errorf("Before(%d) = %v, want %v", k, got, want)
		}
		got[0] = -1
		if tr.Prompt[0] != 1 {
			t.Fatalf("Before(%d) shares the prompt's memory", k)
		}
	}
}
