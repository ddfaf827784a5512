package rl

import "fmt"

// ReturnMode says how REINFORCE++ carries the discounted return across masked positions.
type ReturnMode int

const (
	// ReturnsOverAgentTokens computes the return over agent tokens only (Agent-R1's advantage
	// mask, docs/PAPER.md §2): tool-response tokens are squeezed out, the return flows across them
	// with one γ step, and every turn of a multi-turn trajectory receives the outcome reward.
	// Rewards placed at masked positions are dropped; returns are 0 at masked positions.
	// This is the paper's semantics and the default (the zero value).
	ReturnsOverAgentTokens ReturnMode = iota
	// ReturnsResetAtMask reproduces verl's compute_reinforce_plus_plus_outcome_advantage: the
	// running return is multiplied by the mask after each step, so it is cut at every masked
	// token, interior ones included; turns before the last tool response get only their own
	// segment's rewards. A masked position's return still holds its own reward plus the
	// discounted future. This is what the golden cases record.
	ReturnsResetAtMask
)

// String names the mode.
func (m ReturnMode) String() string {
	switch m {
	case ReturnsOverAgentTokens:
		return "over-agent-tokens"
	case ReturnsResetAtMask:
		return "reset-at-mask"
	}
	return fmt.Sprintf("ReturnMode(%d)", int(m))
}

// DiscountedReturnRecursion writes G_t = r_t + γ·G_{t+1} (G_n = 0) of one dense row of
// consecutive agent tokens. It panics if the lengths differ.
func DiscountedReturnRecursion(returns, rewards []float64, gamma float64) {
	if len(returns) != len(rewards) {
		panic(fmt.Sprintf("rl.DiscountedReturnRecursion: lengths %d and %d", len(returns), len(rewards)))
	}
	g := 0.0
	for t := len(rewards) - 1; t >= 0; t-- {
		g = rewards[t] + gamma*g
		returns[t] = g
	}
}

// ReinforcePPReturns returns the REINFORCE++ discounted returns G_t = r_t + γ·G_{t+1}, shape
// (B, L), carried across masked positions as mode says (see ReturnMode). It panics if the
// shapes differ.
func ReinforcePPReturns(rewards, mask Matrix, gamma float64, mode ReturnMode) Matrix {
	sameShape("ReinforcePPReturns", rewards, mask)
	returns := NewMatrix(rewards.B, rewards.L)
	for i := 0; i < rewards.B; i++ {
		r, m, g := rewards.Row(i), mask.Row(i), returns.Row(i)
		switch mode {
		case ReturnsResetAtMask:
			running := 0.0
			for t := rewards.L - 1; t >= 0; t-- {
				running = r[t] + gamma*running
				g[t] = running
				running *= m[t] // verl: "Reset after EOS", at interior zeros too
			}
		case ReturnsOverAgentTokens:
			SqueezeScatter(g, m, FillZero, [][]float64{r}, func(dst []float64, in [][]float64) {
				DiscountedReturnRecursion(dst, in[0], gamma)
			})
		default:
			panic(fmt.Sprintf("rl.ReinforcePPReturns: unknown %v", mode))
		}
	}
	return returns
}

// ReinforcePlusPlus returns the REINFORCE++ advantages and returns (Hu 2025, arXiv 2501.03262),
// both (B, L):
//
//	returns = ReinforcePPReturns(r, m, γ, mode)           (not masked)
//	advantages = MaskedWhiten(returns, m) · m             (token-level batch statistics, unbiased)
//
// With ReturnsResetAtMask it is verl's core_algos.compute_reinforce_plus_plus_outcome_advantage
// exactly; the default ReturnsOverAgentTokens follows the paper's advantage mask instead. It
// returns an error when the batch has fewer than two valid tokens. It panics if the shapes
// differ or mode is unknown.
func ReinforcePlusPlus(rewards, mask Matrix, gamma float64, mode ReturnMode) (advantages, returns Matrix, err error) {
	returns = ReinforcePPReturns(rewards, mask, gamma, mode)
	advantages, err = MaskedWhiten(returns, mask, true)
	if err != nil {
		return Matrix{}, Matrix{}, fmt.Errorf("rl.ReinforcePlusPlus: %w", err)
	}
	for k, m := range mask.Data {
		advantages.Data[k] *= m
	}
	return advantages, returns, nil
}

// ReMaxAdvantage returns the ReMax advantages and returns (Li et al. 2023, arXiv 2310.10505),
// both (B, L):
//
//	returns_t = Σ_{k≥t} r_k·m_k      (reverse cumulative sum; flows across interior masked spans,
//	                                  masked rewards count as 0)
//	advantages = returns − b_i·m     (not re-masked: interior masked positions keep returns_t)
//
// baselines (B) is the reward of each prompt's greedy response.
//
// Source: verl core_algos.compute_remax_outcome_advantage. It panics if the shapes differ.
func ReMaxAdvantage(rewards, mask Matrix, baselines []float64) (advantages, returns Matrix) {
	sameShape("ReMaxAdvantage", rewards, mask)
	if len(baselines) != rewards.B {
		panic(fmt.Sprintf("rl.ReMaxAdvantage: %d baselines for %d responses", len(baselines), rewards.B))
	}
	returns = NewMatrix(rewards.B, rewards.L)
	advantages = NewMatrix(rewards.B, rewards.L)
	for i := 0; i < rewards.B; i++ {
		r, m, g, a := rewards.Row(i), mask.Row(i), returns.Row(i), advantages.Row(i)
		sum := 0.0
		for t := rewards.L - 1; t >= 0; t-- {
			sum += r[t] * m[t]
			g[t] = sum
			a[t] = sum - baselines[i]*m[t]
		}
	}
	return advantages, returns
}
