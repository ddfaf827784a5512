package mdp

import (
	"fmt"
	"slices"
	"testing"
)

// byteSource turns fuzz bytes into small numbers, 0 once they run out.
type byteSource struct{ b []byte }

func (s *byteSource) next() byte {
	if len(s.b) == 0 {
		return 0
	}
	x := s.b[0]
	s.b = s.b[1:]
	return x
}

// trajectoryFrom builds a small trajectory from fuzz bytes: up to 5 prompt tokens, up to 4
// turns of up to 5 action and 3 observation tokens, up to 2 tool calls per turn whose end may
// lie outside the action, log-prob counts that may disagree with the action, and rewards that
// are multiples of 1/8 (so that sums are exact in float64). Token ids are distinct per kind:
// prompt 1000+, action 1+, observation 500+.
func trajectoryFrom(s *byteSource) Trajectory {
	tr := Trajectory{Prompt: make([]int, s.next()%6), OutcomeReward: float64(int8(s.next())) / 8,
		CutMaxTurns: s.next()%2 == 1, CutMaxLength: s.next()%5 == 0}
	for i := range tr.Prompt {
		tr.Prompt[i] = 1000 + i
	}
	tok := 0
	for range s.next() % 5 {
		n, m := int(s.next()%6), int(s.next()%4)
		turn := Turn{Action: make([]int, n), ActionLogProbs: make([]float32, n), Observation: make([]int, m)}
		for j := range turn.Action {
			tok++
			turn.Action[j] = tok
			turn.ActionLogProbs[j] = -float32(tok) / 4
		}
		if s.next()%16 == 0 { // a rollout bug: one log-prob too many
			turn.ActionLogProbs = append(turn.ActionLogProbs, -1)
		}
		for j := range turn.Observation {
			turn.Observation[j] = 500 + j
		}
		for range s.next() % 3 {
			end := int(int8(s.next())) % 8 // -7 .. 7: sometimes outside the action
			turn.ToolCalls = append(turn.ToolCalls, ToolCall{End: end, Reward: float64(int8(s.next())) / 8})
		}
		tr.Turns = append(tr.Turns, turn)
	}
	return tr
}

// consistent is Validate's contract, restated: one log-prob per action token, every tool call
// ending inside its action.
func consistent(tr *Trajectory) bool {
	for _, turn := range tr.Turns {
		if len(turn.ActionLogProbs) != len(turn.Action) {
			return false
		}
		for _, c := range turn.ToolCalls {
			if c.End < 0 || c.End >= len(turn.Action) {
				return false
			}
		}
	}
	return true
}

// FuzzFlattenCollate lays out up to three fuzzed trajectories with Flatten, at a fuzzed
// response budget, and collates them. Flatten must reject exactly the inconsistent
// trajectories; each row must hold the trajectory's tokens in order cut to the budget, with
// ActionMask (and AdvantageMask) 1 exactly on agent tokens, the sampling log-probs there and 0
// elsewhere, every reward on an agent position at the place docs/PAPER.md section 1 puts it and
// none lost; the batch must hold each row left-padded to P and right-padded to L with the
// response-side slices copied column for column and zero on padding. Run longer with
// `go test -run '^$' -fuzz '^FuzzFlattenCollate$' ./mdp/`.
func FuzzFlattenCollate(f *testing.F) {
	f.Add([]byte{3, 8, 0, 1, 2, 3, 2, 1, 0, 1, 8, 4, 0, 2, 1, 7, 0}, int8(0))
	f.Add([]byte{0, 255, 1, 0, 4, 0, 3, 1, 1, 0, 250, 5, 0, 0, 3, 1}, int8(3))
	f.Add([]byte{5, 16, 0, 0, 2, 5, 0, 0, 2, 4, 8, 200, 8, 2, 0, 0, 0}, int8(-4))
	f.Add([]byte{1, 0, 0, 0, 1, 0, 2, 16, 0}, int8(1))
	f.Add([]byte{}, int8(0))
	f.Fuzz(func(t *testing.T, data []byte, budget int8) {
		s := &byteSource{b: data}
		maxResponse := int(budget)
		var rows []Row
		for k := range 3 {
			tr := trajectoryFrom(s)
			name := fmt.Sprintf("trajectory %d %+v budget %d", k, tr, maxResponse)
			r, err := Flatten(&tr, maxResponse)
			if ok := consistent(&tr); ok != (err == nil) {
				t.Fatalf("%s: consistent %v but Flatten error %v", name, ok, err)
			}
			if err != nil {
				if err.Error() == "" {
					t.Fatalf("%s: empty error", name)
				}
				continue
			}
			checkFlattened(t, name, &tr, &r, maxResponse)
			rows = append(rows, r)
		}
		checkCollated(t, rows, Collate(rows, -1), -1)
	})
}

// checkFlattened checks a row against its trajectory, computing the expected layout directly.
func checkFlattened(t *testing.T, name string, tr *Trajectory, r *Row, maxResponse int) {
	t.Helper()
	var tokens []int
	var agent []bool
	var logProbs []float64
	rewardAt := map[int]float64{} // position -> process rewards closing there
	tokens = append(tokens, tr.Prompt...)
	agent = append(agent, make([]bool, len(tr.Prompt))...)
	logProbs = append(logProbs, make([]float64, len(tr.Prompt))...)
	for _, turn := range tr.Turns {
		for _, c := range turn.ToolCalls {
			rewardAt[len(tokens)+c.End] += c.Reward
		}
		for j, tok := range turn.Action {
			tokens, agent, logProbs = append(tokens, tok), append(agent, true), append(logProbs, float64(turn.ActionLogProbs[j]))
		}
		for _, tok := range turn.Observation {
			tokens, agent, logProbs = append(tokens, tok), append(agent, false), append(logProbs, 0)
		}
	}
	T := len(tokens)
	cut := maxResponse > 0 && T-len(tr.Prompt) > maxResponse
	if cut {
		T = len(tr.Prompt) + maxResponse
	}
	for _, n := range []int{len(r.Tokens), len(r.ActionMask), len(r.AdvantageMask), len(r.Rewards), len(r.LogProbs)} {
		if n != T {
			t.Fatalf("%s: a row slice has length %d, want %d", name, n, T)
		}
	}
	if r.PromptLen != len(tr.Prompt) || r.ResponseLen() != T-len(tr.Prompt) {
		t.Fatalf("%s: prompt %d response %d", name, r.PromptLen, r.ResponseLen())
	}
	if r.CutMaxLength != (tr.CutMaxLength || cut) || r.CutMaxTurns != tr.CutMaxTurns {
		t.Fatalf("%s: flags cut-length %v cut-turns %v", name, r.CutMaxLength, r.CutMaxTurns)
	}
	if !slices.Equal(r.Tokens, tokens[:T]) {
		t.Fatalf("%s: tokens %v, want %v", name, r.Tokens, tokens[:T])
	}
	lastAgent := -1
	pending := tr.OutcomeReward
	for pos, x := range rewardAt {
		if pos >= T {
			pending += x
		}
	}
	for i := range T {
		want := 0.0
		if agent[i] {
			want, lastAgent = 1, i
		}
		if r.ActionMask[i] != want || r.AdvantageMask[i] != want {
			t.Fatalf("%s: position %d: action mask %v advantage mask %v, agent token %v", name, i, r.ActionMask[i], r.AdvantageMask[i], agent[i])
		}
		if r.LogProbs[i] != logProbs[i] {
			t.Fatalf("%s: position %d: log-prob %v, want %v", name, i, r.LogProbs[i], logProbs[i])
		}
	}
	wantRewards := make([]float64, T)
	for pos, x := range rewardAt {
		if pos < T {
			wantRewards[pos] += x
		}
	}
	wantUnplaced := 0.0
	if lastAgent < 0 {
		wantUnplaced = pending
	} else {
		wantRewards[lastAgent] += pending
	}
	for i := range T {
		if r.Rewards[i] != 0 && r.ActionMask[i] != 1 {
			t.Fatalf("%s: reward %v on non-agent position %d", name, r.Rewards[i], i)
		}
	}
	if !slices.Equal(r.Rewards, wantRewards) || r.UnplacedReward != wantUnplaced {
		t.Fatalf("%s: rewards %v unplaced %v, want %v unplaced %v", name, r.Rewards, r.UnplacedReward, wantRewards, wantUnplaced)
	}
	sum := r.UnplacedReward
	for _, x := range r.Rewards {
		sum += x
	}
	if sum != tr.TotalReward() {
		t.Fatalf("%s: rewards sum to %v, trajectory total %v", name, sum, tr.TotalReward())
	}
}

// checkCollated checks the batch layout against its rows.
func checkCollated(t *testing.T, rows []Row, b *Batch, pad int) {
	t.Helper()
	P, L := 0, 0
	for _, r := range rows {
		P, L = max(P, r.PromptLen), max(L, r.ResponseLen())
	}
	T := P + L
	if b.B != len(rows) || b.P != P || b.L != L || b.T() != T {
		t.Fatalf("batch B=%d P=%d L=%d, want %d %d %d", b.B, b.P, b.L, len(rows), P, L)
	}
	for _, n := range []int{len(b.Tokens), len(b.AttentionMask)} {
		if n != b.B*T {
			t.Fatalf("a (B, T) slice has length %d, want %d", n, b.B*T)
		}
	}
	for _, n := range []int{len(b.Responses), len(b.ResponseMask), len(b.ActionMask), len(b.AdvantageMask), len(b.Rewards), len(b.OldLogProbs)} {
		if n != b.B*L {
			t.Fatalf("a (B, L) slice has length %d, want %d", n, b.B*L)
		}
	}
	for bi, r := range rows {
		p, n := r.PromptLen, r.ResponseLen()
		if b.PromptLens[bi] != p || b.ResponseLens[bi] != n {
			t.Fatalf("row %d: lengths %d %d, want %d %d", bi, b.PromptLens[bi], b.ResponseLens[bi], p, n)
		}
		for j := range T {
			o := bi*T + j
			k := j - (P - p) // index into the row
			if k < 0 || k >= p+n {
				if b.Tokens[o] != pad || b.AttentionMask[o] != 0 {
					t.Fatalf("row %d column %d: padding holds token %d attention %v", bi, j, b.Tokens[o], b.AttentionMask[o])
				}
				continue
			}
			if b.Tokens[o] != r.Tokens[k] || b.AttentionMask[o] != 1 {
				t.Fatalf("row %d column %d: token %d attention %v, want %d 1", bi, j, b.Tokens[o], b.AttentionMask[o], r.Tokens[k])
			}
		}
		for j := range L {
			o := bi*L + j
			if j >= n {
				if b.Responses[o] != pad || b.ResponseMask[o] != 0 || b.ActionMask[o] != 0 || b.AdvantageMask[o] != 0 || b.Rewards[o] != 0 || b.OldLogProbs[o] != 0 {
					t.Fatalf("row %d response column %d: padding not empty", bi, j)
				}
				continue
			}
			k := p + j
			if b.Responses[o] != r.Tokens[k] || b.ResponseMask[o] != 1 || b.ActionMask[o] != r.ActionMask[k] ||
				b.AdvantageMask[o] != r.AdvantageMask[k] || b.Rewards[o] != r.Rewards[k] || b.OldLogProbs[o] != r.LogProbs[k] {
				t.Fatalf("row %d response column %d does not match row position %d", bi, j, k)
			}
		}
	}
}
