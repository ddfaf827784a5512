package rl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestSqueezeGAEEqualsVerlSkip checks the claim of docs/PAPER.md §2: verl's GAE with interior zeros
// computes exactly Agent-R1's advantage mask (squeeze, recurse, scatter), bit for bit, including
// the values verl leaves at masked positions (FillNextAgentToken).
func TestSqueezeGAEEqualsVerlSkip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		b, l := 1+rng.IntN(5), 1+rng.IntN(24)
		r, v, m := randMatrix(rng, b, l), randMatrix(rng, b, l), agentMask(rng, b, l)
		for k, mk := range m.Data { // garbage at masked positions must not matter
			if mk == 0 {
				r.Data[k] *= 1e6
				v.Data[k] = -1e6 * v.Data[k]
			}
		}
		gamma, lam := 0.5+rng.Float64()/2, rng.Float64()
		want := GAERawAdvantages(r, v, m, gamma, lam)
		for i := 0; i < b; i++ {
			got := make([]float64, l)
			SqueezeScatter(got, m.Row(i), FillNextAgentToken, [][]float64{r.Row(i), v.Row(i)}, func(dst []float64, in [][]float64) {
				GAERecursion(dst, in[0], in[1], gamma, lam)
			})
			for pos := range got {
				if got[pos] != want.At(i, pos) {
					t.Fatalf("trial %d row %d mask %v: squeeze %v, verl skip %v at %d", trial, i, m.Row(i), got, want.Row(i), pos)
				}
			}
		}
	}
}

// TestAdvantageMaskAtLambdaOne shows what the advantage mask can and cannot change in PPO at
// the paper's γ = λ = 1: when rewards sit on agent tokens only (process rewards on the token
// closing a call, the outcome on the last agent token), GAE telescopes to
//
//	A_t = Σ_{s ≥ t} r_s − V_t
//
// at every agent token, whether the recursion skips the tool spans (the mask) or runs through
// them (no mask, as Search-R1): the raw advantages of agent tokens are identical, and only the
// whitening statistics differ (the trainer's critic learns over the loss mask either way). With
// λ < 1 the tool spans' values enter the agent tokens' advantages, and the two differ.
func TestAdvantageMaskAtLambdaOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	differed := false
	for trial := 0; trial < 200; trial++ {
		b, l := 1+rng.IntN(4), 2+rng.IntN(24)
		r, v, m := randMatrix(rng, b, l), randMatrix(rng, b, l), agentMask(rng, b, l)
		all := NewMatrix(b, l)
		for k, mk := range m.Data {
			all.Data[k] = 1
			if mk == 0 {
				r.Data[k] = 0 // no reward on tool tokens
			}
		}
		masked, unmasked := GAERawAdvantages(r, v, m, 1, 1), GAERawAdvantages(r, v, all, 1, 1)
		for k, mk := range m.Data {
			if mk != 0 && math.Abs(masked.Data[k]-unmasked.Data[k]) > 1e-12 {
				t.Fatalf("trial %d: γ = λ = 1, agent token %d: advantage %v with the mask, %v without", trial, k, masked.Data[k], unmasked.Data[k])
			}
		}
		masked, unmasked = GAERawAdvantages(r, v, m, 1, 0.9), GAERawAdvantages(r, v, all, 1, 0.9)
		for k, mk := range m.Data {
			if mk != 0 && math.Abs(masked.Data[k]-unmasked.Data[k]) > 1e-9 {
				differed = true
			}
		}
	}
	if !differed {
		t.Error("λ = 0.9: the mask never changed an agent token's advantage")
	}
}

func TestSqueezeScatterFill(t *testing.T) {
	mask := []float64{0, 1, 0, 0, 1, 1, 0}
	in := []float64{9, 1, 9, 9, 2, 3, 9}
	double := func(dst []float64, in [][]float64) {
		if len(dst) != 3 || len(in[0]) != 3 {
			panic(fmt.Sprintf("squeezed length %d, want 3", len(dst)))
		}
		for j, x := range in[0] {
			dst[j] = 2 * x
		}
	}
	for _, tc := range []struct {
		name string
		fill Fill
		want []float64
	}{
		{"zero", FillZero, []float64{0, 2, 0, 0, 4, 6, 0}},
		{"next-agent-token", FillNextAgentToken, []float64{2, 2, 4, 4, 4, 6, 0}},
	} {
		out := make([]float64, len(mask))
		SqueezeScatter(out, mask, tc.fill, [][]float64{in}, double)
		for k := range out {
			if out[k] != tc.want[k] {
				t.Errorf("%s: got %v, want %v", tc.name, out, tc.want)
				break
			}
		}
	}
}

// twoTurn is a trajectory of two agent turns around a tool response, then padding; the only
// reward is the outcome 1 at the last agent token.
var twoTurn = struct{ mask, rewards []float64 }{
	mask:    []float64{1, 1, 1, 0, 0, 0, 1, 1, 0, 0},
	rewards: []float64{0, 0, 0, 0, 0, 0, 0, 1, 0, 0},
}

// TestReinforcePPSqueezeVsReset shows the one place the two REINFORCE++ semantics differ: with the
// advantage mask (default) the first turn gets the outcome's return, with verl's reset it gets 0.
func TestReinforcePPSqueezeVsReset(t *testing.T) {
	l := len(twoTurn.mask)
	r, m := MatrixOf(1, l, twoTurn.rewards), MatrixOf(1, l, twoTurn.mask)
	for _, tc := range []struct {
		mode  ReturnMode
		gamma float64
		want  []float64
	}{
		{ReturnsOverAgentTokens, 1, []float64{1, 1, 1, 0, 0, 0, 1, 1, 0, 0}},
		{ReturnsOverAgentTokens, 0.5, []float64{1.0 / 16, 1.0 / 8, 1.0 / 4, 0, 0, 0, 0.5, 1, 0, 0}},
		{ReturnsResetAtMask, 1, []float64{0, 0, 0, 0, 0, 1, 1, 1, 0, 0}},
		{ReturnsResetAtMask, 0.5, []float64{0, 0, 0, 0, 0, 0.25, 0.5, 1, 0, 0}},
	} {
		got := ReinforcePPReturns(r, m, tc.gamma, tc.mode)
		for k := range got.Data {
			if math.Abs(got.Data[k]-tc.want[k]) > 1e-15 {
				t.Errorf("%v γ=%v: returns %v, want %v", tc.mode, tc.gamma, got.Data, tc.want)
				break
			}
		}
	}
	var zero ReturnMode
	if zero != ReturnsOverAgentTokens {
		t.Error("the default ReturnMode is not the paper's advantage mask")
	}
}

// TestReinforcePPGamma1RewardToGo: with γ = 1 the returns are the reward-to-go, over all
// positions on full rows (both modes) and over agent tokens with the advantage mask.
func TestReinforcePPGamma1RewardToGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	b, l := 5, 13
	r, m := randMatrix(rng, b, l), agentMask(rng, b, l)
	full := NewMatrix(b, l)
	for k := range full.Data {
		full.Data[k] = 1
	}
	for _, tc := range []struct {
		name string
		mask Matrix
		mode ReturnMode
	}{
		{"full/over-agent-tokens", full, ReturnsOverAgentTokens},
		{"full/reset", full, ReturnsResetAtMask},
		{"multi-turn/over-agent-tokens", m, ReturnsOverAgentTokens},
	} {
		g := ReinforcePPReturns(r, tc.mask, 1, tc.mode)
		for i := 0; i < b; i++ {
			for t0 := 0; t0 < l; t0++ {
				if tc.mask.At(i, t0) == 0 {
					continue
				}
				want := 0.0
				for t1 := t0; t1 < l; t1++ {
					want += r.At(i, t1) * tc.mask.At(i, t1)
				}
				if got := g.At(i, t0); math.Abs(got-want) > 1e-12 {
					t.Errorf("%s: row %d token %d: return %v, reward-to-go %v", tc.name, i, t0, got, want)
				}
			}
		}
	}
}

// estimator is one advantage function under test, with whether it zeroes masked positions.
type estimator struct {
	name  string
	masks bool // advantages are 0 wherever the mask is 0
	f     func(r, v, m Matrix, idx []int) (Matrix, error)
}

func estimators() []estimator {
	ok := func(a Matrix) (Matrix, error) { return a, nil }
	return []estimator{
		{"grpo", true, func(r, _, m Matrix, idx []int) (Matrix, error) { return ok(GRPOAdvantage(r, m, idx, 1e-6, true)) }},
		{"dr-grpo", true, func(r, _, m Matrix, idx []int) (Matrix, error) { return ok(GRPOAdvantage(r, m, idx, 1e-6, false)) }},
		{"grpo-vectorized", true, func(r, _, m Matrix, idx []int) (Matrix, error) {
			return ok(GRPOVectorizedAdvantage(r, m, idx, 1e-6, true))
		}},
		{"grpo-process", true, func(r, _, m Matrix, idx []int) (Matrix, error) { return ok(GRPOProcessAdvantage(r, m, idx, 1e-6)) }},
		{"grpo-passk", true, func(r, _, m Matrix, idx []int) (Matrix, error) { return GRPOPassKAdvantage(r, m, idx, 1e-6, true) }},
		{"rloo", true, func(r, _, m Matrix, idx []int) (Matrix, error) { return ok(RLOOAdvantage(r, m, idx)) }},
		{"rloo-vectorized", true, func(r, _, m Matrix, idx []int) (Matrix, error) { return ok(RLOOVectorizedAdvantage(r, m, idx)) }},
		{"opo", true, func(r, _, m Matrix, idx []int) (Matrix, error) { return ok(OPOAdvantage(r, m, idx)) }},
		{"gpg", true, func(r, _, m Matrix, idx []int) (Matrix, error) { return ok(GPGAdvantage(r, m, idx, 1)) }},
		{"reinforce++-baseline", true, func(r, _, m Matrix, idx []int) (Matrix, error) { return ReinforcePPBaselineAdvantage(r, m, idx) }},
		{"reinforce++", true, func(r, _, m Matrix, _ []int) (Matrix, error) {
			a, _, err := ReinforcePlusPlus(r, m, 0.9, ReturnsOverAgentTokens)
			return a, err
		}},
		{"reinforce++-reset", true, func(r, _, m Matrix, _ []int) (Matrix, error) {
			a, _, err := ReinforcePlusPlus(r, m, 0.9, ReturnsResetAtMask)
			return a, err
		}},
		{"gae", false, func(r, v, m Matrix, _ []int) (Matrix, error) {
			a, _, err := GAE(r, v, m, 0.99, 0.95)
			return a, err
		}},
		{"remax", false, func(r, _, m Matrix, _ []int) (Matrix, error) {
			a, _ := ReMaxAdvantage(r, m, []float64{0.1, -0.2, 0.3, 0, 0.5, -1})
			return a, nil
		}},
	}
}

// TestAdvantagesZeroOnMaskedPositions: every estimator that masks its output has exact zeros
// wherever the mask is 0; GAE and ReMax (verl quirks) do not, and the test pins that too.
func TestAdvantagesZeroOnMaskedPositions(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	b, l := 6, 11
	r, v, m := randMatrix(rng, b, l), randMatrix(rng, b, l), agentMask(rng, b, l)
	idx := []int{7, 3, 7, 3, 9, 9} // non-contiguous groups of two (pass@k needs ≥ 2)
	for _, e := range estimators() {
		a, err := e.f(r, v, m, idx)
		if err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		nonzeroMasked := 0
		for k, mk := range m.Data {
			if mk == 0 && a.Data[k] != 0 {
				nonzeroMasked++
			}
		}
		if e.masks && nonzeroMasked > 0 {
			t.Errorf("%s: %d masked positions have non-zero advantages", e.name, nonzeroMasked)
		}
		if !e.masks && nonzeroMasked == 0 {
			t.Errorf("%s: verl leaves masked positions unmasked, but all are zero here", e.name)
		}
	}
}

// TestGroupAdvantagesSumToZero: GRPO (both normalisations), RLOO and the vectorised variants give
// advantages that sum to zero over every group of two or more.
func TestGroupAdvantagesSumToZero(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	b, l := 9, 5
	r, m := randMatrix(rng, b, l), NewMatrix(b, l)
	for k := range m.Data {
		m.Data[k] = 1
	}
	idx := []int{4, 1, 4, 2, 1, 4, 2, 2, 1}
	for _, tc := range []struct {
		name string
		adv  Matrix
		tol  float64
	}{
		{"grpo", GRPOAdvantage(r, m, idx, 1e-6, true), 1e-12},
		{"dr-grpo", GRPOAdvantage(r, m, idx, 1e-6, false), 1e-12},
		{"grpo-vectorized", GRPOVectorizedAdvantage(r, m, idx, 1e-6, true), 1e-5},
		{"rloo", RLOOAdvantage(r, m, idx), 1e-12},
		{"rloo-vectorized", RLOOVectorizedAdvantage(r, m, idx), 1e-12},
	} {
		sums := map[int]float64{}
		for i, g := range idx {
			sums[g] += tc.adv.At(i, 0)
		}
		for g, s := range sums {
			if math.Abs(s) > tc.tol {
				t.Errorf("%s: group %d advantages sum to %v", tc.name, g, s)
			}
		}
	}
}

// TestGroupSingletonsAndTies pins verl's treatment of singleton and tied groups.
func TestGroupSingletonsAndTies(t *testing.T) {
	r := MatrixOf(4, 1, []float64{2, 1, 1, 1})
	m := MatrixOf(4, 1, []float64{1, 1, 1, 1})
	idx := []int{0, 5, 5, 5} // a singleton, and a tied group
	for _, tc := range []struct {
		name string
		got  Matrix
		want []float64
	}{
		{"grpo", GRPOAdvantage(r, m, idx, 1e-6, true), []float64{2 / (1 + 1e-6), 0, 0, 0}},
		{"dr-grpo", GRPOAdvantage(r, m, idx, 1e-6, false), []float64{2, 0, 0, 0}},
		{"grpo-vectorized", GRPOVectorizedAdvantage(r, m, idx, 1e-6, true), []float64{2 / float64(1+float32(1e-6)), 0, 0, 0}},
		{"rloo", RLOOAdvantage(r, m, idx), []float64{2, 0, 0, 0}},
		{"rloo-vectorized", RLOOVectorizedAdvantage(r, m, idx), []float64{0, 0, 0, 0}},
		{"opo", OPOAdvantage(r, m, idx), []float64{2, 0, 0, 0}},
		{"gpg", GPGAdvantage(r, m, idx, 1), []float64{2, 0, 0, 0}},
	} {
		for k := range tc.want {
			if math.Abs(tc.got.Data[k]-tc.want[k]) > 1e-15 {
				t.Errorf("%s: got %v, want %v", tc.name, tc.got.Data, tc.want)
				break
			}
		}
	}
	if _, err := GRPOPassKAdvantage(r, m, idx, 1e-6, true); err == nil {
		t.Error("pass@k accepted a singleton group")
	}
}

// TestTiedGroupAdvantageIsExactlyZero checks that a tied group teaches nothing, exactly: eight
// scores of 0.2 (or 1.4) summed plainly have a mean one ulp off, which left GRPO advantages of
// ~3e-11 on every row of the group.
func TestTiedGroupAdvantageIsExactlyZero(t *testing.T) {
	for _, score := range []float64{0.2, 0.4, 1.4} {
		r := NewMatrix(8, 2)
		m := NewMatrix(8, 2)
		idx := make([]int, 8)
		for i := range 8 {
			r.Data[i*2+1] = score
			m.Data[i*2], m.Data[i*2+1] = 1, 1
		}
		for _, tc := range []struct {
			name string
			got  Matrix
		}{
			{"grpo", GRPOAdvantage(r, m, idx, 1e-6, true)},
			{"dr-grpo", GRPOAdvantage(r, m, idx, 1e-6, false)},
			{"rloo", RLOOAdvantage(r, m, idx)},
			{"opo", OPOAdvantage(r, m, idx)},
			{"gpg", GPGAdvantage(r, m, idx, 1)},
		} {
			for _, a := range tc.got.Data {
				if a != 0 {
					t.Errorf("%s, eight scores of %v: advantage %g, want exactly 0", tc.name, score, a)
					break
				}
			}
		}
	}
}

func TestWhitenNeedsTwoTokens(t *testing.T) {
	x := MatrixOf(1, 3, []float64{1, 2, 3})
	for _, tc := range []struct {
		name string
		mask []float64
		ok   bool
	}{
		{"none", []float64{0, 0, 0}, false},
		{"one", []float64{0, 1, 0}, false},
		{"two", []float64{1, 0, 1}, true},
	} {
		_, err := MaskedWhiten(x, MatrixOf(1, 3, tc.mask), true)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok = %v", tc.name, err, tc.ok)
		}
	}
}

// TestProcessRewardReachesEarlierTurn: a process reward at the first turn's closing token and the
// outcome at the end both reach the first turn's tokens through GAE (γ = λ = 1, zero values).
// The rewards sit where mdp.Flatten puts them: the process reward on the closing token of the
// first turn's call (position 1), the outcome on the last agent token.
func TestProcessRewardReachesEarlierTurn(t *testing.T) {
	m := MatrixOf(2, 6, []float64{1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0})
	r := MatrixOf(2, 6, []float64{0, 0.25, 0, 0, 0, 1, 0, 0, 0, 0, -1, 0})
	raw := GAERawAdvantages(r, NewMatrix(2, 6), m, 1, 1)
	if got := raw.At(0, 0); math.Abs(got-1.25) > 1e-15 {
		t.Errorf("first token's advantage %v, want 1.25 (process 0.25 + outcome 1)", got)
	}
	if got := raw.At(1, 0); math.Abs(got+1) > 1e-15 {
		t.Errorf("row 1 first token's advantage %v, want -1", got)
	}
}
